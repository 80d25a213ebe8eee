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
#include "rt_config/loader.hpp"
#include "session/realtime_run.hpp"
#include "session/recording.hpp"
#include "session/report/recording_summary.hpp"
#include "session/report/run_summary.hpp"
#include "session/report/svg_plot.hpp"
#include "session/session.hpp"
#include "session/sync/sync_live.hpp"
#include "session/sync/sync_report.hpp"
#include "session/trace_session.hpp"
#include "session/what_if.hpp"
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

void write_run_plot(const runtime::Recorder& recorder, const tasks::ReferenceSolver* reference,
                    const std::string& title, const std::string& path, const session::SyncRun* sync,
                    const session::Baseline* baseline = nullptr) {
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
    if (const auto* b = session::baseline_of(baseline, s)) {
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

std::atomic<session::Session*> g_running{nullptr};

extern "C" void stop_on_signal(int) {
  if (auto* s = g_running.load()) s->request_stop();
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

// What a run says as it goes, on the terminal.
class Terminal : public session::RunObserver {
 public:
  explicit Terminal(session::Session& session) : session_(session) {}
  void warning(const std::string& text) override { std::cerr << "warning: " << text << '\n'; }
  void error(const std::string& text) override { std::cerr << "error: " << text << '\n'; }
  void waiting_for_hosts(const runtime::Graph& graph) override {
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
  }
  void hosts_agree(std::int64_t start_rt) override {
    std::cout << "hosts agree; common epoch at CLOCK_REALTIME " << start_rt / 1'000'000'000 << '.'
              << std::to_string(1'000'000'000 + start_rt % 1'000'000'000).substr(1) << " s\n"
              << std::flush;
  }
  void host_lost(const std::string& host, double elapsed) override {
    std::cerr << "error: host '" << host << "' fell silent at t = " << std::to_string(elapsed) << " s (no announce for "
              << session::RealtimeRun::host_silence()
              << " s); the tasks here keep running, their inputs from it held at the horizon\n";
  }
  void progress(double elapsed, std::uint64_t frames, std::uint64_t overruns, std::int64_t worst) override {
    char line[160];
    std::snprintf(line, sizeof line, "  t = %.0f s: %llu frames, %llu overruns, worst wake-up latency %.1f us\n",
                  elapsed, static_cast<unsigned long long>(frames), static_cast<unsigned long long>(overruns),
                  static_cast<double>(worst) * 1e-3);
    std::cout << line << std::flush;
  }
  void started() override {
    g_running.store(&session_);
    struct sigaction action {};
    action.sa_handler = stop_on_signal;
    sigemptyset(&action.sa_mask);
    // This thread writes the recording while the run lasts: without
    // SA_RESTART, a Ctrl-C that lands in a write or read makes it fail with
    // EINTR (stdio and iostreams report that as an error, not a retry).
    action.sa_flags = SA_RESTART;
    sigaction(SIGINT, &action, nullptr);
    sigaction(SIGTERM, &action, nullptr);
  }
  void stopping() override {
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    g_running.store(nullptr);
  }
  void stopped(const std::string& bridge_placement) override {
    if (!bridge_placement.empty()) std::cout << "DDS bridge thread: " << bridge_placement << '\n';
    std::cout << thread_placements(session_.graph());
  }
  bool interrupted() override { return g_interrupted.load(); }

 private:
  session::Session& session_;
};

// The body of `rtcosim run` and of `rtcosim replay` (docs/replay.md): the
// same outputs, summaries and exit codes; only the executor differs. One
// object per invocation, its steps in the order they run: the arguments,
// the log, the file, the checks of the options, the session (the graph and
// its outputs), the run, the report. The run itself is session::Session's.
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
    if (!open_session()) return 1;
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
    record_ = session::load_replay_log(log_path_);
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
    for (auto& t : loaded_spec().tasks) {
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
    graph_sha_ = base::sha256_hex(session::file_bytes(file_));
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
    replay_log_path_ = args_.output_path("replay-log");
    if (replay_log_path_ && virtual_time_) {
      throw UsageError(
          "--replay-log logs a real-time run; a virtual run is reproduced by running it again — "
          "drop one of them");
    }
    if (replay_log_path_ && args_.value("period-scale")) {
      throw UsageError(
          "--replay-log with --period-scale: a replay runs the file's periods — write the scaled "
          "periods into a copy of " +
          file_ + " and run that");
    }
  }

  // The host this process runs; a replay runs the host the logged process ran.
  void choose_host() {
    host_ = replaying_ ? record_->header.host : args_.value("host").value_or("");
    if (!host_.empty()) {
      if (virtual_time_)
        throw UsageError(
            "--host runs one host's part of a graph in real time; --virtual runs the whole graph — drop one of them");
      // A replay of one host's part needs no DDS: the other hosts' data are logged.
      std::string why = session::host_refusal(spec(), host_, file_, "rtcosim");
      if (replaying_ && spec().find_host(host_)) why.clear();
      if (!why.empty()) {
        if (!spec().find_host(host_)) throw UsageError(why);
        throw std::runtime_error(why);
      }
    } else if (!spec().hosts.empty()) {
      std::cout << "note: " << file_ << " spans " << spec().hosts.size()
                << " hosts; without --host this process runs every task, with in-process links\n";
    }
  }

  // The session: the graph, its recorder, the live synchronisation and the
  // files; then what it is, on the terminal, and the replay's checks. False
  // when a what-if's logged graph could not be loaded.
  bool open_session() {
    session::SessionOptions o;
    o.graph_file = file_;
    o.host = host_;
    o.kind = replaying_      ? session::RunKind::kReplay
             : virtual_time_ ? session::RunKind::kVirtual
                             : session::RunKind::kRealtime;
    o.duration = duration_;
    o.keep_series = keep_series_;
    o.record_path = args_.value("record").value_or(replaying_ ? std::string() : spec().record.file);
    o.record_format_from_path = args_.value("record").has_value();
    o.frames_path = args_.value("frames");
    o.replay_log_path = replay_log_path_;
    o.graph_sha256 = graph_sha_;
    o.plugin_dirs = load_options_.plugins.directories;
    o.replay = record_ ? &*record_ : nullptr;
    o.replay_path = log_path_;
    // The session's graph takes the spec over; spec() reads it from there on.
    session_ = std::make_unique<session::Session>(blocks_, std::move(*loaded_), o);
    auto& graph = session_->graph();
    std::cout << file_ << ": " << (spec().name.empty() ? "task graph" : spec().name) << ", " << graph.tasks().size()
              << " task(s)"
              << (host_.empty() ? std::string()
                                : " (host " + host_ + " runs " +
                                      std::to_string(std::count_if(graph.tasks().begin(), graph.tasks().end(),
                                                                   [](const auto& t) { return t->local(); })) +
                                      ", " + std::to_string(graph.remote_links().size()) + " remote link(s))")
              << ", " << graph.links().size() << " link(s), "
              << (replaying_      ? "replay"
                  : virtual_time_ ? "virtual time"
                                  : "real time")
              << ", " << (duration_ > 0.0 ? base::format_duration(duration_) : std::string("until stopped")) << '\n';
    for (const auto& w : graph.link_warnings()) std::cerr << "warning: " << w << '\n';
    // --replay-log: the run logged for `rtcosim replay` (docs/replay.md).
    session_->open_replay_log();
    if (replaying_) {
      // Another data file makes another run: refused unless it is a what-if,
      // which says so.
      for (const auto& what : session::changed_data_files(*record_, spec(), blocks_)) {
        if (!what_if_) throw UsageError(what + ": the replay would diverge — restore it, or give --what-if");
        std::cout << "note: " << what << "; --what-if replays with it\n";
      }
    }
    return true;
  }

  // The run itself, on the executor the options choose; false when a
  // what-if's logged run could not be replayed.
  bool run() {
    // A what-if replays the logged graph first, for its series: the file the
    // log names (or --logged-graph), as it ran.
    if (what_if_) {
      const std::string original = args_.value("logged-graph").value_or(record_->header.graph_file);
      if (const auto why = session::logged_graph_refusal(original, *record_, load_options_.max_file_bytes);
          !why.empty()) {
        throw UsageError(why);
      }
      std::cout << "the logged run's graph: " << original << '\n';
      const auto logged_spec = load_graph_or_report(original, load_options_);
      if (!logged_spec) return false;
      auto logged = session::replay_logged(blocks_, *logged_spec, spec(), original, *record_, host_,
                                           load_options_.plugins.directories);
      baseline_ = std::move(logged.series);
      period_changed_ = logged.period_changed;
      mapped_ = logged.timing.has_value();
      if (logged.timing) session_->set_timing(std::move(*logged.timing));
    }
    Terminal terminal(*session_);
    if (mapped_) {
      // Another period: the frames are not the logged ones, so the graph
      // runs in virtual time with the logged execution times and wake-ups
      // mapped onto its own (docs/replay.md, "What-if").
      std::cout << "what-if: task '" << period_changed_ << "' has another period; " << file_
                << " runs in virtual time, each frame working as long as its task's logged frame that started last "
                   "before it, each wake-up as late as its thread's logged one\n";
      Interruptible interruptible;
      if (!session_->run(terminal)) {
        std::cerr << "rtcosim " << verb_ << ": the what-if stopped (" << Interruptible::signal_name()
                  << "); what it ran is written\n";
      }
    } else if (replaying_) {
      std::cout << "replaying " << log_path_
                << (record_->files.size() > 1
                        ? " and the " + std::to_string(record_->files.size() - 1) + " file(s) it goes on in"
                        : std::string())
                << ": " << record_->header.mode << " run of " << record_->header.graph_file
                << (graph_sha_ == record_->header.graph_sha256 ? std::string() : " (what-if: " + file_ + ")") << '\n';
      session_->run(terminal);
    } else if (virtual_time_) {
      session_->run(terminal);
    } else {
      run_traced(terminal);
    }
    if (session_->live()) sync_run_ = session_->live()->result();
    return true;
  }

  // A real-time run, inside an LTTng session with --trace.
  void run_traced(Terminal& terminal) {
    std::unique_ptr<session::TraceSession> trace;
    const auto trace_dir = args_.value("trace");
    if (!trace_dir && spec().trace.enabled) std::cout << "note: the file asks for tracing; it is on with --trace DIR\n";
    if (trace_dir) {
      if (!session::tracing_built()) {
        throw std::runtime_error("this rtcosim was built without LTTng-UST (install liblttng-ust-dev and rebuild)");
      }
      std::string why;
      trace = session::TraceSession::start(*trace_dir, session::trace_event_rate(session_->graph()), &why);
      if (!trace) throw std::runtime_error("cannot trace: " + why);
      std::cout << "tracing to " << *trace_dir << " (LTTng session " << trace->name() << ", sub-buffers of "
                << trace->subbuffer_bytes() / 1024 << " KiB, read every " << trace->read_timer_us() / 1000 << " ms)\n";
    }
    session_->run(terminal);
    if (trace) {
      session_->graph().trace_link_health();
      const std::uint64_t discarded = trace->stop();
      std::cout << "trace written to " << *trace_dir << ": " << discarded << " event(s) discarded\n";
      // A session daemon this run started goes with it.
      if (!session::stop_sessiond_started_here())
        std::cerr << "warning: the LTTng session daemon this run started did not stop\n";
    }
  }

  // The reference solution, when asked for or plotted.
  void solve_reference() {
    auto& recorder = session_->recorder();
    if (args_.flag("compare-reference") && recorder.empty()) {
      std::cerr << "note: --compare-reference compares recorded signals, and " << file_ << " records none\n";
    }
    if (!recorder.empty() && (args_.flag("compare-reference") || args_.value("plot"))) {
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
        errors_ = session::reference_errors(session_->graph(), recorder, *reference_);
      }
    }
  }

  // Commits every file (the column file with the summary), then the
  // summaries and the files the options ask for; the exit code.
  int report() {
    solve_reference();
    auto& graph = session_->graph();
    auto& sinks = session_->sinks();
    const std::string mode = replaying_ ? "replay" : virtual_time_ ? "virtual" : session_->fifo() ? "fifo" : "other";
    session::RecordingState recording{&session_->recorder(), sinks.target(), sinks.frame_log.get(), {}};
    if (sinks.columns() && sinks.columns()->flush()) {
      // The summary goes into the file too, with the counts of a file that
      // closes.
      sinks.columns()->set_summary(session::summary_json(
          graph, errors_, mode, session::recording_json(graph, recording), session_->remote().get()));
    }
    // A file that failed keeps its target as it was; its error says where
    // the samples written until then are.
    for (runtime::RecordTarget* f : {sinks.target(), static_cast<runtime::RecordTarget*>(sinks.frames_csv.get())}) {
      if (f && !f->commit()) recording.error += (recording.error.empty() ? "" : "; ") + f->error();
    }
    finish_replay_log(recording);
    print_summaries(recording);
    write_files(recording, mode);
    for (const auto& t : graph.tasks()) {
      for (const auto& line : t->allocation_reports())
        std::cerr << "rtcosim " << verb_ << ": warning: " << line << '\n';
    }
    // A model that ended the simulation itself ended the run normally.
    for (const auto& t : graph.tasks()) {
      if (t->ended()) std::cout << "rtcosim " << verb_ << ": " << t->ending() << '\n';
    }
    bool task_failed = false;
    for (const auto& t : graph.tasks()) {
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
    runtime::ReplayLog* log = session_->replay_log();
    if (!log) return;
    std::uint64_t frames = 0;
    for (const auto& t : session_->graph().tasks()) frames += t->stats().frames.load();
    std::string why;
    if (log->finish(&why)) {
      char line[200];
      std::snprintf(line, sizeof line, "replay log written to %s: %llu bytes, %.1f bytes per frame\n",
                    log->path().c_str(), static_cast<unsigned long long>(log->bytes()),
                    frames > 0 ? static_cast<double>(log->bytes()) / static_cast<double>(frames) : 0.0);
      std::cout << line;
    } else {
      recording.error += (recording.error.empty() ? "" : "; ") + why;
    }
  }

  void print_summaries(const session::RecordingState& recording) {
    auto& recorder = session_->recorder();
    std::cout << session::run_summary(session_->graph(), session_->remote().get())
              << session::recording_summary(session_->graph(), recording);
    if (spec().sync.enabled) {
      config::SyncSpec sync = spec().sync;
      if (sync.measured) sync.delay = session::measured_output_delay().value_or(0.0);
      std::cout << session::sync_summary(sync, session::sync_comparison(sync, recorder));
    }
    if (session_->live()) std::cout << session_->live()->summary();
    if (const auto path = args_.value("sync-csv"); path && sync_run_) {
      session::write_sync_csv(*sync_run_, *path);
      std::cout << "synchronisation series written to " << *path << '\n';
    }
    if (baseline_) {
      std::cout << "what-if against the logged run (" << (mapped_ ? "at the instants both recorded" : "the same frames")
                << "; " << file_ << " vs " << record_->header.graph_file << "):\n";
      std::cout << session::render_table(session::reference_error_columns(),
                                         session::differences(recorder, *baseline_));
    }
    if (reference_ && !reference_->stopped()) {
      std::cout << "error against the reference (merged diagram, RK4 at "
                << base::format_duration(args_.positive_duration("reference-step", 0.0005)) << "):\n";
      std::cout << session::render_table(session::reference_error_columns(), errors_);
    }
  }

  void write_files(const session::RecordingState& recording, const std::string& mode) {
    auto& sinks = session_->sinks();
    auto& recorder = session_->recorder();
    if (sinks.target() && !sinks.target()->failed()) {
      std::cout << "recorded " << recorder.signal_count() << " signal(s) to " << session_->options().record_path << " ("
                << runtime::to_string(session_->record_format()) << ")";
      if (recorder.dropped() > 0) std::cout << " (" << recorder.dropped() << " samples dropped: ring full)";
      std::cout << '\n';
    }
    if (const auto path = args_.value("json")) {
      const std::string text =
          session::summary_json(session_->graph(), errors_, mode, session::recording_json(session_->graph(), recording),
                                session_->remote().get());
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
    if (sinks.frames_csv && !sinks.frames_csv->failed())
      std::cout << "frames written to " << *session_->options().frames_path << '\n';
    if (const auto plot_path = args_.value("plot")) {
      write_run_plot(recorder, reference_.get(),
                     (spec().name.empty() ? file_ : spec().name) + (what_if_ ? " — what-if on a logged run's timing"
                                                                    : replaying_    ? " — replay"
                                                                    : virtual_time_ ? " — virtual time"
                                                                                    : " — real time"),
                     *plot_path, sync_run_ ? &*sync_run_ : nullptr, baseline_ ? &*baseline_ : nullptr);
      std::cout << "plot written to " << *plot_path << '\n';
    }
  }

  // The loaded spec until the session takes it over, the session's after.
  config::GraphSpec& loaded_spec() { return *loaded_; }
  const config::GraphSpec& spec() const { return session_ ? session_->spec() : *loaded_; }

  const std::string verb_;
  const bool replaying_;
  CliArgs& args_;
  const std::vector<std::string>& raw_args_;
  std::string file_, log_path_, graph_sha_, host_;
  std::optional<std::string> replay_log_path_;
  std::optional<runtime::ReplayRecord> record_;
  config::LoadOptions load_options_;
  std::optional<config::GraphSpec> loaded_;
  double duration_ = 0.0;
  bool virtual_time_ = false, what_if_ = false, keep_series_ = false, mapped_ = false;
  const tasks::BlockRegistry blocks_ = tasks::BlockRegistry::with_builtins();
  std::unique_ptr<session::Session> session_;
  // After the run.
  std::optional<session::Baseline> baseline_;
  std::string period_changed_;  // the first task whose period the what-if changes
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
    try {
      return GraphRun(verb, args, raw_args)();
    } catch (const session::Refusal& e) {
      throw UsageError(e.what());
    }
  });
}

}  // namespace

int run_run_command(const std::vector<std::string>& raw_args) { return run_graph("run", raw_args); }

int run_replay_command(const std::vector<std::string>& raw_args) { return run_graph("replay", raw_args); }

}  // namespace rtcosim::tools
