#include "session/service_recording.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/duration.hpp"
#include "base/safe_path.hpp"
#include "base/sha256.hpp"
#include "session/record_files.hpp"
#include "session/report/recording_summary.hpp"
#include "session/report/run_summary.hpp"

namespace rtcosim::session {

namespace {

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

}  // namespace

ServiceRecording::ServiceRecording(std::string directory, std::function<void(const std::string&)> log)
    : directory_(std::move(directory)), log_(std::move(log)) {}

ServiceRecording::~ServiceRecording() = default;

// A replay log holds one whole run in a file of its own: refused, before
// anything is opened, when that cannot be.
std::string ServiceRecording::replay_log_check(const Request& request, const Target& t) const {
  const std::string& file = request.file;
  const std::string& replay_log = request.replay_log;
  if (!replay_log.empty()) {
    // A replay starts from the state every run starts from: the log holds
    // a run from its first frame (docs/replay.md, "The daemon").
    if (t.running) {
      return "record: replay_log: the graph is running — a replay log holds a run from its start: send stop, then "
             "record start with replay_log, then start";
    }
    if (replay_log_) return "record: replay_log: the run is already logged to " + replay_log_path_;
    if (!t.graph) return "record: replay_log: no graph is loaded";
    if (const std::string refusal = runtime::replay_log_refusal(*t.graph); !refusal.empty()) {
      return "record: replay_log: " + t.file + " cannot be replayed exactly: " + refusal;
    }
    // Both would write into one file (with overwrite, each truncating what
    // the other wrote).
    if (canonical_in(directory_, replay_log) == canonical_in(directory_, file)) {
      return "record: replay_log '" + replay_log + "' is the recording's own file ('" + file +
             "') — name another file for the replay log, e.g. run.rpl";
    }
  }
  return {};
}

// The rotation is parsed with the rest of the request, so that a bad size or
// period refuses it before any file exists.
std::string ServiceRecording::rotation_of(const Request& request, runtime::RecordFormat format, Rotation* rotation,
                                          std::string* why) {
  if (!request.max_file_size.empty() && (rotation->max_bytes = parse_size(request.max_file_size, why)) == 0) {
    return "record: " + *why;
  }
  if (rotation->max_bytes > 0 && static_cast<double>(rotation->max_bytes) < kMinColumnarRotateBytes &&
      runtime::is_columnar(format)) {
    return "record: max_file_size '" + request.max_file_size + "' — a " + runtime::to_string(format) +
           " file starts at tens of kB: expected 1MB or more for hdf5, mat73 and mat5 (4kB or more for csv)";
  }
  if (!request.rotate_every.empty()) {
    const auto every = base::parse_duration(request.rotate_every, why);
    if (!every || !(*every >= kMinRotateSeconds)) {
      return "record: rotate_every '" + request.rotate_every + "'" + (why->empty() ? "" : ": " + *why) +
             " — expected a duration of 1s or more, e.g. \"1h\", \"10min\"";
    }
    rotation->every_s = *every;
  }
  rotation->name = request.file;
  rotation->format = request.format;
  return {};
}

// The new files are opened, but nothing emptied, until every check that
// needs them has passed: on a refusal the files this request created go again.
std::string ServiceRecording::open_files(const Request& request, NewFile* target_file, NewFile* log_file,
                                         std::string* why) const {
  const std::string& file = request.file;
  const std::string& replay_log = request.replay_log;
  const auto refuse = [&](const std::string& text) {
    discard(*target_file);
    discard(*log_file);
    return text;
  };
  if (!open_new_file(directory_, file, request.overwrite, target_file, why)) return "record: " + *why;
  if (!replay_log.empty()) {
    if (!open_new_file(directory_, replay_log, request.overwrite, log_file, why)) {
      return refuse("record: replay_log: " + *why);
    }
    if (same_file(target_file->fd, log_file->fd)) {
      return refuse("record: replay_log '" + replay_log + "' is the recording's own file ('" + file +
                    "') — name another file for the replay log, e.g. run.rpl");
    }
  }
  // The running recording is completed into its file after the new files
  // are emptied: overwriting that file would have both write into it.
  struct stat running {};
  if (target() && ::stat(path_.c_str(), &running) == 0) {
    for (const NewFile* f : {target_file, log_file}) {
      struct stat st {};
      if (f->fd >= 0 && ::fstat(f->fd, &st) == 0 && st.st_dev == running.st_dev && st.st_ino == running.st_ino) {
        const std::string name = f == target_file ? file : replay_log;
        return refuse("record: '" + name + "' is the running recording's file (" + path_ +
                      ") — send record stop first, or name another file");
      }
    }
  }
  // Accepted. What can still fail is writing the files' beginnings (a full
  // disk, the HDF5 library); then the new files go again and the running
  // recording goes on, but an overwritten file has been emptied.
  for (NewFile* f : {target_file, log_file}) {
    if (f->fd >= 0 && !f->created && ::ftruncate(f->fd, 0) != 0) {
      return refuse("record: cannot empty '" + f->path + "' to overwrite it: " + std::strerror(errno));
    }
  }
  return {};
}

// The request is accepted: only now is the running recording (and its
// rotation and replay log) replaced, so a failure here still changes nothing.
std::string ServiceRecording::begin(const Request& request, const Target& t, runtime::RecordFormat format,
                                    const Rotation& accepted, NewFile& target_file, NewFile& log_file,
                                    std::string* why) {
  const std::string& replay_log = request.replay_log;
  const auto refuse = [&](const std::string& text) {
    discard(target_file);
    discard(log_file);
    return text;
  };
  auto recording = Recording::open(format, target_file.path, target_file.fd, *t.graph, *t.recorder, t.text, false, why);
  target_file.fd = -1;  // the writer's now, closed with it
  if (!recording) return refuse("record: " + *why);
  std::unique_ptr<runtime::ReplayLog> log;
  if (!replay_log.empty()) {
    log = make_replay_log(log_file.path, log_file.fd, t, why);
    log_file.fd = -1;
    if (!log) {
      recording.reset();
      return refuse("record: replay_log: " + *why);
    }
  }
  install(std::move(recording), target_file.path, false, t);
  Rotation rotation = accepted;
  rotation.started = now_s();
  rotation_ = rotation;
  if (log) {
    replay_log_ = std::move(log);
    replay_log_name_ = replay_log;
    replay_log_path_ = log_file.path;
    replay_log_next_ = 1;
    replay_log_running_ = false;
    replay_log_error_.clear();
  }
  return {};
}

std::string ServiceRecording::start(const Request& request, const Target& t) {
  // The whole request is checked, and its files opened, before anything
  // changes: a refused one leaves the running recording, its rotation and
  // the replay log as they were, and no file behind (issue 44: a refused
  // request replaced the running recording's rotation and armed its replay
  // log).
  const std::string& file = request.file;
  Rotation rotation;
  std::string why;
  if (file.empty()) return "record start needs \"file\"";
  if (!t.recorder || t.recorder->empty()) return "the graph records no signals (add a 'record:' section)";
  const auto format = runtime::record_format_for(file, request.format, &why);
  if (!format) return "record: " + why;
  if (std::string refusal = replay_log_check(request, t); !refusal.empty()) return refusal;
  if (std::string refusal = rotation_of(request, *format, &rotation, &why); !refusal.empty()) return refusal;
  NewFile target_file, log_file;
  if (std::string refusal = open_files(request, &target_file, &log_file, &why); !refusal.empty()) return refusal;
  return begin(request, t, *format, rotation, target_file, log_file, &why);
}

std::string ServiceRecording::end(const Target& t) {
  if (t.recorder) drain(*t.recorder);
  std::string error;
  if (runtime::ColumnFile* columns = recording_ ? recording_->columns() : nullptr;
      columns && t.graph && columns->flush()) {
    const RecordingState state{t.recorder, columns, nullptr, {}};
    columns->set_summary(summary_json(*t.graph, {}, t.mode, recording_json(*t.graph, state), t.remote));
  }
  if (target() && !target()->commit()) error = target()->error();
  recording_.reset();
  path_.clear();
  rotation_ = {};
  return error;
}

void ServiceRecording::drain(runtime::Recorder& recorder) {
  if (recording_) {
    recording_->drain(recorder);
  } else {
    recorder.drain();
  }
  drain_replay_log(recorder);
  if (target() && target()->failed()) {
    // A write error ends the recording; status and `record stop` report it.
    error_ = target()->error();
    log_(error_);
    recording_.reset();
    path_.clear();
  }
}

void ServiceRecording::rotate_if_due(const Target& t) {
  if (!target() || (rotation_.max_bytes == 0 && rotation_.every_s == 0.0)) return;
  if (now_s() - rotation_.started < kMinRotateSeconds) return;
  const bool full = rotation_.max_bytes > 0 && target()->file_bytes() >= rotation_.max_bytes;
  const bool old = rotation_.every_s > 0.0 && now_s() - rotation_.started >= rotation_.every_s;
  if (!full && !old) return;
  // The current file is completed (each file stands on its own), then the
  // next one starts with the samples that follow.
  Rotation rotation = rotation_;
  if (const std::string error = end(t); !error.empty()) {
    error_ = error;
    log_(error);
    return;
  }
  const std::string next = rotated_name(rotation.name, rotation.next++);
  const std::string why = open_next(next, rotation.format, t);
  if (!target()) {
    error_ = "rotating the recording to '" + next + "' failed: " + why;
    log_(error_);
    return;
  }
  rotate_replay_log();
  rotation.started = now_s();
  rotation_ = rotation;
}

// The next file of a rotation; "" or why it could not be opened.
std::string ServiceRecording::open_next(const std::string& file, const std::string& format_name, const Target& t) {
  if (!t.recorder || t.recorder->empty()) return "the graph records no signals (add a 'record:' section)";
  std::string why;
  const auto format = runtime::record_format_for(file, format_name, &why);
  if (!format) return "record: " + why;
  NewFile next;
  if (!open_new_file(directory_, file, false, &next, &why)) return "record: " + why;
  auto recording = Recording::open(*format, next.path, next.fd, *t.graph, *t.recorder, t.text, false, &why);
  next.fd = -1;
  if (!recording) {
    discard(next);
    return "record: " + why;
  }
  install(std::move(recording), next.path, true, t);
  return {};
}

void ServiceRecording::install(std::unique_ptr<Recording> recording, const std::string& path, bool continued,
                               const Target& t) {
  // A recording running until now is completed first, as `record stop`;
  // a new one starts with the samples that follow (a rotated one with the
  // next sample of the previous file: the rings are not drained in between).
  if (target()) (void)end(t);
  if (!continued && t.recorder) drain(*t.recorder);
  // CSV: whole-row batches, one write(2) each; a write error ends the
  // recording with a count of what was lost (docs/recording.md). A column
  // file: the service keeps no frame log, so it holds the signals, the
  // graph text and, at the end, the summary.
  recording_ = std::move(recording);
  path_ = path;
  error_.clear();
  reloads_recorded_ = 0;
}

std::unique_ptr<runtime::ReplayLog> ServiceRecording::make_replay_log(const std::string& path, int fd, const Target& t,
                                                                      std::string* why) const {
  const std::string graph_file = std::filesystem::path(t.file).is_absolute() || t.file.empty()
                                     ? t.file
                                     : std::filesystem::absolute(t.file).lexically_normal().string();
  auto log = std::make_unique<runtime::ReplayLog>(
      *t.graph, path,
      runtime::ReplayLog::Header{graph_file, base::sha256_hex(t.text), 0, "real time (rtcosimd)", t.graph->host(),
                                 t.data_files});
  if (!log->adopt(fd, path, why)) return nullptr;
  return log;
}

runtime::ReplayLog* ServiceRecording::run_starting(const runtime::Recorder& recorder) {
  if (replay_log_) {
    // This run is the logged one; its batches count from here.
    replay_base_.clear();
    for (const auto& c : recorder.counts()) replay_base_.push_back(c.samples);
  }
  return replay_log_.get();
}

void ServiceRecording::run_start_failed() {
  if (!replay_log_) return;
  // Its rings hold the reset's words of a run that did not happen.
  replay_log_broken_ = true;
  finish_replay_log(nullptr);
  replay_log_error_ = "the start failed: the replay log holds no run";
}

void ServiceRecording::run_stopped(const runtime::Recorder& recorder) {
  if (replay_log_running_) finish_replay_log(&recorder);
}

void ServiceRecording::reload_begins(const Target& old) {
  if (replay_log_) {
    // Armed for a run of the graph that goes now: it taps that graph's
    // sources and links, and the next run would be another graph's.
    finish_replay_log(old.recorder);
    replay_log_error_ = "the reload came before the logged run started: the replay log holds no run";
    log_(replay_log_error_);
  }
  if (recording_ && recording_->columns()) {
    // A column file holds one graph's tasks and signals: the reload ends
    // it, complete (docs/daemon.md).
    log_("the reload ends the recording to " + path_);
    error_ = end(old);
  }
}

void ServiceRecording::reload_done(runtime::Recorder& recorder) {
  if (!recording_) return;
  // The same file goes on; time_s starts again at 0 after the marker.
  recording_->mark_reload(++reloads_recorded_);
  drain(recorder);
}

void ServiceRecording::drain_replay_log(const runtime::Recorder& recorder) {
  if (!replay_log_ || !replay_log_running_) return;
  // Per recorded task, its samples of this run so far: where this batch of
  // the recording ends, so that a replay writes the same batches.
  std::vector<std::uint64_t> recorded;
  const auto counts = recorder.counts();
  for (std::size_t i = 0; i < counts.size(); ++i) {
    recorded.push_back(counts[i].samples - (i < replay_base_.size() ? replay_base_[i] : 0));
  }
  replay_log_->drain(recorded);
}

void ServiceRecording::finish_replay_log(const runtime::Recorder* recorder) {
  if (!replay_log_) return;
  if (replay_log_broken_) {
    replay_log_.reset();
    replay_log_running_ = replay_log_broken_ = false;
    return;
  }
  if (recorder) drain_replay_log(*recorder);
  std::string why;
  const bool started = replay_log_running_;
  if (!replay_log_->finish(&why)) {
    replay_log_error_ = why;
    log_(why);
  } else if (started) {
    log_("replay log written to " + replay_log_path_ +
         (replay_log_next_ > 1 ? " and the " + std::to_string(replay_log_next_ - 1) + " file(s) it goes on in"
                               : std::string()) +
         " (" + std::to_string(replay_log_->bytes()) + " bytes)");
  }
  replay_log_.reset();
  replay_log_running_ = false;
}

void ServiceRecording::rotate_replay_log() {
  if (!replay_log_ || replay_log_broken_) return;
  std::string why;
  const std::string next = rotated_name(replay_log_name_, replay_log_next_++);
  const int fd = base::open_beneath(directory_, next, O_WRONLY | O_CREAT | O_EXCL, 0640, &why);
  const std::string path = std::filesystem::path(next).is_absolute() ? next : directory_ + "/" + next;
  if (fd < 0 || !replay_log_->rotate(fd, path, &why)) {
    // The files so far stay a log that ends here, incomplete. The log
    // itself stays until the run stops: the run's threads put their words
    // into its rings (which fill and count) until they are joined.
    replay_log_error_ = "rotating the replay log to '" + next + "' failed: " + why;
    log_(replay_log_error_);
    replay_log_broken_ = true;
  }
}

}  // namespace rtcosim::session
