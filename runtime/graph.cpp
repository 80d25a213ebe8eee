#include "runtime/graph.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include "base/counter.hpp"
#include "base/signal_loop.hpp"
#include "runtime/trace.hpp"

namespace rtcosim::runtime {

namespace {

// Default horizon: this many producer periods (or the producer's longest
// step plus one period, or the consumer's period plus kSlackPeriods, if
// longer: a slower consumer evaluates its step's end a period past the
// blocks it has, without the producer being late).
constexpr double kHorizonPeriods = 4.0;
constexpr double kSlackPeriods = 2.0;
// Default tolerance of a tag ahead of the consumer's clock (seconds).
constexpr double kDefaultMaxTagLead = 10.0;

}  // namespace

void LinkInputs::bind(GraphLink* link) {
  input_offsets_.push_back(input_offsets_.empty() ? 0 : input_offsets_.back() + links_.back()->width);
  links_.push_back(link);
  const auto [known, added] = index_of_.emplace(link->bundle, bundled_.size());
  const std::size_t b = known->second;
  if (added) {
    // Scratch and mean memory at once, so that an input source whose
    // `finish` was forgotten never reads or writes out of bounds (it only
    // scatters nothing).
    const std::size_t n = link->bundle->link->signal_count();
    link->bundle->link->extrapolator().set_lookback(link->bundle->lookback);
    bundled_.push_back({link->bundle, input_offsets_.back(), false, means_.size(), scratch_.size(), {}, false});
    scratch_.resize(scratch_.size() + n, 0.0);
    if (link->bundle->link->extrapolator().averages_over_step()) means_.resize(means_.size() + n, 0.0);
    bundles_.push_back(link->bundle);
  }
  bundle_of_.push_back(b);
}

void LinkInputs::finish() {
  // A bundle whose wires are consecutive inputs in its own order is
  // evaluated straight into the partition's inputs; any other into its
  // scratch memory, then copied to each wire's inputs.
  std::unordered_map<const GraphLink*, std::size_t> input_of;
  for (std::size_t i = 0; i < links_.size(); ++i) input_of.emplace(links_[i], input_offsets_[i]);
  for (Bundled& b : bundled_) {
    b.member_inputs.clear();
    b.contiguous = true;
    std::size_t expected = b.ext;
    for (GraphLink* m : b.bundle->members) {
      const std::size_t at = input_of.at(m);
      b.member_inputs.push_back(at);
      b.contiguous = b.contiguous && at == expected;
      expected = at + m->width;
    }
  }
}

void LinkInputs::begin_step(double t, double h) noexcept {
  for (const Bundled& b : bundled_) {
    coupling::Extrapolator& e = b.bundle->link->extrapolator();
    if (!e.averages_over_step()) continue;
    e.step_mean(t, t + h, std::span<double>(means_.data() + b.means, e.signal_count()));
  }
}

void LinkInputs::evaluate(const Bundled& b, double t, double* out) noexcept {
  const coupling::Extrapolator& e = b.bundle->link->extrapolator();
  const std::size_t n = e.signal_count();
  if (pass_ == tasks::InputPass::kIntegration && e.averages_over_step()) {
    std::copy_n(means_.data() + b.means, n, out);
  } else {
    const double newest = e.newest_tag();
    // Beyond the horizon every method holds its value there. Behind, the
    // method bounds itself: its stored blocks answer, and before the oldest
    // it holds that one (Extrapolator::oldest_tag).
    e.evaluate(std::isfinite(newest) ? std::min(t, newest + b.bundle->max_extrapolation) : t,
               std::span<double>(out, n));
  }
}

void LinkInputs::count(Bundled& bundled, double t) noexcept {
  LinkBundle& b = *bundled.bundle;
  const coupling::Extrapolator& e = b.link->extrapolator();
  const double newest = e.newest_tag();
  if (!std::isfinite(newest)) return;
  const double gap = t - newest;
  b.stats.extrapolation_interval.add(gap);
  // The method holds its oldest block there (Extrapolator::oldest_tag); the
  // step's first samples are the furthest back, so every pass is looked at.
  // Only behind the lookback too: within it the method's own reconstruction
  // answers, and a history a jump has just cleared is no shortage. (The
  // lookback is tested first: a read within it, the usual case, makes no
  // virtual call for the oldest tag.)
  bundled.behind_history = bundled.behind_history || (t < newest - e.lookback() && t < e.oldest_tag());
  // The output pass comes once per frame: the frame's counters.
  if (pass_ == tasks::InputPass::kOutput && frame_counts_) {
    if (gap > b.max_extrapolation) base::add_single_writer(b.stats.beyond_horizon_frames);
    if (e.in_derivative_fallback()) base::add_single_writer(b.stats.fallback_frames);
    if (bundled.behind_history) base::add_single_writer(b.stats.behind_history_frames);
    bundled.behind_history = false;
  }
}

void LinkInputs::sample(std::size_t input, double t, std::span<double> out) noexcept {
  Bundled& b = bundled_[bundle_of_[input]];
  double* all = scratch_.data() + b.scratch;
  evaluate(b, t, all);
  std::copy_n(all + links_[input]->offset, out.size(), out.begin());
  count(b, t);
}

void LinkInputs::sample_all(double t, std::span<double> ext, std::span<const std::size_t>) noexcept {
  for (Bundled& b : bundled_) {
    if (b.contiguous) {
      evaluate(b, t, ext.data() + b.ext);
    } else {
      double* all = scratch_.data() + b.scratch;
      evaluate(b, t, all);
      const auto& members = b.bundle->members;
      for (std::size_t k = 0; k < b.member_inputs.size(); ++k) {
        std::copy_n(all + members[k]->offset, members[k]->width, ext.data() + b.member_inputs[k]);
      }
    }
    count(b, t);
  }
}

void LinkBundle::hold(GraphLink& wire, std::unique_ptr<coupling::Link> l) {
  link = std::move(l);
  members = {&wire};
  ids = {wire.id};
  max_extrapolation = wire.max_extrapolation;
  lookback = wire.lookback;
  needs_derivatives = wire.method_uses_derivatives;
  wire.link = link.get();
  wire.stats = &stats;
  wire.bundle = this;
  wire.offset = 0;
  wire.width = link->signal_count();
}

LinkHealth GraphLink::health() const noexcept {
  const coupling::Extrapolator& e = link->extrapolator();
  LinkHealth h;
  h.stale = e.stale_blocks();
  h.rejected_tags = e.rejected_tags();
  h.rejected_values = e.rejected_values();
  h.fallback_frames = stats->fallback_frames.load(std::memory_order_relaxed);
  h.beyond_horizon_frames = stats->beyond_horizon_frames.load(std::memory_order_relaxed);
  h.behind_history_frames = stats->behind_history_frames.load(std::memory_order_relaxed);
  h.longest_gap = stats->extrapolation_interval.count() ? std::max(0.0, stats->extrapolation_interval.max()) : 0.0;
  return h;
}

TaskRuntime::TaskRuntime(const config::TaskSpec& spec, std::unique_ptr<tasks::Partition> partition)
    : spec_(spec),
      period_ns_(static_cast<std::int64_t>(std::llround(spec.period * 1e9))),
      partition_(std::move(partition)),
      policy_(spec.step, spec.period, spec.max_step, spec.max_substeps, spec.max_owed) {
  partition_->set_divergence_guard({spec.divergence.tolerance, spec.divergence.steps, spec.divergence.state_bound});
}

void TaskRuntime::reset_run() noexcept {
  stats_.reset();
  policy_.reset();
  failed_frame_.store(kNotFailed, std::memory_order_relaxed);
  ended_frame_.store(kNotFailed, std::memory_order_relaxed);
}

std::string TaskRuntime::ending() const {
  if (!ended()) return {};
  return "task '" + spec_.name + "' ended the run in frame " +
         std::to_string(ended_frame_.load(std::memory_order_acquire)) + ": " + partition_->termination();
}

std::string TaskRuntime::failure() const {
  if (!failed()) return {};
  return "task '" + spec_.name + "' stopped in frame " + std::to_string(failed_frame_.load(std::memory_order_acquire)) +
         ": " + partition_->failure();
}

std::vector<std::string> TaskRuntime::allocation_reports() const {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < partition_->block_count(); ++i) {
    const tasks::Block& b = partition_->block(i);
    if (const std::uint64_t n = b.foreign_allocations(); n > 0) {
      out.push_back("block '" + b.name() + "' (" + b.type() + ") of task '" + spec_.name + "' allocated " +
                    std::to_string(n) + " time(s) in " + std::to_string(stats_.frames.load(std::memory_order_relaxed)) +
                    " frames (through the FMU's allocateMemory callback): its frames are not real-time safe");
    }
    if (const std::string notice = b.run_notice(); !notice.empty()) {
      out.push_back("block '" + b.name() + "' (" + b.type() + ") of task '" + spec_.name + "': " + notice);
    }
  }
  // The event location's bounds (docs/config.md "Events"): where one was
  // reached, an event was handled later than the tolerance says.
  const std::uint64_t trial_limits = stats_.location_trial_limits.load(std::memory_order_relaxed);
  const std::uint64_t landing_limits = stats_.landing_limits.load(std::memory_order_relaxed);
  if (trial_limits > 0) {
    out.push_back("task '" + spec_.name + "': " + std::to_string(trial_limits) + " of " +
                  std::to_string(stats_.events_located.load(std::memory_order_relaxed)) +
                  " state events stopped at the bound of " + std::to_string(tasks::Partition::kMaxLocateTrials) +
                  " trials before their bracket was within the tolerance; each was handled at the bracket's late end");
  }
  if (landing_limits > 0) {
    out.push_back("task '" + spec_.name + "': " + std::to_string(landing_limits) + " frame(s) held more than " +
                  std::to_string(tasks::Partition::kMaxLandings) +
                  " events; the rest of each was integrated in one piece and its events handled at its end "
                  "(chattering, or events closer together than the frame: a shorter period resolves them)");
  }
  return out;
}

bool TaskRuntime::post_parameter(std::size_t block, std::size_t parameter, double value) noexcept {
  return parameter_inbox_.push(ParameterUpdate{block, parameter, value});
}

void TaskRuntime::drain_counted(std::span<const std::uint32_t> counts, ReplayGate* gate) noexcept {
  ParameterUpdate u;
  while (parameter_inbox_.pop(u)) {
    (void)partition_->mutable_block(u.block).set_tunable(u.parameter, u.value);
    parameters_applied_.fetch_add(1, std::memory_order_relaxed);
  }
  const double t = partition_->time();
  const auto& bundles = inputs_.bundles();
  for (std::size_t i = 0; i < bundles.size(); ++i) {
    LinkBundle* b = bundles[i];
    b->link->extrapolator().set_clock(t);
    std::size_t blocks = 0;
    if (counts.empty()) {
      blocks = b->link->drain();
    } else {
      while (blocks < counts[i]) {
        if (gate != nullptr && !gate->block_waiting(*b->link)) break;
        const std::size_t got = b->link->drain(counts[i] - blocks);
        if (got == 0 && gate == nullptr) break;
        blocks += got;
      }
    }
    const double newest = b->link->extrapolator().newest_tag();
    if (std::isfinite(newest)) b->stats.data_age.add(t - newest);
    trace::links_drain(b->ids.data(), b->ids.size(), static_cast<std::uint32_t>(blocks), newest, t - newest);
  }
}

void TaskRuntime::step(double h) noexcept {
  if (!(h > 0.0)) {
    // No step (a measured frame that found no time to integrate): nothing
    // new to publish; a block at the same tag would only be counted stale.
    stats_.step.add(h);
    return;
  }
  if (stopped()) return;
  // A frame that repays owed real time integrates it in equal sub-steps of
  // at most max_step (StepPolicy); its outputs are staged once, at the end.
  const int n = policy_.substeps(h);
  const double hs = n == 1 ? h : h / n;
  double truncation = 0.0, local_error = 0.0;
  for (int i = 0; i < n; ++i) {
    inputs_.count_frames(i + 1 == n);
    partition_->step(partition_->time(), hs, inputs_);
    if (partition_->failed()) {
      // The step did not complete: nothing of it is published.
      const std::uint64_t frame = stats_.frames.load(std::memory_order_relaxed);
      trace::step_health(id_, frame, static_cast<std::uint32_t>(n), policy_.owed(), policy_.lost(),
                         partition_->local_error(), true);
      failed_frame_.store(frame, std::memory_order_release);
      return;
    }
    truncation = std::max(truncation, partition_->truncation_error());
    local_error = std::max(local_error, partition_->local_error());
    if (partition_->terminated()) {
      // The model ended itself: this step completed and is published; the
      // graph's tasks stop at their next cycle.
      ended_frame_.store(stats_.frames.load(std::memory_order_relaxed), std::memory_order_release);
      if (run_end_) run_end_->store(true, std::memory_order_release);
      break;
    }
  }
  stats_.local_error.add(local_error);
  const double tolerance = partition_->divergence_guard().tolerance;
  if (n > 1 || policy_.owed() > 0.0 || (tolerance > 0.0 && local_error > tolerance)) {
    trace::step_health(id_, stats_.frames.load(std::memory_order_relaxed), static_cast<std::uint32_t>(n),
                       policy_.owed(), policy_.lost(), local_error, false);
  }
  if (n > 1) base::add_single_writer(stats_.extra_substeps, static_cast<std::uint64_t>(n - 1));
  stats_.step.add(h);
  if (partition_->integrator() == tasks::IntegratorKind::kAb2) stats_.truncation_error.add(truncation);
  if (const std::uint64_t events = partition_->events(); events != stats_.events.load(std::memory_order_relaxed)) {
    const tasks::Partition::EventCounts& e = partition_->event_counts();
    stats_.events.store(events, std::memory_order_relaxed);
    stats_.events_located.store(e.located, std::memory_order_relaxed);
    stats_.location_trials.store(e.trials, std::memory_order_relaxed);
    stats_.location_trial_limits.store(e.trial_limits, std::memory_order_relaxed);
    stats_.landing_limits.store(e.landing_limits, std::memory_order_relaxed);
  }
  stage_outputs();
}

void TaskRuntime::stage_outputs() noexcept {
  staged_ = true;
  ++sequence_;
  for (OutputBinding& o : outputs_) {
    o.tag = partition_->time();
    o.sequence = sequence_;
    o.producer_step = stats_.step.last();
    // A jump in the producer (a step, a switch) restarts the consumer's
    // method at this block instead of letting it extrapolate across. A
    // port that can jump travels in a bundle of its own, so the flag is its
    // own.
    bool jumped = false;
    if (o.may_jump) {
      for (const tasks::OutputRef& ref : o.refs) jumped = jumped || partition_->output_jumped(ref);
    }
    o.discontinuity = jumped;
  }
}

RTCOSIM_SIGNAL_LOOP void TaskRuntime::fill_block(const OutputBinding& o, coupling::DataBlock& block) const noexcept {
  block.tag = o.tag;
  block.sequence = o.sequence;
  block.producer_step = o.producer_step;
  block.discontinuity = o.discontinuity;
  double* __restrict values = block.values().data();
  double* __restrict derivatives = block.derivatives().data();
  double* __restrict flags = block.derivative_flags().data();
  for (const tasks::OutputRef& run : o.runs) {
    const auto v = partition_->output(run);
    const auto d = partition_->output_derivative(run);
    const auto known = partition_->output_derivative_flags(run);
    const std::size_t n = v.size();
    std::copy_n(v.data(), n, values);
    std::copy_n(d.data(), n, derivatives);
    for (std::size_t i = 0; i < n; ++i) flags[i] = known[i] != 0 ? 1.0 : 0.0;
    values += n;
    derivatives += n;
    flags += n;
  }
}

void TaskRuntime::publish_dropping(std::span<const char> drop, ReplayGate* gate) noexcept {
  if (!staged_) return;
  staged_ = false;
  for (std::size_t i = 0; i < outputs_.size(); ++i) {
    const OutputBinding& o = outputs_[i];
    bool delivered = false;
    if (!drop.empty() && drop[i]) {
      o.bundle->link->drop();
    } else if (gate == nullptr || gate->room(*o.bundle->link)) {
      delivered =
          o.bundle->link->publish_with([this, &o](coupling::DataBlock& block) noexcept { fill_block(o, block); });
    }
    trace::links_publish(o.bundle->ids.data(), o.bundle->ids.size(), o.sequence, o.tag, !delivered);
  }
}

void TaskRuntime::publish_initial() noexcept {
  partition_->refresh_outputs(inputs_);
  sequence_ = 0;
  stage_outputs();
  publish();
}

TaskRuntime* Graph::find_task(const std::string& name) noexcept {
  const auto it = task_index_.find(std::string_view(name));
  return it == task_index_.end() ? nullptr : it->second;
}

namespace {

// The name lookups of Graph::build, made once: a graph of 10^5 tasks built
// in minutes when each was a scan.
struct BuildLookups {
  std::unordered_map<std::string_view, const std::string*> task_of_block;
  std::unordered_map<std::string_view, TaskRuntime*> task_named;
  // The coupling of the first wire from a port into a task.
  std::map<std::pair<std::string, std::string_view>, const config::CouplingSpec*> coupling_into;
};

// Wires into this task that share a producer and a coupling travel as
// one bundle (docs/frame-program.md): keyed by producer, method and
// every coupling parameter as written.
struct Pending {
  LinkBundle* bundle;
  TaskRuntime* producer;
  const config::CouplingSpec* coupling;
  std::size_t width = 0;
  std::vector<tasks::OutputRef> refs;
};

// One consumer's bundles while its links are made: a key bundles wires
// into this consumer only.
struct ConsumerBundles {
  std::vector<Pending> pending;
  std::unordered_map<std::string, std::size_t> pending_keyed;  // key -> index in pending
};

// Tasks before links: every link names its producer and consumer among them.
void make_tasks(std::vector<std::unique_ptr<TaskRuntime>>& graph_tasks, const config::GraphSpec& spec,
                const tasks::BlockRegistry& blocks, std::vector<tasks::TaskPartitionSpec>& parts,
                std::atomic<bool>* model_ended) {
  std::unordered_map<std::string_view, tasks::TaskPartitionSpec*> part_of_task;
  for (auto& p : parts) part_of_task.emplace(p.task, &p);
  for (const auto& ts : spec.tasks) {
    const auto it = part_of_task.find(ts.name);
    std::unique_ptr<tasks::Partition> partition =
        it == part_of_task.end() ? tasks::build_partition(blocks, ts.name, {}, {}, {}, ts.integrator)
                                 : tasks::build_partition(blocks, ts.name, it->second->blocks, it->second->wires,
                                                          it->second->externals, ts.integrator);
    // A part's copy of its blocks is spent once its partition is built: freed here, the copies of all parts
    // and all partitions are not held at once (the set-up's peak of a large graph).
    if (it != part_of_task.end()) {
      std::vector<tasks::BlockSpec>().swap(it->second->blocks);
      std::vector<tasks::WireSpec>().swap(it->second->wires);
    }
    graph_tasks.push_back(std::make_unique<TaskRuntime>(ts, std::move(partition)));
    graph_tasks.back()->set_id(static_cast<std::uint32_t>(graph_tasks.size() - 1));
    graph_tasks.back()->set_run_end(model_ended);
  }
}

// The lookups that need the tasks made, apart from the one made before them.
void index_tasks(BuildLookups& names, std::vector<std::unique_ptr<TaskRuntime>>& graph_tasks,
                 const config::GraphSpec& spec) {
  for (auto& t : graph_tasks) names.task_named.emplace(t->spec().name, t.get());
  for (const auto& w : spec.wires) {
    const auto to = names.task_of_block.find(w.wire.to.block);
    if (to != names.task_of_block.end())
      names.coupling_into.emplace(std::pair{w.wire.from.str(), std::string_view(*to->second)}, &spec.coupling_of(w));
  }
}

// One link's timing apart from its bundle: horizon and look-back follow
// from the two tasks' periods and the coupling alone.
std::unique_ptr<GraphLink> make_link(std::size_t id, const tasks::ExternalInputSpec& external, TaskRuntime* producer,
                                     TaskRuntime* consumer, const config::CouplingSpec* coupling,
                                     const coupling::MethodRegistry& methods) {
  auto link = std::make_unique<GraphLink>();
  link->id = static_cast<std::uint32_t>(id);
  link->source = external.name;
  link->producer = producer->spec().name;
  link->consumer = consumer->spec().name;
  link->method = coupling->method;
  link->remote = producer->spec().host != consumer->spec().host;
  link->method_uses_derivatives = methods.get(coupling->method).uses_derivatives;
  const double producer_period = producer->spec().period;
  const double producer_max = producer->policy().max_step();
  link->max_extrapolation =
      coupling->max_extrapolation.value_or(std::max({kHorizonPeriods * producer_period, producer_max + producer_period,
                                                     consumer->spec().period + kSlackPeriods * producer_period}));
  // A consumer's step may start a whole step behind a faster producer on
  // its clock (a rate group runs its fast members first): reads that far
  // back, and one producer period more, are normal operation.
  link->lookback = consumer->spec().period + producer_period;
  link->width = external.width;
  return link;
}

// Only wires whose extrapolations cannot differ share a bundle: the key
// holds everything that shapes one (producer, method, parameters, limits).
std::string bundle_key(const TaskRuntime* producer, const config::CouplingSpec* coupling, const GraphLink& link) {
  std::string key = producer->spec().name + '\n' + coupling->method;
  for (const auto& p : coupling->params) key += '\n' + p.name + '=' + p.value;
  char limits[64];
  std::snprintf(limits, sizeof limits, "\n%a\n%a", link.max_extrapolation,
                coupling->max_tag_lead.value_or(kDefaultMaxTagLead));
  key += limits;
  return key;
}

// A wire joins the pending bundle of its key, or opens one: the bundle's
// limits are its first wire's (the key makes them every wire's).
Pending* bundle_for(std::vector<std::unique_ptr<LinkBundle>>& bundles, ConsumerBundles& c, bool alone,
                    const std::string& key, const GraphLink& link, TaskRuntime* producer,
                    const config::CouplingSpec* coupling, const coupling::MethodRegistry& methods) {
  Pending* into = nullptr;
  if (!alone) {
    if (const auto it = c.pending_keyed.find(key); it != c.pending_keyed.end()) into = &c.pending[it->second];
  }
  if (!into) {
    bundles.push_back(std::make_unique<LinkBundle>());
    bundles.back()->max_extrapolation = link.max_extrapolation;
    bundles.back()->lookback = link.lookback;
    // A plugin's method is given its derivatives whatever it declares:
    // one written before derivatives were computed only where a method
    // declares it uses them may read them without saying so.
    const coupling::MethodInfo& info = methods.get(coupling->method);
    bundles.back()->needs_derivatives = info.uses_derivatives || info.origin != "built-in";
    if (!alone) c.pending_keyed.emplace(key, c.pending.size());
    c.pending.push_back({bundles.back().get(), producer, coupling, 0, {}});
    into = &c.pending.back();
  }
  return into;
}

// Every external input of a consumer becomes a link, placed in its bundle;
// the bundles' rings are made once all their wires are known.
void make_links(Graph& g, TaskRuntime* consumer, ConsumerBundles& c, const BuildLookups& names,
                const coupling::MethodRegistry& methods, bool bundle_links) {
  const auto& task_of_block = names.task_of_block;
  const auto& task_named = names.task_named;
  for (const auto& external : consumer->partition().externals()) {
    const auto from = task_of_block.find(std::string_view(external.name).substr(0, external.name.find('.')));
    const auto producer_it = from == task_of_block.end() ? task_named.end() : task_named.find(*from->second);
    if (producer_it == task_named.end())
      throw tasks::BlockError("internal: no producer task for link '" + external.name + "'");
    TaskRuntime* producer = producer_it->second;
    const auto wired = names.coupling_into.find(std::pair{external.name, std::string_view(consumer->spec().name)});
    const config::CouplingSpec* coupling =
        wired == names.coupling_into.end() ? &g.spec().default_coupling : wired->second;
    auto link = make_link(g.links().size(), external, producer, consumer, coupling, methods);
    const auto dot = external.name.find('.');  // block names have none
    const tasks::OutputRef ref =
        producer->partition().find_output({external.name.substr(0, dot), external.name.substr(dot + 1)});
    const bool alone = !bundle_links || link->remote || !methods.per_signal(coupling->method) ||
                       producer->partition().output_may_jump(ref);
    const std::string key = alone ? std::string() : bundle_key(producer, coupling, *link);
    Pending* into = bundle_for(g.bundles(), c, alone, key, *link, producer, coupling, methods);
    link->bundle = into->bundle;
    link->offset = into->width;
    into->width += external.width;
    into->refs.push_back(ref);
    into->bundle->members.push_back(link.get());
    into->bundle->ids.push_back(link->id);
    g.links().push_back(std::move(link));
  }
}

// A bundle's ring and extrapolator are sized by both tasks' timing, known
// only once the bundle's width is.
void open_bundle_link(Pending& p, TaskRuntime* consumer, const coupling::MethodRegistry& methods) {
  const double producer_max = p.producer->policy().max_frame_span();
  auto extrapolator = methods.create(p.coupling->method, p.coupling->params, p.width);
  // Twice the producer's longest step per frame: the fast members of a
  // rate group take an N-th of the slow member's step, which may exceed
  // their own max_step.
  extrapolator->set_tag_limits({2.0 * producer_max, p.coupling->max_tag_lead.value_or(kDefaultMaxTagLead)});
  // A consumer that repays a stall reads back over its longest frame
  // (every sub-step of it): the history covers that, its own period and
  // one producer period, and so does the ring, which fills while the
  // consumer does not drain.
  const double producer_period = p.producer->spec().period;
  const double reach = consumer->policy().max_frame_span() + consumer->spec().period + producer_period;
  const auto history = static_cast<std::size_t>(std::ceil(reach / producer_period)) + 2;
  if (history > extrapolator->history_blocks()) {
    extrapolator->set_history_blocks(history);
    extrapolator->configure(p.width);
  }
  p.bundle->link = std::make_unique<coupling::Link>(
      p.width, coupling::LinkTiming{producer_period, consumer->spec().period, consumer->policy().max_frame_span(), 2},
      std::move(extrapolator));
  for (GraphLink* l : p.bundle->members) {
    l->link = p.bundle->link.get();
    l->stats = &p.bundle->stats;
  }
}

// The producer's side of a bundle: its outputs gathered into runs, so that
// a publish copies each contiguous stretch once.
void bind_outputs(Pending& p) {
  OutputBinding out;
  for (const tasks::OutputRef& r : p.refs) {
    out.may_jump = out.may_jump || p.producer->partition().output_may_jump(r);
    if (!out.runs.empty() && out.runs.back().offset + out.runs.back().width == r.offset) {
      out.runs.back().width += r.width;
    } else {
      out.runs.push_back(r);
    }
  }
  out.refs = std::move(p.refs);
  out.bundle = p.bundle;
  p.producer->outputs().push_back(std::move(out));
}

// Output derivatives only where a link's method reads them: every other
// derivative a producer would compute is work no consumer needs.
void want_derivatives(std::vector<std::unique_ptr<TaskRuntime>>& graph_tasks) {
  for (auto& producer : graph_tasks) {
    std::vector<tasks::OutputRef> wanted;
    for (const OutputBinding& o : producer->outputs_view()) {
      if (o.bundle->needs_derivatives) wanted.insert(wanted.end(), o.refs.begin(), o.refs.end());
    }
    producer->partition().set_derivative_consumers(wanted);
  }
}

}  // namespace

std::unique_ptr<Graph> Graph::build(config::GraphSpec&& spec, const tasks::BlockRegistry& blocks,
                                    const coupling::MethodRegistry& methods, bool bundle_links) {
  std::unique_ptr<Graph> g(new Graph(std::move(spec)));
  auto parts = tasks::split_by_task(blocks, g->spec_.diagram);
  BuildLookups names;
  for (const auto& b : g->spec_.diagram.blocks) names.task_of_block.emplace(b.name, &b.task);
  make_tasks(g->tasks_, g->spec_, blocks, parts, &g->model_ended_);
  for (auto& t : g->tasks_) g->task_index_.emplace(t->spec().name, t.get());
  index_tasks(names, g->tasks_, g->spec_);
  for (auto& consumer : g->tasks_) {
    ConsumerBundles c;
    const std::size_t first_link = g->links_.size();
    make_links(*g, consumer.get(), c, names, methods, bundle_links);
    for (Pending& p : c.pending) {
      open_bundle_link(p, consumer.get(), methods);
      bind_outputs(p);
    }
    for (std::size_t i = first_link; i < g->links_.size(); ++i) consumer->inputs().bind(g->links_[i].get());
    consumer->inputs().finish();
  }
  want_derivatives(g->tasks_);
  return g;
}

void Graph::set_host(const std::string& host) {
  if (!host.empty() && !spec_.find_host(host)) {
    std::string known;
    for (const auto& h : spec_.hosts) known += (known.empty() ? "" : ", ") + h.name;
    throw std::invalid_argument("host '" + host + "' is not in the graph's 'hosts:' — expected one of: " +
                                (known.empty() ? std::string("(the file declares no hosts)") : known));
  }
  host_ = host;
  for (auto& t : tasks_) t->set_local(host.empty() || t->spec().host == host);
  for (auto& l : links_) {
    l->producer_local = find_task(l->producer)->local();
    l->consumer_local = find_task(l->consumer)->local();
  }
}

std::vector<GraphLink*> Graph::remote_links() noexcept {
  std::vector<GraphLink*> out;
  for (auto& l : links_) {
    if (l->remote && l->producer_local != l->consumer_local) out.push_back(l.get());
  }
  return out;
}

void Graph::trace_names() const noexcept {
  for (const auto& t : tasks_) {
    trace::task_info(t->id(), t->spec().name.c_str(), t->spec().cpu, t->spec().priority, t->spec().period);
  }
  for (const auto& l : links_) trace::link_info(l->id, l->source.c_str(), l->consumer.c_str(), l->method.c_str());
}

std::vector<std::string> Graph::link_warnings() {
  reset();
  std::vector<std::string> out;
  for (const auto& task : tasks_) {
    for (const OutputBinding& o : task->outputs_view()) {
      for (std::size_t w = 0; w < o.refs.size(); ++w) {
        const GraphLink& l = *o.bundle->members[w];
        if (!l.method_uses_derivatives) continue;
        const auto known = task->partition().output_derivative_flags(o.refs[w]);
        std::string missing;
        std::size_t count = 0;
        for (std::size_t i = 0; i < known.size(); ++i) {
          if (known[i] != 0) continue;
          missing += (count++ ? ", " : "") + std::to_string(i);
        }
        if (count == 0) continue;
        std::string which = known.size() == 1 ? "'" + l.source + "'"
                                              : "'" + l.source + "' (signal" + (count > 1 ? "s " : " ") + missing +
                                                    " of " + std::to_string(known.size()) + ")";
        out.push_back("link " + l.source + " -> " + l.consumer + " (" + l.method + "): producer '" + l.producer +
                      "' publishes no derivative for " + which +
                      "; the method uses its derivative-free variant there " + "(counted as fallback frames)");
      }
    }
  }
  return out;
}

void Graph::trace_link_health() const noexcept {
  for (const auto& l : links_) {
    const LinkHealth h = l->health();
    trace::link_health(l->id, h.stale, h.rejected_tags, h.rejected_values, h.fallback_frames, h.beyond_horizon_frames,
                       h.longest_gap);
  }
}

void Graph::reset() noexcept {
  model_ended_.store(false, std::memory_order_relaxed);
  for (auto& b : bundles_) {
    b->link->drain_to([](const coupling::DataBlock&) noexcept {});
    b->link->extrapolator().reset();
    b->link->reset_counters();
    b->stats.reset();
  }
  for (auto& t : tasks_) t->reset_run();
  for (auto& t : tasks_) t->partition().reset(0.0);
  // Each task reads what the tasks before it published at t = 0, so that
  // its initial outputs see its inputs (a body driven by another's reduced
  // interface model computes its first interface force from it).
  for (auto& t : tasks_) {
    t->drain();
    t->publish_initial();
  }
  // The run's link statistics start with its first frame.
  for (auto& b : bundles_) b->stats.reset();
}

}  // namespace rtcosim::runtime
