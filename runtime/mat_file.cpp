// MAT-file recordings through matio (docs/recording.md, "MAT"): one N x 1
// variable per column, named "<task>_time", "<task>_<block>_<port>",
// "<task>_dropped_after_s", "<task>_dropped_count" and
// "frames_<task>_<column>", and one struct `rtcosim` (format, graph_name,
// graph_file, graph_text, graph_sha256, summary_json, and `columns`, a
// cell array with per variable its name, group, column name and
// attributes).
//
// v7.3 (HDF5 underneath) appends each chunk with Mat_VarWriteAppend, zlib
// compressed. v5 cannot grow a variable, so each column is spooled to an
// unnamed file (O_TMPFILE) in the target's directory and written, mapped,
// when the run is over; v5 variables are not compressed (tools that need
// v5 read them) and hold at most 2^31 - 1 bytes (268 435 455 samples).
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include <fcntl.h>
#include <matio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "runtime/column_file.hpp"

namespace rtcosim::runtime {

namespace {

constexpr std::size_t kMat5MaxBytes = (std::size_t{1} << 31) - 1;

// A MATLAB name: letters, digits and '_', starting with a letter, at most
// 63 characters, unique in the file.
std::string mat_name(const std::string& text, std::set<std::string>& taken) {
  std::string name;
  for (char c : text) {
    const bool word = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (c == ']') continue;
    name += word ? c : '_';
  }
  if (name.empty() || !((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= 'A' && name[0] <= 'Z'))) name = "x" + name;
  if (name.size() > 63) name.resize(63);
  std::string unique = name;
  for (int n = 2; taken.count(unique); ++n) {
    const std::string suffix = "_" + std::to_string(n);
    unique = name.substr(0, std::min(name.size(), 63 - suffix.size())) + suffix;
  }
  taken.insert(unique);
  return unique;
}

matvar_t* char_var(const char* name, const std::string& text) {
  size_t dims[2] = {1, text.size()};
  return Mat_VarCreate(name, MAT_C_CHAR, MAT_T_UTF8, 2, dims, const_cast<char*>(text.data()), 0);
}

class MatBackend final : public ColumnBackend {
 public:
  MatBackend(std::string name, std::string spool_dir, bool v73)
      : name_(std::move(name)), spool_dir_(std::move(spool_dir)), v73_(v73) {
    if (v73_) prepare_hdf5();
  }
  ~MatBackend() override { abandon(); }

  bool open(const RecordLayout& layout, const std::vector<ColumnSpec>& columns, std::string* error) override {
    layout_ = layout;
    mat_ = Mat_CreateVer(name_.c_str(), "rtcosim recording", v73_ ? MAT_FT_MAT73 : MAT_FT_MAT5);
    if (!mat_) {
      *error = std::string("matio cannot create a ") + (v73_ ? "v7.3" : "v5") + " file";
      return false;
    }
    std::set<std::string> taken = {"rtcosim"};
    for (const auto& c : columns) {
      const auto slash = c.group.find('/');
      const std::string kind = c.group.substr(0, slash), task = c.group.substr(slash + 1);
      Column col;
      col.spec = c;
      col.name = mat_name(kind == "frames" ? "frames_" + task + "_" + c.name : task + "_" + c.name, taken);
      if (!v73_) {
        col.spool = ::open(spool_dir_.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        if (col.spool < 0) {
          *error = "cannot make a spool file in '" + spool_dir_ + "' for the MAT v5 columns: " + std::strerror(errno);
          columns_.push_back(std::move(col));
          return false;
        }
      }
      columns_.push_back(std::move(col));
    }
    return true;
  }

  bool append(std::size_t column, const void* values, std::size_t n, std::string* error) override {
    auto& c = columns_[column];
    const std::size_t bytes = n * 8;
    if (!v73_) {
      if (c.rows * 8 + bytes > kMat5MaxBytes) {
        *error = "MAT v5 variable '" + c.name +
                 "' would exceed 2^31 - 1 bytes (268435455 samples) — use format: mat73 "
                 "or hdf5 for longer recordings";
        return false;
      }
      for (std::size_t done = 0; done < bytes;) {
        const ssize_t w = ::write(c.spool, static_cast<const char*>(values) + done, bytes - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
          *error = std::string("write failed: ") + std::strerror(w < 0 ? errno : ENOSPC);
          return false;
        }
        done += static_cast<std::size_t>(w);
      }
      c.rows += n;
      return true;
    }
    size_t dims[2] = {n, 1};
    matvar_t* v = Mat_VarCreate(c.name.c_str(), c.spec.integer ? MAT_C_INT64 : MAT_C_DOUBLE,
                                c.spec.integer ? MAT_T_INT64 : MAT_T_DOUBLE, 2, dims, const_cast<void*>(values),
                                MAT_F_DONT_COPY_DATA);
    errno = 0;
    const int rc = v ? Mat_VarWriteAppend(mat_, v, MAT_COMPRESSION_ZLIB, 1) : 1;
    const int why = errno;
    if (v) Mat_VarFree(v);
    if (rc != 0) return failed(error, "appending to '" + c.name + "'", why);
    c.rows += n;
    return true;
  }

  // matio keeps no promise about a file before Mat_Close: nothing to flush.
  bool flush(std::string*) override { return true; }

  bool close(const std::string& summary, std::string* error) override {
    for (auto& c : columns_) {
      if (v73_ && c.rows > 0) continue;
      if (!write_whole(c, error)) return false;
    }
    if (!write_struct(summary, error)) return false;
    errno = 0;
    const int rc = Mat_Close(mat_);
    const int why = errno;
    mat_ = nullptr;
    if (rc != 0) return failed(error, "closing the file", why);
    return true;
  }

  [[nodiscard]] bool durable() const noexcept override { return false; }

  void abandon() noexcept override {
    if (mat_) Mat_Close(mat_);
    mat_ = nullptr;
    for (auto& c : columns_) {
      if (c.spool >= 0) ::close(c.spool);
      c.spool = -1;
    }
  }

 private:
  struct Column {
    ColumnSpec spec;
    std::string name;
    int spool = -1;
    std::size_t rows = 0;
  };

  // matio says only that a call failed; the system call's errno, where it
  // left one, says why (ENOSPC: the disk is full).
  static bool failed(std::string* error, const std::string& what, int why) {
    *error = "write failed: matio failed " + what + (why != 0 ? std::string(": ") + std::strerror(why) : std::string());
    return false;
  }

  // A v5 column from its spool (mapped, not read into memory), or an empty
  // v7.3 column.
  bool write_whole(Column& c, std::string* error) {
    void* data = nullptr;
    const std::size_t bytes = c.rows * 8;
    if (bytes > 0) {
      data = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, c.spool, 0);
      if (data == MAP_FAILED) {
        *error = "cannot map the spool of '" + c.name + "': " + std::strerror(errno);
        return false;
      }
    }
    size_t dims[2] = {c.rows, 1};
    matvar_t* v = Mat_VarCreate(c.name.c_str(), c.spec.integer ? MAT_C_INT64 : MAT_C_DOUBLE,
                                c.spec.integer ? MAT_T_INT64 : MAT_T_DOUBLE, 2, dims, data, MAT_F_DONT_COPY_DATA);
    errno = 0;
    const int rc = v ? Mat_VarWrite(mat_, v, v73_ ? MAT_COMPRESSION_ZLIB : MAT_COMPRESSION_NONE) : 1;
    const int why = errno;
    if (v) Mat_VarFree(v);
    if (data) ::munmap(data, bytes);
    if (rc != 0) return failed(error, "writing '" + c.name + "'", why);
    return true;
  }

  bool write_struct(const std::string& summary, std::string* error) {
    const char* fields[] = {"format",       "graph_name",   "graph_file", "graph_text",
                            "graph_sha256", "summary_json", "columns"};
    size_t one[2] = {1, 1};
    matvar_t* s = Mat_VarCreateStruct("rtcosim", 2, one, fields, 7);
    Mat_VarSetStructFieldByName(s, "format", 0, char_var("format", "rtcosim recording 1"));
    Mat_VarSetStructFieldByName(s, "graph_name", 0, char_var("graph_name", layout_.graph_name));
    Mat_VarSetStructFieldByName(s, "graph_file", 0, char_var("graph_file", layout_.graph_file));
    Mat_VarSetStructFieldByName(s, "graph_text", 0, char_var("graph_text", layout_.graph_text));
    Mat_VarSetStructFieldByName(s, "graph_sha256", 0, char_var("graph_sha256", layout_.graph_sha256));
    Mat_VarSetStructFieldByName(s, "summary_json", 0, char_var("summary_json", summary));
    // columns{i, :} = {variable, group, column, "key=value; ..."}
    size_t dims[2] = {columns_.size(), 4};
    auto** cells = static_cast<matvar_t**>(std::calloc(columns_.size() * 4 + 1, sizeof(matvar_t*)));
    for (std::size_t i = 0; i < columns_.size(); ++i) {
      const auto& c = columns_[i];
      std::string attributes;
      for (const auto& [k, v] : c.spec.text) attributes += (attributes.empty() ? "" : "; ") + k + "=" + v;
      for (const auto& [k, v] : c.spec.numbers) {
        char buf[40];
        std::snprintf(buf, sizeof buf, "%.17g", v);
        attributes += (attributes.empty() ? "" : "; ") + k + "=" + buf;
      }
      // Column-major: row i of column j is i + j * rows.
      const std::string texts[4] = {c.name, c.spec.group, c.spec.name, attributes};
      for (std::size_t j = 0; j < 4; ++j) cells[i + j * columns_.size()] = char_var("", texts[j]);
    }
    matvar_t* table = Mat_VarCreate("columns", MAT_C_CELL, MAT_T_CELL, 2, dims, cells, 0);  // copies the pointers
    std::free(cells);
    Mat_VarSetStructFieldByName(s, "columns", 0, table);
    errno = 0;
    const int rc = Mat_VarWrite(mat_, s, v73_ ? MAT_COMPRESSION_ZLIB : MAT_COMPRESSION_NONE);
    const int why = errno;
    Mat_VarFree(s);
    if (rc != 0) return failed(error, "writing the struct 'rtcosim'", why);
    return true;
  }

  std::string name_, spool_dir_;
  bool v73_;
  mat_t* mat_ = nullptr;
  RecordLayout layout_;
  std::vector<Column> columns_;
};

}  // namespace

std::unique_ptr<ColumnBackend> make_mat_backend(const std::string& file, const std::string& spool_dir, bool v73) {
  return std::make_unique<MatBackend>(file, spool_dir, v73);
}

}  // namespace rtcosim::runtime
