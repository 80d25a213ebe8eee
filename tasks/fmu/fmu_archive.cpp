#include "tasks/fmu/fmu_archive.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>

#include "tasks/fmu/model_description.hpp"

namespace rtcosim::tasks::fmu {

namespace {

struct ZipCloser {
  void operator()(zip_t* z) const noexcept { zip_discard(z); }
};
struct ZipFileCloser {
  void operator()(zip_file_t* f) const noexcept { zip_fclose(f); }
};
struct FdCloser {
  int fd = -1;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

// The relative path components of an entry name, or an empty list when the
// name could leave the directory (absolute, '..', backslash, NUL, empty).
std::vector<std::string> safe_components(const std::string& name, bool* is_dir) {
  std::vector<std::string> out;
  if (name.empty() || name[0] == '/' || name.find('\\') != std::string::npos || name.find('\0') != std::string::npos) {
    return {};
  }
  *is_dir = name.back() == '/';
  std::size_t pos = 0;
  while (pos < name.size()) {
    const std::size_t end = std::min(name.find('/', pos), name.size());
    const std::string part = name.substr(pos, end - pos);
    if (part == "..") return {};
    if (!part.empty() && part != ".") out.push_back(part);
    pos = end + 1;
  }
  return out;
}

// The archive opened, or the reason libzip gives why it is none.
std::unique_ptr<zip_t, ZipCloser> open_archive(const std::string& zip_path) {
  int error = 0;
  std::unique_ptr<zip_t, ZipCloser> z(zip_open(zip_path.c_str(), ZIP_RDONLY, &error));
  if (!z) {
    zip_error_t e;
    zip_error_init_with_code(&e, error);
    std::string why = zip_error_strerror(&e);
    zip_error_fini(&e);
    throw FmuError(zip_path + ": cannot open as an FMU (a zip archive): " + why);
  }
  return z;
}

// A fresh private directory (mode 0700, made by mkdtemp) under $TMPDIR or
// /tmp: nothing else writes into it while the entries are extracted.
std::string make_temp_dir(const std::string& zip_path) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/rtcosim-fmu-XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (!::mkdtemp(buf.data()))
    throw FmuError(zip_path + ": cannot create a temporary directory: " + std::strerror(errno));
  return buf.data();
}

// One entry of the archive, its name checked as a safe relative path.
struct Entry {
  std::string name;
  bool is_dir = false;
  std::vector<std::string> parts;  // its path components
  std::uint64_t declared = 0;      // the size the archive declares
};

// Entry i, checked before anything is written for it; none for an entry
// that names the directory itself.
std::optional<Entry> read_entry(zip_t* z, zip_int64_t i, const std::string& zip_path, const ArchiveLimits& limits) {
  zip_stat_t st;
  if (zip_stat_index(z, static_cast<zip_uint64_t>(i), 0, &st) != 0 || !(st.valid & ZIP_STAT_NAME)) {
    throw FmuError(zip_path + ": entry " + std::to_string(i) + " is unreadable: " + zip_strerror(z));
  }
  Entry entry;
  entry.name = st.name;
  const std::string& name = entry.name;
  if (name.size() > limits.max_name_bytes) {
    throw FmuError(zip_path + ": entry " + std::to_string(i) + "'s name is " + std::to_string(name.size()) +
                   " bytes — more than the " + std::to_string(limits.max_name_bytes) + " allowed");
  }
  entry.parts = safe_components(name, &entry.is_dir);
  if (entry.parts.size() > limits.max_depth) {
    throw FmuError(zip_path + ": entry '" + name.substr(0, 64) + "…' has " + std::to_string(entry.parts.size()) +
                   " path components — more than the " + std::to_string(limits.max_depth) + " allowed");
  }
  if (entry.parts.empty()) {
    if (entry.is_dir || name == "./") return std::nullopt;
    throw FmuError(zip_path + ": entry '" + name + "' would be written outside the FMU's directory — refused");
  }
  zip_uint8_t opsys = 0;
  zip_uint32_t attributes = 0;
  if (zip_file_get_external_attributes(z, static_cast<zip_uint64_t>(i), 0, &opsys, &attributes) == 0 &&
      opsys == ZIP_OPSYS_UNIX && ((attributes >> 16) & S_IFMT) == S_IFLNK) {
    throw FmuError(zip_path + ": entry '" + name + "' is a symbolic link — refused");
  }
  entry.declared = (st.valid & ZIP_STAT_SIZE) ? st.size : 0;
  return entry;
}

// Each directory is made and entered relative to its parent's
// descriptor: a system call per component with its own short name
// (full paths cost entries x depth^2 in the kernel's lookups), and
// O_NOFOLLOW | O_DIRECTORY refuses whatever is not a plain directory.
// `parent` ends as the entry's directory (a directory entry: itself).
void enter_directories(FdCloser& parent, const std::string& dir, const std::string& zip_path, const Entry& entry) {
  const std::string& name = entry.name;
  const auto& parts = entry.parts;
  parent.fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (parent.fd < 0) throw FmuError(zip_path + ": cannot open '" + dir + "': " + std::strerror(errno));
  for (std::size_t k = 0; k + (entry.is_dir ? 0 : 1) < parts.size(); ++k) {
    if (parts[k].size() > NAME_MAX) {
      throw FmuError(zip_path + ": entry '" + name.substr(0, 64) + "…' has a name part longer than " +
                     std::to_string(NAME_MAX) + " bytes — refused");
    }
    if (::mkdirat(parent.fd, parts[k].c_str(), 0700) != 0 && errno != EEXIST) {
      throw FmuError(zip_path + ": cannot create '" + parts[k] + "' for entry '" + name + "': " + std::strerror(errno));
    }
    const int next = ::openat(parent.fd, parts[k].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0) {
      // ENOTDIR/ELOOP: a file or link is where a directory must be; anything
      // else (out of descriptors) is not the archive's fault and is named.
      if (errno != ENOTDIR && errno != ELOOP) {
        throw FmuError(zip_path + ": cannot open '" + parts[k] + "' for entry '" + name + "': " + std::strerror(errno));
      }
      throw FmuError(zip_path + ": entry '" + name + "' needs '" + parts[k] + "' to be a directory — refused");
    }
    ::close(parent.fd);
    parent.fd = next;
  }
}

// A file entry written into its directory, new (O_EXCL: an entry named
// twice is refused), never past its declared size, the per-entry limit or
// (with `total`, the bytes written so far) the archive's.
void write_entry(zip_t* z, zip_int64_t i, int parent_fd, const std::string& zip_path, const Entry& entry,
                 const ArchiveLimits& limits, std::vector<char>& chunk, std::uint64_t& total) {
  const std::string& name = entry.name;
  const std::uint64_t declared = entry.declared;
  if (declared > limits.max_entry_bytes) {
    throw FmuError(zip_path + ": entry '" + name + "' is " + std::to_string(declared) + " bytes — more than the " +
                   std::to_string(limits.max_entry_bytes) + " allowed per entry");
  }
  if (entry.parts.back().size() > NAME_MAX) {
    throw FmuError(zip_path + ": entry '" + name.substr(0, 64) + "…' has a name part longer than " +
                   std::to_string(NAME_MAX) + " bytes — refused");
  }
  FdCloser fd{
      ::openat(parent_fd, entry.parts.back().c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)};
  if (fd.fd < 0) {
    throw FmuError(zip_path + ": cannot write entry '" + name + "' (" + std::strerror(errno) +
                   (errno == EEXIST ? ": the archive names it twice" : "") + ")");
  }
  std::unique_ptr<zip_file_t, ZipFileCloser> f(zip_fopen_index(z, static_cast<zip_uint64_t>(i), 0));
  if (!f) throw FmuError(zip_path + ": cannot read entry '" + name + "': " + zip_strerror(z));
  std::uint64_t written = 0;
  for (;;) {
    const zip_int64_t n = zip_fread(f.get(), chunk.data(), chunk.size());
    if (n < 0) throw FmuError(zip_path + ": entry '" + name + "' is corrupt: " + zip_file_strerror(f.get()));
    if (n == 0) break;
    written += static_cast<std::uint64_t>(n);
    total += static_cast<std::uint64_t>(n);
    if (written > declared || written > limits.max_entry_bytes) {
      throw FmuError(zip_path + ": entry '" + name + "' inflates beyond its declared size — refused");
    }
    if (total > limits.max_total_bytes) {
      throw FmuError(zip_path + ": the archive unpacks to more than " + std::to_string(limits.max_total_bytes) +
                     " bytes — refused");
    }
    for (zip_int64_t off = 0; off < n;) {
      const ssize_t w = ::write(fd.fd, chunk.data() + off, static_cast<std::size_t>(n - off));
      if (w < 0) {
        if (errno == EINTR) continue;
        throw FmuError(zip_path + ": cannot write entry '" + name + "': " + std::strerror(errno));
      }
      off += w;
    }
  }
}

}  // namespace

ExtractedArchive::ExtractedArchive(const std::string& zip_path, const ArchiveLimits& limits) {
  const std::unique_ptr<zip_t, ZipCloser> z = open_archive(zip_path);
  const zip_int64_t entries = zip_get_num_entries(z.get(), 0);
  if (entries < 0 || static_cast<std::uint64_t>(entries) > limits.max_entries) {
    throw FmuError(zip_path + ": " + std::to_string(entries) + " entries — more than the " +
                   std::to_string(limits.max_entries) + " an FMU may hold");
  }
  dir_ = make_temp_dir(zip_path);
  try {
    std::uint64_t total = 0;
    std::vector<char> chunk(1 << 16);
    for (zip_int64_t i = 0; i < entries; ++i) {
      const std::optional<Entry> entry = read_entry(z.get(), i, zip_path, limits);
      if (!entry) continue;
      FdCloser parent;
      enter_directories(parent, dir_, zip_path, *entry);
      if (entry->is_dir) continue;
      write_entry(z.get(), i, parent.fd, zip_path, *entry, limits, chunk, total);
      ++files_;
    }
    bytes_ = total;
  } catch (...) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    throw;
  }
}

ExtractedArchive::~ExtractedArchive() {
  std::error_code ec;  // a directory someone else removed is no reason to fail
  std::filesystem::remove_all(dir_, ec);
}

}  // namespace rtcosim::tasks::fmu
