#pragma once

#include <atomic>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <boost/lockfree/spsc_queue.hpp>

#include "coupling/data_block.hpp"
#include "coupling/link.hpp"
#include "coupling/registry.hpp"
#include "rt_config/graph_spec.hpp"
#include "runtime/realtime.hpp"
#include "runtime/stats.hpp"
#include "runtime/step_policy.hpp"
#include "tasks/block_registry.hpp"
#include "tasks/partition.hpp"

namespace rtcosim::runtime {

// How a link has degraded so far: counters of its extrapolator and its
// LinkStats in one snapshot (docs/config.md, "Link health").
struct LinkHealth {
  std::uint64_t stale = 0;                  // blocks not after the newest tag, ignored
  std::uint64_t rejected_tags = 0;          // non-finite tags, tags beyond the producer's reach or the lead
  std::uint64_t rejected_values = 0;        // non-finite values or known derivatives
  std::uint64_t fallback_frames = 0;        // consumer frames on a derivative fallback
  std::uint64_t beyond_horizon_frames = 0;  // consumer frames held at the horizon
  std::uint64_t behind_history_frames = 0;  // consumer frames that read before the oldest block kept
  double longest_gap = 0.0;                 // seconds: the furthest any sample was past the newest tag
  [[nodiscard]] bool degraded() const noexcept {
    return stale + rejected_tags + rejected_values + fallback_frames + beyond_horizon_frames + behind_history_frames >
           0;
  }
};

struct LinkBundle;

// A link of the graph: one producer partition's output port into one
// consumer task, with its coupling method. What reports name: a wire.
// It travels in a bundle (below) with the other wires between the same two
// tasks and the same coupling; `link` and `stats` are the bundle's, so the
// counters per block (published, dropped, stale, rejected, fallback and
// horizon frames) are the bundle's, shown on each of its wires.
struct GraphLink {
  std::uint32_t id = 0;  // index in the graph, the link's id in traces
  std::string source;    // "block.port"
  std::string producer;  // task
  std::string consumer;  // task
  std::string method;
  bool method_uses_derivatives = false;
  // Beyond the newest tag plus this, the consumer holds the value at that
  // horizon (seconds); before the oldest tag its method keeps, the value
  // there.
  double max_extrapolation = 0.0;
  // Seconds behind the newest tag down to which the method's own
  // reconstruction answers (Extrapolator::set_lookback); further back, the
  // stored blocks.
  double lookback = 0.0;
  coupling::Link* link = nullptr;  // the bundle's
  LinkStats* stats = nullptr;      // the bundle's
  LinkBundle* bundle = nullptr;
  std::size_t offset = 0;  // its first signal in the bundle's blocks
  std::size_t width = 0;
  // Ends on different hosts: the link crosses DDS (docs/dds.md); its topic
  // and counters are the bridge's (io/remote_state.hpp).
  bool remote = false;
  bool producer_local = true;  // the producer runs in this process
  bool consumer_local = true;  // the consumer runs in this process

  [[nodiscard]] LinkHealth health() const noexcept;
};

/*
 * LinkBundle: every wire from one producer task to one consumer task with
 * the same coupling method and parameters, as one ring, one DataBlock of
 * all their signals and one extrapolator evaluated in one loop over them
 * (docs/frame-program.md, "Bundled links"). A wire crossing hosts, a wire
 * whose port can jump (its discontinuity flag is its own) and a method that
 * is not per signal (`rim`, plugins) travel alone.
 * Owned by the Graph; its wires point to it.
 */
struct LinkBundle {
  std::unique_ptr<coupling::Link> link;
  LinkStats stats;
  std::vector<GraphLink*> members;  // in the order of their signals
  std::vector<std::uint32_t> ids;   // the members' link ids, for the trace events
  double max_extrapolation = 0.0;
  double lookback = 0.0;  // its members', set on the extrapolator by LinkInputs::bind
  // The producer computes derivatives for it: its method uses them, or is a
  // plugin's (docs/frame-program.md).
  bool needs_derivatives = false;

  // Set-up, for a wire alone (tests): `wire` becomes the bundle's only
  // member, the bundle takes `l` and the wire's horizon and method flags.
  void hold(GraphLink& wire, std::unique_ptr<coupling::Link> l);
};

/*
 * LinkInputs: a partition's external inputs answered from the extrapolators
 * of its links. A method that averages over the step (zoh_average) answers
 * the samples of the integration pass with the step's mean, taken once at
 * the step's start (reference eq. 10.7); the discrete pass and the output
 * pass see the held value at their instant.
 * RT-safe: everything but `bind` is noexcept and allocation-free.
 */
class LinkInputs final : public tasks::InputSource {
 public:
  // Set-up: the next input is this link; bind every input, then call
  // `finish` once.
  void bind(GraphLink* link);
  void finish();
  void begin_step(double t, double h) noexcept override;
  void begin_pass(tasks::InputPass pass) noexcept override { pass_ = pass; }
  // The per-frame counters (beyond horizon, behind history, fallback) count
  // at a step's output pass; a catch-up frame's sub-steps but its last are
  // not frames of their own.
  void count_frames(bool on) noexcept { frame_counts_ = on; }
  void sample(std::size_t input, double t, std::span<double> out) noexcept override;
  // Every input at t, one evaluation per bundle.
  void sample_all(double t, std::span<double> ext, std::span<const std::size_t> offsets) noexcept override;
  [[nodiscard]] const std::vector<GraphLink*>& links() const noexcept { return links_; }
  [[nodiscard]] const std::vector<LinkBundle*>& bundles() const noexcept { return bundles_; }

 private:
  struct Bundled {
    LinkBundle* bundle = nullptr;
    std::size_t ext = 0;                     // where its signals start in the inputs, when `contiguous`
    bool contiguous = false;                 // its wires are consecutive inputs in the bundle's order
    std::size_t means = 0;                   // into means_
    std::size_t scratch = 0;                 // into scratch_
    std::vector<std::size_t> member_inputs;  // per wire of the bundle, where its signals start in the inputs
    bool behind_history = false;             // a sample of this frame so far read before the oldest block kept
  };
  void evaluate(const Bundled& b, double t, double* out) noexcept;
  void count(Bundled& b, double t) noexcept;

  std::vector<GraphLink*> links_;
  std::vector<LinkBundle*> bundles_;
  std::vector<Bundled> bundled_;
  std::vector<std::size_t> input_offsets_;                       // per input, its signals in the inputs
  std::vector<std::size_t> bundle_of_;                           // per input, into bundled_
  std::unordered_map<const LinkBundle*, std::size_t> index_of_;  // set-up: bundle -> index in bundled_
  std::vector<double> means_;                                    // the step means of averaging bundles
  std::vector<double> scratch_;
  tasks::InputPass pass_ = tasks::InputPass::kOutput;
  bool frame_counts_ = true;
};

// One output bundle of a partition: where to read each wire's values, the
// header of its staged block, the bundle to publish to.
struct OutputBinding {
  std::vector<tasks::OutputRef> refs;  // per wire of the bundle, in its order
  // The same signals as runs that are contiguous in the partition's memory
  // (consecutive ports of consecutive blocks), copied in one piece each.
  std::vector<tasks::OutputRef> runs;
  bool may_jump = false;  // a port of it can jump (then it is alone)
  // The staged block's header; its signals stay in the partition's memory
  // until the publish copies them into the ring.
  double tag = 0.0;
  std::uint64_t sequence = 0;
  double producer_step = 0.0;
  bool discontinuity = false;
  LinkBundle* bundle = nullptr;
};

/*
 * TaskRuntime: one task of the graph: its partition, the links it reads and
 * writes, its step policy and statistics. A frame (the executors' real-time
 * path) is `drain` (parameter updates, then the input links), `step`
 * (integrate, stage the output blocks' headers) and `publish`, which copies
 * the staged blocks' signals from the partition's memory straight into the
 * rings (separate, so that virtual time can publish when the scripted
 * execution ends). Between a step and its publish nothing may change the
 * partition's outputs: the publish reads them as the step left them.
 *
 * RT-safe: `drain`, `step`, `publish` and `stage_outputs` are noexcept and
 * allocation-free; everything is sized in Graph::build.
 */
class TaskRuntime {
 public:
  TaskRuntime(const config::TaskSpec& spec, std::unique_ptr<tasks::Partition> partition);

  [[nodiscard]] const config::TaskSpec& spec() const noexcept { return spec_; }
  [[nodiscard]] std::int64_t period_ns() const noexcept { return period_ns_; }
  // Index in the graph, the task's id in traces.
  [[nodiscard]] std::uint32_t id() const noexcept { return id_; }
  void set_id(std::uint32_t id) noexcept { id_ = id; }
  [[nodiscard]] tasks::Partition& partition() noexcept { return *partition_; }
  [[nodiscard]] const tasks::Partition& partition() const noexcept { return *partition_; }
  [[nodiscard]] StepPolicy& policy() noexcept { return policy_; }
  [[nodiscard]] TaskStats& stats() noexcept { return stats_; }
  [[nodiscard]] const TaskStats& stats() const noexcept { return stats_; }
  [[nodiscard]] LinkInputs& inputs() noexcept { return inputs_; }
  [[nodiscard]] std::vector<OutputBinding>& outputs() noexcept { return outputs_; }
  [[nodiscard]] const std::vector<OutputBinding>& outputs_view() const noexcept { return outputs_; }
  // How the task's thread ran (set by the executor before the first frame).
  [[nodiscard]] const ThreadPlacement& placement() const noexcept { return placement_; }
  void set_placement(ThreadPlacement p) { placement_ = std::move(p); }
  // A fresh run: statistics cleared, the step policy back to its first step.
  void reset_run() noexcept;
  // Runs in this process (its host's, with `--host`); others only provide
  // their initial outputs.
  [[nodiscard]] bool local() const noexcept { return local_; }
  void set_local(bool local) noexcept { local_ = local; }

  // Drains every input link into its extrapolator, after applying the
  // parameter updates posted since the last frame.
  void drain() noexcept { drain_counted({}); }
  // What a replay's frame waits for (runtime/replay_executor.cpp): a block
  // in a ring it drains, room in a ring it publishes to. Each returns false
  // when the replay gives up.
  struct ReplayGate {
    virtual bool block_waiting(const coupling::Link& link) noexcept = 0;
    virtual bool room(const coupling::Link& link) noexcept = 0;

   protected:
    ~ReplayGate() = default;
  };
  // The same, taking exactly counts[i] blocks from input bundle i
  // (inputs().bundles() order) when counts is not empty: a replay's frame
  // sees what the logged frame saw (docs/replay.md). With a gate, a bundle's
  // blocks are taken as they arrive, as a drain that overlapped the
  // producer's publishes took them; without, at most what is waiting.
  void drain_counted(std::span<const std::uint32_t> counts, ReplayGate* gate = nullptr) noexcept;
  // One non-RT thread (the state synchronisation, docs/sync.md) posts new
  // values of tunable block parameters; the task's next frame applies them
  // before it steps (Block::set_tunable, noexcept, allocation-free). False
  // when kParameterInbox updates are already waiting.
  static constexpr std::size_t kParameterInbox = 64;
  bool post_parameter(std::size_t block, std::size_t parameter, double value) noexcept;
  // Updates applied by frames so far (the task's thread writes it).
  [[nodiscard]] std::uint64_t parameters_applied() const noexcept {
    return parameters_applied_.load(std::memory_order_relaxed);
  }
  // Steps the partition by h from its current time and stages the outputs
  // (nothing when h <= 0).
  void step(double h) noexcept;
  // Publishes the blocks staged since the last publish, if any.
  void publish() noexcept { publish_dropping({}); }
  // The same, counting output i's block as dropped instead where drop[i] is
  // set (a replay repeats the run's full rings; empty: none); with a gate,
  // each block waits for room before it is offered, one output after the
  // other as the run published them.
  void publish_dropping(std::span<const char> drop, ReplayGate* gate = nullptr) noexcept;
  // Blocks are staged: the next publish offers them.
  [[nodiscard]] bool staged() const noexcept { return staged_; }
  // Outputs at the start, before the first step: staged and published so
  // that consumers have a first block at t = 0.
  void publish_initial() noexcept;

  // True once a block of the partition (an FMU) failed: the task steps no
  // more and its unit's loop ends. `failure` (not RT) says what failed and
  // in which frame.
  [[nodiscard]] bool failed() const noexcept { return failed_frame_.load(std::memory_order_acquire) != kNotFailed; }
  [[nodiscard]] std::string failure() const;
  // True once this task's model ended the simulation itself (an FMU's
  // terminateSimulation, tasks::Partition::terminated): the frame that said
  // so completed and published, the task steps no more, and every task of
  // the graph ends its loop at its next cycle (run_ended). No failure: the
  // run ends normally. `ending` (not RT) says which block, when and how.
  [[nodiscard]] bool ended() const noexcept { return ended_frame_.load(std::memory_order_acquire) != kNotFailed; }
  [[nodiscard]] std::string ending() const;
  // True once any task of this task's graph ended the run (above).
  [[nodiscard]] bool run_ended() const noexcept {
    return run_end_ != nullptr && run_end_->load(std::memory_order_acquire);
  }
  // Steps no more: failed, or its model ended the run.
  [[nodiscard]] bool stopped() const noexcept { return failed() || ended(); }
  // Set-up: the graph's flag that ended() raises.
  void set_run_end(std::atomic<bool>* flag) noexcept { run_end_ = flag; }
  // One line per block whose foreign code (an FMU) allocated in this run's
  // frames, where that can be detected (Block::foreign_allocations), per
  // block notice (Block::run_notice), and per event-location bound the
  // partition reached (Partition::event_counts); not RT.
  [[nodiscard]] std::vector<std::string> allocation_reports() const;

 private:
  void stage_outputs() noexcept;
  // Writes output o's staged block into a ring slot: its header and its
  // signals from the partition's memory.
  void fill_block(const OutputBinding& o, coupling::DataBlock& block) const noexcept;

  const config::TaskSpec& spec_;
  std::int64_t period_ns_ = 0;
  std::unique_ptr<tasks::Partition> partition_;
  StepPolicy policy_;
  TaskStats stats_;
  LinkInputs inputs_;
  std::vector<OutputBinding> outputs_;
  ThreadPlacement placement_;
  std::uint64_t sequence_ = 0;
  bool staged_ = false;  // outputs staged since the last publish
  bool local_ = true;
  std::uint32_t id_ = 0;
  static constexpr std::uint64_t kNotFailed = ~std::uint64_t{0};
  // Written by the task's thread (release: the block's failure is written
  // before), read by the status thread while it runs.
  std::atomic<std::uint64_t> failed_frame_{kNotFailed};
  std::atomic<std::uint64_t> ended_frame_{kNotFailed};
  std::atomic<bool>* run_end_ = nullptr;  // the graph's
  struct ParameterUpdate {
    std::size_t block = 0, parameter = 0;
    double value = 0.0;
  };
  boost::lockfree::spsc_queue<ParameterUpdate, boost::lockfree::capacity<kParameterInbox>> parameter_inbox_;
  std::atomic<std::uint64_t> parameters_applied_{0};
};

/*
 * Graph: the runnable form of a GraphSpec: one TaskRuntime per task, one
 * link per (output port, consuming task), all memory allocated here, before
 * the first frame. Set-up code: throws on what the configuration layer
 * could not know (a plugin method that fails to build).
 */
class Graph {
 public:
  // `bundle_links` false gives every wire a bundle of its own (a reference
  // for tests: the results are the same bits).
  // The graph keeps its spec: given an rvalue, it takes it over instead of a copy (a copy of 10^4 signals'
  // spec is 6 MB at the peak of the set-up).
  static std::unique_ptr<Graph> build(config::GraphSpec&& spec, const tasks::BlockRegistry& blocks,
                                      const coupling::MethodRegistry& methods, bool bundle_links = true);
  static std::unique_ptr<Graph> build(const config::GraphSpec& spec, const tasks::BlockRegistry& blocks,
                                      const coupling::MethodRegistry& methods, bool bundle_links = true) {
    return build(config::GraphSpec(spec), blocks, methods, bundle_links);
  }

  [[nodiscard]] const config::GraphSpec& spec() const noexcept { return spec_; }
  [[nodiscard]] std::vector<std::unique_ptr<TaskRuntime>>& tasks() noexcept { return tasks_; }
  [[nodiscard]] std::vector<std::unique_ptr<GraphLink>>& links() noexcept { return links_; }
  [[nodiscard]] std::vector<std::unique_ptr<LinkBundle>>& bundles() noexcept { return bundles_; }
  [[nodiscard]] TaskRuntime* find_task(const std::string& name) noexcept;

  // This process runs only the tasks of `host` (a name of the spec's
  // hosts); the others stay built for their initial outputs. Empty: every
  // task. Set-up code; throws std::invalid_argument for an unknown host.
  void set_host(const std::string& host);
  [[nodiscard]] const std::string& host() const noexcept { return host_; }
  // Links that leave this process: remote, with one end here.
  [[nodiscard]] std::vector<GraphLink*> remote_links() noexcept;

  // Emits task_info and link_info trace events (names for the ids).
  void trace_names() const noexcept;

  // One line per link that starts degraded: a method that wants derivatives
  // on a port that publishes none. Set-up code: resets the graph first, to
  // compute the initial outputs and their derivative flags.
  [[nodiscard]] std::vector<std::string> link_warnings();

  // Emits one link_health trace event per link (its counters so far).
  void trace_link_health() const noexcept;

  // A fresh run: every task to its initial state at simulation time 0 with
  // its statistics and step policy reset, links emptied, extrapolators
  // reset, initial outputs published.
  void reset() noexcept;

  // True once a task's model ended the run (TaskRuntime::ended).
  [[nodiscard]] bool model_ended() const noexcept { return model_ended_.load(std::memory_order_acquire); }

 private:
  explicit Graph(config::GraphSpec&& spec) : spec_(std::move(spec)) {}
  std::atomic<bool> model_ended_{false};
  config::GraphSpec spec_;
  std::string host_;
  std::vector<std::unique_ptr<TaskRuntime>> tasks_;
  // By name, for find_task: a scan per link made building 10^4 tasks
  // quadratic. The keys are the tasks' own names, which live as long.
  std::unordered_map<std::string_view, TaskRuntime*> task_index_;
  std::vector<std::unique_ptr<GraphLink>> links_;
  std::vector<std::unique_ptr<LinkBundle>> bundles_;
};

}  // namespace rtcosim::runtime
