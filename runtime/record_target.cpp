#include "runtime/record_target.hpp"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fcntl.h>
#include <unistd.h>

namespace rtcosim::runtime {

const char* to_string(RecordFormat format) noexcept {
  switch (format) {
    case RecordFormat::kCsv:
      return "csv";
    case RecordFormat::kHdf5:
      return "hdf5";
    case RecordFormat::kMat73:
      return "mat73";
    case RecordFormat::kMat5:
      return "mat5";
  }
  return "csv";
}

const char* record_format_names() noexcept { return "csv, hdf5, mat73, mat5"; }

std::optional<RecordFormat> parse_record_format(std::string_view name) noexcept {
  for (auto f : {RecordFormat::kCsv, RecordFormat::kHdf5, RecordFormat::kMat73, RecordFormat::kMat5}) {
    if (name == to_string(f)) return f;
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
  if (ext == ".csv") by_name = RecordFormat::kCsv;
  if (ext == ".h5" || ext == ".hdf5") by_name = RecordFormat::kHdf5;
  if (ext == ".mat") by_name = RecordFormat::kMat73;
  if (declared.empty()) return by_name.value_or(RecordFormat::kCsv);
  const auto format = parse_record_format(declared);
  if (!format) {
    *error = "unknown recording format '" + declared + "' — expected one of: " + record_format_names();
    return std::nullopt;
  }
  const bool fits =
      !by_name || *by_name == *format || (*by_name == RecordFormat::kMat73 && *format == RecordFormat::kMat5);
  if (!fits) {
    *error = "format '" + declared + "' does not fit the file '" + path + "' (" + ext + " is " + to_string(*by_name) +
             ") — name the file for its format (.csv, .h5, .mat) or drop 'format'";
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
