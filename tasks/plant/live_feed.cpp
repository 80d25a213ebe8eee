#include "tasks/plant/live_feed.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <stdexcept>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tasks/plant/csv_table.hpp"
#include "tasks/plant/plant_datagram.hpp"

namespace rtcosim::tasks::plant {

namespace {

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, std::weak_ptr<LiveSource>>& registry() {
  static std::map<std::string, std::weak_ptr<LiveSource>> r;
  return r;
}

std::atomic<bool> g_offline{false};

// A replay's source: no thread, no socket, no file; its frames take the
// logged rows through the tap.
class Offline final : public LiveSource {
 public:
  Offline(const std::string& key, std::size_t signals) : LiveSource(key, signals, 2) {}

 private:
  void receive() override {}
};

template <typename Make>
std::shared_ptr<LiveSource> acquire(const std::string& key, Make make, std::size_t signals) {
  std::lock_guard lock(registry_mutex());
  if (g_offline.load()) {
    const std::string offline = "replay:" + key;
    if (auto made = registry()[offline].lock()) return made;
    auto made = std::make_shared<Offline>(key, signals);
    registry()[offline] = made;
    return made;
  }
  if (auto running = registry()[key].lock()) return running;
  std::shared_ptr<LiveSource> made = make();
  registry()[key] = made;
  return made;
}

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
class CsvFollower final : public LiveSource {
 public:
  CsvFollower(const FollowOptions& o, CsvHeader header)
      : LiveSource("csv:" + o.path, header.signals.size(), o.ring_rows), options_(o), rows_(std::move(header)) {
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
        } else if (!csv_skipped(pending)) {
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

class UdpReceiver final : public LiveSource {
 public:
  explicit UdpReceiver(const UdpOptions& o)
      : LiveSource("udp:" + o.address + ":" + std::to_string(o.port), o.signals.size(), o.ring_rows) {
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
class UdpSender final : public LiveSource {
 public:
  explicit UdpSender(const UdpOutOptions& o)
      : LiveSource("udp_out:" + o.address + ":" + std::to_string(o.port), o.signals, o.ring_rows) {
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

LiveSource::LiveSource(std::string key, std::size_t signals, std::size_t ring_rows)
    : key_(std::move(key)), signals_(signals), ring_(ring_rows) {
  if (signals_ == 0 || signals_ > kMaxLiveSignals) {
    throw std::runtime_error(std::to_string(signals_) + " signals — expected 1.." + std::to_string(kMaxLiveSignals));
  }
}

LiveSource::~LiveSource() = default;

void LiveSource::start() {
  thread_ = std::thread([this] { receive(); });
}

void LiveSource::stop() {
  stop_.store(true, std::memory_order_release);
  if (thread_.joinable()) thread_.join();
}

void LiveSource::deliver(const LiveRow& row) noexcept {
  if (ring_.push(row)) {
    good_.fetch_add(1, std::memory_order_relaxed);
  } else {
    ring_full_.fetch_add(1, std::memory_order_relaxed);
  }
}

void LiveSource::reject(std::string where_and_why) {
  malformed_.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard lock(bad_mutex_);
  last_bad_ = std::move(where_and_why);
}

void LiveSource::count_unsent(std::string why) {
  unsent_.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard lock(bad_mutex_);
  last_bad_ = std::move(why);
}

void LiveSource::count_age(double age_s) noexcept {
  if (!std::isfinite(age_s)) return;
  const double at = std::floor(age_s / kAgeBucket) + static_cast<double>(kAgeBuckets / 2);
  const auto b = static_cast<std::size_t>(std::clamp(at, 0.0, static_cast<double>(kAgeBuckets - 1)));
  ages_[b].fetch_add(1, std::memory_order_relaxed);
}

LiveStatus LiveSource::status() const {
  LiveStatus s;
  std::uint64_t total = 0;
  for (const auto& a : ages_) total += a.load(std::memory_order_relaxed);
  s.aged = total;
  s.age_median_s = std::nan("");
  std::uint64_t seen = 0;
  for (std::size_t b = 0; b < kAgeBuckets && total > 0; ++b) {
    seen += ages_[b].load(std::memory_order_relaxed);
    if (2 * seen >= total) {
      // The bucket's centre.
      s.age_median_s = (static_cast<double>(b) - static_cast<double>(kAgeBuckets / 2) + 0.5) * kAgeBucket;
      break;
    }
  }
  s.key = key_;
  s.good = good_.load(std::memory_order_relaxed);
  s.malformed = malformed_.load(std::memory_order_relaxed);
  s.ring_full = ring_full_.load(std::memory_order_relaxed);
  s.late = late_.load(std::memory_order_relaxed);
  s.out_of_order = out_of_order_.load(std::memory_order_relaxed);
  s.sequence_gaps = gaps_.load(std::memory_order_relaxed);
  s.sequence_resets = resets_.load(std::memory_order_relaxed);
  s.too_far_ahead = ahead_.load(std::memory_order_relaxed);
  s.overflowing = overflowing_.load(std::memory_order_relaxed);
  s.unsent = unsent_.load(std::memory_order_relaxed);
  std::lock_guard lock(bad_mutex_);
  s.last_bad = last_bad_;
  return s;
}

std::vector<std::string> follow_header(const FollowOptions& o) {
  (void)regular_file_size(o.path);
  std::ifstream in(o.path, std::ios::binary);
  if (!in)
    throw CsvError(o.path + ": cannot read the file: " + std::strerror(errno) +
                   " — a followed file must exist with its header when the graph is built");
  // The header is looked for in the first MiB only: a file of one endless
  // line is refused, not read into memory.
  std::string text(1u << 20, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  std::size_t line_no = 0, pos = 0;
  while (pos < text.size()) {
    const std::size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) break;  // an unfinished line is no header yet
    const std::string_view line(text.data() + pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    if (csv_skipped(line)) continue;
    std::string why;
    std::size_t column = 0;
    CsvHeader h = CsvHeader::parse(line, o.events, why, column);
    if (h.signals.empty()) {
      throw CsvError(o.path + ":" + std::to_string(line_no) + ":" + std::to_string(column) + ": " + why);
    }
    return h.signals;
  }
  throw CsvError(o.path +
                 ": no header line yet — a followed file must hold 'time,<signal>,...' when the graph is built");
}

std::shared_ptr<LiveSource> acquire_follow(const FollowOptions& o) {
  const auto signals = follow_header(o);
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

std::shared_ptr<LiveSource> acquire_udp(const UdpOptions& o) {
  return acquire(
      "udp:" + o.address + ":" + std::to_string(o.port), [&] { return std::make_shared<UdpReceiver>(o); },
      o.signals.size());
}

std::shared_ptr<LiveSource> acquire_udp_out(const UdpOutOptions& o) {
  return acquire(
      "udp_out:" + o.address + ":" + std::to_string(o.port), [&] { return std::make_shared<UdpSender>(o); }, o.signals);
}

void replay_offline() noexcept { g_offline.store(true); }

std::vector<LiveStatus> live_status() {
  std::vector<LiveStatus> out;
  std::lock_guard lock(registry_mutex());
  for (auto it = registry().begin(); it != registry().end();) {
    if (auto s = it->second.lock()) {
      out.push_back(s->status());
      ++it;
    } else {
      it = registry().erase(it);
    }
  }
  return out;
}

LiveHistory::LiveHistory(std::size_t signals, std::size_t rows)
    : signals_(signals), capacity_(std::max<std::size_t>(rows, 2)), times_(capacity_), values_(capacity_ * signals) {}

void LiveHistory::take(LiveSource& source, double now, double max_lead) noexcept {
  LiveTap* tap = source.tap();
  if (tap != nullptr && tap->replayed()) {
    while (tap->next(scratch_, signals_)) add(source, now, max_lead);
    return;
  }
  while (source.pop(scratch_)) {
    if (tap != nullptr) tap->row(scratch_, signals_);
    add(source, now, max_lead);
  }
  if (tap != nullptr) tap->end();
}

void LiveHistory::add(LiveSource& source, double now, double max_lead) noexcept {
  if (size_ > 0 && !(scratch_.time > time(size_ - 1))) {
    source.count_out_of_order();
    return;
  }
  if (scratch_.time - now > max_lead) {
    source.count_too_far_ahead();
    return;
  }
  if (size_ > 0) {
    const double dt = scratch_.time - time(size_ - 1);
    const double* newest = values_.data() + slot(size_ - 1) * signals_;
    bool finite = true;
    for (std::size_t s = 0; s < signals_; ++s) finite = finite && std::isfinite((scratch_.values[s] - newest[s]) / dt);
    if (!finite) {
      source.count_overflowing();
      return;
    }
  }
  if (scratch_.time < now) source.count_late();
  source.count_age(now - scratch_.time);
  if (size_ == capacity_) {
    head_ = (head_ + 1) % capacity_;  // the oldest row makes room
    --size_;
  }
  const std::size_t at = slot(size_);
  times_[at] = scratch_.time;
  std::copy(scratch_.values.begin(), scratch_.values.begin() + static_cast<std::ptrdiff_t>(signals_),
            values_.begin() + static_cast<std::ptrdiff_t>(at * signals_));
  ++size_;
  ++taken_;
}

void LiveHistory::clear() noexcept {
  head_ = 0;
  size_ = 0;
  taken_ = 0;
}

std::size_t LiveHistory::find(double t) const noexcept {
  std::size_t lo = 0, hi = size_;  // first index with time > t
  while (lo < hi) {
    const std::size_t mid = (lo + hi) / 2;
    if (time(mid) <= t) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo == 0 ? size_ : lo - 1;
}

double LiveHistory::at(std::size_t s, double t, bool hold, double& slope) const noexcept {
  slope = 0.0;
  if (size_ == 0) return 0.0;
  std::size_t r = find(t);
  if (r == size_) r = 0;  // before the oldest row kept: it holds
  const double v = values_[slot(r) * signals_ + s];
  if (hold || r + 1 >= size_ || t < time(r)) return v;
  const double next = values_[slot(r + 1) * signals_ + s];
  slope = (next - v) / (time(r + 1) - time(r));  // finite: take() keeps no row whose slope is not
  // Between the two rows' values, also where rounding would step past one.
  return std::clamp(v + slope * (t - time(r)), std::min(v, next), std::max(v, next));
}

double LiveHistory::count_at(double t) const noexcept {
  const std::size_t r = find(t);
  const std::size_t before = static_cast<std::size_t>(taken_) - size_;
  return static_cast<double>(r == size_ ? before : before + r + 1);
}

}  // namespace rtcosim::tasks::plant
