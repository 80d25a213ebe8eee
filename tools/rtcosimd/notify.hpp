#pragma once

#include <string>
#include <string_view>

namespace rtcosim::daemon {

/*
 * SystemdNotifier: the service manager's notification protocol (READY=1,
 * STATUS=..., WATCHDOG=1, STOPPING=1 as datagrams to $NOTIFY_SOCKET),
 * written so that a manager that does not read cannot stall the daemon's
 * loop: the socket is non-blocking and a datagram that would wait is
 * dropped and counted instead (libsystemd's sd_notify sends on a blocking
 * socket). $NOTIFY_SOCKET is read once, at construction: a path, or "@name"
 * for the abstract namespace; anything else (unset, too long, another
 * scheme) means no manager and every send is a no-op that returns false.
 * Not for a real-time thread (it makes system calls); one thread at a time.
 */
class SystemdNotifier {
 public:
  SystemdNotifier();
  ~SystemdNotifier();
  SystemdNotifier(const SystemdNotifier&) = delete;
  SystemdNotifier& operator=(const SystemdNotifier&) = delete;

  // True when the manager got the datagram.
  bool send(std::string_view message) noexcept;
  [[nodiscard]] bool active() const noexcept { return fd_ >= 0; }
  // Datagrams dropped because the manager's queue was full (or the send failed).
  [[nodiscard]] unsigned long dropped() const noexcept { return dropped_; }
  // The errno of the last send that failed (EAGAIN: the queue was full).
  [[nodiscard]] int last_errno() const noexcept { return last_errno_; }
  // Set when $NOTIFY_SOCKET names a manager that cannot be reached from
  // here (another scheme, too long, no socket): it then never hears from
  // this process, and a Type=notify unit times out, so the daemon says why.
  [[nodiscard]] const std::string& problem() const noexcept { return problem_; }

 private:
  int fd_ = -1;
  unsigned address_length_ = 0;
  alignas(8) unsigned char address_[112] = {};  // a sockaddr_un
  unsigned long dropped_ = 0;
  int last_errno_ = 0;
  std::string problem_;
};

}  // namespace rtcosim::daemon
