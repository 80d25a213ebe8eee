#pragma once

#include <cerrno>
#include <ostream>
#include <streambuf>
#include <vector>

#include <unistd.h>

namespace rtcosim::base {

/*
 * FdOstream: a std::ostream that owns a file descriptor (opened by the
 * caller, e.g. with open_beneath, so that where it points was checked
 * before anything was written) and closes it. Buffered; a failed write(2)
 * (disk full, I/O error) sets badbit like std::ofstream does. Set-up and
 * housekeeping code, never the real-time path.
 */
class FdStreambuf : public std::streambuf {
 public:
  explicit FdStreambuf(int fd) : fd_(fd), buffer_(64u << 10) { setp(buffer_.data(), buffer_.data() + buffer_.size()); }
  ~FdStreambuf() override {
    sync();
    if (fd_ >= 0) ::close(fd_);
  }
  FdStreambuf(const FdStreambuf&) = delete;
  FdStreambuf& operator=(const FdStreambuf&) = delete;

 protected:
  int_type overflow(int_type c) override {
    if (sync() != 0) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override {
    const char* p = pbase();
    while (p < pptr()) {
      const ssize_t n = ::write(fd_, p, static_cast<std::size_t>(pptr() - p));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return -1;
      p += n;
    }
    setp(buffer_.data(), buffer_.data() + buffer_.size());
    return 0;
  }

 private:
  int fd_;
  std::vector<char> buffer_;
};

class FdOstream : public std::ostream {
 public:
  explicit FdOstream(int fd) : std::ostream(nullptr), buf_(fd) { rdbuf(&buf_); }

 private:
  FdStreambuf buf_;
};

}  // namespace rtcosim::base
