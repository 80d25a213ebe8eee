#include "io/plant_receivers.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <thread>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "io/plant_datagram.hpp"
#include "tasks/plant/csv_table.hpp"

namespace rtcosim::io {

using tasks::plant::CsvHeader;
using tasks::plant::CsvRowParser;
using tasks::plant::FollowOptions;
using tasks::plant::LiveRow;
using tasks::plant::LiveSource;
using tasks::plant::LiveStatus;
using tasks::plant::UdpOptions;
using tasks::plant::UdpOutOptions;

namespace {

// A source with a producer thread: `receive` runs until `stopping()`.
class Receiver : public LiveSource {
 public:
  using LiveSource::LiveSource;

 protected:
  void start() {
    thread_ = std::thread([this] { receive(); });
  }
  // Joins the thread; every derived destructor calls it first, while its
  // members are still there for `receive`.
  void stop() noexcept {
    stop_.store(true, std::memory_order_release);
    if (thread_.joinable()) thread_.join();
  }
  [[nodiscard]] bool stopping() const noexcept { return stop_.load(std::memory_order_acquire); }
  virtual void receive() = 0;

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// A UDP socket bound to (`listen`) or connected to address:port.
int udp_socket(const std::string& address, int port, bool listen) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<std::uint16_t>(port));
  const std::string what = listen ? "listen on" : "send to";
  if (::inet_pton(AF_INET, address.c_str(), &sa.sin_addr) != 1) {
    throw std::runtime_error("'address' = '" + address + "' — expected an IPv4 address to " + what);
  }
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error(std::string("cannot make a UDP socket: ") + std::strerror(errno));
  const auto* addr = reinterpret_cast<const sockaddr*>(&sa);
  if ((listen ? ::bind(fd, addr, sizeof sa) : ::connect(fd, addr, sizeof sa)) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    throw std::runtime_error("cannot " + what + " " + address + ":" + std::to_string(port) + ": " + why);
  }
  return fd;
}

// A followed file's tail: the rows after the header as they are appended.
class CsvFollower final : public Receiver {
 public:
  CsvFollower(const FollowOptions& o, CsvHeader header)
      : Receiver("csv:" + o.path, header.signals.size(), o.ring_rows), options_(o), rows_(std::move(header)) {
    start();
  }
  ~CsvFollower() override { stop(); }

 private:
  static constexpr std::size_t kMaxLine = 64 * 1024;

  void receive() override {
    const int fd = ::open(options_.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      reject(options_.path + ": cannot open: " + std::strerror(errno));
      return;
    }
    std::string pending;
    bool header_seen = false, discarding = false;
    std::size_t line_no = 0;
    LiveRow row;
    std::string why;
    char chunk[16384];
    while (!stopping()) {
      const ssize_t n = ::read(fd, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        std::this_thread::sleep_for(std::chrono::duration<double>(options_.poll_s));
        continue;
      }
      std::size_t start = 0;
      for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i) {
        if (chunk[i] != '\n') continue;
        pending.append(chunk + start, i - start);
        start = i + 1;
        ++line_no;
        if (discarding) {
          discarding = false;
          reject(options_.path + ":" + std::to_string(line_no) + ": longer than " + std::to_string(kMaxLine) +
                 " bytes — expected one row per line");
        } else if (!tasks::plant::csv_skipped(pending)) {
          if (!header_seen) {
            header_seen = true;  // checked when the block was made
          } else {
            std::size_t column = 0;
            if (rows_.parse(pending, row.time, std::span<double>(row.values.data(), signals()), why, column)) {
              deliver(row);
            } else {
              reject(options_.path + ":" + std::to_string(line_no) + ":" + std::to_string(column) + ": " + why);
            }
          }
        }
        pending.clear();
      }
      pending.append(chunk + start, static_cast<std::size_t>(n) - start);
      if (pending.size() > kMaxLine) {
        pending.clear();
        discarding = true;
      }
    }
    ::close(fd);
  }

  FollowOptions options_;
  CsvRowParser rows_;
};

class UdpReceiver final : public Receiver {
 public:
  explicit UdpReceiver(const UdpOptions& o)
      : Receiver("udp:" + o.address + ":" + std::to_string(o.port), o.signals.size(), o.ring_rows) {
    for (const auto& a : o.allow) {
      in_addr addr{};
      if (::inet_pton(AF_INET, a.c_str(), &addr) != 1) {
        throw std::runtime_error("'allow' names '" + a + "' — expected IPv4 addresses such as 192.0.2.7");
      }
      allow_.push_back(addr.s_addr);
    }
    fd_ = udp_socket(o.address, o.port, true);
    start();
  }
  ~UdpReceiver() override {
    stop();
    ::close(fd_);
  }

 private:
  void receive() override {
    unsigned char buf[kMaxDatagram + 1];  // one more: a longer datagram shows as truncated
    Datagram d;
    LiveRow row;
    std::uint64_t next_sequence = 0;
    bool any = false;
    while (!stopping()) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;  // wakes to see `stopping`
      sockaddr_in from{};
      socklen_t len = sizeof from;
      const ssize_t n = ::recvfrom(fd_, buf, sizeof buf, MSG_TRUNC, reinterpret_cast<sockaddr*>(&from), &len);
      if (n < 0) continue;
      char text[INET_ADDRSTRLEN] = "?";
      ::inet_ntop(AF_INET, &from.sin_addr, text, sizeof text);
      const std::string sender = std::string(text) + ":" + std::to_string(ntohs(from.sin_port));
      if (std::find(allow_.begin(), allow_.end(), from.sin_addr.s_addr) == allow_.end()) {
        reject(sender + ": sender not in 'allow'");
        continue;
      }
      const std::size_t size = static_cast<std::size_t>(n);
      const std::string why = size > kMaxDatagram
                                  ? std::to_string(size) + " bytes — expected at most " + std::to_string(kMaxDatagram)
                                  : decode_datagram(std::span<const unsigned char>(buf, size), signals(), d);
      if (!why.empty()) {
        reject(sender + ": " + why);
        continue;
      }
      if (any && d.sequence > next_sequence) {
        if (d.sequence - next_sequence > kMaxSequenceGap) {
          count_sequence_reset();
        } else {
          count_gap(d.sequence - next_sequence);
        }
      }
      any = true;
      next_sequence = d.sequence + 1;
      row.time = d.time;
      std::copy(d.values, d.values + d.count, row.values.begin());
      deliver(row);
    }
  }

  int fd_ = -1;
  std::vector<std::uint32_t> allow_;
};

// The frames' rows sent as datagrams to one address, in order, with a
// sequence number per datagram.
class UdpSender final : public Receiver {
 public:
  explicit UdpSender(const UdpOutOptions& o)
      : Receiver("udp_out:" + o.address + ":" + std::to_string(o.port), o.signals, o.ring_rows) {
    fd_ = udp_socket(o.address, o.port, false);
    start();
  }
  ~UdpSender() override {
    stop();
    ::close(fd_);
  }

 private:
  void receive() override {
    unsigned char buf[kMaxDatagram];
    LiveRow row;
    std::uint64_t sequence = 0;
    while (true) {
      if (!pop(row)) {
        if (stopping()) return;  // after the last row offered
        std::this_thread::sleep_for(std::chrono::microseconds(500));
        continue;
      }
      const std::size_t n =
          encode_datagram(sequence++, row.time, std::span<const double>(row.values.data(), signals()), buf);
      // A refused send (no one listening yet: ECONNREFUSED) is counted, never retried.
      if (::send(fd_, buf, n, 0) != static_cast<ssize_t>(n))
        count_unsent(std::string("send failed: ") + std::strerror(errno));
    }
  }

  int fd_ = -1;
};

}  // namespace

std::string decode_datagram(std::span<const unsigned char> b, std::size_t expected, Datagram& out) {
  const std::size_t want = kDatagramHeader + 8 * expected;
  if (b.size() < kDatagramHeader) {
    return std::to_string(b.size()) + " bytes — shorter than the 24-byte header";
  }
  if (detail::get<std::uint32_t>(b.data()) != kDatagramMagic) return "wrong magic — expected 0x50435452 (\"RTCP\")";
  const auto version = detail::get<std::uint16_t>(b.data() + 4);
  if (version != kDatagramVersion) return "version " + std::to_string(version) + " — expected 1";
  out.count = detail::get<std::uint16_t>(b.data() + 6);
  if (out.count != expected) {
    return "count " + std::to_string(out.count) + " — expected " + std::to_string(expected) + " (the block's signals)";
  }
  if (b.size() != want)
    return std::to_string(b.size()) + " bytes — expected " + std::to_string(want) + " for the count";
  out.sequence = detail::get<std::uint64_t>(b.data() + 8);
  out.time = detail::get<double>(b.data() + 16);
  if (!std::isfinite(out.time)) return "time tag not finite — expected a finite time";
  for (std::size_t i = 0; i < out.count; ++i) {
    out.values[i] = detail::get<double>(b.data() + kDatagramHeader + 8 * i);
    if (!std::isfinite(out.values[i])) return "value " + std::to_string(i) + " not finite — expected finite values";
  }
  return {};
}

PlantReceivers::PlantReceivers() {
  if (tasks::plant::installed_receivers() != nullptr) {
    throw std::logic_error("a second io::PlantReceivers while the first is installed: one per process");
  }
  tasks::plant::install_receivers(this);
}

PlantReceivers::~PlantReceivers() { tasks::plant::install_receivers(nullptr); }

template <typename Make>
std::shared_ptr<LiveSource> PlantReceivers::acquire(const std::string& key, Make make, std::size_t signals) {
  std::lock_guard lock(mutex_);
  if (offline_) {
    const std::string offline = "replay:" + key;
    if (auto made = sources_[offline].lock()) return made;
    // A replay's source: no thread, no socket, no file; its frames take the
    // logged rows through the tap.
    auto made = std::make_shared<LiveSource>(key, signals, 2);
    sources_[offline] = made;
    return made;
  }
  if (auto running = sources_[key].lock()) return running;
  std::shared_ptr<LiveSource> made = make();
  sources_[key] = made;
  return made;
}

std::shared_ptr<LiveSource> PlantReceivers::open(const tasks::plant::SourceOptions& options) {
  return std::visit([this](const auto& o) { return open_kind(o); }, options);
}

std::shared_ptr<LiveSource> PlantReceivers::open_kind(const FollowOptions& o) {
  const auto signals = tasks::plant::follow_header(o);
  return acquire(
      "csv:" + o.path,
      [&] {
        std::string why;
        std::size_t column = 0;
        std::string header = "t";
        for (const auto& s : signals) header += "," + s;
        return std::make_shared<CsvFollower>(o, CsvHeader::parse(header, o.events, why, column));
      },
      signals.size());
}

std::shared_ptr<LiveSource> PlantReceivers::open_kind(const UdpOptions& o) {
  return acquire(
      "udp:" + o.address + ":" + std::to_string(o.port), [&] { return std::make_shared<UdpReceiver>(o); },
      o.signals.size());
}

std::shared_ptr<LiveSource> PlantReceivers::open_kind(const UdpOutOptions& o) {
  return acquire(
      "udp_out:" + o.address + ":" + std::to_string(o.port), [&] { return std::make_shared<UdpSender>(o); }, o.signals);
}

void PlantReceivers::go_offline() noexcept {
  std::lock_guard lock(mutex_);
  offline_ = true;
}

std::vector<LiveStatus> PlantReceivers::status() {
  std::vector<LiveStatus> out;
  std::lock_guard lock(mutex_);
  for (auto it = sources_.begin(); it != sources_.end();) {
    if (auto s = it->second.lock()) {
      out.push_back(s->status());
      ++it;
    } else {
      it = sources_.erase(it);
    }
  }
  return out;
}

}  // namespace rtcosim::io
