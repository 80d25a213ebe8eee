#include "tools/rtcosimd/notify.hpp"

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace rtcosim::daemon {

static_assert(sizeof(sockaddr_un) <= 112);

SystemdNotifier::SystemdNotifier() {
  const char* env = std::getenv("NOTIFY_SOCKET");
  if (env == nullptr) return;
  const std::size_t n = std::strlen(env);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (n < 2 || n >= sizeof a.sun_path || (env[0] != '/' && env[0] != '@')) {
    problem_ = "NOTIFY_SOCKET='" + std::string(env) +
               "' is not a Unix socket this daemon can use (expected an absolute path or @name shorter than " +
               std::to_string(sizeof a.sun_path) + " bytes)";
    return;
  }
  std::memcpy(a.sun_path, env, n);
  if (env[0] == '@') a.sun_path[0] = '\0';  // abstract: no terminating NUL counts
  address_length_ = static_cast<unsigned>(offsetof(sockaddr_un, sun_path) + n + (env[0] == '@' ? 0 : 1));
  std::memcpy(address_, &a, sizeof a);
  fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd_ < 0) problem_ = "cannot make a socket for NOTIFY_SOCKET='" + std::string(env) + "': " + std::strerror(errno);
}

SystemdNotifier::~SystemdNotifier() {
  if (fd_ >= 0) close(fd_);
}

bool SystemdNotifier::send(std::string_view message) noexcept {
  if (fd_ < 0) return false;
  const ssize_t sent = sendto(fd_, message.data(), message.size(), MSG_DONTWAIT | MSG_NOSIGNAL,
                              reinterpret_cast<const sockaddr*>(address_), address_length_);
  if (sent == static_cast<ssize_t>(message.size())) return true;
  last_errno_ = sent < 0 ? errno : EMSGSIZE;
  ++dropped_;
  return false;
}

}  // namespace rtcosim::daemon
