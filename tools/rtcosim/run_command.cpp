#include "tools/rtcosim/run_command.hpp"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "base/duration.hpp"
#include "base/sha256.hpp"
#include "coupling/plugin_loader.hpp"
#include "rt_config/loader.hpp"
#include "runtime/column_file.hpp"
#include "runtime/frame_log.hpp"
#include "runtime/graph.hpp"
#include "runtime/realtime.hpp"
#include "runtime/record_file.hpp"
#include "runtime/recorder.hpp"
#include "runtime/replay_executor.hpp"
#include "runtime/replay_log.hpp"
#include "runtime/rt_executor.hpp"
#include "runtime/trace.hpp"
#include "runtime/virtual_executor.hpp"
#include "session/realtime_run.hpp"
#include "session/recording.hpp"
#include "session/report/recording_summary.hpp"
#include "session/report/run_summary.hpp"
#include "session/report/svg_plot.hpp"
#include "session/sync/sync_live.hpp"
#include "session/sync/sync_report.hpp"
#include "session/trace_session.hpp"
#include "tasks/plant/live_feed.hpp"
#include "tools/common/cli_args.hpp"
#include "tools/rtcosim/graph_file.hpp"

namespace rtcosim::tools {

namespace {

constexpr const char* kRunHelp =
    R"(usage: rtcosim run [--virtual] [--duration 10s] [--record out.csv|.h5|.mat] [--compare-reference]
                   [--plot out.svg] [--json summary.json] [--frames frames.csv] [--host NAME]
                   [--replay-log run.rpl] FILE

Runs a task graph. Each task is a thread pinned to its CPU at its
SCHED_FIFO priority (when permitted: see the file's `realtime:`), all on one
epoch; Ctrl-C stops the tasks at a frame boundary and everything recorded so
far is written. A progress line is printed every second.

With --virtual the graph runs on a fake clock with the execution times the
file scripts (each task's `execution:`), deterministic and as fast as the
machine allows: every task's frames, steps, overruns and lags are what the
real-time PC would see with those execution times.

Prints per-task statistics (frames, step min/mean/max, overruns, missed
periods, lag, lost real time, latency and execution-time percentiles, AB-2
truncation-error estimate), per-link statistics (published, dropped,
data age, extrapolation interval) and per task what was recorded (samples,
samples dropped by a full ring, frame-log rows dropped). A write error (a
full disk) ends the recording and the run exits 1.

options:
  --virtual               run in virtual time
  --duration DURATION     how long to run (default: the file's `duration`)
  --record FILE           where to write the recorded signals (default: the file's `record.file`):
                          .csv, .h5 (HDF5: signals, frames, summary in one file) or .mat (MAT v7.3;
                          `record.format: mat5` for v5); written under a temporary name, FILE is
                          replaced when the run is over (docs/recording.md: layouts, flushes, errors)
  --compare-reference     RMS and max error of every recorded signal against the reference
                          solution (the whole diagram merged, RK4); needs a finite run
  --reference-step D      step of the RK4 reference (default 0.5ms)
  --plot FILE.svg         draw every recorded signal beside the reference solution; needs a finite run
                          (with 'sync.optimise': also measured, without and with synchronisation, and u)
  --sync-csv FILE         with 'sync.optimise': each macro step's measured / without / with, u and the
                          optimiser's figures (docs/sync.md, "Live")
  --json FILE.json        write the summary as JSON
  --frames FILE.csv       one row per frame: task,frame,wall_s,sim_s,step_s,latency_ns,exec_ns
  --trace DIR             record an LTTng trace of the run into DIR (real time only; see 'rtcosim trace report')
  --period-scale F        multiply every task period by F (benchmarks: the shortest periods a PC
                          sustains); every scaled period must stay at 1us or more
  --plugin-dir DIR        where the file's 'plugins:' ids may be loaded from; repeatable (docs/plugins.md)
  --max-file-size MIB     refuse task-graph files larger than this (default 4)
  --replay-log FILE       real time: log every frame's clock readings and the blocks each input took,
                          for 'rtcosim replay' (docs/replay.md; about 40 bytes per frame)
  --host NAME             run only the tasks of host NAME of the file's 'hosts:'; links to tasks on
                          other hosts travel over DDS, and every host starts on one common epoch
                          once all of them are there (docs/dds.md)
  -h, --help              this text
)";

constexpr const char* kReplayHelp =
    R"(usage: rtcosim replay [--what-if] [--record out.csv|.h5|.mat] [--frames frames.csv] [--json summary.json]
                      [--compare-reference] [--plot out.svg] LOG GRAPH

Runs GRAPH again through the frames of a real-time run that
'rtcosim run --replay-log LOG' logged: every thread's wake-ups, frame
starts, integration points and ends as they happened, and every input's
blocks as each frame drained them. The steps, outputs, statistics
(overruns, missed periods, lag, link health) and recordings are the run's,
bit for bit, and the summary is the one the run printed.

GRAPH must be the graph that ran (the log holds its SHA-256). With
--what-if it may differ where the timing still applies: coupling methods
and their parameters, integrators, block parameters; the same tasks, rate
groups and links. The run's graph is then replayed too, from the path the
log names, and every recorded signal's difference to the run is printed
(with --compare-reference also to the merged reference; --plot draws run,
what-if and reference). docs/replay.md: the log, its cost, the rules.

options:
  --what-if               replay a changed graph against the run's timing and compare
  --logged-graph FILE     with --what-if: the graph that ran, when not at the path the log names
  --record FILE           write the replay's recorded signals (.csv, .h5, .mat)
  --frames FILE.csv       one row per frame, as 'rtcosim run --frames' writes it
  --json FILE.json        write the summary as JSON
  --compare-reference     RMS and max error of every recorded signal against the reference
  --reference-step D      step of the RK4 reference (default 0.5ms)
  --plot FILE.svg         draw the recorded signals (with --what-if: run, what-if, reference)
  --plugin-dir DIR        where the file's 'plugins:' ids may be loaded from; repeatable
  --max-file-size MIB     refuse task-graph files larger than this (default 4)
  -h, --help              this text
)";

// The recorded series of a what-if replay's logged run (docs/replay.md).
using Baseline = std::vector<runtime::Recorder::Series>;

const runtime::Recorder::Series* baseline_of(const Baseline* baseline, const runtime::Recorder::Series& s) {
  if (!baseline) return nullptr;
  for (const auto& b : *baseline) {
    if (b.signal == s.signal) return &b;
  }
  return nullptr;
}

// Per recorded signal: the what-if's difference to the logged run, sample
// by sample (both sample the same frames: the timing is the run's).
std::vector<session::ReferenceError> differences(const runtime::Recorder& recorder, const Baseline& baseline) {
  std::vector<session::ReferenceError> out;
  for (const auto& s : recorder.series()) {
    const auto* b = baseline_of(&baseline, s);
    if (!b) continue;
    session::ReferenceError e{s.signal, 0.0, 0.0, 0};
    double sum = 0.0;
    // At the instants both recorded: every sample when the frames are the
    // logged ones; with another period, those the periods share.
    std::size_t j = 0;
    for (std::size_t i = 0; i < s.value.size(); ++i) {
      const double tolerance = 1e-9 * std::max(1.0, std::abs(s.time[i]));
      while (j < b->time.size() && b->time[j] < s.time[i] - tolerance) ++j;
      if (j == b->time.size()) break;
      if (std::abs(b->time[j] - s.time[i]) > tolerance) continue;
      const double d = std::abs(s.value[i] - b->value[j]);
      sum += d * d;
      e.max = std::max(e.max, d);
      ++e.samples;
    }
    e.rms = e.samples > 0 ? std::sqrt(sum / static_cast<double>(e.samples)) : 0.0;
    out.push_back(e);
  }
  return out;
}

void write_run_plot(const runtime::Recorder& recorder, const tasks::ReferenceSolver* reference,
                    const std::string& title, const std::string& path, const session::SyncRun* sync,
                    const Baseline* baseline = nullptr) {
  plot::Figure figure;
  figure.title = title;
  figure.x_label = "simulation time (s)";
  static const char* kColors[] = {"#d62728", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf"};
  std::size_t color = 0;
  for (const auto& s : recorder.series()) {
    plot::Panel panel;
    panel.y_label = s.signal;
    if (reference) {
      std::vector<double> values;
      for (double t : reference->times()) values.push_back(reference->value(s.probe, t, s.element));
      panel.series.push_back({"reference (RK4)", reference->times(), values, "#1f77b4", 2.0, false, false});
    }
    if (const auto* b = baseline_of(baseline, s)) {
      panel.series.push_back({"the logged run", b->time, b->value, "#7f7f7f", 2.0, false, false});
    }
    panel.series.push_back({s.signal + " (" + s.task + (baseline ? ", what-if)" : ")"), s.time, s.value,
                            kColors[color++ % 6], 1.2, false, false});
    figure.panels.push_back(std::move(panel));
  }
  if (sync) session::add_sync_panels(figure, *sync);
  figure.panel_height = 220;
  std::string why;
  if (!plot::write_svg(figure, path, &why)) throw std::runtime_error(why);
}

// Where a run's recording goes: its signals in the chosen format (none
// without a file: the recorder then only keeps its in-memory series), the
// --frames CSV, and the replay log's batch ends.
struct Outputs {
  runtime::Recorder& recorder;
  std::unique_ptr<session::Recording> signals;
  std::unique_ptr<runtime::FrameLog> frame_log;
  std::unique_ptr<runtime::RecordFile> frames_csv;
  runtime::ReplayLog* replay_log = nullptr;

  [[nodiscard]] runtime::ColumnFile* columns() const { return signals ? signals->columns() : nullptr; }
  void drain() {
    if (signals) {
      signals->drain(recorder);
    } else {
      recorder.drain();
    }
    if (frame_log) frame_log->drain(frames_csv.get(), columns());
    if (replay_log) {
      // Where this batch ends, so that a replay writes the same batches.
      std::vector<std::uint64_t> recorded;
      for (const auto& c : recorder.counts()) recorded.push_back(c.samples);
      replay_log->drain(recorded, frame_log ? frame_log->rows_drained() : std::vector<std::uint64_t>{});
    }
  }
  // A replay: the run's batches, each task up to the counts it had drained.
  void drain(const runtime::ReplayRecord::Batch& batch) {
    if (signals) {
      signals->drain(recorder, batch.recorded);
    } else {
      recorder.drain(nullptr, batch.recorded);
    }
    if (frame_log) frame_log->drain(frames_csv.get(), columns(), batch.frame_rows);
  }
  void finish() {
    if (signals) {
      signals->finish(recorder);
    } else {
      recorder.finish(nullptr);
    }
    if (frame_log) frame_log->finish(frames_csv.get(), columns());
  }
  [[nodiscard]] runtime::RecordTarget* target() const { return signals ? &signals->target() : nullptr; }
};

std::atomic<session::RealtimeRun*> g_running{nullptr};

extern "C" void stop_on_signal(int) {
  if (auto* r = g_running.load()) r->request_stop();
}

// SIGINT or SIGTERM while a command integrates the duration it was given
// (the reference; a what-if's virtual run, docs/replay.md): that work stops
// where it is, what it made is written, and the exit code is 128 + signal.
std::atomic<bool> g_interrupted{false};
std::atomic<int> g_interrupt_signal{0};
extern "C" void interrupt_on_signal(int signal) {
  g_interrupt_signal.store(signal);
  g_interrupted.store(true);
}
struct Interrupted {};  // thrown out of a virtual run from its observer
// interrupt_on_signal on SIGINT and SIGTERM while it lives.
class Interruptible {
 public:
  Interruptible() {
    struct sigaction action {};
    action.sa_handler = interrupt_on_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    sigaction(SIGINT, &action, &int_);
    sigaction(SIGTERM, &action, &term_);
  }
  ~Interruptible() {
    sigaction(SIGINT, &int_, nullptr);
    sigaction(SIGTERM, &term_, nullptr);
  }
  Interruptible(const Interruptible&) = delete;
  Interruptible& operator=(const Interruptible&) = delete;
  static std::string signal_name() { return g_interrupt_signal.load() == SIGTERM ? "SIGTERM" : "SIGINT"; }

 private:
  struct sigaction int_ = {};
  struct sigaction term_ = {};
};

// How each task's thread actually ran, as the kernel reported it after the
// set-up, with the file's request where it differs.
std::string thread_placements(runtime::Graph& graph) {
  std::string out = "threads:";
  for (const auto& t : graph.tasks()) {
    const auto& p = t->placement();
    const auto& s = t->spec();
    std::string got = runtime::policy_text(p) + (p.cpu >= 0 ? " on CPU " + std::to_string(p.cpu) : " unpinned");
    const bool fifo_wanted = s.priority > 0 && graph.spec().realtime != config::RealtimeMode::kOff;
    std::string asked = (fifo_wanted ? "fifo " + std::to_string(s.priority) : std::string("other")) +
                        (s.cpu >= 0 ? " on CPU " + std::to_string(s.cpu) : " unpinned");
    out += "\n  " + s.name + ": " + got + (got == asked ? "" : " (asked: " + asked + ")");
  }
  return out + "\n";
}

// Returns what the run's DDS bridge measured, for the summaries.
std::shared_ptr<const io::RemoteState> run_realtime(runtime::Graph& graph, Outputs& outputs, double duration,
                                                    bool* fifo, session::LiveSync* live,
                                                    runtime::ReplayLog* replay_log) {
  session::RealtimeRun run(graph, &outputs.recorder, outputs.frame_log.get());
  const auto& report = run.prepare();
  for (const auto& w : report.warnings) std::cerr << "warning: " << w << '\n';
  for (const auto& e : report.errors) std::cerr << "error: " << e << '\n';
  if (!report.ok) throw std::runtime_error("the real-time set-up failed (realtime: required); nothing was run");
  *fifo = report.fifo;
  if (const std::string w = run.pin_caller_off_task_cpus(); !w.empty()) std::cerr << "warning: " << w << '\n';
  std::int64_t epoch_ns = 0;
  if (run.distributed()) {
    std::cout << "host " << graph.host() << ": waiting for ";
    for (const auto& h : graph.spec().hosts) {
      if (h.name != graph.host()) std::cout << h.name << ' ';
    }
    std::cout << "(at most " << base::format_duration(graph.spec().dds.discovery_timeout) << ")\n";
    if (graph.spec().dds.security.enabled()) {
      std::cout << "DDS Security on: identity CA " << graph.spec().dds.security.identity_ca << ", governance "
                << graph.spec().dds.security.governance << "\n";
    }
    std::cout << std::flush;
    run.open_bridge();
    std::int64_t start_rt = 0;
    epoch_ns = run.coordinate(&start_rt);
    std::cout << "hosts agree; common epoch at CLOCK_REALTIME " << start_rt / 1'000'000'000 << '.'
              << std::to_string(1'000'000'000 + start_rt % 1'000'000'000).substr(1) << " s\n"
              << std::flush;
  }
  run.start(duration, epoch_ns, replay_log);
  g_running.store(&run);
  struct sigaction action {};
  action.sa_handler = stop_on_signal;
  sigemptyset(&action.sa_mask);
  // This thread writes the recording while the run lasts: without
  // SA_RESTART, a Ctrl-C that lands in a write or read makes it fail with
  // EINTR (stdio and iostreams report that as an error, not a retry).
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  // Set-up problems are known before the epoch: say them before the run.
  for (const auto& e : run.thread_errors()) std::cerr << "warning: " << e << '\n';
  double next_progress = 1.0;
  while (!run.finished()) {
    // This thread is the recording's writer: it never runs a frame, and the
    // tasks never wait for it (full rings drop and count).
    // The live synchronisation reads the measurement here: looked at every
    // 5 ms, u reaches the tasks a few macro steps after its data.
    std::this_thread::sleep_for(std::chrono::milliseconds(live ? 5 : 50));
    outputs.drain();
    if (live) live->poll();
    const auto events = run.take_events();
    for (const auto& h : events.lost_hosts) {
      std::cerr << "error: host '" << h << "' fell silent at t = " << std::to_string(run.elapsed())
                << " s (no announce for " << session::RealtimeRun::host_silence()
                << " s); the tasks here keep running, their inputs from it held at the horizon\n";
    }
    for (const auto& w : events.clock_warnings) std::cerr << "warning: " << w << '\n';
    if (run.elapsed() >= next_progress) {
      next_progress += 1.0;
      std::uint64_t frames = 0, overruns = 0;
      std::int64_t worst = 0;
      for (auto& t : graph.tasks()) {
        frames += t->stats().frames.load();
        overruns += t->stats().overruns.load();
        worst = std::max(worst, t->stats().wakeup_latency_ns.max());
      }
      char line[160];
      std::snprintf(line, sizeof line, "  t = %.0f s: %llu frames, %llu overruns, worst wake-up latency %.1f us\n",
                    run.elapsed(), static_cast<unsigned long long>(frames), static_cast<unsigned long long>(overruns),
                    static_cast<double>(worst) * 1e-3);
      std::cout << line << std::flush;
    }
  }
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  g_running.store(nullptr);
  const std::string bridge_placement = run.stop();
  if (run.distributed()) std::cout << "DDS bridge thread: " << bridge_placement << '\n';
  std::cout << thread_placements(graph);
  return run.remote();
}

}  // namespace

namespace {

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The data files the logged run read (a plant's table, an FMU): another one
// makes another run, refused unless it is a what-if, which says so.
void check_data_files(const runtime::ReplayRecord& record,
                      const std::vector<std::pair<std::string, std::string>>& files, bool what_if) {
  for (const auto& [name, sha] : record.header.files) {
    const auto now = std::find_if(files.begin(), files.end(), [&](const auto& f) { return f.first == name; });
    if (now != files.end() && now->second == sha) continue;
    const std::string what = "the data file of " + name + " is not the one the run read (SHA-256 " + sha.substr(0, 12) +
                             "…, now " + (now == files.end() ? std::string("none") : now->second.substr(0, 12) + "…") +
                             ")";
    if (!what_if) throw UsageError(what + ": the replay would diverge — restore it, or give --what-if");
    std::cout << "note: " << what << "; --what-if replays with it\n";
  }
}

// A what-if's logged run: the logged graph (the file the log names, or
// --logged-graph) replayed first, for its series; with another period, also
// the logged timing that the changed graph runs on.
struct LoggedRun {
  Baseline series;
  std::string period_changed;  // the first task whose period the what-if changes
  std::optional<runtime::VirtualExecutor::Timing> timing;
};
std::optional<LoggedRun> logged_run(const std::string& original, const runtime::ReplayRecord& record,
                                    const config::GraphSpec& spec, const tasks::BlockRegistry& blocks,
                                    const std::string& host, const runtime::Recorder::Options& keep,
                                    const config::LoadOptions& load_options) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(original, ec) ||
      std::filesystem::file_size(original, ec) > load_options.max_file_bytes) {
    throw UsageError("--what-if compares with the logged run, whose graph '" + original +
                     "' is not a task-graph file here — give it with --logged-graph FILE");
  }
  if (base::sha256_hex(file_bytes(original)) != record.header.graph_sha256) {
    throw UsageError("--what-if compares with the logged run, whose graph " + original +
                     " is no longer as it ran (SHA-256 " + record.header.graph_sha256.substr(0, 12) +
                     "…) — put it back or give it with --logged-graph FILE");
  }
  std::cout << "the logged run's graph: " << original << '\n';
  auto original_spec = load_graph_or_report(original, load_options);
  if (!original_spec) return std::nullopt;
  LoggedRun out;
  // The frames' readings belong to the logged overrun policies and rate
  // groups: others would read them in other roles. Another period runs in
  // virtual time on the log's timing mapped onto it.
  for (const auto& t : spec.tasks) {
    const auto* o = original_spec->find_task(t.name);
    if (o && (o->overrun != t.overrun || o->rate_group != t.rate_group)) {
      throw UsageError("--what-if: task '" + t.name + "' has another overrun policy or rate group than " +
                       "in the logged run; a replay takes each frame's times from the log, which belong to the " +
                       "logged ones (docs/replay.md, \"What-if\")");
    }
    if (o && o->period != t.period && out.period_changed.empty()) out.period_changed = t.name;
  }
  if (!out.period_changed.empty() && (!record.sources.empty() || !record.header.host.empty())) {
    throw UsageError(
        "--what-if: task '" + out.period_changed + "' has another period, and the logged run took data from outside (" +
        (record.sources.empty() ? "another host" : "live plant source '" + record.sources.front().block + "'") +
        ") that arrived for the logged frames only; keep the periods (docs/replay.md, \"What-if\")");
  }
  const auto original_methods = config::plugin_registry(*original_spec, load_options.plugins.directories);
  auto original_graph = runtime::Graph::build(*original_spec, blocks, original_methods);
  original_graph->set_host(host);
  runtime::Recorder::Options all = keep;
  all.keep = runtime::Recorder::kKeepAll;
  runtime::Recorder original_recorder(*original_graph, all);
  runtime::ReplayExecutor original_executor(*original_graph, record);
  original_executor.keep_timings(!out.period_changed.empty());
  std::string why;
  if (!original_executor.run(&original_recorder, nullptr, &why, [&] { original_recorder.drain(); })) {
    throw std::runtime_error("the replay of the logged graph " + original + " stopped: " + why);
  }
  original_recorder.drain();
  out.series = original_recorder.series();
  if (!out.period_changed.empty()) out.timing = original_executor.logged_timing();
  return out;
}

// A replay writes the run's batches, each once every task's rings hold all
// of it (a batch drained in two goes would interleave the tasks' rows
// otherwise), so that the rings stay the run's size however long the log.
void replay_in_batches(runtime::ReplayExecutor& executor, const runtime::ReplayRecord& record,
                       runtime::Recorder& recorder, Outputs& outputs, const std::string& log_path) {
  std::size_t next = 0;
  auto ready = [&](const runtime::ReplayRecord::Batch& b) {
    const auto samples = recorder.reachable();
    for (std::size_t i = 0; i < b.recorded.size() && i < samples.size(); ++i) {
      if (samples[i] < b.recorded[i]) return false;
    }
    if (outputs.frame_log) {
      const auto rows = outputs.frame_log->rows_reachable();
      for (std::size_t i = 0; i < b.frame_rows.size() && i < rows.size(); ++i) {
        if (rows[i] < b.frame_rows[i]) return false;
      }
    }
    return true;
  };
  auto drain_batches = [&] {
    for (; next < record.batches.size() && ready(record.batches[next]); ++next) outputs.drain(record.batches[next]);
  };
  std::string why;
  if (!executor.run(&recorder, outputs.frame_log.get(), &why, drain_batches)) {
    throw std::runtime_error("the replay of " + log_path + " stopped: " + why);
  }
  for (; next < record.batches.size(); ++next) outputs.drain(record.batches[next]);
}

// A virtual run: every frame sampled into the recording and the frame
// table, drained every 4096 frames (16 with a live synchronisation, which
// is polled then).
void run_virtual(runtime::VirtualExecutor& executor, runtime::Graph& graph, runtime::Recorder& recorder,
                 Outputs& outputs, double duration, session::LiveSync* live, bool interruptible = false) {
  std::unordered_map<const runtime::TaskRuntime*, std::size_t> task_index;
  for (std::size_t i = 0; i < graph.tasks().size(); ++i) task_index[graph.tasks()[i].get()] = i;
  std::size_t frames = 0;
  const auto at_start = [&](runtime::Graph& g) { recorder.sample_start(g); };
  executor.run(
      duration,
      [&](runtime::TaskRuntime& task, const runtime::FrameRecord& f) {
        (void)recorder.sample(task);
        if (outputs.frame_log) {
          (void)outputs.frame_log->add(task_index[&task],
                                       runtime::FrameRow{f.frame, f.end, f.sim_time, f.step, f.latency_ns,
                                                         std::llround((f.end - f.start) * 1e9), f.start_lateness_ns});
        }
        if (++frames % (live ? 16 : 4096) == 0) {
          outputs.drain();
          if (live) live->poll();
          if (interruptible && g_interrupted.load()) throw Interrupted{};
        }
      },
      at_start);
}

// The body of `rtcosim run` and of `rtcosim replay` (docs/replay.md): the
// same outputs, summaries and exit codes; only the executor differs. One
// object per invocation, its steps in the order they run: the arguments,
// the log, the file, the checks of the options, the graph and its outputs,
// the run, the report.
class GraphRun {
 public:
  GraphRun(const std::string& verb, CliArgs& args, const std::vector<std::string>& raw_args)
      : verb_(verb), replaying_(verb == "replay"), args_(args), raw_args_(raw_args) {}

  int operator()() {
    if (!parse_arguments()) return 0;
    load_log();
    if (!load_graph_file()) return 1;
    scale_periods();
    check_options();
    choose_host();
    build_graph();
    open_outputs();
    open_replay_log();
    check_replay();
    if (!run()) return 1;
    return report();
  }

 private:
  // The graph file, and with `replay` the log; false when --help answered.
  bool parse_arguments() {
    if (replaying_) {
      args_.parse(raw_args_);
      if (args_.flag("help")) {
        std::cout << kReplayHelp;
        return false;
      }
      if (args_.positionals().size() != 2) {
        throw UsageError("expected a replay log and a task-graph file: rtcosim replay LOG GRAPH");
      }
      log_path_ = args_.positionals()[0];
      file_ = args_.positionals()[1];
      return true;
    }
    const auto parsed = args_.parse_for_file(raw_args_, kRunHelp);
    if (!parsed) return false;
    file_ = *parsed;
    return true;
  }

  void load_log() {
    if (!replaying_) return;
    record_ = runtime::ReplayRecord::load(log_path_);
    // Live plant sources take the logged rows: no socket, no thread, no
    // followed file in a replay.
    tasks::plant::replay_offline();
    if (!record_->sources.empty() && args_.flag("compare-reference")) {
      throw UsageError("--compare-reference: the logged run took rows from live plant source '" +
                       record_->sources.front().block +
                       "'; a monolithic reference has no rows of its own to take (docs/replay.md)");
    }
  }

  bool load_graph_file() {
    load_options_.plugins = {args_.values("plugin-dir"), true};
    load_options_.max_file_bytes = args_.max_file_bytes(load_options_.max_file_bytes);
    loaded_ = load_graph_or_report(file_, load_options_);
    return loaded_.has_value();
  }

  // --period-scale: every task period (and max step) times F, for finding
  // the shortest periods a machine sustains; block sample times stay as
  // written.
  void scale_periods() {
    const auto scale_text = args_.value("period-scale");
    if (!scale_text) return;
    char* end = nullptr;
    const double scale = std::strtod(scale_text->c_str(), &end);
    if (end == scale_text->c_str() || *end != '\0' || !(scale > 0.0)) {
      throw UsageError("--period-scale: '" + *scale_text + "' — expected a positive number, e.g. 0.5");
    }
    // Virtual time runs periods down to its nanosecond; real time to 1 us.
    const bool virtual_time = args_.flag("virtual");
    const double floor = virtual_time ? config::kMinVirtualPeriod : config::kMinPeriod;
    for (auto& t : spec().tasks) {
      t.period *= scale;
      t.max_step *= scale;
      if (t.period < floor * (1.0 - 1e-9)) {
        throw UsageError("--period-scale " + *scale_text + " makes task '" + t.name + "' run every " +
                         base::format_duration(t.period) + ", below the floor of " + base::format_duration(floor) +
                         " — expected a scale that keeps every period at " + (virtual_time ? "1ns" : "1us") +
                         " or more");
      }
    }
  }

  // What the options ask of each other and of the file, before anything runs.
  void check_options() {
    duration_ = replaying_ ? record_->duration() : args_.positive_duration("duration", spec().duration);
    graph_sha_ = base::sha256_hex(file_bytes(file_));
    if (replaying_ && graph_sha_ != record_->header.graph_sha256 && !args_.flag("what-if")) {
      throw UsageError(file_ + " is not the graph that " + log_path_ + " logged (" + record_->header.graph_file +
                       ", SHA-256 " + record_->header.graph_sha256.substr(0, 12) + "…; this file " +
                       graph_sha_.substr(0, 12) +
                       "…) — give --what-if to replay a changed graph against the run's timing");
    }
    virtual_time_ = args_.flag("virtual");
    if (virtual_time_ && !(duration_ > 0.0))
      throw UsageError(file_ + " runs until stopped; a virtual run needs --duration");
    // A replay repeats a logged real-time run: its graph ran on the clock.
    if (!virtual_time_ && !replaying_) {
      if (const std::string why = spec().realtime_refusal(); !why.empty()) throw UsageError(file_ + ": " + why);
    }
    for (const char* output : {"record", "frames", "json", "plot", "sync-csv"}) (void)args_.output_path(output);
    if (args_.value("sync-csv") && !spec().sync.optimise.enabled) {
      throw UsageError("--sync-csv needs a 'sync.optimise' section in " + file_ + " (docs/sync.md)");
    }
    if (args_.value("plot") && spec().record.signals.empty()) {
      throw UsageError("--plot needs recorded signals: add a 'record:' section to " + file_);
    }
    // Plots and reference errors need every sample in memory, which only a
    // finite run can afford; otherwise the recorder keeps none.
    if (spec().sync.enabled && !(duration_ > 0.0)) {
      throw UsageError(file_ + " runs until stopped; its 'sync:' comparison needs a finite run: give --duration");
    }
    what_if_ = replaying_ && args_.flag("what-if");
    keep_series_ = args_.value("plot") || args_.flag("compare-reference") || spec().sync.enabled || what_if_;
    if (keep_series_ && !(duration_ > 0.0)) {
      throw UsageError(file_ +
                       " runs until stopped; --plot and --compare-reference need a finite run: give --duration");
    }
    if (virtual_time_ && args_.value("trace")) {
      // A trace records the frames of real threads on real CPUs; a virtual
      // run has none, so an empty trace directory would only mislead.
      throw UsageError("--trace records real-time frames and cannot be combined with --virtual — drop one of them");
    }
  }

  // The host this process runs; a replay runs the host the logged process ran.
  void choose_host() {
    host_ = replaying_ ? record_->header.host : args_.value("host").value_or("");
    if (!host_.empty()) {
      if (virtual_time_)
        throw UsageError(
            "--host runs one host's part of a graph in real time; --virtual runs the whole graph — drop one of them");
      if (!spec().find_host(host_)) {
        std::string known;
        for (const auto& h : spec().hosts) known += (known.empty() ? "" : ", ") + h.name;
        throw UsageError("--host " + host_ + ": " + file_ +
                         (known.empty() ? " declares no 'hosts:'" : " has no such host — expected one of: " + known));
      }
#ifndef RTCOSIM_HAVE_DDS
      if (!replaying_) {
        throw std::runtime_error(
            "this rtcosim was built without Cyclone DDS (install cyclonedds-dev and rebuild); --host needs it");
      }
#endif
    } else if (!spec().hosts.empty()) {
      std::cout << "note: " << file_ << " spans " << spec().hosts.size()
                << " hosts; without --host this process runs every task, with in-process links\n";
    }
  }

  // The graph, its recorder (rings sized for a replay's batches) and the
  // live synchronisation beside it.
  void build_graph() {
    methods_ = config::plugin_registry(spec(), load_options_.plugins.directories);
    graph_ = runtime::Graph::build(spec(), blocks_, *methods_);
    graph_->set_host(host_);
    keep_.keep = keep_series_ ? runtime::Recorder::kKeepAll : 0;
    // A replay writes the run's batches, each once its rings hold all of it;
    // the run's drainer may have taken more than a ring holds in one go
    // (it pops while the tasks push). Rings of twice the largest batch, at
    // least the run's, let a batch fill while the tasks run on.
    if (replaying_) {
      std::size_t samples = 0, rows = 0;
      for (std::size_t b = 0; b < record_->batches.size(); ++b) {
        const auto& now = record_->batches[b];
        for (std::size_t i = 0; i < now.recorded.size(); ++i) {
          const std::uint64_t before =
              b > 0 && i < record_->batches[b - 1].recorded.size() ? record_->batches[b - 1].recorded[i] : 0;
          samples = std::max<std::size_t>(samples, now.recorded[i] - std::min(before, now.recorded[i]));
        }
        for (std::size_t i = 0; i < now.frame_rows.size(); ++i) {
          const std::uint64_t before =
              b > 0 && i < record_->batches[b - 1].frame_rows.size() ? record_->batches[b - 1].frame_rows[i] : 0;
          rows = std::max<std::size_t>(rows, now.frame_rows[i] - std::min(before, now.frame_rows[i]));
        }
      }
      keep_.samples_per_task = std::max(keep_.samples_per_task, 2 * samples + 1024);
      frame_rows_ = std::max(frame_rows_, 2 * rows + 1024);
    }
    recorder_ = std::make_unique<runtime::Recorder>(*graph_, keep_);
    // docs/sync.md, "Live": the synchronisation beside the running graph.
    if (spec().sync.optimise.enabled)
      live_ = std::make_unique<session::LiveSync>(spec(), blocks_, *graph_, *recorder_, duration_);
  }

  // The recording (a replay writes one only where --record says: the
  // file's `record.file` holds the logged run's own), the frame log and
  // --frames. Every file goes to a temporary name and replaces its target
  // only when the run is over (runtime/record_file.hpp, column_file.hpp).
  void open_outputs() {
    record_path_ = args_.value("record").value_or(replaying_ ? std::string() : spec().record.file);
    // The format: --record's extension, or the file's `format:` where it
    // fits (mat5 for a .mat file); docs/recording.md.
    std::string declared = spec().record.format;
    std::string why;
    if (args_.value("record") && !runtime::record_format_for(record_path_, declared, &why)) declared.clear();
    const auto format = runtime::record_format_for(record_path_, declared, &why);
    if (!format) throw UsageError(why);
    format_ = *format;
    const bool columns = runtime::is_columnar(format_) && !recorder_->empty() && !record_path_.empty();
    std::string graph_text;
    if (columns) graph_text = file_bytes(file_);
    outputs_ = std::make_unique<Outputs>(Outputs{*recorder_, {}, {}, {}, {}});
    frames_path_ = args_.value("frames");
    if (frames_path_ || columns) {
      std::vector<std::string> names;
      for (const auto& t : graph_->tasks()) names.push_back(t->spec().name);
      outputs_->frame_log = std::make_unique<runtime::FrameLog>(names, frame_rows_);
    }
    if (!recorder_->empty() && !record_path_.empty()) {
      outputs_->signals =
          session::Recording::open(format_, record_path_, -1, *graph_, *recorder_, graph_text, true, &why);
      if (!outputs_->signals) throw std::runtime_error(why);
    }

    std::cout << file_ << ": " << (spec().name.empty() ? "task graph" : spec().name) << ", " << graph_->tasks().size()
              << " task(s)"
              << (host_.empty() ? std::string()
                                : " (host " + host_ + " runs " +
                                      std::to_string(std::count_if(graph_->tasks().begin(), graph_->tasks().end(),
                                                                   [](const auto& t) { return t->local(); })) +
                                      ", " + std::to_string(graph_->remote_links().size()) + " remote link(s))")
              << ", " << graph_->links().size() << " link(s), "
              << (replaying_      ? "replay"
                  : virtual_time_ ? "virtual time"
                                  : "real time")
              << ", " << (duration_ > 0.0 ? base::format_duration(duration_) : std::string("until stopped")) << '\n';
    for (const auto& w : graph_->link_warnings()) std::cerr << "warning: " << w << '\n';
    if (frames_path_) {
      outputs_->frames_csv = runtime::RecordFile::create(*frames_path_, &why);
      if (!outputs_->frames_csv) throw std::runtime_error(why);
      runtime::FrameLog::write_header(*outputs_->frames_csv);
    }
  }

  // --replay-log: the run logged for `rtcosim replay` (docs/replay.md).
  void open_replay_log() {
    const auto path = args_.output_path("replay-log");
    if (!path) return;
    if (virtual_time_) {
      throw UsageError(
          "--replay-log logs a real-time run; a virtual run is reproduced by running it again — "
          "drop one of them");
    }
    if (args_.value("period-scale")) {
      throw UsageError(
          "--replay-log with --period-scale: a replay runs the file's periods — write the scaled "
          "periods into a copy of " +
          file_ + " and run that");
    }
    if (const std::string refusal = runtime::replay_log_refusal(*graph_); !refusal.empty()) {
      throw UsageError("--replay-log: " + file_ + " cannot be replayed exactly: " + refusal + " (docs/replay.md)");
    }
    replay_log_ = std::make_unique<runtime::ReplayLog>(
        *graph_, *path,
        // The absolute path: --what-if finds the logged graph from any directory.
        runtime::ReplayLog::Header{std::filesystem::absolute(file_).lexically_normal().string(), graph_sha_,
                                   duration_ > 0.0 ? runtime::seconds_to_ns(duration_) : 0, "real time", host_,
                                   runtime::replay_data_files(spec().diagram, blocks_)});
    std::string why;
    if (!replay_log_->open(&why)) throw std::runtime_error(why);
    outputs_->replay_log = replay_log_.get();
  }

  void check_replay() {
    if (!replaying_) return;
    check_data_files(*record_, runtime::replay_data_files(spec().diagram, blocks_), what_if_);
    // Data that arrive on their own schedule are not in a log.
    if (const std::string refusal = runtime::replay_log_refusal(*graph_); !refusal.empty()) {
      throw UsageError(file_ + " cannot be replayed: " + refusal + " (docs/replay.md)");
    }
  }

  // The run itself, on the executor the options choose; false when a
  // what-if's logged run could not be replayed.
  bool run() {
    // A what-if replays the logged graph first, for its series: the file the
    // log names (or --logged-graph), as it ran.
    if (what_if_) {
      const auto logged = logged_run(args_.value("logged-graph").value_or(record_->header.graph_file), *record_, spec(),
                                     blocks_, host_, keep_, load_options_);
      if (!logged) return false;
      baseline_ = logged->series;
      period_changed_ = logged->period_changed;
      mapped_timing_ = logged->timing;
    }
    if (mapped_timing_) {
      // Another period: the frames are not the logged ones, so the graph
      // runs in virtual time with the logged execution times and wake-ups
      // mapped onto its own (docs/replay.md, "What-if").
      std::cout << "what-if: task '" << period_changed_ << "' has another period; " << file_
                << " runs in virtual time, each frame working as long as its task's logged frame that started last "
                   "before it, each wake-up as late as its thread's logged one\n";
      // The same tasks, rate groups, wires and sources as the log's: what
      // a replay on the changed graph checks (it throws naming the first
      // difference).
      { runtime::ReplayExecutor check(*graph_, *record_); }
      runtime::VirtualExecutor executor(*graph_);
      executor.set_timing(*mapped_timing_);
      try {
        Interruptible interruptible;
        run_virtual(executor, *graph_, *recorder_, *outputs_, duration_, nullptr, true);
      } catch (const Interrupted&) {
        std::cerr << "rtcosim " << verb_ << ": the what-if stopped (" << Interruptible::signal_name()
                  << "); what it ran is written\n";
      }
    } else if (replaying_) {
      runtime::ReplayExecutor executor(*graph_, *record_);
      std::cout << "replaying " << log_path_
                << (record_->files.size() > 1
                        ? " and the " + std::to_string(record_->files.size() - 1) + " file(s) it goes on in"
                        : std::string())
                << ": " << record_->header.mode << " run of " << record_->header.graph_file
                << (graph_sha_ == record_->header.graph_sha256 ? std::string() : " (what-if: " + file_ + ")") << '\n';
      replay_in_batches(executor, *record_, *recorder_, *outputs_, log_path_);
    } else if (virtual_time_) {
      runtime::VirtualExecutor executor(*graph_);
      run_virtual(executor, *graph_, *recorder_, *outputs_, duration_, live_.get());
    } else {
      run_traced();
    }
    outputs_->finish();
    if (live_) {
      live_->poll(true);
      sync_run_ = live_->result();
    }
    return true;
  }

  // A real-time run, inside an LTTng session with --trace.
  void run_traced() {
    std::unique_ptr<session::TraceSession> trace;
    const auto trace_dir = args_.value("trace");
    if (!trace_dir && spec().trace.enabled) std::cout << "note: the file asks for tracing; it is on with --trace DIR\n";
    if (trace_dir) {
      if (!runtime::trace::available()) {
        throw std::runtime_error("this rtcosim was built without LTTng-UST (install liblttng-ust-dev and rebuild)");
      }
      double rate = 0.0;
      // Per frame: start and end, and per wire it publishes a link_publish
      // and its consumer's link_drain (one bundle carries many wires).
      for (const auto& t : graph_->tasks()) {
        std::size_t wires = 0;
        for (const auto& o : t->outputs()) wires += o.refs.size();
        rate += (2.0 + 2.0 * static_cast<double>(wires)) / t->spec().period;
      }
      std::string why;
      trace = session::TraceSession::start(*trace_dir, rate, &why);
      if (!trace) throw std::runtime_error("cannot trace: " + why);
      std::cout << "tracing to " << *trace_dir << " (LTTng session " << trace->name() << ", sub-buffers of "
                << trace->subbuffer_bytes() / 1024 << " KiB, read every " << trace->read_timer_us() / 1000 << " ms)\n";
    }
    remote_ = run_realtime(*graph_, *outputs_, duration_, &fifo_, live_.get(), replay_log_.get());
    if (trace) {
      graph_->trace_link_health();
      const std::uint64_t discarded = trace->stop();
      std::cout << "trace written to " << *trace_dir << ": " << discarded << " event(s) discarded\n";
      // A session daemon this run started goes with it.
      if (!session::stop_sessiond_started_here())
        std::cerr << "warning: the LTTng session daemon this run started did not stop\n";
    }
  }

  // The reference solution, when asked for or plotted.
  void solve_reference() {
    if (args_.flag("compare-reference") && recorder_->empty()) {
      std::cerr << "note: --compare-reference compares recorded signals, and " << file_ << " records none\n";
    }
    if (!recorder_->empty() && (args_.flag("compare-reference") || args_.value("plot"))) {
      const double step = args_.positive_duration("reference-step", 0.0005);
      reference_ = std::make_unique<tasks::ReferenceSolver>(blocks_, spec().diagram, step);
      std::cout << "integrating the reference (RK4 at " << base::format_duration(step) << ") to "
                << base::format_duration(duration_) << "; SIGINT or SIGTERM stops it, keeping what it has\n"
                << std::flush;
      {
        Interruptible interruptible;
        reference_->run(duration_, spec().record.signals, &g_interrupted);
      }
      if (reference_->stopped()) {
        std::cerr << "rtcosim " << verb_ << ": the reference integration stopped (" << Interruptible::signal_name()
                  << ") at t = " << reference_->times().back() << " s of " << duration_
                  << " s; the plot draws it that far, and no error against it is computed\n";
      } else {
        errors_ = session::reference_errors(*graph_, *recorder_, *reference_);
      }
    }
  }

  // Commits every file (the column file with the summary), then the
  // summaries and the files the options ask for; the exit code.
  int report() {
    solve_reference();
    const std::string mode = replaying_ ? "replay" : virtual_time_ ? "virtual" : fifo_ ? "fifo" : "other";
    session::RecordingState recording{recorder_.get(), outputs_->target(), outputs_->frame_log.get(), {}};
    if (outputs_->columns() && outputs_->columns()->flush()) {
      // The summary goes into the file too, with the counts of a file that
      // closes.
      outputs_->columns()->set_summary(
          session::summary_json(*graph_, errors_, mode, session::recording_json(*graph_, recording), remote_.get()));
    }
    // A file that failed keeps its target as it was; its error says where
    // the samples written until then are.
    for (runtime::RecordTarget* f :
         {outputs_->target(), static_cast<runtime::RecordTarget*>(outputs_->frames_csv.get())}) {
      if (f && !f->commit()) recording.error += (recording.error.empty() ? "" : "; ") + f->error();
    }
    finish_replay_log(recording);
    print_summaries(recording);
    write_files(recording, mode);
    for (const auto& t : graph_->tasks()) {
      for (const auto& line : t->allocation_reports())
        std::cerr << "rtcosim " << verb_ << ": warning: " << line << '\n';
    }
    // A model that ended the simulation itself ended the run normally.
    for (const auto& t : graph_->tasks()) {
      if (t->ended()) std::cout << "rtcosim " << verb_ << ": " << t->ending() << '\n';
    }
    bool task_failed = false;
    for (const auto& t : graph_->tasks()) {
      if (!t->failed()) continue;
      std::cerr << "rtcosim " << verb_ << ": " << t->failure() << '\n';
      task_failed = true;
    }
    if (!recording.error.empty()) {
      std::cerr << "rtcosim " << verb_ << ": " << recording.error << '\n';
      return 1;
    }
    if (g_interrupted.load()) return 128 + g_interrupt_signal.load();
    return task_failed ? 1 : 0;
  }

  void finish_replay_log(session::RecordingState& recording) {
    if (!replay_log_) return;
    std::uint64_t frames = 0;
    for (const auto& t : graph_->tasks()) frames += t->stats().frames.load();
    std::string why;
    if (replay_log_->finish(&why)) {
      char line[200];
      std::snprintf(line, sizeof line, "replay log written to %s: %llu bytes, %.1f bytes per frame\n",
                    replay_log_->path().c_str(), static_cast<unsigned long long>(replay_log_->bytes()),
                    frames > 0 ? static_cast<double>(replay_log_->bytes()) / static_cast<double>(frames) : 0.0);
      std::cout << line;
    } else {
      recording.error += (recording.error.empty() ? "" : "; ") + why;
    }
  }

  void print_summaries(const session::RecordingState& recording) {
    std::cout << session::run_summary(*graph_, remote_.get()) << session::recording_summary(*graph_, recording);
    if (spec().sync.enabled) {
      config::SyncSpec sync = spec().sync;
      if (sync.measured) sync.delay = session::measured_output_delay().value_or(0.0);
      std::cout << session::sync_summary(sync, session::sync_comparison(sync, *recorder_));
    }
    if (live_) std::cout << live_->summary();
    if (const auto path = args_.value("sync-csv"); path && sync_run_) {
      session::write_sync_csv(*sync_run_, *path);
      std::cout << "synchronisation series written to " << *path << '\n';
    }
    if (baseline_) {
      std::cout << "what-if against the logged run ("
                << (mapped_timing_ ? "at the instants both recorded" : "the same frames") << "; " << file_ << " vs "
                << record_->header.graph_file << "):\n";
      std::cout << session::render_table(session::reference_error_columns(), differences(*recorder_, *baseline_));
    }
    if (reference_ && !reference_->stopped()) {
      std::cout << "error against the reference (merged diagram, RK4 at "
                << base::format_duration(args_.positive_duration("reference-step", 0.0005)) << "):\n";
      std::cout << session::render_table(session::reference_error_columns(), errors_);
    }
  }

  void write_files(const session::RecordingState& recording, const std::string& mode) {
    if (outputs_->target() && !outputs_->target()->failed()) {
      std::cout << "recorded " << recorder_->signal_count() << " signal(s) to " << record_path_ << " ("
                << runtime::to_string(format_) << ")";
      if (recorder_->dropped() > 0) std::cout << " (" << recorder_->dropped() << " samples dropped: ring full)";
      std::cout << '\n';
    }
    if (const auto path = args_.value("json")) {
      const std::string text =
          session::summary_json(*graph_, errors_, mode, session::recording_json(*graph_, recording), remote_.get());
      errno = 0;
      std::ofstream json(*path, std::ios::trunc);
      json << text;
      // A summary smaller than the stream's buffer is written only at close:
      // checked before it is said to be written.
      json.close();
      if (!json) {
        throw std::runtime_error("cannot write '" + *path + "'" +
                                 (errno != 0 ? std::string(": ") + std::strerror(errno) : std::string()));
      }
      std::cout << "summary written to " << *path << '\n';
    }
    if (outputs_->frames_csv && !outputs_->frames_csv->failed())
      std::cout << "frames written to " << *frames_path_ << '\n';
    if (const auto plot_path = args_.value("plot")) {
      write_run_plot(*recorder_, reference_.get(),
                     (spec().name.empty() ? file_ : spec().name) + (what_if_ ? " — what-if on a logged run's timing"
                                                                    : replaying_    ? " — replay"
                                                                    : virtual_time_ ? " — virtual time"
                                                                                    : " — real time"),
                     *plot_path, sync_run_ ? &*sync_run_ : nullptr, baseline_ ? &*baseline_ : nullptr);
      std::cout << "plot written to " << *plot_path << '\n';
    }
  }

  config::GraphSpec& spec() { return *loaded_; }

  const std::string verb_;
  const bool replaying_;
  CliArgs& args_;
  const std::vector<std::string>& raw_args_;
  std::string file_, log_path_, graph_sha_, host_, record_path_;
  std::optional<runtime::ReplayRecord> record_;
  config::LoadOptions load_options_;
  std::optional<config::GraphSpec> loaded_;
  double duration_ = 0.0;
  bool virtual_time_ = false, what_if_ = false, keep_series_ = false, fifo_ = false;
  runtime::Recorder::Options keep_;
  std::size_t frame_rows_ = 1u << 15;
  runtime::RecordFormat format_ = runtime::RecordFormat::kCsv;
  std::optional<std::string> frames_path_;
  // Declared in the order they depend on each other: each outlives those
  // after it.
  const tasks::BlockRegistry blocks_ = tasks::BlockRegistry::with_builtins();
  std::optional<coupling::MethodRegistry> methods_;
  std::unique_ptr<runtime::Graph> graph_;
  std::shared_ptr<const io::RemoteState> remote_;  // a real-time run's DDS counters; points into graph_
  std::unique_ptr<runtime::Recorder> recorder_;
  std::unique_ptr<session::LiveSync> live_;
  std::unique_ptr<Outputs> outputs_;
  std::unique_ptr<runtime::ReplayLog> replay_log_;
  // After the run.
  std::optional<Baseline> baseline_;
  std::string period_changed_;  // the first task whose period the what-if changes
  std::optional<runtime::VirtualExecutor::Timing> mapped_timing_;
  std::optional<session::SyncRun> sync_run_;
  std::unique_ptr<tasks::ReferenceSolver> reference_;
  std::vector<session::ReferenceError> errors_;
};

int run_graph(const std::string& verb, const std::vector<std::string>& raw_args) {
  return run_verb(verb, [&]() -> int {
    CliArgs args = verb == "replay"
                       ? CliArgs("replay",
                                 {"record", "plot", "reference-step", "json", "frames", "plugin-dir", "max-file-size",
                                  "logged-graph"},
                                 {"compare-reference", "what-if", "help"}, {"plugin-dir"})
                       : CliArgs("run",
                                 {"duration", "record", "plot", "reference-step", "json", "frames", "trace",
                                  "period-scale", "plugin-dir", "max-file-size", "host", "sync-csv", "replay-log"},
                                 {"virtual", "compare-reference", "help"}, {"plugin-dir"});
    return GraphRun(verb, args, raw_args)();
  });
}

}  // namespace

int run_run_command(const std::vector<std::string>& raw_args) { return run_graph("run", raw_args); }

int run_replay_command(const std::vector<std::string>& raw_args) { return run_graph("replay", raw_args); }

}  // namespace rtcosim::tools
