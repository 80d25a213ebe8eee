#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace rtcosim::tasks::plant {

// A recording that cannot be used: `what()` reads "file:line:column: what
// was wrong — what would be right".
class CsvError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The signals a CSV header names (the first column is the time) and which
// of them are on-change signals.
struct CsvHeader {
  std::vector<std::string> signals;
  std::vector<unsigned char> event;
  // Empty `signals` when the line is no valid header: `why` and `column` say why and where.
  static CsvHeader parse(std::string_view line, const std::vector<std::string>& events, std::string& why,
                         std::size_t& column);
};

// One cell of a CSV line, trimmed, with the 1-based column it starts at.
struct CsvCell {
  std::string_view text;
  std::size_t column = 0;
};

/*
 * CsvRowParser: the rows after a header, one line at a time, without
 * throwing: a wrong row returns false with what was wrong and its column,
 * and leaves the on-change signals' last values as they were. Used for a
 * whole recording and by the follow-mode reader thread (not RT: it may
 * allocate the message).
 */
class CsvRowParser {
 public:
  explicit CsvRowParser(CsvHeader header);
  [[nodiscard]] const CsvHeader& header() const noexcept { return header_; }
  bool parse(std::string_view line, double& time, std::span<double> values, std::string& why, std::size_t& column);

 private:
  CsvHeader header_;
  std::vector<double> last_;
  std::vector<CsvCell> cells_;
};

// The size of a regular file; CsvError for anything else (a FIFO, a device).
std::uint64_t regular_file_size(const std::string& path);

// A blank line or a '#' comment: skipped in a recording.
bool csv_skipped(std::string_view line) noexcept;

struct CsvOptions {
  std::uint64_t max_bytes = 64u << 20;  // the whole file is read; a larger one is refused
  // Columns of on-change (event-like) signals: an empty cell means "no new
  // value" and the last one holds; before a signal's first value it is 0.
  std::vector<std::string> events;
};

/*
 * CsvTable: a timestamped recording read whole and validated before the
 * run starts: a header (the first column's name is free, the others name
 * the signals, each may be in double quotes), then rows of an increasing,
 * finite time and one finite value per signal, comma-separated; a time
 * written on two rows in a row is a step at that instant (the first row's
 * values just before, the second's from then on: `find` gives the second);
 * blank lines and lines starting with '#' are skipped. Values are stored column by column (each signal one
 * contiguous array) so that a frame reads them by index only: `find` and
 * the accessors are noexcept and allocate nothing. Set-up (`read`) throws
 * CsvError naming the first wrong place.
 */
class CsvTable {
 public:
  static CsvTable read(const std::string& path, const CsvOptions& options);
  static CsvTable parse(const std::string& text, const std::string& label, const CsvOptions& options);

  [[nodiscard]] const std::vector<std::string>& signals() const noexcept { return signals_; }
  [[nodiscard]] std::size_t rows() const noexcept { return time_.size(); }
  [[nodiscard]] std::span<const double> time() const noexcept { return time_; }
  [[nodiscard]] std::span<const double> column(std::size_t signal) const noexcept {
    return {values_.data() + signal * rows(), rows()};
  }
  [[nodiscard]] bool is_event(std::size_t signal) const noexcept { return event_[signal] != 0; }
  // The last row whose time is <= t (of a step's two rows, the second); 0
  // when t is before the first row.
  [[nodiscard]] std::size_t find(double t) const noexcept;

 private:
  std::vector<std::string> signals_;
  std::vector<unsigned char> event_;
  std::vector<double> time_;
  std::vector<double> values_;  // signal-major: values_[s * rows + r]
};

}  // namespace rtcosim::tasks::plant
