#include "base/safe_path.hpp"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <vector>

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace rtcosim::base {

namespace {

// The same walk openat2 does, one component at a time with O_NOFOLLOW.
int walk_beneath(int dir, const std::filesystem::path& rel, int flags, mode_t mode) {
  int current = ::dup(dir);
  if (current < 0) return -1;
  std::vector<std::filesystem::path> parts(rel.begin(), rel.end());
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    if (parts[i] == "." || parts[i].empty()) continue;
    if (parts[i] == "..") {
      ::close(current);
      errno = EXDEV;
      return -1;
    }
    const int next = ::openat(current, parts[i].c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    const int saved = errno;
    ::close(current);
    if (next < 0) {
      errno = saved == ENOTDIR ? ELOOP : saved;  // O_NOFOLLOW on a link to a directory: ENOTDIR
      return -1;
    }
    current = next;
  }
  if (parts.empty() || parts.back() == ".." || parts.back() == ".") {
    ::close(current);
    errno = parts.empty() || parts.back() == "." ? EISDIR : EXDEV;
    return -1;
  }
  const int fd = ::openat(current, parts.back().c_str(), flags | O_NOFOLLOW, mode);
  const int saved = errno;
  ::close(current);
  errno = saved;
  return fd;
}

}  // namespace

int open_beneath(const std::string& root, const std::string& name, int flags, mode_t mode, std::string* error) {
  const auto fail = [&](const std::string& why) {
    *error = why;
    return -1;
  };
  if (name.find('\0') != std::string::npos) return fail("the name contains a NUL character — give a plain file name");
  if (name.empty()) return fail("the name is empty — give a file name inside " + root);
  namespace fs = std::filesystem;
  const fs::path base = fs::path(root).lexically_normal();
  fs::path rel(name);
  if (rel.is_absolute()) {
    const fs::path inside = rel.lexically_normal().lexically_relative(base);
    if (inside.empty() || *inside.begin() == "..") {
      return fail("'" + name + "' is outside " + root +
                  " — give a name inside it (relative names are taken from there)");
    }
    rel = inside;
  }
  const int dir = ::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return fail("cannot open the directory " + root + ": " + std::strerror(errno));
  flags |= O_NONBLOCK | O_CLOEXEC | O_NOCTTY;
  open_how how{};
  how.flags = static_cast<std::uint64_t>(flags);
  how.mode = (flags & O_CREAT) ? mode : 0;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  int fd = static_cast<int>(::syscall(SYS_openat2, dir, rel.c_str(), &how, sizeof how));
  if (fd < 0 && errno == ENOSYS) fd = walk_beneath(dir, rel, flags, mode);
  const int saved = errno;
  ::close(dir);
  if (fd < 0) {
    switch (saved) {
      case EXDEV:
        return fail("'" + name + "' leads outside " + root + " — give a name inside it");
      case ELOOP:
        return fail("'" + name + "' is or passes through a symbolic link — links are not followed in " + root);
      case EEXIST:
        return fail("'" + name + "' exists in " + root + " — choose a new name, or ask to overwrite it");
      case ENXIO:
        return fail("'" + name + "' is a FIFO or device — expected a regular file");
      default:
        return fail("cannot open '" + name + "' in " + root + ": " + std::strerror(saved));
    }
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return fail("'" + name + "' is not a regular file — expected a regular file in " + root);
  }
  return fd;
}

std::string make_dir_beneath(const std::string& root, const std::string& name, mode_t mode, std::string* error) {
  namespace fs = std::filesystem;
  if (name.find('\0') != std::string::npos) {
    *error = "the name contains a NUL character — give a plain directory name";
    return {};
  }
  fs::path rel(name);
  if (rel.is_absolute()) rel = rel.lexically_normal().lexically_relative(fs::path(root).lexically_normal());
  const std::string leaf = rel.string();
  if (leaf.empty() || leaf == "." || leaf == ".." || leaf.find('/') != std::string::npos) {
    *error = "'" + name + "' is not a new directory directly in " + root + " — give a plain name such as run1";
    return {};
  }
  const int dir = ::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) {
    *error = "cannot open the directory " + root + ": " + std::strerror(errno);
    return {};
  }
  const int rc = ::mkdirat(dir, leaf.c_str(), mode);
  const int saved = errno;
  ::close(dir);
  if (rc != 0) {
    *error = saved == EEXIST ? "'" + leaf + "' exists in " + root + " — choose a new name"
                             : "cannot create '" + leaf + "' in " + root + ": " + std::strerror(saved);
    return {};
  }
  return (fs::path(root) / leaf).string();
}

int open_regular_file(const std::string& path, std::string* error) {
  if (path.find('\0') != std::string::npos) {
    *error = "the path contains a NUL character";
    return -1;
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    *error = "cannot open '" + path + "': " + std::strerror(errno);
    return -1;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    *error = "'" + path + "' is not a regular file — expected a task-graph file";
    return -1;
  }
  return fd;
}

bool read_all(int fd, std::size_t max_bytes, std::string* text, std::string* error) {
  text->clear();
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *error = std::strerror(errno);
      return false;
    }
    if (n == 0) return true;
    text->append(buf, static_cast<std::size_t>(n));
    if (text->size() > max_bytes) {
      *error = "larger than " + std::to_string(max_bytes) + " bytes";
      return false;
    }
  }
}

}  // namespace rtcosim::base
