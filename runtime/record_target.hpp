#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rtcosim::runtime {

// The formats a recording can be written in (docs/recording.md), in the
// order of base::kRecordFormats, which holds each one's name, extensions
// and kind.
enum class RecordFormat { kCsv, kHdf5, kMat73, kMat5 };

// "csv", "hdf5", "mat73", "mat5".
const char* to_string(RecordFormat format) noexcept;
std::optional<RecordFormat> parse_record_format(std::string_view name) noexcept;
// The format of a recording to `path`: by its extension (.csv, .h5/.hdf5,
// .mat = mat73; anything else CSV), or `declared` ("" for none: a YAML
// `format:` or a request's "format"). A declared format that contradicts a
// known extension (hdf5 for x.csv) is refused with `error` set; mat5 fits
// .mat.
std::optional<RecordFormat> record_format_for(const std::string& path, const std::string& declared, std::string* error);
// The names `declared` may take, for messages: "csv, hdf5, mat73, mat5".
const char* record_format_names() noexcept;
std::vector<std::string> record_format_list();
// A column file (HDF5, MAT) rather than CSV rows.
bool is_columnar(RecordFormat format) noexcept;

// One frame of one task, for `rtcosim run --frames` and the frame tables of
// HDF5 and MAT recordings.
struct FrameRow {
  std::uint64_t frame = 0;
  double wall = 0.0;  // seconds since the epoch, at the integration point
  double sim = 0.0;   // simulation time after the step
  double step = 0.0;
  std::int64_t latency_ns = -1;  // first frame of a cycle whose thread slept: wake-up - release; else -1
  std::int64_t exec_ns = 0;
  std::int64_t start_lateness_ns = -1;  // first frame of a cycle: its start - release; else -1
};

/*
 * RecordTarget: what every recording file (CSV, HDF5, MAT) tells about
 * itself: where it goes, whether it failed and why, and how much of the
 * recording is wholly in it. The counters are the ones docs/recording.md
 * defines (samples_written, samples_lost, time_reached_s).
 *
 * Not real-time: only the thread that drains the recorder rings uses one.
 */
class RecordTarget {
 public:
  virtual ~RecordTarget() = default;
  // Writes what is pending and completes the file (renames a temporary over
  // its target); false with `error()` when anything failed.
  virtual bool commit() = 0;
  [[nodiscard]] virtual bool failed() const noexcept = 0;
  [[nodiscard]] virtual std::string error() const = 0;
  [[nodiscard]] virtual const std::string& path() const noexcept = 0;
  [[nodiscard]] virtual std::uint64_t samples_written() const noexcept = 0;
  [[nodiscard]] virtual std::uint64_t samples_lost() const noexcept = 0;
  // The latest simulation time of a sample wholly in the file.
  [[nodiscard]] virtual double time_reached() const noexcept = 0;
  // The file's size on disk now (the daemon's rotation by size).
  [[nodiscard]] virtual std::uint64_t file_bytes() const noexcept = 0;
};

// The error of a failed recording: "recording to 'out.csv' failed at t =
// 0.561 s: <why>; 1234 sample(s) lost", and for a file written under the
// temporary name `temp` (empty: none) where the samples written until then
// are and that the target is as it was.
std::string failure_text(const RecordTarget& file, const std::string& temp, const std::string& why);

// Opens a new file beside `path` for a run that replaces `path` only when it
// is over: "<path>.<pid>.part" (or "<path>.<pid>-N.part"), created with
// O_EXCL so that nothing that is not ours is written into. Returns the
// descriptor and sets `temp`, or -1 with `error`.
int open_temporary(const std::string& path, std::string* temp, std::string* error);

}  // namespace rtcosim::runtime
