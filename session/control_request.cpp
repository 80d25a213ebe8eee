#include "session/control_request.hpp"

#include <cerrno>
#include <cstring>

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace rtcosim::session {

std::string control_request(const std::string& socket_path, const std::string& request, std::string* error,
                            int timeout_ms) {
  if (socket_path.size() >= sizeof(sockaddr_un::sun_path)) {
    *error = "the socket path " + socket_path + " is longer than a Unix socket's " +
             std::to_string(sizeof(sockaddr_un::sun_path) - 1) + " bytes";
    return {};
  }
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = std::string("cannot create a Unix socket: ") + std::strerror(errno);
    return {};
  }
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket_path.c_str(), sizeof addr.sun_path - 1);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    *error = "cannot reach rtcosimd at " + socket_path + ": " + std::strerror(errno) +
             " (is it running? is your user in group rtcosim?)";
    close(fd);
    return {};
  }
  const std::string line = request + "\n";
  for (std::size_t sent = 0; sent < line.size();) {
    // MSG_NOSIGNAL: a daemon that went away is an error here, not a SIGPIPE that ends the caller.
    const ssize_t n = send(fd, line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) {
      *error = std::string("sending failed: ") + std::strerror(errno);
      close(fd);
      return {};
    }
    sent += static_cast<std::size_t>(n);
  }
  std::string reply;
  char buf[65536];
  while (reply.find('\n') == std::string::npos) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) <= 0) {
      *error = "rtcosimd did not answer within " + std::to_string(timeout_ms) + " ms";
      break;
    }
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    reply.append(buf, static_cast<std::size_t>(n));
  }
  close(fd);
  if (const auto nl = reply.find('\n'); nl != std::string::npos) reply.resize(nl);
  return reply;
}

}  // namespace rtcosim::session
