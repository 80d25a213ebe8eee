#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/record_target.hpp"

namespace rtcosim::runtime {

// What a column file says about each recorded signal (HDF5 attributes, the
// MAT file's `rtcosim.columns` table).
struct RecordedSignal {
  std::string name;  // "block.port" or "block.port[i]"
  std::string block, port;
  std::size_t element = 0;
  std::string unit;      // as the graph file's record.units gives it; "" when not given
  std::string coupling;  // the coupling methods of the links that carry it to other tasks, comma-separated
};

struct RecordedTask {
  std::string name;
  double period_s = 0.0;
  std::string integrator, step;  // "rk4", "measured"
  std::vector<RecordedSignal> signals;
};

// The whole recording's shape, known before the first sample.
struct RecordLayout {
  std::vector<RecordedTask> tasks;       // the recorder's tasks, in its channel order
  std::vector<std::string> frame_tasks;  // the frame log's tasks, in its order; empty: no frame table
  std::string graph_name, graph_file, graph_text, graph_sha256;
};

// One appendable column of a column file: float64 or int64 values.
struct ColumnSpec {
  std::string group;  // "signals/fast", "frames/fast"
  std::string name;   // "time", "use_y1.y", "exec_ns"
  bool integer = false;
  std::vector<std::pair<std::string, std::string>> text;
  std::vector<std::pair<std::string, double>> numbers;
};

// A format's writer behind ColumnFile (HDF5, MAT v7.3, MAT v5). Each call
// returns false with `error` set when the format library failed.
class ColumnBackend {
 public:
  virtual ~ColumnBackend() = default;
  virtual bool open(const RecordLayout& layout, const std::vector<ColumnSpec>& columns, std::string* error) = 0;
  // `n` values of column `column`: doubles, or int64 for integer columns.
  virtual bool append(std::size_t column, const void* values, std::size_t n, std::string* error) = 0;
  // Everything appended is in the file, and the file opens as it is.
  virtual bool flush(std::string* error) = 0;
  // Completes the file with the run summary (JSON text, possibly empty).
  virtual bool close(const std::string& summary_json, std::string* error) = 0;
  // Closes after a failure, with no promise about the file.
  virtual void abandon() noexcept = 0;
  // Whether the file opens after `flush` as it is (a SIGKILL then loses
  // only what came after); false: only after `close`.
  [[nodiscard]] virtual bool durable() const noexcept = 0;
};

/*
 * ColumnFile: a recording as columns (HDF5, MAT v7.3, MAT v5;
 * docs/recording.md gives each layout). Per task a time column and one
 * column per recorded signal, at the task's own sample times (never
 * resampled); per task the gaps where its ring dropped samples; with a
 * frame log, per task the `--frames` columns; at `commit` the run summary.
 *
 * Memory is bounded: each column buffers at most kChunk values, handed to
 * the format library when full; every `flush_interval` (1 s) the partial
 * buffers go too and the file is flushed (HDF5: H5Fflush of a SWMR file,
 * which opens after a SIGKILL with every sample up to that flush).
 *
 * Like RecordFile, `create` writes "<path>.<pid>.part" and `commit`
 * renames it over `path`; `adopt` writes an open descriptor directly (the
 * daemon). The first failure ends the file; later samples are counted as
 * lost. Not real-time: only the thread that drains the rings uses it.
 */
class ColumnFile final : public RecordTarget {
 public:
  static constexpr std::size_t kChunk = 4096;  // values per chunk and per buffer
  static constexpr std::chrono::milliseconds kFlushInterval{1000};

  static std::unique_ptr<ColumnFile> create(RecordFormat format, const std::string& path, const RecordLayout& layout,
                                            std::string* error);
  // Takes ownership of `fd`.
  static std::unique_ptr<ColumnFile> adopt(RecordFormat format, int fd, const std::string& path,
                                           const RecordLayout& layout, std::string* error);
  ~ColumnFile() override;
  ColumnFile(const ColumnFile&) = delete;
  ColumnFile& operator=(const ColumnFile&) = delete;

  // One sample of task `task` (the layout's index): its time and one value
  // per recorded signal.
  void sample(std::size_t task, double time, const double* values);
  // `n` samples of `task` are missing after the time `after` (its last
  // sample before the gap; 0 if none).
  void dropped(std::size_t task, double after, std::uint64_t n);
  void frame(std::size_t task, const FrameRow& row);
  void frames_dropped(std::size_t task, std::uint64_t n);
  // At the end of each drain: hands full buffers to the library and, once
  // per kFlushInterval, flushes the file.
  void end_batch();
  // Hands every buffer to the library and flushes the file now, before the
  // summary that `commit` stores: its counts are those of a file that
  // closes (a MAT file's samples are in it only then; should the close
  // fail, they move from written to lost). False once the file failed.
  bool flush();
  // The run summary that `commit` stores.
  void set_summary(std::string json) { summary_ = std::move(json); }

  bool commit() override;
  [[nodiscard]] bool failed() const noexcept override { return !failure_.empty(); }
  [[nodiscard]] std::string error() const override;
  [[nodiscard]] const std::string& path() const noexcept override { return path_; }
  [[nodiscard]] std::uint64_t samples_written() const noexcept override { return written_; }
  [[nodiscard]] std::uint64_t samples_lost() const noexcept override { return lost_; }
  [[nodiscard]] double time_reached() const noexcept override { return reached_; }
  [[nodiscard]] std::uint64_t file_bytes() const noexcept override;
  [[nodiscard]] RecordFormat format() const noexcept { return format_; }
  // Values held in buffers now (at most kChunk per column).
  [[nodiscard]] std::size_t buffered_values() const noexcept;

 private:
  struct Column {
    bool integer = false;
    std::vector<double> real;
    std::vector<std::int64_t> whole;
    [[nodiscard]] std::size_t size() const noexcept { return integer ? whole.size() : real.size(); }
  };
  ColumnFile(RecordFormat format, int fd, std::string path, std::string temp);
  bool open(const RecordLayout& layout, std::string* error);
  void put(std::size_t column, double v);
  void put(std::size_t column, std::int64_t v);
  bool write(std::size_t column);
  bool flush_all();
  void settle();  // the pending samples are in the file
  void fail(const std::string& why);

  RecordFormat format_;
  int fd_ = -1;
  std::string path_, temp_;
  std::unique_ptr<ColumnBackend> backend_;
  std::vector<Column> columns_;
  std::vector<std::size_t> signal_first_;  // per task: its time column, its signals, its two gap columns
  std::vector<std::size_t> signal_count_;  // per task
  std::vector<std::size_t> frame_first_;   // per frame task: its 7 columns
  std::uint64_t pending_ = 0, written_ = 0, lost_ = 0;
  std::uint64_t unconfirmed_ = 0;  // counted as written by flush(), in the file only once it closes
  double pending_time_ = 0.0, reached_ = 0.0;
  std::chrono::steady_clock::time_point last_flush_;
  std::string summary_, failure_;
  bool closed_ = false;
};

// The backends (hdf5_file.cpp, mat_file.cpp; null when the build left them
// out, column_writers_left_out.cpp). `file` is a name the library
// can open (for a descriptor: /proc/self/fd/N); MAT v5 spools its columns
// to unnamed files in `spool_dir` until the file is complete.
std::unique_ptr<ColumnBackend> make_hdf5_backend(const std::string& file);
std::unique_ptr<ColumnBackend> make_mat_backend(const std::string& file, const std::string& spool_dir, bool v73);
// Prepares the HDF5 library for a recording (HDF5 and MAT v7.3 files):
// errors not printed, no clean-up at exit that could crash on a file a
// write error left open.
void prepare_hdf5() noexcept;

}  // namespace rtcosim::runtime
