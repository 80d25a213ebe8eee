#include "runtime/column_file.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <sys/stat.h>
#include <unistd.h>

#include "base/text.hpp"

namespace rtcosim::runtime {

namespace {

constexpr const char* kFrameColumns[] = {"frame",   "wall_s",           "sim_s", "step_s", "latency_ns",
                                         "exec_ns", "start_lateness_ns"};
constexpr bool kFrameInteger[] = {true, false, false, false, true, true, true};
constexpr const char* kFrameUnits[] = {"", "s", "s", "s", "ns", "ns", "ns"};

std::vector<ColumnSpec> column_specs(const RecordLayout& layout) {
  std::vector<ColumnSpec> out;
  for (const auto& t : layout.tasks) {
    const std::string group = "signals/" + t.name;
    out.push_back({group, "time", false, {{"unit", "s"}, {"task", t.name}}, {{"period_s", t.period_s}}});
    for (const auto& s : t.signals) {
      out.push_back({group,
                     s.name,
                     false,
                     {{"unit", s.unit},
                      {"block", s.block},
                      {"port", s.port},
                      {"task", t.name},
                      {"integrator", t.integrator},
                      {"step", t.step},
                      {"coupling", s.coupling},
                      {"time", "time"}},
                     {{"period_s", t.period_s}, {"element", static_cast<double>(s.element)}}});
    }
    out.push_back({group, "dropped_after_s", false, {{"unit", "s"}}, {}});
    out.push_back({group, "dropped_count", true, {}, {}});
  }
  for (const auto& name : layout.frame_tasks) {
    for (std::size_t i = 0; i < std::size(kFrameColumns); ++i) {
      out.push_back({"frames/" + name, kFrameColumns[i], kFrameInteger[i], {{"unit", kFrameUnits[i]}}, {}});
    }
  }
  return out;
}

}  // namespace

ColumnFile::ColumnFile(RecordFormat format, int fd, std::string path, std::string temp)
    : format_(format), fd_(fd), path_(std::move(path)), temp_(std::move(temp)) {}

std::unique_ptr<ColumnFile> ColumnFile::create(RecordFormat format, const std::string& path, const RecordLayout& layout,
                                               std::string* error) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    *error = "cannot write a " + std::string(to_string(format)) + " recording to '" + path +
             "': it is not a regular file (a " + to_string(format) + " file is written with seeks) — name a file";
    return nullptr;
  }
  std::string temp;
  const int fd = open_temporary(path, &temp, error);
  if (fd < 0) return nullptr;
  auto file = std::unique_ptr<ColumnFile>(new ColumnFile(format, fd, path, temp));
  if (!file->open(layout, error)) return nullptr;
  return file;
}

std::unique_ptr<ColumnFile> ColumnFile::adopt(RecordFormat format, int fd, const std::string& path,
                                              const RecordLayout& layout, std::string* error) {
  auto file = std::unique_ptr<ColumnFile>(new ColumnFile(format, fd, path, {}));
  if (!file->open(layout, error)) return nullptr;
  return file;
}

bool ColumnFile::open(const RecordLayout& layout, std::string* error) {
  // The library opens the file by name; through the descriptor's magic link
  // it is the very file we created (or the daemon confined), never another
  // one a rename or a symbolic link put at the name since.
  const std::string name = "/proc/self/fd/" + std::to_string(fd_);
  const auto slash = path_.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path_.substr(0, slash);
  backend_ = format_ == RecordFormat::kHdf5 ? make_hdf5_backend(name)
                                            : make_mat_backend(name, dir, format_ == RecordFormat::kMat73);
  if (!backend_) {
    *error = "cannot write '" + path_ + "': " + to_string(format_) + " recordings are " + base::not_built("columns");
    return false;
  }
  const auto specs = column_specs(layout);
  for (const auto& s : specs) {
    columns_.push_back({s.integer, {}, {}});
    if (s.integer) {
      columns_.back().whole.reserve(kChunk);
    } else {
      columns_.back().real.reserve(kChunk);
    }
  }
  std::size_t at = 0;
  for (const auto& t : layout.tasks) {
    signal_first_.push_back(at);
    signal_count_.push_back(t.signals.size());
    at += t.signals.size() + 3;
  }
  for (std::size_t i = 0; i < layout.frame_tasks.size(); ++i) {
    frame_first_.push_back(at);
    at += std::size(kFrameColumns);
  }
  std::string why;
  if (!backend_->open(layout, specs, &why)) {
    *error = "cannot write '" + (temp_.empty() ? path_ : temp_) + "' (" + to_string(format_) + "): " + why;
    backend_->abandon();
    return false;
  }
  last_flush_ = std::chrono::steady_clock::now();
  return true;
}

ColumnFile::~ColumnFile() {
  if (backend_ && !closed_) backend_->abandon();
  if (fd_ >= 0) ::close(fd_);
  // As RecordFile: an uncommitted temporary goes unless it holds samples a
  // failure's message pointed the user to.
  if (!temp_.empty() && !(failed() && written_ > 0)) ::unlink(temp_.c_str());
}

void ColumnFile::put(std::size_t column, double v) {
  auto& c = columns_[column];
  c.real.push_back(v);
  if (c.real.size() >= kChunk) (void)write(column);
}

void ColumnFile::put(std::size_t column, std::int64_t v) {
  auto& c = columns_[column];
  c.whole.push_back(v);
  if (c.whole.size() >= kChunk) (void)write(column);
}

bool ColumnFile::write(std::size_t column) {
  auto& c = columns_[column];
  if (c.size() == 0 || failed()) return !failed();
  std::string why;
  const void* data = c.integer ? static_cast<const void*>(c.whole.data()) : static_cast<const void*>(c.real.data());
  if (!backend_->append(column, data, c.size(), &why)) {
    fail(why);
    return false;
  }
  c.real.clear();
  c.whole.clear();
  return true;
}

void ColumnFile::sample(std::size_t task, double time, const double* values) {
  if (failed()) {
    ++lost_;
    return;
  }
  const std::size_t first = signal_first_[task];
  const std::size_t n = signal_count_[task];
  // Counted first: a put that fails the file counts this sample as lost.
  ++pending_;
  pending_time_ = std::max(pending_time_, time);
  put(first, time);
  for (std::size_t i = 0; i < n; ++i) put(first + 1 + i, values[i]);
}

void ColumnFile::dropped(std::size_t task, double after, std::uint64_t n) {
  if (failed()) return;
  const std::size_t gaps = signal_first_[task] + 1 + signal_count_[task];
  put(gaps, after);
  put(gaps + 1, static_cast<std::int64_t>(n));
}

void ColumnFile::frame(std::size_t task, const FrameRow& row) {
  if (failed()) return;
  const std::size_t c = frame_first_[task];
  put(c, static_cast<std::int64_t>(row.frame));
  put(c + 1, row.wall);
  put(c + 2, row.sim);
  put(c + 3, row.step);
  put(c + 4, row.latency_ns);
  put(c + 5, row.exec_ns);
  put(c + 6, row.start_lateness_ns);
}

void ColumnFile::frames_dropped(std::size_t task, std::uint64_t n) {
  // A frame table keeps its gaps in the `frame` column (indices missing);
  // the count is in the summary's frame_log_dropped.
  (void)task;
  (void)n;
}

bool ColumnFile::flush_all() {
  if (failed()) return false;
  for (std::size_t i = 0; i < columns_.size(); ++i) {
    if (!write(i)) return false;
  }
  std::string why;
  if (!backend_->flush(&why)) {
    fail(why);
    return false;
  }
  // A MAT file is valid only once closed: its samples count as written
  // then, not at each flush.
  if (backend_->durable()) settle();
  last_flush_ = std::chrono::steady_clock::now();
  return true;
}

void ColumnFile::settle() {
  written_ += pending_;
  if (pending_ > 0) reached_ = std::max(reached_, pending_time_);
  pending_ = 0;
}

bool ColumnFile::flush() {
  if (!flush_all()) return false;
  unconfirmed_ += pending_;
  settle();
  return true;
}

void ColumnFile::end_batch() {
  if (failed()) return;
  if (std::chrono::steady_clock::now() - last_flush_ >= kFlushInterval) (void)flush_all();
}

void ColumnFile::fail(const std::string& why) {
  if (failed()) return;
  failure_ = why.empty() ? "write failed" : why;
  // The samples since the last flush may be partly in the file; the file
  // may not open. They count as lost.
  lost_ += pending_ + unconfirmed_;
  written_ -= unconfirmed_;
  pending_ = unconfirmed_ = 0;
  if (!backend_->durable()) reached_ = 0.0;  // nothing of a MAT file is readable before its close
  for (auto& c : columns_) {
    c.real.clear();
    c.real.shrink_to_fit();
    c.whole.clear();
    c.whole.shrink_to_fit();
  }
  backend_->abandon();
  closed_ = true;
}

bool ColumnFile::commit() {
  if (!flush_all()) return false;
  std::string why;
  if (!backend_->close(summary_, &why)) {
    fail(why);
    return false;
  }
  closed_ = true;
  settle();
  unconfirmed_ = 0;
  if (fd_ >= 0 && !temp_.empty() && ::fsync(fd_) != 0) {
    fail(std::string("fsync failed: ") + std::strerror(errno));
    return false;
  }
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (temp_.empty()) return true;
  if (::rename(temp_.c_str(), path_.c_str()) != 0) {
    fail("renaming '" + temp_ + "' to it failed: " + std::strerror(errno));
    return false;
  }
  temp_.clear();
  return true;
}

std::string ColumnFile::error() const { return failed() ? failure_text(*this, temp_, failure_) : std::string(); }

std::uint64_t ColumnFile::file_bytes() const noexcept {
  struct stat st {};
  return fd_ >= 0 && ::fstat(fd_, &st) == 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
}

std::size_t ColumnFile::buffered_values() const noexcept {
  std::size_t n = 0;
  for (const auto& c : columns_) n += c.size();
  return n;
}

}  // namespace rtcosim::runtime
