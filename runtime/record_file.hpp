#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "runtime/record_target.hpp"

namespace rtcosim::runtime {

/*
 * RecordFile: a CSV file that only ever holds whole rows. Rows are built in
 * a buffer (`rows()`) and written by `flush` in one write(2) per batch; a
 * write that fails part-way is cut back (ftruncate) to the last whole batch,
 * so a full disk leaves whole rows only (a pipe or device cannot be cut
 * back: error() then says that the file ends in a part of a batch). The
 * first failure ends the file:
 * `failed()` turns true, later batches are counted as lost instead of
 * written, and `error()` names the file, the simulation time reached and
 * the samples lost (docs/recording.md).
 *
 * `create` writes to a temporary name beside the target ("<path>.<pid>.part",
 * created exclusively) and `commit` renames it over the target, so an
 * existing file is neither truncated before the run nor touched by a run
 * that fails (the destructor of an uncommitted file removes the temporary),
 * and a run killed with SIGKILL leaves the target as it was. A target that exists and is not a regular
 * file (a FIFO, /dev/stdout) is written directly. `adopt` takes an open
 * descriptor and writes to it directly (the daemon's open-ended recording).
 *
 * Not real-time: only the thread that drains the rings uses it.
 */
class RecordFile final : public RecordTarget {
 public:
  static std::unique_ptr<RecordFile> create(const std::string& path, std::string* error);
  static std::unique_ptr<RecordFile> adopt(int fd, const std::string& path);
  ~RecordFile() override;
  RecordFile(const RecordFile&) = delete;
  RecordFile& operator=(const RecordFile&) = delete;

  // The batch being built: append whole rows, then `sample` once per task
  // sample they hold (for the count of samples lost).
  std::string& rows() noexcept { return batch_; }
  void sample(double time) noexcept;
  // Writes the batch; false once the file has failed.
  bool flush();
  // flush, then (for `create`) renames the temporary over the target; the
  // file is then complete. False with `error()` when anything failed.
  bool commit() override;

  [[nodiscard]] bool failed() const noexcept override { return errno_ != 0; }
  // "recording to 'out.csv' failed at t = 0.561 s: No space left on device; 1234 sample(s) lost"
  [[nodiscard]] std::string error() const override;
  [[nodiscard]] const std::string& path() const noexcept override { return path_; }
  [[nodiscard]] std::uint64_t samples_written() const noexcept override { return written_; }
  [[nodiscard]] std::uint64_t samples_lost() const noexcept override { return lost_; }
  [[nodiscard]] double time_reached() const noexcept override { return reached_; }
  [[nodiscard]] std::uint64_t file_bytes() const noexcept override { return offset_; }

 private:
  RecordFile(int fd, std::string path, std::string temp);
  void fail(int error_number);

  int fd_ = -1;
  std::string path_, temp_;  // temp_ empty: written directly
  std::string batch_;
  std::uint64_t batch_samples_ = 0, written_ = 0, lost_ = 0;
  double batch_time_ = 0.0, reached_ = 0.0;
  std::uint64_t offset_ = 0;  // bytes wholly written
  int errno_ = 0;
  std::string failure_;    // what failed, for error()
  std::string aftermath_;  // what the failure left in the file, when not whole rows
};

// A CSV field as RFC 4180 writes it: quoted, with quotes doubled, when it
// holds a comma, a quote or a line break; as it is otherwise.
void append_csv_field(std::string& out, const std::string& field);

}  // namespace rtcosim::runtime
