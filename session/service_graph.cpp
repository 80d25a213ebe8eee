#include "session/service_graph.hpp"

#include <algorithm>
#include <exception>
#include <stdexcept>

#include "base/json.hpp"
#include "session/session.hpp"

namespace rtcosim::session {

ServiceGraph::ServiceGraph(const tasks::BlockRegistry& blocks, ServiceGraphOptions options, std::string recording_dir,
                           std::function<void(const std::string&)> log)
    : blocks_(blocks),
      options_(std::move(options)),
      methods_(std::make_unique<coupling::MethodRegistry>(coupling::MethodRegistry::with_builtins())),
      recording_(std::move(recording_dir), std::move(log)) {}

ServiceGraph::~ServiceGraph() { stop(); }

PreparedGraph ServiceGraph::prepare(const config::LoadResult& loaded, const std::string& text,
                                    const std::string& label) const {
  PreparedGraph p;
  p.text = text;
  p.label = label;
  std::string diagnostics;
  for (const auto& d : loaded.diagnostics) diagnostics += d.str() + "\n";
  if (!loaded.ok()) {
    p.error = diagnostics;
    return p;
  }
  p.warnings = diagnostics;
  // A service runs in real time only.
  if (const std::string why = loaded.graph.realtime_refusal(); !why.empty()) {
    p.error = label + ": " + why + "\n";
    return p;
  }
  // As `rtcosim run --host`: only this host's tasks run.
  if (const std::string why = host_refusal(loaded.graph, options_.host, label, options_.program); !why.empty()) {
    p.error = why + "\n";
    return p;
  }
  try {
    auto built = build_graph(loaded.graph, blocks_, options_.plugin_dirs, options_.host);
    // The data files as the blocks just read them: a replay log of a run of
    // this graph names these, however long it runs before it is logged.
    p.data_files = runtime::replay_data_files(loaded.graph.diagram, blocks_);
    if (loaded.graph.sync.optimise.enabled) {
      // Refused now, with the running graph untouched, if it cannot run
      // (a measured signal it reads that the file does not record, ...).
      const runtime::Recorder trial(*built.graph, {});
      const LiveSync check(built.graph->spec(), blocks_, *built.graph, trial, 0.0);
    }
    p.methods = std::move(built.methods);
    p.graph = std::move(built.graph);
  } catch (const std::exception& e) {
    p.error = label + ": " + e.what() + "\n";
  }
  return p;
}

void ServiceGraph::install(PreparedGraph&& p) {
  if (!p.graph || !p.methods) throw std::runtime_error(p.label + ": no graph was built");
  stop();
  recording_.reload_begins(recorded());
  // The old graph's synchronisation and DDS state go before the graph they
  // point into; the methods after it, which it refers to.
  live_sync_.reset();
  remote_.reset();
  recorder_.reset();
  graph_ = std::move(p.graph);
  methods_ = std::move(p.methods);
  file_ = p.label;
  text_ = std::move(p.text);
  data_files_ = std::move(p.data_files);
  // Memory stays fixed for months: the rings, and the latest sample per
  // signal for the status preview; with the live view or a state
  // synchronisation the latest 4096 per signal.
  const bool keep_latest = options_.live_view || graph_->spec().sync.optimise.enabled;
  recorder_ = std::make_unique<runtime::Recorder>(
      *graph_, runtime::Recorder::Options{.keep = keep_latest ? std::size_t{4096} : std::size_t{1},
                                          .probes = options_.live_view ? options_.probes : std::size_t{0}});
  last_frames_.assign(graph_->tasks().size(), 0);
  recording_.reload_done(*recorder_);
}

std::string ServiceGraph::set_up_start(std::vector<std::string>* warnings) {
  if (!graph_) return "no graph is loaded";
  run_ = std::make_unique<RealtimeRun>(*graph_, recorder_.get());
  remote_ = run_->remote();
  report_ = run_->prepare();
  warnings->insert(warnings->end(), report_.warnings.begin(), report_.warnings.end());
  if (!report_.ok) {
    run_.reset();
    return "real-time set-up failed: " + (report_.errors.empty() ? std::string("?") : report_.errors.front());
  }
  const auto& link_warnings = graph_->link_warnings();
  warnings->insert(warnings->end(), link_warnings.begin(), link_warnings.end());
  last_frames_.assign(graph_->tasks().size(), 0);  // progress() reads it while the hosts agree
  return {};
}

void ServiceGraph::open_bridge() {
  try {
    run_->open_bridge();
  } catch (...) {
    run_.reset();
    throw;
  }
}

std::string ServiceGraph::launch(std::int64_t epoch_ns, std::vector<std::string>* warnings) {
  try {
    // Simulation time starts again at 0: so do the kept series (the
    // previous run's samples were drained at its stop).
    recorder_->clear_kept();
    runtime::ReplayLog* log = recording_.run_starting(*recorder_);
    run_->start(0.0, epoch_ns, log);  // until stopped
    recording_.run_started();
  } catch (const std::exception& e) {
    // realtime: required and a thread could not be set up: nothing ran.
    run_.reset();
    recording_.run_start_failed();
    return e.what();
  }
  const auto errors = run_->thread_errors();
  warnings->insert(warnings->end(), errors.begin(), errors.end());
  running_ = true;
  // A fresh run starts at t = 0: so does its synchronisation.
  live_sync_.reset();
  if (graph_->spec().sync.optimise.enabled) {
    live_sync_ = std::make_unique<LiveSync>(graph_->spec(), blocks_, *graph_, *recorder_, 0.0);
  }
  last_frames_.assign(graph_->tasks().size(), 0);
  return {};
}

void ServiceGraph::abandon_start() noexcept { run_.reset(); }

void ServiceGraph::stop() {
  if (!run_) return;
  if (!running_) {
    run_.reset();  // set up, never launched
    return;
  }
  (void)run_->stop();
  run_.reset();
  running_ = false;
  drain();
  if (recorder_) recording_.run_stopped(*recorder_);
}

void ServiceGraph::drain() {
  if (recorder_) recording_.drain(*recorder_);
}

RealtimeRun::Events ServiceGraph::take_events() {
  return run_ && running_ ? run_->take_events() : RealtimeRun::Events{};
}

ServiceProgress ServiceGraph::progress() {
  ServiceProgress p;
  if (!graph_) return p;
  const auto& tasks = graph_->tasks();
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const auto& s = tasks[i]->stats();
    const auto f = s.frames.load();
    // A task that stopped on a failure is reported, not restarted: a
    // restart would run the same graph into the same failure.
    const bool stopped = tasks[i]->failed();
    if (stopped && p.failed.empty()) p.failed = tasks[i]->spec().name;
    // A model that ended the run stopped every task, normally.
    if (tasks[i]->ended() && p.ended.empty()) p.ended = tasks[i]->spec().name;
    // Another host's tasks never run here.
    if (running_ && tasks[i]->local() && !stopped && !graph_->model_ended() && f == last_frames_[i]) {
      p.advancing = false;
    }
    last_frames_[i] = f;
    p.frames += f;
    p.overruns += s.overruns.load();
    p.worst_wakeup_ns = std::max(p.worst_wakeup_ns, s.wakeup_latency_ns.max());
  }
  return p;
}

std::string ServiceGraph::failed_json() const {
  std::string failed;
  if (!graph_) return failed;
  for (const auto& t : graph_->tasks()) {
    if (!t->failed()) continue;
    failed += std::string(failed.empty() ? "" : ",") + "{\"task\":" + base::json_string(t->spec().name) +
              ",\"failure\":" + base::json_string(t->failure()) + "}";
  }
  return failed;
}

ServiceRecording::Target ServiceGraph::recorded() {
  return {graph_.get(), recorder_.get(), file_, text_, data_files_, run_ != nullptr, report_.fifo ? "fifo" : "other",
          remote_.get()};
}

}  // namespace rtcosim::session
