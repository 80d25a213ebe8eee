#include "tasks/plant/live_feed.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "tasks/plant/csv_table.hpp"

namespace rtcosim::tasks::plant {

LiveSource::LiveSource(std::string key, std::size_t signals, std::size_t ring_rows)
    : key_(std::move(key)), signals_(signals), ring_(ring_rows) {
  if (signals_ == 0 || signals_ > kMaxLiveSignals) {
    throw std::runtime_error(std::to_string(signals_) + " signals — expected 1.." + std::to_string(kMaxLiveSignals));
  }
}

LiveSource::~LiveSource() = default;

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

namespace {
std::atomic<LiveReceivers*> g_receivers{nullptr};

LiveReceivers& receivers() {
  LiveReceivers* r = g_receivers.load(std::memory_order_acquire);
  if (r == nullptr) {
    throw std::runtime_error(
        "live sources need the plant receivers of io/ (io::PlantReceivers), which this program did not install — "
        "run the graph with rtcosim or rtcosimd");
  }
  return *r;
}
}  // namespace

void install_receivers(LiveReceivers* r) noexcept { g_receivers.store(r, std::memory_order_release); }
LiveReceivers* installed_receivers() noexcept { return g_receivers.load(std::memory_order_acquire); }

std::shared_ptr<LiveSource> acquire(const SourceOptions& o) { return receivers().open(o); }

void replay_offline() noexcept {
  if (LiveReceivers* r = installed_receivers()) r->go_offline();
}

std::vector<LiveStatus> live_status() {
  LiveReceivers* r = installed_receivers();
  return r == nullptr ? std::vector<LiveStatus>{} : r->status();
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
