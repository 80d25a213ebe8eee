#include "session/record_files.hpp"

#include <cctype>
#include <filesystem>
#include <system_error>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/safe_path.hpp"

namespace rtcosim::session {

std::uint64_t parse_size(const std::string& text, std::string* error) {
  std::size_t end = 0;
  double value = 0.0;
  try {
    value = std::stod(text, &end);
  } catch (const std::exception&) {
    end = 0;
  }
  std::string unit = text.substr(end);
  for (auto& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const double scale = unit.empty() || unit == "b"   ? 1.0
                       : unit == "k" || unit == "kb" ? 1e3
                       : unit == "m" || unit == "mb" ? 1e6
                       : unit == "g" || unit == "gb" ? 1e9
                                                     : 0.0;
  if (end == 0 || !(value > 0.0) || scale == 0.0 || value * scale < kMinRotateBytes || value * scale > 1e15) {
    *error = "max_file_size '" + text + "' — expected a size of 4kB or more, e.g. \"64MB\", \"512kB\", \"1GB\"";
    return 0;
  }
  return static_cast<std::uint64_t>(value * scale);
}

std::string rotated_name(const std::string& name, std::uint64_t n) {
  const auto slash = name.rfind('/');
  const auto dot = name.rfind('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash) || dot == 0) {
    return name + "." + std::to_string(n);
  }
  return name.substr(0, dot) + "." + std::to_string(n) + name.substr(dot);
}

bool open_new_file(const std::string& root, const std::string& name, bool overwrite, NewFile* f, std::string* why) {
  f->path = std::filesystem::path(name).is_absolute() ? name : root + "/" + name;
  f->fd = base::open_beneath(root, name, O_WRONLY | O_CREAT | O_EXCL, 0640, why);
  f->created = f->fd >= 0;
  // An existing one, when it may be overwritten: the reason it cannot be
  // (a FIFO, a link) is this open's.
  if (f->fd < 0 && overwrite) f->fd = base::open_beneath(root, name, O_WRONLY, 0, why);
  return f->fd >= 0;
}

void discard(NewFile& f) {
  if (f.fd >= 0) ::close(f.fd);
  if (f.created) ::unlink(f.path.c_str());
  f = {};
}

bool same_file(int a, int b) {
  struct stat sa {
  }, sb{};
  return ::fstat(a, &sa) == 0 && ::fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

std::filesystem::path canonical_in(const std::string& root, const std::string& name) {
  std::error_code ec;
  const std::filesystem::path full = std::filesystem::path(name).is_absolute()
                                         ? std::filesystem::path(name)
                                         : std::filesystem::absolute(root, ec) / name;
  const auto canonical = std::filesystem::weakly_canonical(full, ec);
  return ec ? full.lexically_normal() : canonical;
}

}  // namespace rtcosim::session
