#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace rtcosim::daemon {

struct ClientLimits {
  std::size_t max_request_bytes = 1u << 20;   // one request line
  std::size_t max_pending_output = 1u << 20;  // replies not yet taken by the client
};

/*
 * ControlClient: one connection of the control socket, owned by the
 * daemon's main loop (not thread-safe, never on the real-time path). It
 * owns the descriptor and closes it. Memory is bounded whatever the peer
 * does: requests are read only while no reply is waiting to be taken (a
 * client that sends and never reads stops being read, and the kernel's
 * socket buffer pushes back on it); the input holds at most one request
 * (max_request_bytes, beyond which the client gets an error and is cut
 * off); the output holds at most max_pending_output, beyond which the
 * client is dropped. A peer that half-closes (shutdown(SHUT_WR), as socat
 * and nc -N do) still gets every reply to what it sent. Writes never raise
 * SIGPIPE (MSG_NOSIGNAL).
 */
class ControlClient {
 public:
  ControlClient(int fd, std::uint64_t id, ClientLimits limits);
  ~ControlClient();
  ControlClient(ControlClient&& other) noexcept;
  ControlClient& operator=(ControlClient&& other) noexcept;
  ControlClient(const ControlClient&) = delete;
  ControlClient& operator=(const ControlClient&) = delete;

  [[nodiscard]] int fd() const noexcept { return fd_; }
  [[nodiscard]] std::uint64_t id() const noexcept { return id_; }
  // The poll(2) events to wait for (0 when nothing is wanted now).
  [[nodiscard]] short events() const noexcept;
  // After poll: reads once and/or writes once, as revents allow.
  void serve(short revents);
  // The next request line, when the client may be served one now: no reply
  // pending or awaited, and a whole line (or the last bytes before EOF) there.
  std::optional<std::string> next_request();
  // Whether next_request would give one now (the loop then polls without
  // waiting: a client may have more lines than one pass serves).
  [[nodiscard]] bool has_request() const noexcept;
  // The answer to the request next_request gave (a newline is appended),
  // sent at once as far as the socket takes it.
  void reply(const std::string& line);
  // A request runs elsewhere (a worker); no further request is taken until
  // reply() is called.
  void set_busy() noexcept { busy_ = true; }
  [[nodiscard]] bool busy() const noexcept { return busy_; }
  // True once the connection is over: closed by either side, failed,
  // dropped, or the peer ended and every reply is out.
  [[nodiscard]] bool finished() const noexcept;
  [[nodiscard]] std::size_t buffered_bytes() const noexcept { return in_.size() - in_pos_ + out_.size(); }
  // The peer, as the kernel saw it connect, is root, the daemon's user or in
  // the control socket's group (peer_in_group): it may have a web token.
  void set_in_group(bool in_group) noexcept { in_group_ = in_group; }
  [[nodiscard]] bool in_group() const noexcept { return in_group_; }

 private:
  void read_once();
  void write_once();
  void close_now() noexcept;
  [[nodiscard]] bool has_line() const noexcept;

  int fd_ = -1;
  std::uint64_t id_ = 0;
  ClientLimits limits_;
  std::string in_;
  std::size_t in_pos_ = 0;  // in_ before it was taken by next_request
  std::string out_;
  bool eof_ = false;   // the peer sent everything it will send
  bool busy_ = false;  // a request of this client runs on a worker
  // After an oversized request: the rest of its input is read and thrown
  // away (closing with unread input would reset the connection and lose
  // the error reply), and the connection ends once the reply is out.
  bool discarding_ = false;
  bool in_group_ = false;
};

}  // namespace rtcosim::daemon
