#include "session/session.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "base/duration.hpp"
#include "rt_config/plugins.hpp"
#include "runtime/replay_executor.hpp"
#include "session/realtime_run.hpp"
#include "tasks/plant/live_feed.hpp"

namespace rtcosim::session {

std::string host_refusal(const config::GraphSpec& spec, const std::string& host, const std::string& label,
                         const std::string& program) {
  if (host.empty()) return {};
  if (!spec.find_host(host)) {
    std::string known;
    for (const auto& h : spec.hosts) known += (known.empty() ? "" : ", ") + h.name;
    return "--host " + host + ": " + label +
           (known.empty() ? " declares no 'hosts:'" : " has no such host — expected one of: " + known);
  }
#ifndef RTCOSIM_HAVE_DDS
  return "this " + program + " was built without Cyclone DDS (install cyclonedds-dev and rebuild); --host needs it";
#else
  (void)program;
  return {};
#endif
}

runtime::ReplayRecord load_replay_log(const std::string& path) {
  runtime::ReplayRecord record = runtime::ReplayRecord::load(path);
  tasks::plant::replay_offline();
  return record;
}

BuiltGraph build_graph(config::GraphSpec spec, const tasks::BlockRegistry& blocks,
                       const std::vector<std::string>& plugin_dirs, const std::string& host) {
  BuiltGraph out;
  out.methods = std::make_unique<coupling::MethodRegistry>(config::plugin_registry(spec, plugin_dirs));
  out.graph = runtime::Graph::build(std::move(spec), blocks, *out.methods);
  out.graph->set_host(host);
  return out;
}

void Sinks::drain() {
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

void Sinks::drain(const runtime::ReplayRecord::Batch& batch) {
  if (signals) {
    signals->drain(recorder, batch.recorded);
  } else {
    recorder.drain(nullptr, batch.recorded);
  }
  if (frame_log) frame_log->drain(frames_csv.get(), columns(), batch.frame_rows);
}

void Sinks::finish() {
  if (signals) {
    signals->finish(recorder);
  } else {
    recorder.finish(nullptr);
  }
  if (frame_log) frame_log->finish(frames_csv.get(), columns());
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

Session::Session(const tasks::BlockRegistry& blocks, config::GraphSpec spec, SessionOptions options)
    : blocks_(blocks), options_(std::move(options)) {
  auto built = build_graph(std::move(spec), blocks_, options_.plugin_dirs, options_.host);
  methods_ = std::move(built.methods);
  graph_ = std::move(built.graph);
  build_recorder();
  open_sinks();
  if (options_.replay) {
    // Data that arrive on their own schedule are not in a log.
    if (const std::string refusal = runtime::replay_log_refusal(*graph_); !refusal.empty()) {
      throw Refusal(options_.graph_file + " cannot be replayed: " + refusal + " (docs/replay.md)");
    }
  }
}

Session::~Session() = default;

// The recorder (every sample kept when asked, rings sized for a replay's
// batches) and the live synchronisation beside it.
void Session::build_recorder() {
  runtime::Recorder::Options keep;
  keep.keep = options_.keep_series ? runtime::Recorder::kKeepAll : 0;
  // A replay writes the run's batches, each once its rings hold all of it;
  // the run's drainer may have taken more than a ring holds in one go (it
  // pops while the tasks push). Rings of twice the largest batch, at least
  // the run's, let a batch fill while the tasks run on.
  if (const runtime::ReplayRecord* record = options_.replay) {
    std::size_t samples = 0, rows = 0;
    for (std::size_t b = 0; b < record->batches.size(); ++b) {
      const auto& now = record->batches[b];
      for (std::size_t i = 0; i < now.recorded.size(); ++i) {
        const std::uint64_t before =
            b > 0 && i < record->batches[b - 1].recorded.size() ? record->batches[b - 1].recorded[i] : 0;
        samples = std::max<std::size_t>(samples, now.recorded[i] - std::min(before, now.recorded[i]));
      }
      for (std::size_t i = 0; i < now.frame_rows.size(); ++i) {
        const std::uint64_t before =
            b > 0 && i < record->batches[b - 1].frame_rows.size() ? record->batches[b - 1].frame_rows[i] : 0;
        rows = std::max<std::size_t>(rows, now.frame_rows[i] - std::min(before, now.frame_rows[i]));
      }
    }
    keep.samples_per_task = std::max(keep.samples_per_task, 2 * samples + 1024);
    frame_rows_ = std::max(frame_rows_, 2 * rows + 1024);
  }
  recorder_ = std::make_unique<runtime::Recorder>(*graph_, keep);
  // docs/sync.md, "Live": the synchronisation beside the running graph.
  if (spec().sync.optimise.enabled && options_.live_sync)
    live_ = std::make_unique<LiveSync>(spec(), blocks_, *graph_, *recorder_, options_.duration);
}

// The recording in its format (--record's extension, or the file's
// `format:` where it fits: docs/recording.md), the frame log and --frames.
// Every file goes to a temporary name and replaces its target only when
// the run is over (runtime/record_file.hpp, column_file.hpp).
void Session::open_sinks() {
  const std::string& path = options_.record_path;
  std::string declared = spec().record.format;
  std::string why;
  if (options_.record_format_from_path && !runtime::record_format_for(path, declared, &why)) declared.clear();
  const auto format = runtime::record_format_for(path, declared, &why);
  if (!format) throw Refusal(why);
  format_ = *format;
  const bool recording = !recorder_->empty() && !path.empty();
  const bool columns = runtime::is_columnar(format_) && recording;
  sinks_ = std::make_unique<Sinks>(Sinks{*recorder_, {}, {}, {}, {}});
  if (options_.frames_path || columns) {
    std::vector<std::string> names;
    for (const auto& t : graph_->tasks()) names.push_back(t->spec().name);
    sinks_->frame_log = std::make_unique<runtime::FrameLog>(names, frame_rows_);
  }
  if (recording) {
    sinks_->signals = Recording::open(format_, path, -1, *graph_, *recorder_,
                                      columns ? file_bytes(options_.graph_file) : std::string(), true, &why);
    if (!sinks_->signals) throw std::runtime_error(why);
  }
  if (options_.frames_path) {
    sinks_->frames_csv = runtime::RecordFile::create(*options_.frames_path, &why);
    if (!sinks_->frames_csv) throw std::runtime_error(why);
    runtime::FrameLog::write_header(*sinks_->frames_csv);
  }
}

void Session::open_replay_log() {
  if (!options_.replay_log_path) return;
  if (const std::string refusal = runtime::replay_log_refusal(*graph_); !refusal.empty()) {
    throw Refusal("--replay-log: " + options_.graph_file + " cannot be replayed exactly: " + refusal +
                  " (docs/replay.md)");
  }
  replay_log_ = std::make_unique<runtime::ReplayLog>(
      *graph_, *options_.replay_log_path,
      // The absolute path: --what-if finds the logged graph from any directory.
      runtime::ReplayLog::Header{std::filesystem::absolute(options_.graph_file).lexically_normal().string(),
                                 options_.graph_sha256,
                                 options_.duration > 0.0 ? runtime::seconds_to_ns(options_.duration) : 0, "real time",
                                 options_.host, runtime::replay_data_files(spec().diagram, blocks_)});
  std::string why;
  if (!replay_log_->open(&why)) throw std::runtime_error(why);
  sinks_->replay_log = replay_log_.get();
}

bool Session::run(RunObserver& observer) {
  bool whole = true;
  if (timing_) {
    // The same tasks, rate groups, wires and sources as the log's: what a
    // replay on the changed graph checks (it throws naming the first
    // difference).
    if (options_.replay) runtime::ReplayExecutor check(*graph_, *options_.replay);
    whole = run_virtual(observer, true);
  } else if (options_.kind == RunKind::kReplay) {
    run_replay();
  } else if (options_.kind == RunKind::kVirtual) {
    whole = run_virtual(observer, false);
  } else {
    run_realtime(observer);
  }
  sinks_->finish();
  if (live_) live_->poll(true);
  return whole;
}

void Session::request_stop() noexcept {
  if (auto* r = running_.load()) r->request_stop();
}

void Session::run_realtime(RunObserver& observer) {
  RealtimeRun run(*graph_, recorder_.get(), sinks_->frame_log.get());
  const auto& report = run.prepare();
  for (const auto& w : report.warnings) observer.warning(w);
  for (const auto& e : report.errors) observer.error(e);
  if (!report.ok) throw std::runtime_error("the real-time set-up failed (realtime: required); nothing was run");
  fifo_ = report.fifo;
  if (const std::string w = run.pin_caller_off_task_cpus(); !w.empty()) observer.warning(w);
  std::int64_t epoch_ns = 0;
  if (run.distributed()) {
    observer.waiting_for_hosts(*graph_);
    run.open_bridge();
    std::int64_t start_rt = 0;
    epoch_ns = run.coordinate(&start_rt);
    observer.hosts_agree(start_rt);
  }
  run.start(options_.duration, epoch_ns, replay_log_.get());
  running_.store(&run);
  observer.started();
  // Set-up problems are known before the epoch: say them before the run.
  for (const auto& e : run.thread_errors()) observer.warning(e);
  double next_progress = 1.0;
  while (!run.finished()) {
    // This thread is the recording's writer: it never runs a frame, and the
    // tasks never wait for it (full rings drop and count).
    // The live synchronisation reads the measurement here: looked at every
    // 5 ms, u reaches the tasks a few macro steps after its data.
    std::this_thread::sleep_for(std::chrono::milliseconds(live_ ? 5 : 50));
    sinks_->drain();
    if (live_) live_->poll();
    const auto events = run.take_events();
    for (const auto& h : events.lost_hosts) observer.host_lost(h, run.elapsed());
    for (const auto& w : events.clock_warnings) observer.warning(w);
    if (run.elapsed() >= next_progress) {
      next_progress += 1.0;
      std::uint64_t frames = 0, overruns = 0;
      std::int64_t worst = 0;
      for (auto& t : graph_->tasks()) {
        frames += t->stats().frames.load();
        overruns += t->stats().overruns.load();
        worst = std::max(worst, t->stats().wakeup_latency_ns.max());
      }
      observer.progress(run.elapsed(), frames, overruns, worst);
    }
  }
  observer.stopping();
  running_.store(nullptr);
  const std::string bridge_placement = run.stop();
  observer.stopped(run.distributed() ? bridge_placement : std::string());
  remote_ = run.remote();
}

// A replay writes the run's batches, each once every task's rings hold all
// of it (a batch drained in two goes would interleave the tasks' rows
// otherwise), so that the rings stay the run's size however long the log.
void Session::run_replay() {
  const runtime::ReplayRecord& record = *options_.replay;
  runtime::ReplayExecutor executor(*graph_, record);
  executor.keep_timings(keep_timings_);
  std::size_t next = 0;
  auto ready = [&](const runtime::ReplayRecord::Batch& b) {
    const auto samples = recorder_->reachable();
    for (std::size_t i = 0; i < b.recorded.size() && i < samples.size(); ++i) {
      if (samples[i] < b.recorded[i]) return false;
    }
    if (sinks_->frame_log) {
      const auto rows = sinks_->frame_log->rows_reachable();
      for (std::size_t i = 0; i < b.frame_rows.size() && i < rows.size(); ++i) {
        if (rows[i] < b.frame_rows[i]) return false;
      }
    }
    return true;
  };
  auto drain_batches = [&] {
    for (; next < record.batches.size() && ready(record.batches[next]); ++next) sinks_->drain(record.batches[next]);
  };
  std::string why;
  if (!executor.run(recorder_.get(), sinks_->frame_log.get(), &why, drain_batches)) {
    throw std::runtime_error("the replay of " + options_.replay_path + " stopped: " + why);
  }
  for (; next < record.batches.size(); ++next) sinks_->drain(record.batches[next]);
  if (keep_timings_) logged_timing_ = executor.logged_timing();
}

namespace {
struct Interrupted {};  // thrown out of a virtual run from its observer
}  // namespace

// A virtual run: every frame sampled into the recording and the frame
// table, drained every 4096 frames (16 with a live synchronisation, which
// is polled then).
bool Session::run_virtual(RunObserver& observer, bool interruptible) {
  runtime::VirtualExecutor executor(*graph_);
  if (timing_) executor.set_timing(*timing_);
  std::unordered_map<const runtime::TaskRuntime*, std::size_t> task_index;
  for (std::size_t i = 0; i < graph_->tasks().size(); ++i) task_index[graph_->tasks()[i].get()] = i;
  std::size_t frames = 0;
  const auto at_start = [&](runtime::Graph& g) { recorder_->sample_start(g); };
  try {
    executor.run(
        options_.duration,
        [&](runtime::TaskRuntime& task, const runtime::FrameRecord& f) {
          (void)recorder_->sample(task);
          if (sinks_->frame_log) {
            (void)sinks_->frame_log->add(task_index[&task],
                                         runtime::FrameRow{f.frame, f.end, f.sim_time, f.step, f.latency_ns,
                                                           std::llround((f.end - f.start) * 1e9), f.start_lateness_ns});
          }
          if (++frames % (live_ ? 16 : 4096) == 0) {
            sinks_->drain();
            if (live_) live_->poll();
            if (interruptible && observer.interrupted()) throw Interrupted{};
          }
        },
        at_start);
  } catch (const Interrupted&) {
    return false;
  }
  return true;
}

}  // namespace rtcosim::session
