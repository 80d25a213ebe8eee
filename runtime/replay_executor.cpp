#include "runtime/replay_executor.hpp"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdio>
#include <limits>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "base/duration.hpp"
#include "runtime/unit_loop.hpp"

namespace rtcosim::runtime {

namespace {

// What the replaying threads share: the first failure (then every thread
// stops) and a progress count that tells a wait for a block that will come
// from one that never will.
struct Shared {
  std::atomic<bool> abort{false};
  std::atomic<std::uint64_t> progress{0};
  std::mutex mutex;
  std::string error;
  void fail(const std::string& why) {
    std::lock_guard lock(mutex);
    if (error.empty()) error = why;
    abort.store(true);
  }
};

using BundleMap = ReplayExecutor::BundleMap;

// A thread's clock in a replay: the logged readings, in order.
class ReplayClock {
 public:
  ReplayClock(const std::vector<std::uint64_t>& words, std::vector<BundleMap> maps, std::atomic<bool>& running,
              Shared& shared, std::string name, const ThreadUnit& unit, ReplayExecutor::Timings* timings,
              UnitSinks sinks)
      : words_(words),
        maps_(std::move(maps)),
        running_(running),
        shared_(shared),
        name_(std::move(name)),
        unit_(unit),
        timings_(timings),
        skip_lost_samples_(sinks.recorder == nullptr),
        skip_lost_rows_(sinks.frame_log == nullptr) {
    gate_.clock = this;
  }

  std::int64_t now() noexcept {
    if (shared_.abort.load(std::memory_order_relaxed)) return stop();
    // The run's drops of a sink this replay does not have (a replay without
    // --frames of a run whose frame table overflowed): nothing to repeat.
    while (pos_ < words_.size() && replay_word::kind(words_[pos_]) == replay_word::kLost &&
           (replay_word::index_of(words_[pos_]) == replay_word::kLostSample ? skip_lost_samples_ : skip_lost_rows_)) {
      ++pos_;
    }
    if (pos_ >= words_.size()) {
      fail("the loop reads the clock after the log's last word");
      return stop();
    }
    const std::uint64_t w = words_[pos_];
    if (replay_word::kind(w) != replay_word::kTime) {
      fail("the loop reads the clock where the log has a " + kind_name(w));
      return stop();
    }
    ++pos_;
    shared_.progress.fetch_add(1, std::memory_order_relaxed);
    last_ = replay_word::time_of(w);
    // The run's loop stopped after its last reading (its end, or a stop):
    // so does this one, at the same check.
    if (pos_ == words_.size()) running_.store(false, std::memory_order_relaxed);
    return last_;
  }
  void sleep_until(std::int64_t) noexcept { slept_ = true; }
  void before_integration(const TaskRuntime&, std::uint64_t) noexcept {}

  void drain(TaskRuntime& t, std::size_t member) noexcept {
    const auto& bundles = t.inputs().bundles();
    const BundleMap& map = maps_[member];
    // The blocks this frame drained from producers on other hosts: each is
    // published into its link when the drain asks for a block there.
    remote_.clear();
    while (pos_ < words_.size() && replay_word::kind(words_[pos_]) == replay_word::kBlock) {
      const std::uint64_t w = words_[pos_];
      if (replay_word::member_of(w) != member || replay_word::index_of(w) >= map.logged_inputs ||
          words_.size() - pos_ - 1 < replay_word::count_of(w)) {
        fail("task '" + t.spec().name + "' meets a block of another task, bundle or length in the log");
        return;
      }
      remote_.push_back(pos_);
      pos_ += 1 + replay_word::count_of(w);
    }
    remote_used_.assign(remote_.size(), 0);
    member_ = member;
    if (timings_ != nullptr) note_start(t);
    if (!take(replay_word::kDrain, member, map.logged_inputs, t)) return;
    counts_.assign(bundles.size(), 0);
    for (std::size_t i = 0; i < bundles.size(); ++i) counts_[i] = logged_[map.inputs[i]];
    task_ = &t;
    t.drain_counted(counts_, &gate_);
    if (std::count(remote_used_.begin(), remote_used_.end(), 1) != static_cast<std::ptrdiff_t>(remote_.size())) {
      fail("task '" + t.spec().name + "' drained fewer blocks from another host than the log holds");
    }
  }

  void publish(TaskRuntime& t, std::size_t member) noexcept {
    auto& outputs = t.outputs();
    const BundleMap& map = maps_[member];
    if (!take(replay_word::kDrop, member, map.logged_outputs, t)) return;
    // A link to another host: the run's sending thread emptied its ring;
    // here nobody sends, and the ring is emptied before each publish.
    for (const OutputBinding& o : outputs) {
      if (!o.bundle->members.front()->consumer_local)
        o.bundle->link->drain_to([](const coupling::DataBlock&) noexcept {});
    }
    drops_.assign(outputs.size(), 0);
    for (std::size_t i = 0; i < outputs.size(); ++i) drops_[i] = static_cast<char>(logged_[map.outputs[i]]);
    task_ = &t;
    t.publish_dropping(drops_, &gate_);
    // The integration point was the last reading.
    if (timings_ != nullptr) timings_->frames[t.spec().name].push_back({frame_start_, last_ - frame_start_});
  }

  // A frame started at the last reading; the first of a cycle whose thread
  // slept notes how late it woke.
  void note_start(const TaskRuntime& t) {
    frame_start_ = last_;
    if (cycle_pos_ == 0 && slept_) {
      const std::int64_t release = unit_.deadlines.release();
      timings_->cycles[unit_.owner().spec().name].push_back({release, last_ - release});
    }
    if (cycle_pos_ == 0) slept_ = false;
    (void)t;
    cycle_pos_ = (cycle_pos_ + 1) % unit_.plan.size();
  }

  // The frame records: a sample the run's full ring dropped is dropped
  // again (counted, so the #dropped rows are the run's); one it recorded
  // waits, where the replay's ring is full, for the drainer to make room.
  void sample(const TaskRuntime& t, std::size_t member, Recorder& recorder) noexcept {
    if (lost(member, replay_word::kLostSample)) {
      recorder.drop(t);
      return;
    }
    (void)wait([&] { return recorder.has_room(t); },
               [&] { return "task '" + t.spec().name + "' finds its recording ring full"; });
    (void)recorder.sample(t);
  }
  void add_row(std::size_t member, FrameLog& frames, std::size_t task, const FrameRow& row) noexcept {
    if (lost(member, replay_word::kLostFrameRow)) {
      frames.drop(task);
      return;
    }
    (void)wait([&] { return frames.has_room(task); },
               [&] { return "task '" + task_->spec().name + "' finds its frame-table ring full"; });
    (void)frames.add(task, row);
  }
  bool lost(std::size_t member, std::size_t sink) noexcept {
    if (pos_ < words_.size() && replay_word::kind(words_[pos_]) == replay_word::kLost &&
        replay_word::member_of(words_[pos_]) == member && replay_word::index_of(words_[pos_]) == sink) {
      ++pos_;
      return true;
    }
    return false;
  }

  // The words of `kind` that follow, all of this frame's member: per logged
  // bundle, its count (drain) or 1 (drop) in logged_. False (and the replay
  // stops) at one of another member or of a bundle the logged task lacked.
  bool take(replay_word::Kind kind, std::size_t member, std::size_t bundles, const TaskRuntime& t) noexcept {
    logged_.assign(bundles, 0);
    while (pos_ < words_.size() && replay_word::kind(words_[pos_]) == kind) {
      const std::uint64_t w = words_[pos_++];
      if (replay_word::member_of(w) != member || replay_word::index_of(w) >= bundles) {
        fail("task '" + t.spec().name + "' meets a " + (kind == replay_word::kDrain ? "drain" : "drop") +
             " of another task or bundle " + std::to_string(replay_word::index_of(w)) + " in the log");
        return false;
      }
      logged_[replay_word::index_of(w)] = kind == replay_word::kDrain ? replay_word::count_of(w) : 1;
    }
    return true;
  }

  // A take of live source `index` (logged index) by block `block`: the next
  // row it took in the run, or false at the end of that take.
  bool row(std::size_t index, const std::string& block, tasks::plant::LiveRow& row, std::size_t signals) noexcept {
    if (shared_.abort.load(std::memory_order_relaxed)) return false;
    if (pos_ < words_.size() && replay_word::index_of(words_[pos_]) == index) {
      const std::uint64_t w = words_[pos_];
      if (replay_word::kind(w) == replay_word::kTaken) {
        ++pos_;
        return false;
      }
      if (replay_word::kind(w) == replay_word::kRow && replay_word::count_of(w) == signals + 1 &&
          words_.size() - pos_ > signals + 1) {
        row.time = std::bit_cast<double>(words_[pos_ + 1]);
        for (std::size_t s = 0; s < signals; ++s) row.values[s] = std::bit_cast<double>(words_[pos_ + 2 + s]);
        pos_ += signals + 2;
        shared_.progress.fetch_add(1, std::memory_order_relaxed);
        return true;
      }
    }
    fail("block '" + block + "' takes rows from its live source where the log has " +
         (pos_ < words_.size() ? "a " + kind_name(words_[pos_]) : std::string("no word left")));
    return false;
  }

  // Words left unread: the log holds more than this graph's loop took.
  [[nodiscard]] std::size_t left() const noexcept { return words_.size() - pos_; }
  [[nodiscard]] std::int64_t last() const noexcept { return last_; }

 private:
  std::int64_t stop() noexcept {
    running_.store(false, std::memory_order_relaxed);
    return last_;
  }
  static std::string kind_name(std::uint64_t w) {
    switch (replay_word::kind(w)) {
      case replay_word::kDrain:
        return "drain";
      case replay_word::kDrop:
        return "drop";
      case replay_word::kTime:
        return "clock reading";
      case replay_word::kRow:
        return "row of live source " + std::to_string(replay_word::index_of(w));
      case replay_word::kTaken:
        return "take's end of live source " + std::to_string(replay_word::index_of(w));
      case replay_word::kBlock:
        return "block from another host";
      case replay_word::kLost:
        return replay_word::index_of(w) == replay_word::kLostSample ? "lost sample" : "lost frame-table row";
      default:
        return "word of kind " + std::to_string(static_cast<unsigned>(replay_word::kind(w)));
    }
  }
  void fail(const std::string& what) noexcept {
    try {
      shared_.fail("thread of '" + name_ + "', word " + std::to_string(pos_) + " of " + std::to_string(words_.size()) +
                   ": " + what);
    } catch (...) {
      shared_.abort.store(true);
    }
  }
  // Waits until `ready`; false when the replay is aborted or nothing moves
  // in any thread for 5 s (then `stuck` says why).
  template <class Ready, class Stuck>
  bool wait(Ready&& ready, Stuck&& stuck) noexcept {
    using Clock = std::chrono::steady_clock;
    std::uint64_t seen = shared_.progress.load(std::memory_order_relaxed);
    auto since = Clock::now();
    for (unsigned spins = 0; !ready(); ++spins) {
      if (shared_.abort.load(std::memory_order_relaxed)) return false;
      if (spins < 64) {
        std::this_thread::yield();
        continue;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
      const std::uint64_t p = shared_.progress.load(std::memory_order_relaxed);
      if (p != seen) {
        seen = p;
        since = Clock::now();
      } else if (Clock::now() - since > std::chrono::seconds(5)) {
        try {
          fail(stuck());
        } catch (...) {
          shared_.abort.store(true);
        }
        return false;
      }
    }
    return true;
  }

  // A frame drains a bundle's blocks as they arrive (a real drain that
  // overlapped the producer's publishes took the ones published meanwhile)
  // and offers each output's block once its ring has room (the consumer's
  // replay may be behind the run's).
  struct Gate final : TaskRuntime::ReplayGate {
    ReplayClock* clock = nullptr;
    bool block_waiting(const coupling::Link& link) noexcept override {
      if (const int remote = clock->publish_remote(link); remote >= 0) return remote > 0;
      return clock->wait([&] { return link.waiting_blocks() > 0; },
                         [&] { return clock->stuck(link, "waits for a block of its input from '", "producer"); });
    }
    bool room(const coupling::Link& link) noexcept override {
      return clock->wait([&] { return link.has_room(); },
                         [&] { return clock->stuck(link, "finds the ring to '", "consumer"); });
    }
  };
  // A drain asks for a block of `link`: -1 when its producer is local (the
  // producer's replay publishes it); else publishes the frame's next logged
  // block of that link (1), or fails (0) when the log holds no more.
  int publish_remote(const coupling::Link& link) noexcept {
    const auto& bundles = task_->inputs().bundles();
    std::size_t i = 0;
    while (i < bundles.size() && bundles[i]->link.get() != &link) ++i;
    if (i == bundles.size() || bundles[i]->members.front()->producer_local) return -1;
    if (link.waiting_blocks() > 0) return 1;
    const std::size_t logged = maps_[member_].inputs[i];
    for (std::size_t e = 0; e < remote_.size(); ++e) {
      const std::size_t at = remote_[e];
      if (remote_used_[e] || replay_word::index_of(words_[at]) != logged) continue;
      coupling::Link& l = *bundles[i]->link;
      coupling::DataBlock& b = staged_[&l];
      if (b.signal_count() != l.signal_count()) b = coupling::DataBlock(l.signal_count());
      const auto payload = b.payload();
      if (replay_word::count_of(words_[at]) != 4 + payload.size()) break;
      b.tag = std::bit_cast<double>(words_[at + 1]);
      b.producer_step = std::bit_cast<double>(words_[at + 2]);
      b.sequence = words_[at + 3];
      b.discontinuity = words_[at + 4] != 0;
      for (std::size_t k = 0; k < payload.size(); ++k) payload[k] = std::bit_cast<double>(words_[at + 5 + k]);
      remote_used_[e] = 1;
      return l.publish(b) ? 1 : 0;
    }
    fail("task '" + task_->spec().name + "' drains a block from '" + bundles[i]->members.front()->producer +
         "' on another host that the log does not hold");
    return 0;
  }

  // What a frame waited for in vain, naming the link by its other task.
  std::string stuck(const coupling::Link& link, const char* what, const char* end) const {
    std::string other = "?";
    for (const LinkBundle* b : task_->inputs().bundles()) {
      if (b->link.get() == &link) other = b->members.front()->producer;
    }
    for (const OutputBinding& o : task_->outputs_view()) {
      if (o.bundle->link.get() == &link) other = o.bundle->members.front()->consumer;
    }
    return "task '" + task_->spec().name + "' " + what + other +
           (std::string(end) == "producer" ? "' that the replay never publishes" : "' full where the run's had room");
  }

  const std::vector<std::uint64_t>& words_;
  std::vector<BundleMap> maps_;
  Gate gate_;
  TaskRuntime* task_ = nullptr;
  std::size_t pos_ = 0;
  std::int64_t last_ = 0;
  std::atomic<bool>& running_;
  Shared& shared_;
  std::string name_;
  std::vector<std::uint32_t> counts_, logged_;
  std::vector<std::size_t> remote_;  // this frame's logged blocks from other hosts: their word positions
  std::vector<char> remote_used_;
  const ThreadUnit& unit_;
  ReplayExecutor::Timings* timings_;
  std::int64_t frame_start_ = 0;
  std::size_t cycle_pos_ = 0;
  bool slept_ = false;
  bool skip_lost_samples_, skip_lost_rows_;
  std::size_t member_ = 0;
  std::map<const coupling::Link*, coupling::DataBlock> staged_;
  std::vector<char> drops_;
};

// The replaying side of a live source's tap: a take gets the logged rows.
class ReplayTap final : public tasks::plant::LiveTap {
 public:
  ReplayTap(ReplayClock& clock, std::size_t index, std::string block)
      : clock_(clock), index_(index), block_(std::move(block)) {}
  void row(const tasks::plant::LiveRow&, std::size_t) noexcept override {}
  void end() noexcept override {}
  [[nodiscard]] bool replayed() const noexcept override { return true; }
  bool next(tasks::plant::LiveRow& row, std::size_t signals) noexcept override {
    return clock_.row(index_, block_, row, signals);
  }

 private:
  ReplayClock& clock_;
  std::size_t index_;
  std::string block_;
};

std::string joined_names(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& n : v) s += (s.empty() ? "" : ", ") + n;
  return s;
}

// Threads first: every later check goes thread by thread, task by task.
void check_same_threads(const std::vector<ThreadUnit>& units, const ReplayRecord& record) {
  if (units.size() != record.unit_tasks.size()) {
    throw std::runtime_error("the log's run had " + std::to_string(record.unit_tasks.size()) + " thread(s), " +
                             "this graph has " + std::to_string(units.size()) +
                             ": replay needs the same tasks and rate groups");
  }
  for (std::size_t i = 0; i < units.size(); ++i) {
    std::vector<std::string> here;
    for (const TaskRuntime* m : units[i].members) here.push_back(m->spec().name);
    if (here != record.unit_tasks[i]) {
      throw std::runtime_error("thread " + std::to_string(i + 1) + " ran [" + joined_names(record.unit_tasks[i]) +
                               "] in the log, this graph has [" + joined_names(here) +
                               "]: replay needs the same tasks and rate groups");
    }
  }
}

// Each bundle here takes the counts of the logged bundle that carried its
// first wire: the same bundle when the graph is the one that ran; with
// --what-if, a bundle split or regrouped by other methods takes the
// counts of the one its first wire travelled in (docs/replay.md).
std::size_t logged_of(const std::vector<ReplayBundle>& logged, const LinkBundle& b, bool input) {
  const std::string& task = input ? b.members.front()->producer : b.members.front()->consumer;
  const std::string& source = b.members.front()->source;
  for (std::size_t k = 0; k < logged.size(); ++k) {
    if (logged[k].task == task &&
        std::find(logged[k].sources.begin(), logged[k].sources.end(), source) != logged[k].sources.end())
      return k;
  }
  return logged.size();
}

// One task's map, refused as soon as a wire has no logged bundle: the
// replay would have no counts for it.
BundleMap bundle_map(TaskRuntime& t, const ReplayMemberLinks& logged) {
  BundleMap map;
  map.logged_inputs = logged.inputs.size();
  map.logged_outputs = logged.outputs.size();
  for (const LinkBundle* b : t.inputs().bundles()) {
    map.inputs.push_back(logged_of(logged.inputs, *b, true));
    if (map.inputs.back() == logged.inputs.size()) {
      throw std::runtime_error("task '" + t.spec().name + "' reads " + b->members.front()->source + " from task '" +
                               b->members.front()->producer +
                               "' here but not in the logged run: replay needs the same wires between tasks");
    }
  }
  for (const OutputBinding& o : t.outputs_view()) {
    map.outputs.push_back(logged_of(logged.outputs, *o.bundle, false));
    if (map.outputs.back() == logged.outputs.size()) {
      throw std::runtime_error("task '" + t.spec().name + "' writes " + o.bundle->members.front()->source +
                               " to task '" + o.bundle->members.front()->consumer +
                               "' here but not in the logged run: replay needs the same wires between tasks");
    }
  }
  return map;
}

// Each live plant source takes the rows the logged one of its block took:
// its index in the log, refused where the rows could not be the same.
std::vector<std::size_t> logged_source_index(const std::vector<ReplaySource>& sources, const ReplayRecord& record) {
  std::vector<std::size_t> index;
  for (const ReplaySource& here : sources) {
    const auto logged = std::find_if(record.sources.begin(), record.sources.end(),
                                     [&](const ReplaySource& s) { return s.block == here.block; });
    if (logged == record.sources.end()) {
      throw std::runtime_error("block '" + here.block +
                               "' is a live plant source here but not in the logged run: replay has no rows for it");
    }
    if (logged->unit != here.unit || logged->signals != here.signals) {
      throw std::runtime_error("live plant source '" + here.block + "' has " + std::to_string(here.signals) +
                               " signal(s) here, " + std::to_string(logged->signals) +
                               " in the logged run (or runs on another thread): replay needs the same rows");
    }
    index.push_back(static_cast<std::size_t>(logged - record.sources.begin()));
  }
  return index;
}

// The other way round: a logged source this graph lacks would leave its
// rows unread, and the threads that took them out of step.
void check_logged_sources(const std::vector<ReplaySource>& sources, const ReplayRecord& record) {
  for (const ReplaySource& logged : record.sources) {
    if (std::none_of(sources.begin(), sources.end(), [&](const ReplaySource& s) { return s.block == logged.block; })) {
      throw std::runtime_error("the logged run took rows from live plant source '" + logged.block +
                               "', which this graph does not have");
    }
  }
}

}  // namespace

ReplayExecutor::ReplayExecutor(Graph& graph, const ReplayRecord& record)
    : graph_(graph), record_(record), units_(thread_units(graph)) {
  check_same_threads(units_, record_);
  maps_.resize(units_.size());
  for (std::size_t i = 0; i < units_.size(); ++i) {
    for (std::size_t m = 0; m < units_[i].members.size(); ++m) {
      maps_[i].push_back(bundle_map(*units_[i].members[m], record_.unit_links[i][m]));
    }
  }
  sources_ = replay_sources(graph_);
  source_index_ = logged_source_index(sources_, record_);
  check_logged_sources(sources_, record_);
}

double ReplayRecord::duration() const noexcept {
  if (header.end_ns > 0) return static_cast<double>(header.end_ns) * 1e-9;
  return static_cast<double>(last_ns) * 1e-9;
}

std::string ReplayExecutor::claim_refusal() const {
  // Per thread, the cycles its readings can hold: a cycle reads the clock
  // three times per frame of its plan and once after them (more when it
  // sleeps), after the loop's first reading. What the largest of them
  // justifies at its thread's period, ten periods a cycle, bounds the run:
  // the replay's own work is its words, but the reference and a what-if
  // with another period integrate every second the log claims.
  std::uint64_t frames = 0, readings = 0, best_cycles = 0;
  std::int64_t bound_ns = 0;
  std::size_t best = 0;
  for (std::size_t i = 0; i < units_.size() && i < record_.words.size(); ++i) {
    // The thread's readings; raw words (rows, blocks) skipped by their
    // headers' counts.
    std::uint64_t r = 0;
    const auto& w = record_.words[i];
    for (std::size_t k = 0; k < w.size(); ++k) {
      const auto kind = replay_word::kind(w[k]);
      if (kind == replay_word::kRow || kind == replay_word::kBlock) k += replay_word::count_of(w[k]);
      if (kind == replay_word::kTime) ++r;
    }
    const std::uint64_t per_cycle = 3 * units_[i].plan.size() + 1;
    const std::uint64_t cycles = r > 1 ? (r - 1 + per_cycle - 1) / per_cycle : 0;
    frames += cycles * units_[i].plan.size();
    readings += r;
    const double span = static_cast<double>(kReplayPeriodsPerCycle) * static_cast<double>(cycles) *
                        static_cast<double>(units_[i].owner().period_ns());
    const std::int64_t span_ns =
        span >= 9e18 ? std::numeric_limits<std::int64_t>::max() : static_cast<std::int64_t>(span);
    if (span_ns > bound_ns) {
      bound_ns = span_ns;
      best = i;
      best_cycles = cycles;
    }
  }
  if (record_.last_ns <= bound_ns) return {};
  char text[64];
  auto seconds = [&](std::int64_t ns) {
    std::snprintf(text, sizeof text, "%.1f", static_cast<double>(ns) * 1e-9);
    return std::string(text);
  };
  const std::string file = record_.files.empty() ? std::string("the replay log") : record_.files.front();
  const std::string thread = units_.empty() ? std::string("no thread")
                                            : "thread '" + units_[best].owner().spec().name + "', every " +
                                                  base::format_duration(units_[best].owner().spec().period) + ", " +
                                                  std::to_string(best_cycles) + " cycle(s)";
  return file + ": not a replay log of a run: its readings claim a run of " + seconds(record_.last_ns) +
         " s, more than its " + std::to_string(frames) + " frames (" + std::to_string(readings) +
         " clock readings) justify at this graph's periods: at most " + seconds(bound_ns) + " s (" +
         std::to_string(kReplayPeriodsPerCycle) + " periods a cycle; " + thread + ")";
}

bool ReplayExecutor::run(Recorder* recorder, FrameLog* frame_log, std::string* why,
                         const std::function<void()>& drain) {
  // Before anything runs: the reference and a what-if integrate the
  // duration the log claims.
  if (std::string refusal = claim_refusal(); !refusal.empty()) throw std::runtime_error(refusal);
  Shared shared;
  const std::int64_t end_ns = record_.header.end_ns;
  std::vector<Timings> thread_timings(units_.size());
  std::vector<std::unique_ptr<std::atomic<bool>>> running;
  std::vector<std::unique_ptr<ReplayClock>> clocks;
  for (std::size_t i = 0; i < units_.size(); ++i) {
    running.push_back(std::make_unique<std::atomic<bool>>(!record_.words[i].empty()));
    clocks.push_back(std::make_unique<ReplayClock>(
        record_.words[i], maps_[i], *running.back(), shared, units_[i].owner().spec().name, units_[i],
        keep_timings_ ? &thread_timings[i] : nullptr, UnitSinks{recorder, frame_log}));
  }
  // The taps first: the run's resets (before its threads started) took
  // rows too, logged as the threads' first words.
  std::vector<std::unique_ptr<ReplayTap>> taps;
  for (std::size_t k = 0; k < sources_.size(); ++k) {
    taps.push_back(std::make_unique<ReplayTap>(*clocks[sources_[k].unit], source_index_[k], sources_[k].block));
    sources_[k].source->set_tap(taps.back().get());
  }
  graph_.reset();
  // As the logged run: the recording starts with every task at t = 0.
  if (recorder != nullptr) recorder->sample_start(graph_);
  for (std::size_t i = 0; i < units_.size(); ++i) {
    units_[i].reset(0, end_ns);
    for (TaskRuntime* m : units_[i].members) m->set_placement(ThreadPlacement{"replay", 0, -1, {}});
  }
  std::vector<std::thread> threads;
  std::atomic<std::size_t> finished{0};
  for (std::size_t i = 0; i < units_.size(); ++i) {
    threads.emplace_back([&, i] {
      run_unit(units_[i], *clocks[i], 0, end_ns, *running[i], UnitSinks{recorder, frame_log});
      finished.fetch_add(1);
    });
  }
  for (;;) {
    const bool all = finished.load() == units_.size();
    if (drain) drain();
    if (all || shared.abort.load()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  for (auto& t : threads) t.join();
  for (const ReplaySource& src : sources_) src.source->set_tap(nullptr);
  timings_ = {};
  for (auto& tt : thread_timings) {
    timings_.frames.merge(tt.frames);
    timings_.cycles.merge(tt.cycles);
  }
  if (shared.abort.load()) {
    *why = shared.error;
    return false;
  }
  for (std::size_t i = 0; i < units_.size(); ++i) {
    if (clocks[i]->left() != 0) {
      *why = "thread of '" + units_[i].owner().spec().name + "': the log holds " + std::to_string(clocks[i]->left()) +
             " word(s) more than this graph's loop took";
      return false;
    }
  }
  return true;
}

VirtualExecutor::Timing ReplayExecutor::logged_timing() const {
  auto timings = std::make_shared<const Timings>(timings_);
  // The entry of the latest logged start (release) at or before `at`; the
  // first one before any.
  auto latest = [](const auto& list, std::int64_t at) {
    auto it = std::upper_bound(list.begin(), list.end(), at, [](std::int64_t t, const auto& e) { return t < e.at_ns; });
    return it == list.begin() ? list.begin() : std::prev(it);
  };
  VirtualExecutor::Timing t;
  t.execution = [timings, latest](const TaskRuntime& task, std::uint64_t, std::int64_t start_ns) -> std::int64_t {
    const auto f = timings->frames.find(task.spec().name);
    if (f == timings->frames.end() || f->second.empty()) return 0;
    return latest(f->second, start_ns)->ns;
  };
  t.wake_delay = [timings, latest](const TaskRuntime& owner, std::int64_t release_ns) -> std::int64_t {
    const auto c = timings->cycles.find(owner.spec().name);
    if (c == timings->cycles.end() || c->second.empty()) return 0;
    return latest(c->second, release_ns)->ns;
  };
  return t;
}

}  // namespace rtcosim::runtime
