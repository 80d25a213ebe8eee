#include "tools/rtcosimd/control_client.hpp"

#include <cerrno>
#include <utility>

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/json.hpp"

namespace rtcosim::daemon {

namespace {

// Requests are read and served only while less than this is waiting to be
// taken, so the output of a client that never reads stays near this size.
constexpr std::size_t kServeBelow = 64u << 10;

}  // namespace

ControlClient::ControlClient(int fd, std::uint64_t id, ClientLimits limits) : fd_(fd), id_(id), limits_(limits) {}

ControlClient::~ControlClient() { close_now(); }

ControlClient::ControlClient(ControlClient&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      id_(other.id_),
      limits_(other.limits_),
      in_(std::move(other.in_)),
      in_pos_(std::exchange(other.in_pos_, 0)),
      out_(std::move(other.out_)),
      eof_(other.eof_),
      busy_(other.busy_),
      discarding_(other.discarding_) {}

ControlClient& ControlClient::operator=(ControlClient&& other) noexcept {
  if (this != &other) {
    close_now();
    fd_ = std::exchange(other.fd_, -1);
    id_ = other.id_;
    limits_ = other.limits_;
    in_ = std::move(other.in_);
    in_pos_ = std::exchange(other.in_pos_, 0);
    out_ = std::move(other.out_);
    eof_ = other.eof_;
    busy_ = other.busy_;
    discarding_ = other.discarding_;
  }
  return *this;
}

void ControlClient::close_now() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  // The memory goes with the connection (it is locked memory under mlockall).
  std::string().swap(in_);
  in_pos_ = 0;
  std::string().swap(out_);
}

bool ControlClient::has_line() const noexcept { return in_.find('\n', in_pos_) != std::string::npos; }

bool ControlClient::has_request() const noexcept {
  if (fd_ < 0 || busy_ || discarding_ || out_.size() >= kServeBelow) return false;
  return has_line() || (eof_ && in_pos_ < in_.size());
}

short ControlClient::events() const noexcept {
  if (fd_ < 0) return 0;
  short e = 0;
  if (!out_.empty()) e |= POLLOUT;
  const bool may_read = discarding_ || (!busy_ && out_.size() < kServeBelow && !has_line());
  if (!eof_ && may_read) e |= POLLIN;
  return e;
}

void ControlClient::serve(short revents) {
  if (fd_ < 0) return;
  if (revents & POLLIN) read_once();
  if (fd_ >= 0 && (revents & POLLOUT)) write_once();
  // POLLHUP: the peer closed both directions (a half-close shows as POLLIN
  // with EOF, not as POLLHUP); nothing more can be delivered.
  if (fd_ >= 0 && (revents & (POLLHUP | POLLERR | POLLNVAL)) && !(revents & POLLIN)) close_now();
}

void ControlClient::read_once() {
  char buf[65536];
  const ssize_t n = ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
  if (n < 0) {
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) close_now();
    return;
  }
  if (n == 0) {
    eof_ = true;
    return;
  }
  if (discarding_) return;
  // What next_request consumed goes once per read, not once per request
  // (erasing at the front per line made a buffer of n short lines cost n^2).
  in_.erase(0, in_pos_);
  in_pos_ = 0;
  in_.append(buf, static_cast<std::size_t>(n));
  if (!has_line() && in_.size() > limits_.max_request_bytes) {
    std::string().swap(in_);
    discarding_ = true;
    out_ += "{\"ok\":false,\"error\":" +
            base::json_string("request longer than " + std::to_string(limits_.max_request_bytes) +
                              " bytes — the connection is closed") +
            "}\n";
    write_once();
  }
}

void ControlClient::write_once() {
  if (fd_ < 0 || out_.empty()) return;
  const ssize_t n = ::send(fd_, out_.data(), out_.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  if (n < 0) {
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) close_now();
    return;
  }
  out_.erase(0, static_cast<std::size_t>(n));
  if (out_.empty() && out_.capacity() > kServeBelow) std::string().swap(out_);
  if (discarding_ && out_.empty()) ::shutdown(fd_, SHUT_WR);
}

std::optional<std::string> ControlClient::next_request() {
  if (fd_ < 0 || busy_ || discarding_ || out_.size() >= kServeBelow) return std::nullopt;
  const auto nl = in_.find('\n', in_pos_);
  if (nl != std::string::npos) {
    std::string line = in_.substr(in_pos_, nl - in_pos_);
    in_pos_ = nl + 1;
    if (in_pos_ == in_.size()) {
      in_.clear();
      in_pos_ = 0;
    }
    return line;
  }
  if (eof_ && in_pos_ < in_.size()) {
    // The last request of a peer that ended without a newline.
    std::string line = in_.substr(in_pos_);
    in_.clear();
    in_pos_ = 0;
    return line;
  }
  return std::nullopt;
}

void ControlClient::reply(const std::string& line) {
  busy_ = false;
  if (fd_ < 0) return;
  out_ += line;
  out_ += '\n';
  if (out_.size() > limits_.max_pending_output) {
    close_now();  // the client takes its replies slower than it asks
    return;
  }
  write_once();
}

bool ControlClient::finished() const noexcept {
  if (fd_ < 0) return true;
  return eof_ && !busy_ && out_.empty() && (in_pos_ == in_.size() || discarding_);
}

}  // namespace rtcosim::daemon
