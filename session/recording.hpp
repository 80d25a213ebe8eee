#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "runtime/column_file.hpp"
#include "runtime/graph.hpp"
#include "runtime/record_file.hpp"
#include "runtime/record_target.hpp"
#include "runtime/recorder.hpp"

namespace rtcosim::session {

/*
 * Recording: a run's recorded signals on their way to one file, in any of
 * the formats (base/record_formats.hpp) — CSV rows (runtime::RecordFile) or
 * a column file (HDF5, MAT: runtime::ColumnFile) — behind one drain, so
 * that no front end chooses between two code paths. `open` is the one
 * factory: the format decides the writer.
 *
 * Ownership: it owns the file; the recorder is the caller's, handed to
 * each drain (a daemon's CSV goes on across a reload, with a new recorder). Not real-time: every member runs on the recorder's drain thread.
 * A write error ends the file (failed(), error()); later samples are
 * counted as lost, never blocking the tasks (their rings drop and count).
 */
class Recording {
 public:
  // The file `path` in `format`: with `fd` < 0 created as a temporary that
  // commit() renames over `path`; otherwise written to the open descriptor
  // `fd` (taken over: the daemon's confined open). A column file takes its
  // shape from the graph and recorder (with `graph_text` and, with
  // `frames`, room for the frame tables). nullptr with `*why` set when the
  // file cannot be made.
  static std::unique_ptr<Recording> open(runtime::RecordFormat format, const std::string& path, int fd,
                                         runtime::Graph& graph, runtime::Recorder& recorder,
                                         const std::string& graph_text, bool frames, std::string* why);

  // The samples in the recorder's rings; with `upto`, each task's only up
  // to that many in all (a replay's batches).
  void drain(runtime::Recorder& recorder, std::span<const std::uint64_t> upto = {});
  // After the tasks stopped: drains and marks what was dropped at the end.
  void finish(runtime::Recorder& recorder);

  // The column file, or nullptr for CSV (the frame tables and the summary
  // go only into column files).
  [[nodiscard]] runtime::ColumnFile* columns() const noexcept { return columns_.get(); }
  [[nodiscard]] runtime::RecordTarget& target() const noexcept;
  // A CSV's marker row of a reload (the daemon): column files end instead.
  void mark_reload(std::uint64_t reloads);

 private:
  Recording() = default;
  std::unique_ptr<runtime::RecordFile> csv_;
  std::unique_ptr<runtime::ColumnFile> columns_;
};

}  // namespace rtcosim::session
