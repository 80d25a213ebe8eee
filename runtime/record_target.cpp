#include "runtime/record_target.hpp"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fcntl.h>
#include <unistd.h>

#include "base/record_formats.hpp"

namespace rtcosim::runtime {

// The enumerators follow the table's rows.
static_assert(base::kRecordFormats.size() == static_cast<std::size_t>(RecordFormat::kMat5) + 1);
static_assert(base::kRecordFormats[static_cast<std::size_t>(RecordFormat::kCsv)].name == "csv");
static_assert(base::kRecordFormats[static_cast<std::size_t>(RecordFormat::kHdf5)].name == "hdf5");
static_assert(base::kRecordFormats[static_cast<std::size_t>(RecordFormat::kMat73)].name == "mat73");
static_assert(base::kRecordFormats[static_cast<std::size_t>(RecordFormat::kMat5)].name == "mat5");

namespace {

const base::RecordFormatRow& row_of(RecordFormat format) noexcept {
  return base::kRecordFormats[static_cast<std::size_t>(format)];
}

bool lists(const base::RecordFormatRow& row, std::string_view ext) noexcept {
  return !ext.empty() && (row.extensions[0] == ext || row.extensions[1] == ext);
}

}  // namespace

// The string views of the table are literals: null-terminated.
const char* to_string(RecordFormat format) noexcept { return row_of(format).name.data(); }

bool is_columnar(RecordFormat format) noexcept { return row_of(format).columnar; }

const char* record_format_names() noexcept {
  static const std::string names = [] {
    std::string s;
    for (const auto& row : base::kRecordFormats) s += (s.empty() ? "" : ", ") + std::string(row.name);
    return s;
  }();
  return names.c_str();
}

std::vector<std::string> record_format_list() {
  std::vector<std::string> out;
  for (const auto& row : base::kRecordFormats) out.emplace_back(row.name);
  return out;
}

std::optional<RecordFormat> parse_record_format(std::string_view name) noexcept {
  for (std::size_t i = 0; i < base::kRecordFormats.size(); ++i) {
    if (name == base::kRecordFormats[i].name) return static_cast<RecordFormat>(i);
  }
  return std::nullopt;
}

std::optional<RecordFormat> record_format_for(const std::string& path, const std::string& declared,
                                              std::string* error) {
  const auto dot = path.rfind('.');
  const auto slash = path.rfind('/');
  std::string ext = dot == std::string::npos || (slash != std::string::npos && dot < slash) ? "" : path.substr(dot);
  for (auto& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::optional<RecordFormat> by_name;
  for (std::size_t i = 0; i < base::kRecordFormats.size() && !by_name; ++i) {
    if (lists(base::kRecordFormats[i], ext)) by_name = static_cast<RecordFormat>(i);
  }
  if (declared.empty()) return by_name.value_or(RecordFormat::kCsv);
  const auto format = parse_record_format(declared);
  if (!format) {
    *error = "unknown recording format '" + declared + "' — expected one of: " + record_format_names();
    return std::nullopt;
  }
  if (by_name && !lists(row_of(*format), ext)) {
    std::string known;
    for (const auto& row : base::kRecordFormats) {
      if (!row.extensions[0].empty() && known.find(row.extensions[0]) == std::string::npos)
        known += (known.empty() ? "" : ", ") + std::string(row.extensions[0]);
    }
    *error = "format '" + declared + "' does not fit the file '" + path + "' (" + ext + " is " + to_string(*by_name) +
             ") — name the file for its format (" + known + ") or drop 'format'";
    return std::nullopt;
  }
  return format;
}

std::string failure_text(const RecordTarget& file, const std::string& temp, const std::string& why) {
  char reached[48];
  std::snprintf(reached, sizeof reached, "%.9g", file.time_reached());
  const std::string& path = file.path();
  std::string text = "recording to '" + path + "' failed at t = " + reached + " s: " + why + "; " +
                     std::to_string(file.samples_lost()) + " sample(s) lost";
  if (temp.empty()) return text;
  if (file.samples_written() == 0) return text + "; '" + path + "' is as it was";
  return text + "; the " + std::to_string(file.samples_written()) + " sample(s) written until then are in '" + temp +
         "', '" + path + "' is as it was";
}

int open_temporary(const std::string& path, std::string* temp, std::string* error) {
  // O_EXCL: never write into a file that is not ours (a second output of
  // this run with the same target, a leftover of a killed run).
  *temp = path + "." + std::to_string(::getpid()) + ".part";
  int fd = ::open(temp->c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  for (int n = 1; fd < 0 && errno == EEXIST && n < 100; ++n) {
    *temp = path + "." + std::to_string(::getpid()) + "-" + std::to_string(n) + ".part";
    fd = ::open(temp->c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  }
  if (fd < 0) {
    *error = "cannot write '" + *temp + "' (the temporary name of '" + path + "'): " + std::strerror(errno);
    return -1;
  }
  return fd;
}

}  // namespace rtcosim::runtime
