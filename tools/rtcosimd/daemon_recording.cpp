#include <algorithm>
#include <array>
#include <bitset>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <system_error>
#include <unordered_set>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/duration.hpp"
#include "base/fd_ostream.hpp"
#include "base/json.hpp"
#include "base/safe_path.hpp"
#include "base/sha256.hpp"
#include "rt_config/loader.hpp"
#include "runtime/realtime.hpp"
#include "session/record_files.hpp"
#include "session/report/graph_report.hpp"
#include "session/report/graph_svg.hpp"
#include "session/report/recording_summary.hpp"
#include "session/report/redaction.hpp"
#include "session/report/run_summary.hpp"
#include "session/session.hpp"
#include "session/sync/sync_live.hpp"
#include "session/trace_session.hpp"
#include "tools/rtcosimd/control_client.hpp"
#include "tools/rtcosimd/daemon.hpp"
#include "tools/rtcosimd/daemon_internal.hpp"

namespace rtcosim::daemon {

std::string Daemon::record_start(const std::string& file, const std::string& format_name, bool overwrite,
                                 const std::string& max_file_size, const std::string& rotate_every,
                                 const std::string& replay_log) {
  // The whole request is checked, and its files opened, before anything of
  // the daemon changes: a refused one leaves the running recording, its
  // rotation and the replay log as they were, and no file behind (issue 44:
  // a refused request replaced the running recording's rotation and armed
  // its replay log).
  Rotation rotation;
  std::string why;
  if (file.empty()) return reply_error("record start needs \"file\"");
  if (!recorder_ || recorder_->empty()) return reply_error("the graph records no signals (add a 'record:' section)");
  const auto format = runtime::record_format_for(file, format_name, &why);
  if (!format) return reply_error("record: " + why);
  if (!replay_log.empty()) {
    // A replay starts from the state every run starts from: the log holds
    // a run from its first frame (docs/replay.md, "The daemon").
    if (running_ || pending_start_) {
      return reply_error(
          "record: replay_log: the graph is running — a replay log holds a run from its start: send stop, then "
          "record start with replay_log, then start");
    }
    if (replay_log_) return reply_error("record: replay_log: the run is already logged to " + replay_log_path_);
    if (!graph_) return reply_error("record: replay_log: no graph is loaded");
    if (const std::string refusal = runtime::replay_log_refusal(*graph_); !refusal.empty()) {
      return reply_error("record: replay_log: " + config_file_ + " cannot be replayed exactly: " + refusal);
    }
    // Both would write into one file (with overwrite, each truncating what
    // the other wrote).
    if (canonical_in(options_.recording_dir, replay_log) == canonical_in(options_.recording_dir, file)) {
      return reply_error("record: replay_log '" + replay_log + "' is the recording's own file ('" + file +
                         "') — name another file for the replay log, e.g. run.rpl");
    }
  }
  if (!max_file_size.empty() && (rotation.max_bytes = parse_size(max_file_size, &why)) == 0) {
    return reply_error("record: " + why);
  }
  if (rotation.max_bytes > 0 && static_cast<double>(rotation.max_bytes) < kMinColumnarRotateBytes &&
      runtime::is_columnar(*format)) {
    return reply_error("record: max_file_size '" + max_file_size + "' — a " + runtime::to_string(*format) +
                       " file starts at tens of kB: expected 1MB or more for hdf5, mat73 and mat5 (4kB or more "
                       "for csv)");
  }
  if (!rotate_every.empty()) {
    const auto every = base::parse_duration(rotate_every, &why);
    if (!every || !(*every >= kMinRotateSeconds)) {
      return reply_error("record: rotate_every '" + rotate_every + "'" + (why.empty() ? "" : ": " + why) +
                         " — expected a duration of 1s or more, e.g. \"1h\", \"10min\"");
    }
    rotation.every_s = *every;
  }
  rotation.name = file;
  rotation.format = format_name;

  NewFile target, log_file;
  if (!open_new_file(options_.recording_dir, file, overwrite, &target, &why)) return reply_error("record: " + why);
  if (!replay_log.empty()) {
    if (!open_new_file(options_.recording_dir, replay_log, overwrite, &log_file, &why)) {
      discard(target);
      return reply_error("record: replay_log: " + why);
    }
    if (same_file(target.fd, log_file.fd)) {
      discard(target);
      discard(log_file);
      return reply_error("record: replay_log '" + replay_log + "' is the recording's own file ('" + file +
                         "') — name another file for the replay log, e.g. run.rpl");
    }
  }
  // The running recording is completed into its file after the new files
  // are emptied: overwriting that file would have both write into it.
  struct stat running {};
  if (recording() && ::stat(record_path_.c_str(), &running) == 0) {
    for (const NewFile* f : {&target, &log_file}) {
      struct stat st {};
      if (f->fd >= 0 && ::fstat(f->fd, &st) == 0 && st.st_dev == running.st_dev && st.st_ino == running.st_ino) {
        const std::string name = f == &target ? file : replay_log;
        discard(target);
        discard(log_file);
        return reply_error("record: '" + name + "' is the running recording's file (" + record_path_ +
                           ") — send record stop first, or name another file");
      }
    }
  }
  // Accepted. What can still fail is writing the files' beginnings (a full
  // disk, the HDF5 library); then the new files go again and the running
  // recording goes on, but an overwritten file has been emptied.
  for (NewFile* f : {&target, &log_file}) {
    if (f->fd >= 0 && !f->created && ::ftruncate(f->fd, 0) != 0) {
      why = "cannot empty '" + f->path + "' to overwrite it: " + std::strerror(errno);
      discard(target);
      discard(log_file);
      return reply_error("record: " + why);
    }
  }
  auto recording =
      session::Recording::open(*format, target.path, target.fd, *graph_, *recorder_, config_text_, false, &why);
  target.fd = -1;  // the writer's now, closed with it
  if (!recording) {
    discard(target);
    discard(log_file);
    return reply_error("record: " + why);
  }
  std::unique_ptr<runtime::ReplayLog> log;
  if (!replay_log.empty()) {
    log = make_replay_log(log_file.path, log_file.fd, &why);
    log_file.fd = -1;
    if (!log) {
      recording.reset();
      discard(target);
      discard(log_file);
      return reply_error("record: replay_log: " + why);
    }
  }
  install_recording(std::move(recording), target.path, false);
  rotation.started = now_s();
  rotation_ = rotation;
  std::string reply = reply_ok("\"file\":" + base::json_string(record_path_));
  if (log) {
    replay_log_ = std::move(log);
    replay_log_name_ = replay_log;
    replay_log_path_ = log_file.path;
    replay_log_next_ = 1;
    replay_log_running_ = false;
    replay_log_error_.clear();
    reply.insert(reply.size() - 1, ",\"replay_log\":" + base::json_string(replay_log_path_));
  }
  return reply;
}

std::unique_ptr<runtime::ReplayLog> Daemon::make_replay_log(const std::string& path, int fd, std::string* why) const {
  const std::string graph_file = std::filesystem::path(config_file_).is_absolute() || config_file_.empty()
                                     ? config_file_
                                     : std::filesystem::absolute(config_file_).lexically_normal().string();
  auto log = std::make_unique<runtime::ReplayLog>(
      *graph_, path,
      runtime::ReplayLog::Header{graph_file, base::sha256_hex(config_text_), 0, "real time (rtcosimd)", graph_->host(),
                                 data_files_});
  if (!log->adopt(fd, path, why)) return nullptr;
  return log;
}

void Daemon::drain_replay_log() {
  if (!replay_log_ || !replay_log_running_) return;
  // Per recorded task, its samples of this run so far: where this batch of
  // the recording ends, so that a replay writes the same batches.
  std::vector<std::uint64_t> recorded;
  const auto counts = recorder_->counts();
  for (std::size_t i = 0; i < counts.size(); ++i) {
    recorded.push_back(counts[i].samples - (i < replay_base_.size() ? replay_base_[i] : 0));
  }
  replay_log_->drain(recorded);
}

void Daemon::finish_replay_log() {
  if (!replay_log_) return;
  if (replay_log_broken_) {
    replay_log_.reset();
    replay_log_running_ = replay_log_broken_ = false;
    return;
  }
  drain_replay_log();
  std::string why;
  const bool started = replay_log_running_;
  if (!replay_log_->finish(&why)) {
    replay_log_error_ = why;
    std::cerr << "rtcosimd: " << why << '\n';
  } else if (started) {
    std::cerr << "rtcosimd: replay log written to " << replay_log_path_
              << (replay_log_next_ > 1 ? " and the " + std::to_string(replay_log_next_ - 1) + " file(s) it goes on in"
                                       : std::string())
              << " (" << replay_log_->bytes() << " bytes)\n";
  }
  replay_log_.reset();
  replay_log_running_ = false;
}

void Daemon::rotate_replay_log() {
  if (!replay_log_ || replay_log_broken_) return;
  std::string why;
  const std::string next = rotated_name(replay_log_name_, replay_log_next_++);
  const int fd = base::open_beneath(options_.recording_dir, next, O_WRONLY | O_CREAT | O_EXCL, 0640, &why);
  const std::string path = std::filesystem::path(next).is_absolute() ? next : options_.recording_dir + "/" + next;
  if (fd < 0 || !replay_log_->rotate(fd, path, &why)) {
    // The files so far stay a log that ends here, incomplete. The log
    // itself stays until the run stops: the run's threads put their words
    // into its rings (which fill and count) until they are joined.
    replay_log_error_ = "rotating the replay log to '" + next + "' failed: " + why;
    std::cerr << "rtcosimd: " << replay_log_error_ << '\n';
    replay_log_broken_ = true;
  }
}

void Daemon::rotate_if_due() {
  if (!recording() || (rotation_.max_bytes == 0 && rotation_.every_s == 0.0)) return;
  if (now_s() - rotation_.started < kMinRotateSeconds) return;
  const bool full = rotation_.max_bytes > 0 && recording()->file_bytes() >= rotation_.max_bytes;
  const bool old = rotation_.every_s > 0.0 && now_s() - rotation_.started >= rotation_.every_s;
  if (!full && !old) return;
  // The current file is completed (each file stands on its own), then the
  // next one starts with the samples that follow.
  Rotation rotation = rotation_;
  if (const std::string error = end_recording(); !error.empty()) {
    record_error_ = error;
    std::cerr << "rtcosimd: " << error << '\n';
    return;
  }
  const std::string next = rotated_name(rotation.name, rotation.next++);
  const std::string reply = open_recording(next, rotation.format, true);
  if (!recording()) {
    record_error_ = "rotating the recording to '" + next + "' failed: " + reply;
    std::cerr << "rtcosimd: " << record_error_ << '\n';
    return;
  }
  rotate_replay_log();
  rotation.started = now_s();
  rotation_ = rotation;
}

std::string Daemon::open_recording(const std::string& file, const std::string& format_name, bool continued) {
  if (!recorder_ || recorder_->empty()) return reply_error("the graph records no signals (add a 'record:' section)");
  std::string why;
  const auto format = runtime::record_format_for(file, format_name, &why);
  if (!format) return reply_error("record: " + why);
  NewFile target;
  if (!open_new_file(options_.recording_dir, file, false, &target, &why)) return reply_error("record: " + why);
  auto recording =
      session::Recording::open(*format, target.path, target.fd, *graph_, *recorder_, config_text_, false, &why);
  target.fd = -1;
  if (!recording) {
    discard(target);
    return reply_error("record: " + why);
  }
  install_recording(std::move(recording), target.path, continued);
  return reply_ok("\"file\":" + base::json_string(record_path_));
}

void Daemon::install_recording(std::unique_ptr<session::Recording> recording, const std::string& path, bool continued) {
  // A recording running until now is completed first, as `record stop`;
  // a new one starts with the samples that follow (a rotated one with the
  // next sample of the previous file: the rings are not drained in between).
  if (this->recording()) (void)end_recording();
  if (!continued) drain_recorder();
  // CSV: whole-row batches, one write(2) each; a write error ends the
  // recording with a count of what was lost (docs/recording.md). A column
  // file: the daemon keeps no frame log, so it holds the signals, the graph
  // text and, at the end, the summary.
  recording_ = std::move(recording);
  record_path_ = path;
  record_error_.clear();
  reloads_recorded_ = 0;
}

std::string Daemon::trace_start(const std::string& dir) {
  std::string reply;
  begin_trace_start(dir, 0, &reply);
  if (!reply.empty()) return reply;
  // Called directly (tests, SIGHUP-less callers): wait for the worker.
  pending_trace_->result.wait();
  return finish_trace_start()->second;
}

void Daemon::begin_trace_start(const std::string& dir, std::uint64_t client, std::string* reply_now) {
  if (trace_) {
    *reply_now = reply_error("already tracing to " + trace_->directory);
    return;
  }
  if (pending_trace_) {
    *reply_now = reply_error("a trace session is being set up");
    return;
  }
  if (dir.empty()) {
    *reply_now = reply_error("trace start needs \"dir\"");
    return;
  }
  // The trace goes to a new directory directly in the recording directory.
  std::string why;
  const auto full = base::make_dir_beneath(options_.recording_dir, dir, 0750, &why);
  if (full.empty()) {
    *reply_now = reply_error("trace: " + why);
    return;
  }
  pending_trace_ = std::make_unique<PendingTrace>();
  pending_trace_->client = client;
  pending_trace_->directory = full;
  pending_trace_->result = std::async(std::launch::async, [full] {
    std::string error;
    auto session = session::TraceSession::start(full, 10000.0, &error);
    return std::make_pair(std::move(session), error);
  });
}

std::optional<std::pair<std::uint64_t, std::string>> Daemon::finish_trace_start() {
  if (!pending_trace_ || pending_trace_->result.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
    return std::nullopt;
  }
  auto [session, error] = pending_trace_->result.get();
  const auto client = pending_trace_->client;
  const auto dir = pending_trace_->directory;
  pending_trace_.reset();
  if (!session) return std::make_pair(client, reply_error(error));
  trace_ = std::make_unique<TraceState>();
  trace_->session = std::move(session);
  trace_->directory = dir;
  if (graph_) graph_->trace_names();
  return std::make_pair(client, reply_ok("\"dir\":" + base::json_string(dir)));
}

}  // namespace rtcosim::daemon
