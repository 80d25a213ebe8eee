#include "tasks/plant/csv_table.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
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
// wires: letters, digits and '_', not starting with a digit.
bool valid_name(std::string_view s) noexcept {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

struct Cell {
  std::string_view text;
  std::size_t column = 0;  // 1-based
};

// Splits one line at commas, each cell trimmed, with the column it starts at.
void split(std::string_view line, std::vector<Cell>& out) {
  out.clear();
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = line.find(',', start);
    const std::size_t end = comma == std::string_view::npos ? line.size() : comma;
    std::string_view raw = line.substr(start, end - start);
    std::size_t lead = 0;
    while (lead < raw.size() && (raw[lead] == ' ' || raw[lead] == '\t')) ++lead;
    out.push_back({trim(raw), start + lead + 1});
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
}

}  // namespace

CsvTable CsvTable::read(const std::string& path, const CsvOptions& options) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw CsvError(path + ": cannot read the file: " + std::strerror(errno));
  // A device or FIFO would never end (or block): only a regular file is a recording.
  if (!S_ISREG(st.st_mode)) throw CsvError(path + ": not a regular file — expected a CSV recording");
  if (static_cast<std::uint64_t>(st.st_size) > options.max_bytes) {
    throw CsvError(path + ": the file is " + std::to_string(st.st_size) + " bytes — more than the limit of " +
                   std::to_string(options.max_bytes) + " (the block's 'max_file_size', MiB)");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CsvError(path + ": cannot read the file: " + std::strerror(errno));
  std::string text;
  text.resize(static_cast<std::size_t>(st.st_size));
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  return parse(text, path, options);
}

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
  std::vector<std::vector<double>> columns;
  std::vector<double> last;  // an event signal's value so far
  std::vector<Cell> cells;
  bool header = false;
  std::size_t line_no = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t nl = text.find('\n', pos);
    const std::size_t end = nl == std::string::npos ? text.size() : nl;
    const std::string_view line(text.data() + pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (trim(line).empty() || trim(line)[0] == '#') continue;
    split(line, cells);
    if (!header) {
      header = true;
      if (cells.size() < 2) fail(line_no, 1, "the header names no signal — expected 'time,<signal>,...'");
      for (std::size_t c = 1; c < cells.size(); ++c) {
        const std::string name(cells[c].text);
        if (!valid_name(cells[c].text)) {
          fail(line_no, cells[c].column,
               "signal name '" + name + "' — expected letters, digits and '_', not starting with a digit");
        }
        if (std::find(t.signals_.begin(), t.signals_.end(), name) != t.signals_.end()) {
          fail(line_no, cells[c].column, "signal '" + name + "' is named twice — expected unique names");
        }
        t.signals_.push_back(name);
        t.event_.push_back(std::find(options.events.begin(), options.events.end(), name) != options.events.end());
      }
      for (const auto& e : options.events) {
        if (std::find(t.signals_.begin(), t.signals_.end(), e) == t.signals_.end()) {
          fail(line_no, 1, "'events' names '" + e + "', which the header does not have");
        }
      }
      columns.resize(t.signals_.size());
      last.assign(t.signals_.size(), 0.0);
      continue;
    }
    if (cells.size() != t.signals_.size() + 1) {
      fail(line_no, cells.back().column,
           std::to_string(cells.size()) + " cells — expected " + std::to_string(t.signals_.size() + 1) +
               " (the time and one per signal of the header)");
    }
    auto number = [&](const Cell& cell, const char* what) {
      double v = 0.0;
      const char* first = cell.text.data();
      const char* stop = first + cell.text.size();
      const auto r = std::from_chars(first, stop, v);
      if (cell.text.empty() || r.ec != std::errc() || r.ptr != stop || !std::isfinite(v)) {
        fail(line_no, cell.column, std::string(what) + " '" + std::string(cell.text) + "' — expected a finite number");
      }
      return v;
    };
    const double time = number(cells[0], "time");
    if (!t.time_.empty() && !(time > t.time_.back())) {
      fail(line_no, cells[0].column,
           "time " + std::string(cells[0].text) + " is not after the row before — expected strictly increasing times");
    }
    t.time_.push_back(time);
    for (std::size_t s = 0; s < t.signals_.size(); ++s) {
      const Cell& cell = cells[s + 1];
      if (cell.text.empty() && t.event_[s]) {
        columns[s].push_back(last[s]);  // no change: the last value holds
        continue;
      }
      last[s] = number(cell, ("value of '" + t.signals_[s] + "'").c_str());
      columns[s].push_back(last[s]);
    }
  }
  if (!header) throw CsvError(label + ": empty — expected a header 'time,<signal>,...' and rows");
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
