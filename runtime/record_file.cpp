#include "runtime/record_file.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace rtcosim::runtime {

std::unique_ptr<RecordFile> RecordFile::create(const std::string& path, std::string* error) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
      *error = "cannot write '" + path + "': " + std::strerror(errno);
      return nullptr;
    }
    return std::unique_ptr<RecordFile>(new RecordFile(fd, path, {}));
  }
  std::string temp;
  const int fd = open_temporary(path, &temp, error);
  if (fd < 0) return nullptr;
  return std::unique_ptr<RecordFile>(new RecordFile(fd, path, temp));
}

std::unique_ptr<RecordFile> RecordFile::adopt(int fd, const std::string& path) {
  auto file = std::unique_ptr<RecordFile>(new RecordFile(fd, path, {}));
  const off_t at = ::lseek(fd, 0, SEEK_CUR);
  file->offset_ = at > 0 ? static_cast<std::uint64_t>(at) : 0;
  return file;
}

RecordFile::RecordFile(int fd, std::string path, std::string temp)
    : fd_(fd), path_(std::move(path)), temp_(std::move(temp)) {}

RecordFile::~RecordFile() {
  if (fd_ >= 0) ::close(fd_);
  // Not committed: the run failed before its end. The target stays as it
  // was; the temporary goes unless a write error left rows in it, which
  // error() pointed the user to.
  if (!temp_.empty() && !(failed() && written_ > 0)) ::unlink(temp_.c_str());
}

void RecordFile::sample(double time) noexcept {
  ++batch_samples_;
  batch_time_ = std::max(batch_time_, time);
}

void RecordFile::fail(int error_number) { errno_ = error_number != 0 ? error_number : EIO; }

bool RecordFile::flush() {
  if (failed()) {
    lost_ += batch_samples_;
  } else if (!batch_.empty()) {
    std::size_t done = 0;
    while (done < batch_.size()) {
      const ssize_t n = ::write(fd_, batch_.data() + done, batch_.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        fail(n < 0 ? errno : ENOSPC);
        failure_ = "write failed";
        break;
      }
      done += static_cast<std::size_t>(n);
    }
    if (failed()) {
      // Part of the batch may be on disk: cut it back to the last whole
      // batch, so that no partial row stays.
      if (done > 0) {
        if (::ftruncate(fd_, static_cast<off_t>(offset_)) == 0) {
          (void)::lseek(fd_, static_cast<off_t>(offset_), SEEK_SET);
        } else {
          // A pipe or device cannot be cut back: the reader of the file is
          // told that it ends in a part of a row.
          aftermath_ = "; the file ends in " + std::to_string(done) + " byte(s) of a partly written batch after byte " +
                       std::to_string(offset_) + " (cutting it back failed: " + std::strerror(errno) + ")";
        }
      }
      lost_ += batch_samples_;
    } else {
      offset_ += batch_.size();
      written_ += batch_samples_;
      if (batch_samples_ > 0) reached_ = std::max(reached_, batch_time_);
    }
  }
  batch_.clear();
  batch_samples_ = 0;
  return !failed();
}

bool RecordFile::commit() {
  if (!flush()) return false;
  if (fd_ < 0) return true;
  if (!temp_.empty() && ::fsync(fd_) != 0) {
    fail(errno);
    failure_ = "fsync failed";
    return false;
  }
  // Without the fsync (a file written in place) a deferred write error
  // (NFS, a full quota) shows first at close. EINTR: the descriptor is
  // closed all the same and nothing says the data was not written.
  const int closed = ::close(fd_);
  const int close_errno = errno;
  fd_ = -1;
  if (closed != 0 && close_errno != EINTR) {
    fail(close_errno);
    failure_ = "closing it failed";
    return false;
  }
  if (temp_.empty()) return true;
  if (::rename(temp_.c_str(), path_.c_str()) != 0) {
    fail(errno);
    failure_ = "renaming '" + temp_ + "' to it failed";
    return false;
  }
  temp_.clear();
  return true;
}

std::string RecordFile::error() const {
  if (!failed()) return {};
  return failure_text(*this, temp_, failure_ + ": " + std::strerror(errno_)) + aftermath_;
}

void append_csv_field(std::string& out, const std::string& field) {
  if (field.find_first_of(",\"\r\n") == std::string::npos) {
    out += field;
    return;
  }
  out += '"';
  for (char c : field) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
}

}  // namespace rtcosim::runtime
