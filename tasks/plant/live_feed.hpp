#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include <boost/lockfree/spsc_queue.hpp>

namespace rtcosim::tasks::plant {

// The most signals one live plant source carries (a datagram's values).
inline constexpr std::size_t kMaxLiveSignals = 64;

// One measured sample: the plant's time tag and a value per signal.
struct LiveRow {
  double time = 0.0;
  std::array<double, kMaxLiveSignals> values{};
};

// A copy of a live source's counters (docs/plant.md defines each).
struct LiveStatus {
  std::string key;                  // "csv:<path>" or "udp:<address>:<port>"
  std::uint64_t good = 0;           // rows or datagrams parsed and handed to the ring
  std::uint64_t malformed = 0;      // rows or datagrams refused
  std::uint64_t ring_full = 0;      // good ones dropped because the frame had not taken the ones before
  std::uint64_t late = 0;           // taken by a frame whose time had already passed them
  std::uint64_t out_of_order = 0;   // not after the newest taken: dropped by the frame
  std::uint64_t sequence_gaps = 0;  // datagrams missing between two sequence numbers (udp)
  std::uint64_t sequence_resets =
      0;  // a sequence number more than io::kMaxSequenceGap ahead: a restart, not losses (udp)
  std::uint64_t too_far_ahead = 0;  // tagged more than max_tag_lead after the taking frame's file time: dropped
  std::uint64_t overflowing = 0;    // a value step from the newest row whose slope overflows: dropped
  std::uint64_t unsent = 0;         // udp_out: datagrams the kernel did not send (no receiver yet, ...)
  std::string last_bad;             // where the last malformed one came from and why
  // Rows taken by a frame, and the median of their age then: the taking
  // frame's simulation time minus the row's time tag (0.25 ms buckets,
  // -1 s .. 1 s; NaN before any). The measured output delay of `sync:
  // {delay: measured}` (docs/sync.md).
  std::uint64_t aged = 0;
  double age_median_s = 0.0;
};

/*
 * LiveTap: what the frames take from one live source, for a replay log
 * (runtime/replay_log.hpp, docs/replay.md). Logging, each row a frame
 * popped goes to `row` and each take ends with `end`; replaying, `replayed`
 * is true and `next` hands a take the logged rows instead of the ring's
 * (false at the end of that take). Set on a source before its consumer's
 * thread starts and cleared after it stopped. RT: every call noexcept and
 * allocation-free.
 */
class LiveTap {
 public:
  virtual ~LiveTap() = default;
  virtual void row(const LiveRow& row, std::size_t signals) noexcept = 0;
  virtual void end() noexcept = 0;
  [[nodiscard]] virtual bool replayed() const noexcept = 0;
  virtual bool next(LiveRow& row, std::size_t signals) noexcept = 0;
};

/*
 * LiveSource: the lock-free single-producer/single-consumer ring through
 * which a receiver (io/plant_receivers.hpp: a CSV file's tail, a UDP socket,
 * each with its own non-real-time thread) hands validated rows to the frames
 * of one `plant` block, and the counters both sides keep. The ring is sized
 * at construction; the producer never waits on the frame (a full ring drops
 * and counts) and the frame never waits on the producer. A source with no
 * producer (a replay's) is a plain LiveSource whose rows come from its tap.
 * Who owns the producer's thread: the receiver that derives from this, held
 * by the blocks through a shared_ptr; the last block to go stops it.
 */
class LiveSource {
 public:
  LiveSource(std::string key, std::size_t signals, std::size_t ring_rows);
  virtual ~LiveSource();
  LiveSource(const LiveSource&) = delete;
  LiveSource& operator=(const LiveSource&) = delete;

  [[nodiscard]] std::size_t signals() const noexcept { return signals_; }
  // RT: the next row, if any.
  bool pop(LiveRow& row) noexcept { return ring_.pop(row); }
  // Set-up, while no frame takes rows: the replay log's tap, or null.
  void set_tap(LiveTap* tap) noexcept { tap_ = tap; }
  [[nodiscard]] LiveTap* tap() const noexcept { return tap_; }
  // RT: counted by the consuming frame.
  void count_late() noexcept { late_.fetch_add(1, std::memory_order_relaxed); }
  void count_out_of_order() noexcept { out_of_order_.fetch_add(1, std::memory_order_relaxed); }
  void count_too_far_ahead() noexcept { ahead_.fetch_add(1, std::memory_order_relaxed); }
  void count_overflowing() noexcept { overflowing_.fetch_add(1, std::memory_order_relaxed); }
  // RT: the age of a row a frame took (frame time - tag), in its bucket.
  void count_age(double age_s) noexcept;
  static constexpr double kAgeBucket = 0.25e-3;     // seconds
  static constexpr std::size_t kAgeBuckets = 8000;  // -1 s .. 1 s
  [[nodiscard]] LiveStatus status() const;
  // RT, for an outgoing source (`udp_out`): the frame hands a row to the
  // sender thread; a full ring drops it and counts it.
  void offer(const LiveRow& row) noexcept { deliver(row); }

 protected:
  // The producer's side (a receiver's thread).
  void deliver(const LiveRow& row) noexcept;
  void reject(std::string where_and_why);
  // A datagram of ours that could not be sent: not malformed input.
  void count_unsent(std::string why);
  void count_gap(std::uint64_t n) noexcept { gaps_.fetch_add(n, std::memory_order_relaxed); }
  void count_sequence_reset() noexcept { resets_.fetch_add(1, std::memory_order_relaxed); }

 private:
  std::string key_;
  std::size_t signals_;
  boost::lockfree::spsc_queue<LiveRow> ring_;
  std::atomic<std::uint64_t> good_{0}, malformed_{0}, ring_full_{0}, late_{0}, out_of_order_{0}, gaps_{0}, unsent_{0},
      resets_{0}, ahead_{0}, overflowing_{0};
  std::array<std::atomic<std::uint32_t>, kAgeBuckets> ages_{};
  mutable std::mutex bad_mutex_;  // producer and reporter only, never a frame
  std::string last_bad_;
  LiveTap* tap_ = nullptr;
};

struct FollowOptions {
  std::string path;
  std::vector<std::string> events;
  std::size_t ring_rows = 1024;
  double poll_s = 0.002;  // how often the tail is read again at the end of the file
};

struct UdpOptions {
  std::string address = "127.0.0.1";  // where to listen
  int port = 0;
  std::vector<std::string> signals;
  std::vector<std::string> allow = {"127.0.0.1"};  // senders accepted (IPv4 addresses)
  std::size_t ring_rows = 1024;
};

struct UdpOutOptions {
  std::string address;  // where to send (IPv4)
  int port = 0;
  std::size_t signals = 0;
  std::size_t ring_rows = 1024;
};

// A live source by kind: what a `plant` block's `source:` (or `udp_out`)
// asks the process's receivers for.
using SourceOptions = std::variant<FollowOptions, UdpOptions, UdpOutOptions>;

// The signals a followed CSV file's header names; throws CsvError when the
// file or its header is missing or wrong (set-up).
std::vector<std::string> follow_header(const FollowOptions& options);

/*
 * LiveReceivers: where a `plant` or `udp_out` block gets its source. The
 * block layer only takes rows from a ring; the threads, sockets and files
 * behind it are io/'s (io::PlantReceivers), which a front end installs for
 * the process before it loads a graph (`rtcosim`, `rtcosimd`, and the tests
 * that run live sources). Sources are shared per key, so that the instances
 * the configuration check makes of a block and the one that runs share one
 * thread and one socket; only one of them may consume. Set-up only: every
 * call may throw (std::runtime_error, CsvError) with what was wrong.
 */
class LiveReceivers {
 public:
  virtual ~LiveReceivers() = default;
  // The source `options` describe, by its kind (the alternative it holds):
  // a followed CSV file, a UDP receiver, or an outgoing source whose rows,
  // offered by the frames, are sent as datagrams. A new kind of source is
  // one more alternative of SourceOptions, not one more member here.
  virtual std::shared_ptr<LiveSource> open(const SourceOptions& options) = 0;
  // A replay (docs/replay.md): from now on the sources made have no thread,
  // socket or file; their rows come from the replay log's taps (and their
  // sender sends nothing).
  virtual void go_offline() noexcept = 0;
  // Every source made and still held, for the summaries and the daemon's status.
  virtual std::vector<LiveStatus> status() = 0;
};

// The process's receivers (null: none; then a live block is refused at load
// with a message that says so). Not owned; the installer keeps them alive
// until it installs null, after the last graph is gone.
void install_receivers(LiveReceivers* receivers) noexcept;
[[nodiscard]] LiveReceivers* installed_receivers() noexcept;

// Through the installed receivers; throws std::runtime_error when none are
// installed.
std::shared_ptr<LiveSource> acquire(const SourceOptions& options);
void replay_offline() noexcept;
// Every live source of the process (empty without receivers).
std::vector<LiveStatus> live_status();

/*
 * LiveHistory: the consuming frame's side: the newest rows taken from the
 * ring, kept in a circular buffer sized at set-up, looked up by time like a
 * recording. RT: `take` and `at` are noexcept and allocate nothing.
 */
class LiveHistory {
 public:
  LiveHistory(std::size_t signals, std::size_t rows);
  // Moves every row the ring holds (with a replaying tap: the logged ones)
  // into the history; `now` is the file time
  // of the frame taking them (a row older than it arrived late). Dropped
  // and counted instead: a row not after the newest (out of order), one
  // tagged more than `max_lead` after `now` (one row tagged 1e300 would
  // otherwise put every later one out of order), and one whose step from
  // the newest row has a slope that overflows (finite values of opposite
  // sign near the largest double, or tags a hair apart): what a frame shows
  // between two kept rows is then always finite.
  void take(LiveSource& source, double now, double max_lead) noexcept;
  // Forgets every row: a new run starts with an empty history.
  void clear() noexcept;
  // Signal s at file time t: linear between rows or held (`hold`), the
  // newest held after it, 0 before any row; `slope` gets d/dt (per file second).
  double at(std::size_t s, double t, bool hold, double& slope) const noexcept;
  // The number of rows taken so far at or before t (a held signal's branch).
  [[nodiscard]] double count_at(double t) const noexcept;

 private:
  [[nodiscard]] std::size_t slot(std::size_t i) const noexcept { return (head_ + i) % capacity_; }
  [[nodiscard]] double time(std::size_t i) const noexcept { return times_[slot(i)]; }
  // One row taken: checked, counted, kept.
  void add(LiveSource& source, double now, double max_lead) noexcept;
  // The last logical index with time <= t, or size_ when none is.
  [[nodiscard]] std::size_t find(double t) const noexcept;

  std::size_t signals_, capacity_;
  std::vector<double> times_;
  std::vector<double> values_;  // slot-major: values_[slot * signals + s]
  std::size_t head_ = 0, size_ = 0;
  std::uint64_t taken_ = 0;
  LiveRow scratch_;
};

}  // namespace rtcosim::tasks::plant
