#include "tasks/plant/csv_table.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <optional>
#include <string_view>

#include <sys/stat.h>

namespace rtcosim::tasks::plant {

namespace {

std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// A signal name becomes an output port and appears as "block.port" in
// wires: letters, digits and '_', not starting with a digit; and the
// characters of FMI's structured names ('.', '[', ']', '(', ')'), so that a
// column can be named as the FMU input it drives (an input file of the FMI
// Cross-Check: "Input.value", "x[2]").
bool valid_name(std::string_view s) noexcept {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9') || s[0] == '.') return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
           c == '[' || c == ']' || c == '(' || c == ')';
  });
}

// Splits one line at commas, each cell trimmed, with the column it starts
// at. A cell in double quotes (RFC 4180, as FMPy, fmusim and the FMI
// Cross-Check write their headers: "time","u") is its text without them;
// a quoted cell holding a comma or a quote is no signal name or number
// anyway, and is refused as such by the caller.
void split(std::string_view line, std::vector<CsvCell>& out) {
  out.clear();
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = line.find(',', start);
    const std::size_t end = comma == std::string_view::npos ? line.size() : comma;
    std::string_view raw = line.substr(start, end - start);
    std::size_t lead = 0;
    while (lead < raw.size() && (raw[lead] == ' ' || raw[lead] == '\t')) ++lead;
    std::string_view cell = trim(raw);
    if (cell.size() >= 2 && cell.front() == '"' && cell.back() == '"') {
      cell = cell.substr(1, cell.size() - 2);
      ++lead;
    }
    out.push_back({cell, start + lead + 1});
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
}

}  // namespace

std::uint64_t regular_file_size(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw CsvError(path + ": cannot read the file: " + std::strerror(errno));
  // A device or FIFO would never end (or block): only a regular file is a recording.
  if (!S_ISREG(st.st_mode)) throw CsvError(path + ": not a regular file — expected a CSV recording");
  return static_cast<std::uint64_t>(st.st_size);
}

CsvTable CsvTable::read(const std::string& path, const CsvOptions& options) {
  const std::uint64_t size = regular_file_size(path);
  if (size > options.max_bytes) {
    throw CsvError(path + ": the file is " + std::to_string(size) + " bytes — more than the limit of " +
                   std::to_string(options.max_bytes) + " (the block's 'max_file_size', MiB)");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CsvError(path + ": cannot read the file: " + std::strerror(errno));
  std::string text;
  text.resize(static_cast<std::size_t>(size));
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  return parse(text, path, options);
}

CsvHeader CsvHeader::parse(std::string_view line, const std::vector<std::string>& events, std::string& why,
                           std::size_t& column) {
  CsvHeader h;
  std::vector<CsvCell> cells;
  split(line, cells);
  column = 1;
  if (cells.size() < 2) {
    why = "the header names no signal — expected 'time,<signal>,...'";
    return {};
  }
  for (std::size_t c = 1; c < cells.size(); ++c) {
    const std::string name(cells[c].text);
    column = cells[c].column;
    if (!valid_name(cells[c].text)) {
      why = "signal name '" + name +
            "' — expected letters, digits, '_' and the '.', '[]', '()' of structured names, not starting with a digit "
            "or '.'";
      return {};
    }
    if (std::find(h.signals.begin(), h.signals.end(), name) != h.signals.end()) {
      why = "signal '" + name + "' is named twice — expected unique names";
      return {};
    }
    h.signals.push_back(name);
    h.event.push_back(std::find(events.begin(), events.end(), name) != events.end());
  }
  column = 1;
  for (const auto& e : events) {
    if (std::find(h.signals.begin(), h.signals.end(), e) == h.signals.end()) {
      why = "'events' names '" + e + "', which the header does not have";
      return {};
    }
  }
  return h;
}

CsvRowParser::CsvRowParser(CsvHeader header) : header_(std::move(header)), last_(header_.signals.size(), 0.0) {}

bool CsvRowParser::parse(std::string_view line, double& time, std::span<double> values, std::string& why,
                         std::size_t& column) {
  split(line, cells_);
  const std::size_t n = header_.signals.size();
  if (cells_.size() != n + 1) {
    column = cells_.back().column;
    why = std::to_string(cells_.size()) + " cells — expected " + std::to_string(n + 1) +
          " (the time and one per signal of the header)";
    return false;
  }
  auto number = [&](const CsvCell& cell, double& v) {
    const char* first = cell.text.data();
    const char* stop = first + cell.text.size();
    const auto r = std::from_chars(first, stop, v);
    column = cell.column;
    return !cell.text.empty() && r.ec == std::errc() && r.ptr == stop && std::isfinite(v);
  };
  if (!number(cells_[0], time)) {
    why = "time '" + std::string(cells_[0].text) + "' — expected a finite number";
    return false;
  }
  for (std::size_t s = 0; s < n; ++s) {
    const CsvCell& cell = cells_[s + 1];
    if (cell.text.empty() && header_.event[s]) {
      values[s] = last_[s];  // no change: the last value holds
      continue;
    }
    if (!number(cell, values[s])) {
      why = "value of '" + header_.signals[s] + "' '" + std::string(cell.text) + "' — expected a finite number";
      return false;
    }
  }
  // Only a good row moves an on-change signal's value.
  std::copy(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(n), last_.begin());
  column = cells_[0].column;
  return true;
}

bool csv_skipped(std::string_view line) noexcept { return trim(line).empty() || trim(line)[0] == '#'; }

CsvTable CsvTable::parse(const std::string& text, const std::string& label, const CsvOptions& options) {
  if (text.size() > options.max_bytes) {
    throw CsvError(label + ": " + std::to_string(text.size()) + " bytes — more than the limit of " +
                   std::to_string(options.max_bytes));
  }
  if (text.find('\0') != std::string::npos) throw CsvError(label + ": holds a NUL byte — expected a CSV text file");
  auto fail = [&](std::size_t line, std::size_t column, const std::string& what) {
    throw CsvError(label + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " + what);
  };

  CsvTable t;
  std::optional<CsvRowParser> rows;
  std::vector<std::vector<double>> columns;
  std::vector<double> values;
  std::string why;
  std::size_t column = 0;
  std::size_t line_no = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t nl = text.find('\n', pos);
    const std::size_t end = nl == std::string::npos ? text.size() : nl;
    const std::string_view line(text.data() + pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (csv_skipped(line)) continue;
    if (!rows) {
      CsvHeader h = CsvHeader::parse(line, options.events, why, column);
      if (h.signals.empty()) fail(line_no, column, why);
      t.signals_ = h.signals;
      t.event_ = h.event;
      rows.emplace(std::move(h));
      columns.resize(t.signals_.size());
      values.resize(t.signals_.size());
      continue;
    }
    double time = 0.0;
    if (!rows->parse(line, time, values, why, column)) fail(line_no, column, why);
    // A time written twice marks a step at that instant (the FMI
    // Cross-Check's and FMPy's input files): the first row is the value
    // just before, the second the value from then on.
    const bool repeat = !t.time_.empty() && time == t.time_.back();
    if (repeat && t.time_.size() >= 2 && t.time_[t.time_.size() - 2] == time) {
      fail(line_no, column,
           "time " + std::string(trim(line.substr(0, line.find(',')))) +
               " appears a third time — a time may be written twice, to mark a step (the value before and after)");
    }
    if (!t.time_.empty() && !repeat && !(time > t.time_.back())) {
      fail(line_no, column,
           "time " + std::string(trim(line.substr(0, line.find(',')))) +
               " is not after the row before — expected increasing times (one written twice marks a step)");
    }
    if (!t.time_.empty() && !repeat) {
      // Every value between two rows is shown by interpolation: its slope must be a number.
      for (std::size_t s = 0; s < values.size(); ++s) {
        if (!std::isfinite((values[s] - columns[s].back()) / (time - t.time_.back()))) {
          fail(line_no, 1,
               "value of '" + t.signals_[s] + "' steps from the row before with a slope beyond the largest double " +
                   "— expected values and times that linear interpolation can span");
        }
      }
    }
    t.time_.push_back(time);
    for (std::size_t s = 0; s < values.size(); ++s) columns[s].push_back(values[s]);
  }
  if (!rows) throw CsvError(label + ": empty — expected a header 'time,<signal>,...' and rows");
  if (t.time_.empty()) fail(line_no, 1, "no rows after the header — expected at least one");
  t.values_.reserve(t.signals_.size() * t.time_.size());
  for (const auto& c : columns) t.values_.insert(t.values_.end(), c.begin(), c.end());
  return t;
}

std::size_t CsvTable::find(double t) const noexcept {
  const auto it = std::upper_bound(time_.begin(), time_.end(), t);
  return it == time_.begin() ? 0 : static_cast<std::size_t>(it - time_.begin()) - 1;
}

}  // namespace rtcosim::tasks::plant
