#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "io/remote_state.hpp"
#include "runtime/graph.hpp"
#include "runtime/recorder.hpp"
#include "runtime/replay_log.hpp"
#include "session/recording.hpp"

namespace rtcosim::session {

struct NewFile;  // session/record_files.hpp

/*
 * ServiceRecording: the recording of a graph that a service keeps loaded for
 * months (rtcosimd, docs/daemon.md): started, rotated and stopped on request
 * while the graph runs, going on across reloads (a CSV; a column file ends
 * with its graph), with a replay log of the next run beside it. Its files
 * are opened beneath one directory, never following a link; a refused
 * request changes nothing and leaves no file behind.
 *
 * Ownership: owns the recording's file and the replay log; the graph and
 * its recorder are the caller's, handed to each call as a Target (a reload
 * swaps them). Not real-time: every member runs on the service's loop,
 * which is the recorder's drainer; the tasks never wait for it.
 */
class ServiceRecording {
 public:
  // What is recorded: the service's loaded graph (`graph` null: none).
  struct Target {
    runtime::Graph* graph = nullptr;
    runtime::Recorder* recorder = nullptr;
    const std::string& file;                                             // the graph's file as the service loaded it
    const std::string& text;                                             // what the graph was built from
    const std::vector<std::pair<std::string, std::string>>& data_files;  // runtime::replay_data_files
    bool running = false;                                                // started, or starting
    const char* mode = "other";                                          // the summary's: "fifo" or "other"
    const io::RemoteState* remote = nullptr;
  };
  // A `record start`, as the client wrote it.
  struct Request {
    std::string file, format, max_file_size, rotate_every, replay_log;
    bool overwrite = false;
  };

  // Files go beneath `directory`; what the service should log (a write
  // error, a replay log written or given up) goes to `log`, one line each.
  ServiceRecording(std::string directory, std::function<void(const std::string&)> log);
  ~ServiceRecording();
  ServiceRecording(const ServiceRecording&) = delete;
  ServiceRecording& operator=(const ServiceRecording&) = delete;

  // The whole request checked, and its files opened, before anything
  // changes: "" when it started (path(), replay_log_path()), else why not
  // (the reply's text).
  std::string start(const Request& request, const Target& target);
  // The recording completed into its file (`record stop`, a shut-down):
  // "" or why it failed.
  std::string end(const Target& target);
  // The recorder's rings drained into the recording and the replay log (a
  // recorder without a recording drops its samples); a write error ends
  // the recording and is kept in error().
  void drain(runtime::Recorder& recorder);
  // The file cut when it is due (size or age: at most once a second), the
  // next one going on from the next sample.
  void rotate_if_due(const Target& target);

  // Around a run of the graph: the replay log for its start (null: none),
  // told whether the start happened, and its stop.
  runtime::ReplayLog* run_starting(const runtime::Recorder& recorder);
  void run_started() noexcept { replay_log_running_ = replay_log_ != nullptr; }
  void run_start_failed();
  void run_stopped(const runtime::Recorder& recorder);
  // A reload: before the new graph replaces `old` (an armed replay log is
  // given up, a column file ends), and once the new recorder is there (a
  // CSV goes on after a marker row).
  void reload_begins(const Target& old);
  void reload_done(runtime::Recorder& recorder);

  [[nodiscard]] runtime::RecordTarget* target() const noexcept { return recording_ ? &recording_->target() : nullptr; }
  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  // Why the last recording ended early, until taken.
  [[nodiscard]] const std::string& error() const noexcept { return error_; }
  std::string take_error() { return std::exchange(error_, {}); }
  void set_error(std::string error) { error_ = std::move(error); }
  [[nodiscard]] bool logging() const noexcept { return replay_log_ != nullptr; }
  [[nodiscard]] const std::string& replay_log_path() const noexcept { return replay_log_path_; }
  [[nodiscard]] const std::string& replay_log_error() const noexcept { return replay_log_error_; }

 private:
  struct Rotation {
    std::uint64_t max_bytes = 0;
    double every_s = 0.0;
    std::string name, format;  // as the client gave them
    std::uint64_t next = 1;    // suffix of the next file
    double started = 0.0;      // steady clock, seconds, of the current file
  };
  // The steps of start(): the request's checks, its files, then the switch to them.
  std::string replay_log_check(const Request& request, const Target& target) const;
  static std::string rotation_of(const Request& request, runtime::RecordFormat format, Rotation* rotation,
                                 std::string* why);
  std::string open_files(const Request& request, NewFile* target_file, NewFile* log_file, std::string* why) const;
  std::string begin(const Request& request, const Target& target, runtime::RecordFormat format,
                    const Rotation& accepted, NewFile& target_file, NewFile& log_file, std::string* why);
  std::string open_next(const std::string& file, const std::string& format, const Target& target);
  void install(std::unique_ptr<Recording> recording, const std::string& path, bool continued, const Target& target);
  std::unique_ptr<runtime::ReplayLog> make_replay_log(const std::string& path, int fd, const Target& target,
                                                      std::string* why) const;
  void drain_replay_log(const runtime::Recorder& recorder);
  void finish_replay_log(const runtime::Recorder* recorder);
  void rotate_replay_log();

  const std::string directory_;
  const std::function<void(const std::string&)> log_;
  std::unique_ptr<Recording> recording_;
  std::string path_;
  std::string error_;
  Rotation rotation_;
  std::uint64_t reloads_recorded_ = 0;
  std::unique_ptr<runtime::ReplayLog> replay_log_;
  std::string replay_log_name_;             // as the client gave it: the rotated files' names
  std::string replay_log_path_;             // its first file: what `rtcosim replay` reads
  std::uint64_t replay_log_next_ = 1;       // suffix of its next rotated file
  bool replay_log_running_ = false;         // its run started
  bool replay_log_broken_ = false;          // a rotation or the start failed: written no more, kept until the run stops
  std::vector<std::uint64_t> replay_base_;  // the recorder's counts when its run started
  std::string replay_log_error_;            // why the last replay log is incomplete
};

}  // namespace rtcosim::session
