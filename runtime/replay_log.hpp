#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <boost/lockfree/spsc_queue.hpp>

#include "runtime/frame_log.hpp"
#include "runtime/graph.hpp"
#include "runtime/recorder.hpp"
#include "runtime/thread_unit.hpp"
#include "tasks/block_registry.hpp"
#include "tasks/diagram.hpp"
#include "tasks/plant/live_feed.hpp"

namespace rtcosim::runtime {

/*
 * The replay log's words (docs/replay.md, "The log"): everything a run's
 * frame loops (run_unit) took from outside, per thread in the order they
 * took it, one 64-bit word each:
 *
 *   time   every clock reading, ns since the epoch (biased by 2^59)
 *   drain  a frame took `count` blocks from input bundle `index` of
 *          member `member` (absent: none)
 *   drop   member's output bundle `index` found its ring full
 *   row    a row a frame took from live plant source `index`, then its
 *          time and values as raw words; `taken` ends each take
 *   block  a block member's input bundle `index` drained from another
 *          host (a remote link), then the block as raw words
 *   lost   member's recorder sample (index 0) or frame-table row (1) was
 *          dropped by its full ring
 *
 * A frame is "time(start) drain* time(integration point) drop* time(end)";
 * a cycle adds the readings before it (the loop's top, after the sleep).
 * Replaying the readings through the same loop gives the same wake-ups,
 * steps, overruns and statistics; replaying the drains gives every frame
 * the blocks it saw.
 */
namespace replay_word {
enum Kind : std::uint64_t { kTime = 1, kDrain = 2, kDrop = 3, kRow = 4, kTaken = 5, kBlock = 6, kLost = 7 };
// What a `lost` word's index names: the sink whose full ring lost the frame's entry.
inline constexpr std::size_t kLostSample = 0, kLostFrameRow = 1;
inline constexpr std::int64_t kTimeBias = std::int64_t{1} << 59;
inline constexpr std::uint64_t kMemberLimit = 1u << 12, kIndexLimit = 1u << 16;

[[nodiscard]] constexpr Kind kind(std::uint64_t w) noexcept { return static_cast<Kind>(w >> 60); }
[[nodiscard]] constexpr std::uint64_t time(std::int64_t ns) noexcept {
  return (std::uint64_t{kTime} << 60) | (static_cast<std::uint64_t>(ns + kTimeBias) & ((std::uint64_t{1} << 60) - 1));
}
[[nodiscard]] constexpr std::int64_t time_of(std::uint64_t w) noexcept {
  return static_cast<std::int64_t>(w & ((std::uint64_t{1} << 60) - 1)) - kTimeBias;
}
[[nodiscard]] constexpr std::uint64_t drain(std::size_t member, std::size_t index, std::uint32_t count) noexcept {
  return (std::uint64_t{kDrain} << 60) | (static_cast<std::uint64_t>(member) << 48) |
         (static_cast<std::uint64_t>(index) << 32) | count;
}
[[nodiscard]] constexpr std::uint64_t drop(std::size_t member, std::size_t index) noexcept {
  return (std::uint64_t{kDrop} << 60) | (static_cast<std::uint64_t>(member) << 48) |
         (static_cast<std::uint64_t>(index) << 32);
}
// A row a frame took from live source `source`, followed by `words` raw
// words (its time and its values, the doubles' bits); `taken` ends a take.
[[nodiscard]] constexpr std::uint64_t row(std::size_t source, std::uint32_t words) noexcept {
  return (std::uint64_t{kRow} << 60) | (static_cast<std::uint64_t>(source) << 32) | words;
}
[[nodiscard]] constexpr std::uint64_t taken(std::size_t source) noexcept {
  return (std::uint64_t{kTaken} << 60) | (static_cast<std::uint64_t>(source) << 32);
}
// A block member's input bundle `index` drained from a producer on another
// host, followed by `words` raw words: tag, producer step, sequence,
// discontinuity, payload (the doubles' bits).
[[nodiscard]] constexpr std::uint64_t block(std::size_t member, std::size_t index, std::uint32_t words) noexcept {
  return (std::uint64_t{kBlock} << 60) | (static_cast<std::uint64_t>(member) << 48) |
         (static_cast<std::uint64_t>(index) << 32) | words;
}
[[nodiscard]] constexpr std::uint64_t lost(std::size_t member, std::size_t sink) noexcept {
  return (std::uint64_t{kLost} << 60) | (static_cast<std::uint64_t>(member) << 48) |
         (static_cast<std::uint64_t>(sink) << 32);
}
[[nodiscard]] constexpr std::size_t member_of(std::uint64_t w) noexcept { return (w >> 48) & 0xfff; }
[[nodiscard]] constexpr std::size_t index_of(std::uint64_t w) noexcept { return (w >> 32) & 0xffff; }
[[nodiscard]] constexpr std::uint32_t count_of(std::uint64_t w) noexcept { return static_cast<std::uint32_t>(w); }
}  // namespace replay_word

// Per task of a thread, its input and output bundles in the order the log's
// drain and drop words index them: the task at the other end and the wires'
// sources ("block.port"). A what-if replay, whose changed methods may bundle
// the wires differently, finds each of its bundles' counts in the logged
// bundle that carried its first wire.
struct ReplayBundle {
  std::string task;
  std::vector<std::string> sources;
};
struct ReplayMemberLinks {
  std::vector<ReplayBundle> inputs, outputs;
};
ReplayMemberLinks replay_member_links(const TaskRuntime& task);

// A live plant source of a graph as a replay log names it: the thread
// (thread_units order) whose frames take its rows, the block, its signals;
// `source` is the graph's (null in a log read back).
struct ReplaySource {
  std::size_t unit = 0;
  std::string block;
  std::size_t signals = 0;
  tasks::plant::LiveSource* source = nullptr;
};
std::vector<ReplaySource> replay_sources(Graph& graph);

/*
 * ReplayLog: the writer of a replay log. Each thread of the run puts its
 * words into its own lock-free ring (wait-free, allocation-free: the
 * real-time path); one non-real-time thread, the run's drainer, moves them
 * to the file and marks where it drained the recording (so that a replay
 * writes its recording in the same batches, byte for byte). A full ring
 * drops words and counts them: the log then says it is incomplete and a
 * replay refuses it. `open` writes under a temporary name that takes the
 * file's place in `finish`; `adopt` writes in place into a descriptor the
 * caller opened (the daemon, confined to its recording directory), where
 * a file without its trailer tells that the run did not end cleanly.
 * `rotate` continues the log in another file (the daemon's rotation): each
 * file ends by naming the next, and a replay reads them in order.
 */
class ReplayLog {
 public:
  // What the header holds: the graph file (its absolute path, and the
  // SHA-256 of its bytes), the run's end (ns after the epoch; 0: until
  // stopped) and what kind of run it was ("real time").
  struct Header {
    std::string graph_file;
    std::string graph_sha256;
    std::int64_t end_ns = 0;
    std::string mode;
    std::string host;  // the host this process ran (--host; "" for the whole graph)
    // The graph's data files (a plant's CSV table, an FMU): "block.param"
    // and the SHA-256 of the file's bytes (replay_data_files).
    std::vector<std::pair<std::string, std::string>> files;
  };
  // Set-up: one ring per thread of the graph (thread_units order), sized
  // for about a second of its frames at the most words a cycle can put
  // (at least 2^13 words).
  ReplayLog(Graph& graph, const std::string& path, Header header);
  ~ReplayLog();
  ReplayLog(const ReplayLog&) = delete;
  ReplayLog& operator=(const ReplayLog&) = delete;

  // False (and `why`) when the file cannot be created.
  [[nodiscard]] bool open(std::string* why);
  // Set-up, right before the run's reset: taps the live plant sources (the
  // rows the reset's output evaluations take come from outside too). Not at
  // construction: a caller may reset the graph between (a configuration
  // check), and those takes are no frame's.
  void tap_sources() noexcept;
  // Set-up, after the run's reset and before the threads start: taps the
  // links from other hosts (their blocks go into the log as drained; the
  // reset's drains took what this process computed itself).
  void tap_links() noexcept;
  // Writes into `fd` (owned from now on) in place; `path` names it.
  [[nodiscard]] bool adopt(int fd, std::string path, std::string* why);
  // The drainer: ends the current file, naming the next one, and goes on in
  // `fd` (a file in the same directory; owned from now on). False (and
  // `why`) when a write failed; the log is then closed.
  [[nodiscard]] bool rotate(int fd, std::string path, std::string* why);
  [[nodiscard]] const std::string& path() const noexcept { return path_; }

  // A thread of the run.
  void put(std::size_t unit, std::uint64_t word) noexcept {
    Channel& c = *channels_[unit];
    if (!c.ring.push(word)) c.dropped.fetch_add(1, std::memory_order_relaxed);
  }

  // The drainer: moves the rings' words to the file; then, with counts, a
  // batch mark: per recorded task the samples the recording holds so far,
  // per task the frame rows (docs/replay.md).
  void drain(std::span<const std::uint64_t> recorded = {}, std::span<const std::uint64_t> frame_rows = {});
  // After the threads stopped: drains, writes the trailer and puts the file
  // in place. False (and `why`) when writing failed or words were dropped.
  bool finish(std::string* why);

  [[nodiscard]] std::uint64_t words() const noexcept { return words_; }
  [[nodiscard]] std::uint64_t bytes() const noexcept { return bytes_; }
  [[nodiscard]] std::uint64_t dropped() const noexcept;

 private:
  struct Channel {
    explicit Channel(std::size_t n) : ring(n) {}
    boost::lockfree::spsc_queue<std::uint64_t> ring;
    std::atomic<std::uint64_t> dropped{0};
  };
  void write_raw(const void* data, std::size_t n);
  // The file cannot be trusted from here on; keeps the first errno.
  void fail() noexcept;
  void write_u32(std::uint32_t v) { write_raw(&v, 4); }
  void write_u64(std::uint64_t v) { write_raw(&v, 8); }
  void write_text(const std::string& s);
  bool attach(int fd, std::string path, bool in_place, std::string* why);
  bool write_header(std::string* why);
  bool close_file(std::string* why);

  std::string path_, temp_;
  Header header_;
  std::vector<std::vector<std::string>> unit_tasks_;
  std::vector<std::vector<ReplayMemberLinks>> unit_links_;
  std::vector<std::unique_ptr<Channel>> channels_;
  // The live plant sources, each tapped while this log exists.
  class Tap;
  std::vector<ReplaySource> sources_;
  std::vector<std::unique_ptr<Tap>> taps_;
  // The links from other hosts, each tapped while this log exists.
  class LinkTap;
  std::vector<std::unique_ptr<LinkTap>> link_taps_;
  std::vector<coupling::Link*> tapped_links_;
  std::vector<std::uint64_t> scratch_;
  std::FILE* out_ = nullptr;
  bool in_place_ = false;
  std::uint32_t segment_ = 0;
  std::uint64_t run_id_ = 0;  // random, in every file of the log
  bool failed_ = false;
  int errno_ = 0;  // of the first write, flush, sync or close that failed
  std::uint64_t words_ = 0, bytes_ = 0;
};

// Per data file of the graph (a block parameter documented as a path that
// names a regular file; a followed CSV file, whose rows the log holds, is
// left out): "block.param" and the SHA-256 of its bytes. Set-up; reads the
// files whole (a file that cannot be read gets "unreadable: <why>").
std::vector<std::pair<std::string, std::string>> replay_data_files(const tasks::DiagramSpec& diagram,
                                                                   const tasks::BlockRegistry& blocks);

// A task with more input or output bundles than this cannot be logged
// (replay_log_refusal says so before the run).
inline constexpr std::size_t kReplayMaxBundles = 256;

/*
 * LoggedClock: a clock that passes every reading, drain and publish of one
 * thread's frames to a ReplayLog as it does them. run_unit with it is the
 * real-time loop plus one ring push per word.
 */
template <class Inner>
struct LoggedClock {
  Inner& inner;
  ReplayLog& log;
  std::size_t unit;
  std::int64_t epoch_ns;

  std::int64_t now() noexcept {
    const std::int64_t t = inner.now();
    log.put(unit, replay_word::time(t - epoch_ns));
    return t;
  }
  void sleep_until(std::int64_t deadline_ns) noexcept { inner.sleep_until(deadline_ns); }
  void before_integration(const TaskRuntime& t, std::uint64_t k) noexcept { inner.before_integration(t, k); }
  void drain(TaskRuntime& t, std::size_t member) noexcept {
    const auto& bundles = t.inputs().bundles();
    // The counters before and after: what this frame took per bundle.
    std::uint64_t before[kMaxBundlesOnStack];
    const std::size_t n = bundles.size() < kMaxBundlesOnStack ? bundles.size() : kMaxBundlesOnStack;
    for (std::size_t i = 0; i < n; ++i) before[i] = bundles[i]->link->consumed();
    t.drain();
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint64_t took = bundles[i]->link->consumed() - before[i];
      if (took > 0) log.put(unit, replay_word::drain(member, i, static_cast<std::uint32_t>(took)));
    }
  }
  void publish(TaskRuntime& t, std::size_t member) noexcept {
    auto& outputs = t.outputs();
    std::uint64_t before[kMaxBundlesOnStack];
    const std::size_t n = outputs.size() < kMaxBundlesOnStack ? outputs.size() : kMaxBundlesOnStack;
    for (std::size_t i = 0; i < n; ++i) before[i] = outputs[i].bundle->link->dropped();
    t.publish();
    for (std::size_t i = 0; i < n; ++i) {
      if (outputs[i].bundle->link->dropped() != before[i]) log.put(unit, replay_word::drop(member, i));
    }
  }
  void sample(const TaskRuntime& t, std::size_t member, Recorder& recorder) noexcept {
    if (!recorder.sample(t)) log.put(unit, replay_word::lost(member, replay_word::kLostSample));
  }
  void add_row(std::size_t member, FrameLog& frames, std::size_t task, const FrameRow& row) noexcept {
    if (!frames.add(task, row)) log.put(unit, replay_word::lost(member, replay_word::kLostFrameRow));
  }
  static constexpr std::size_t kMaxBundlesOnStack = kReplayMaxBundles;
};

// Why a graph's run cannot be logged for replay, or empty: a live
// synchronisation posts parameters on a wall-clock schedule, a task with
// more than 256 input or output bundles overflows the logger's counters.
std::string replay_log_refusal(Graph& graph);

// A log's readings may claim a run of at most this many periods of a
// thread per cycle its words can hold (docs/replay.md, "What a log may
// claim"; ReplayExecutor::claim_refusal).
inline constexpr std::uint64_t kReplayPeriodsPerCycle = 10;

/*
 * ReplayRecord: a replay log read back, checked for completeness (the
 * trailer, no dropped words). Only regular files are read (the first one
 * and every one a chain goes on in; a chain's are not symbolic links).
 * Set-up code: throws std::runtime_error naming the file and what is wrong.
 */
struct ReplayRecord {
  ReplayLog::Header header;
  std::vector<std::string> files;                          // the log's files, in order (rotated: more than one)
  std::vector<std::vector<std::string>> unit_tasks;        // per thread, its tasks' names
  std::vector<std::vector<ReplayMemberLinks>> unit_links;  // per thread, per task
  std::vector<ReplaySource> sources;                       // the live plant sources (no `source`)
  std::vector<std::vector<std::uint64_t>> words;           // per thread
  // The drainer's batch marks, in order: cumulative counts.
  struct Batch {
    std::vector<std::uint64_t> recorded, frame_rows;
  };
  std::vector<Batch> batches;
  std::int64_t last_ns = 0;  // the last reading of any thread (ns after the epoch)

  // `path` and the files it continues in (each named by the one before, in
  // the same directory).
  static ReplayRecord load(const std::string& path);
  // Seconds after the epoch the run covered: its end, or the last reading
  // of a run that was stopped.
  [[nodiscard]] double duration() const noexcept;
};

}  // namespace rtcosim::runtime
