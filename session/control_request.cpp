#include "session/control_request.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace rtcosim::session {

namespace {

// Waits up to timeout_ms for `fd` to be readable; a signal that interrupts
// the wait is not the daemon's silence, so the wait goes on for what is left.
// 1: readable, 0: timed out, -1: poll failed (errno set).
int wait_readable(int fd, int timeout_ms) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    pollfd p{fd, POLLIN, 0};
    const int rc = poll(&p, 1, left > 0 ? static_cast<int>(left) : 0);
    if (rc < 0 && errno == EINTR) continue;
    return rc;
  }
}

// A connected socket, or -1 with *error: the path is checked first because
// a longer one would be cut to another file's name.
int connect_to(const std::string& socket_path, std::string* error) {
  if (socket_path.size() >= sizeof(sockaddr_un::sun_path)) {
    *error = "the socket path " + socket_path + " is longer than a Unix socket's " +
             std::to_string(sizeof(sockaddr_un::sun_path) - 1) + " bytes";
    return -1;
  }
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = std::string("cannot create a Unix socket: ") + std::strerror(errno);
    return -1;
  }
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket_path.c_str(), sizeof addr.sun_path - 1);
  // A Unix socket's connect waits only for room in the listener's backlog,
  // and one interrupted there leaves the socket unconnected: it is retried.
  int connected = 0;
  while ((connected = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr)) != 0 && errno == EINTR) {
  }
  if (connected != 0) {
    *error = "cannot reach rtcosimd at " + socket_path + ": " + std::strerror(errno) +
             " (is it running? is your user in group rtcosim?)";
    close(fd);
    return -1;
  }
  return fd;
}

// The whole line or false with *error: a partial send is resumed, since the
// daemon reads requests by line.
bool send_line(int fd, const std::string& line, const std::string& socket_path, std::string* error) {
  for (std::size_t sent = 0; sent < line.size();) {
    // MSG_NOSIGNAL: a daemon that went away is an error here, not a SIGPIPE that ends the caller.
    const ssize_t n = send(fd, line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *error = "sending the request to " + socket_path + " failed: " + std::strerror(n < 0 ? errno : EIO);
      return false;
    }
    sent += static_cast<std::size_t>(n);
  }
  return true;
}

// Reads up to the reply's newline, bounded in time and size; *why is set
// when the reply is not whole (and what was read must then not be used).
std::string read_reply_line(int fd, const std::string& socket_path, int timeout_ms, std::string* why) {
  std::string reply;
  char buf[65536];
  std::size_t searched = 0;  // reply before this holds no newline
  for (;;) {
    if (const auto nl = reply.find('\n', searched); nl != std::string::npos) {
      reply.resize(nl);
      break;
    }
    searched = reply.size();
    // Whatever answers on the socket (a daemon gone wrong, another program
    // at its path) costs at most this much memory.
    if (reply.size() > kMaxControlReplyBytes) {
      *why = "the reply from " + socket_path + " passed " + std::to_string(kMaxControlReplyBytes) +
             " bytes without ending its line — rtcosimd's replies are one line far shorter than that; is it "
             "rtcosimd that listens there?";
      break;
    }
    const int ready = wait_readable(fd, timeout_ms);
    if (ready == 0) {
      *why = "rtcosimd did not answer within " + std::to_string(timeout_ms) + " ms";
      break;
    }
    if (ready < 0) {
      *why = "waiting for the reply from " + socket_path + " failed: " + std::strerror(errno);
      break;
    }
    // Never more than one byte past the bound is held.
    const std::size_t room = kMaxControlReplyBytes + 1 - reply.size();
    const ssize_t n = read(fd, buf, std::min(sizeof buf, room));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *why = "reading the reply from " + socket_path + " failed: " + std::strerror(errno);
      break;
    }
    if (n == 0) {
      // A reply cut short is not a reply: its JSON would be read as if whole.
      *why = "rtcosimd at " + socket_path + " closed the connection " +
             (reply.empty() ? std::string("without a reply")
                            : "after " + std::to_string(reply.size()) + " bytes, before the end of its reply line");
      break;
    }
    reply.append(buf, static_cast<std::size_t>(n));
  }
  return reply;
}

}  // namespace

std::string control_request(const std::string& socket_path, const std::string& request, std::string* error,
                            int timeout_ms) {
  const int fd = connect_to(socket_path, error);
  if (fd < 0) return {};
  if (!send_line(fd, request + "\n", socket_path, error)) {
    close(fd);
    return {};
  }
  std::string why;
  std::string reply = read_reply_line(fd, socket_path, timeout_ms, &why);
  close(fd);
  // Callers tell failure by an empty reply: a part of one must not pass for it.
  if (!why.empty()) {
    *error = why;
    reply.clear();
  }
  return reply;
}

}  // namespace rtcosim::session
