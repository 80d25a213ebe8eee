// The HDF5 layout of a recording (docs/recording.md, "HDF5"):
//   /                      attributes format, graph_name, graph_file, graph_text, graph_sha256, flush_interval_s
//   /signals/<task>        attributes period_s, integrator, step
//   /signals/<task>/time   float64 [n], the task's sample times
//   /signals/<task>/<sig>  float64 [n], attributes unit, block, port, element, task, period_s, integrator, step,
//                          coupling, time
//   /signals/<task>/dropped_after_s, dropped_count   the gaps
//   /frames/<task>/<col>   the --frames columns
//   /summary               the run summary (JSON text), written when the run is over
// Every dataset is 1-D, chunked (ColumnFile::kChunk values), shuffled and
// deflated, extendible. The file is written in SWMR mode: HDF5 orders its
// metadata writes so that the file on disk is valid at every point, and
// H5Fflush puts every appended value there.
#include <string>
#include <vector>

#include <hdf5.h>

#include "runtime/column_file.hpp"

namespace rtcosim::runtime {

namespace {

// HDF5's error stack as one line, outermost first.
herr_t collect(unsigned n, const H5E_error2_t* e, void* data) {
  auto* out = static_cast<std::string*>(data);
  if (n > 0 && !out->empty()) *out += "; ";
  *out += e->desc ? e->desc : "?";
  return 0;
}

std::string hdf5_error(const std::string& what) {
  std::string stack;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect, &stack);
  H5Eclear2(H5E_DEFAULT);
  // The POSIX driver puts "errno = 28, error message = 'No space left on
  // device'" into a long description: that part is the reason.
  const auto at = stack.find("error message = '");
  if (at != std::string::npos) {
    const auto end = stack.find('\'', at + 17);
    return what + ": " + stack.substr(at + 17, end == std::string::npos ? std::string::npos : end - at - 17);
  }
  return what + (stack.empty() ? std::string() : ": HDF5: " + stack);
}

class Hdf5Backend final : public ColumnBackend {
 public:
  explicit Hdf5Backend(std::string name) : name_(std::move(name)) { prepare_hdf5(); }
  ~Hdf5Backend() override { abandon(); }

  bool open(const RecordLayout& layout, const std::vector<ColumnSpec>& columns, std::string* error) override {
    const hid_t fapl = file_access();
    file_ = H5Fcreate(name_.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    H5Pclose(fapl);
    if (file_ < 0) return fail(error, "creating the file failed");
    if (!text(file_, "format", "rtcosim recording 1") || !text(file_, "graph_name", layout.graph_name) ||
        !text(file_, "graph_file", layout.graph_file) || !text(file_, "graph_text", layout.graph_text) ||
        !text(file_, "graph_sha256", layout.graph_sha256) ||
        !number(file_, "flush_interval_s", std::chrono::duration<double>(ColumnFile::kFlushInterval).count())) {
      return fail(error, "writing the file's attributes failed");
    }
    const hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    for (const auto& t : layout.tasks) {
      const hid_t g = H5Gcreate2(file_, ("signals/" + safe(t.name)).c_str(), lcpl, H5P_DEFAULT, H5P_DEFAULT);
      const bool ok =
          g >= 0 && number(g, "period_s", t.period_s) && text(g, "integrator", t.integrator) && text(g, "step", t.step);
      if (g >= 0) H5Gclose(g);
      if (!ok) {
        H5Pclose(lcpl);
        return fail(error, "creating the group of task '" + t.name + "' failed");
      }
    }
    const hsize_t chunk = ColumnFile::kChunk, zero = 0, unlimited = H5S_UNLIMITED;
    const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 1, &chunk);
    H5Pset_shuffle(dcpl);
    H5Pset_deflate(dcpl, 4);
    const hid_t dapl = dataset_access();
    const hid_t space = H5Screate_simple(1, &zero, &unlimited);
    bool ok = true;
    for (const auto& c : columns) {
      const hid_t type = c.integer ? H5T_STD_I64LE : H5T_IEEE_F64LE;
      const std::string path = safe_path(c.group) + "/" + safe(c.name);
      const hid_t d = H5Dcreate2(file_, path.c_str(), type, space, lcpl, dcpl, dapl);
      if (d < 0) {
        ok = false;
        *error = hdf5_error("creating dataset '" + path + "' failed");
        break;
      }
      for (const auto& [k, v] : c.text) ok = ok && text(d, k, v);
      for (const auto& [k, v] : c.numbers) ok = ok && number(d, k, v);
      datasets_.push_back({d, c.integer, 0, path});
    }
    H5Sclose(space);
    H5Pclose(dapl);
    H5Pclose(dcpl);
    H5Pclose(lcpl);
    if (!ok) return error->empty() ? fail(error, "writing attributes failed") : false;
    // From here on nothing is created: SWMR allows appending only.
    if (H5Fstart_swmr_write(file_) < 0) return fail(error, "starting SWMR mode failed");
    return true;
  }

  bool append(std::size_t column, const void* values, std::size_t n, std::string* error) override {
    if (appended_ >= kReopenEvery && !reopen(error)) return false;
    appended_ += n;
    auto& d = datasets_[column];
    const hsize_t start = d.size, count = n, size = d.size + n;
    if (H5Dset_extent(d.id, &size) < 0) return fail(error, "extending a dataset failed");
    const hid_t file_space = H5Dget_space(d.id);
    const hid_t memory = H5Screate_simple(1, &count, nullptr);
    H5Sselect_hyperslab(file_space, H5S_SELECT_SET, &start, nullptr, &count, nullptr);
    const herr_t rc =
        H5Dwrite(d.id, d.integer ? H5T_NATIVE_INT64 : H5T_NATIVE_DOUBLE, memory, file_space, H5P_DEFAULT, values);
    H5Sclose(memory);
    H5Sclose(file_space);
    if (rc < 0) return fail(error, "write failed");
    d.size = size;
    return true;
  }

  bool flush(std::string* error) override {
    if (H5Fflush(file_, H5F_SCOPE_GLOBAL) < 0) return fail(error, "write failed");
    return true;
  }

  bool close(const std::string& summary, std::string* error) override {
    for (auto& d : datasets_) H5Dclose(d.id);
    datasets_.clear();
    const herr_t rc = H5Fclose(file_);
    file_ = -1;
    if (rc < 0) return fail(error, "closing the file failed");
    if (summary.empty()) return true;
    // The summary exists only now; SWMR mode allowed no new object, so the
    // file is opened once more, normally.
    const hid_t fapl = file_access();
    file_ = H5Fopen(name_.c_str(), H5F_ACC_RDWR, fapl);
    H5Pclose(fapl);
    if (file_ < 0) return fail(error, "reopening the file for the summary failed");
    const hid_t type = string_type();
    const hid_t space = H5Screate(H5S_SCALAR);
    const hid_t d = H5Dcreate2(file_, "summary", type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    const char* p = summary.c_str();
    const bool ok = d >= 0 && H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, &p) >= 0 &&
                    text(d, "content", "the run summary, as rtcosim run --json writes it (docs/output.md)");
    if (d >= 0) H5Dclose(d);
    H5Sclose(space);
    H5Tclose(type);
    const herr_t closed = H5Fclose(file_);
    file_ = -1;
    if (!ok || closed < 0) return fail(error, "writing the summary failed");
    return true;
  }

  [[nodiscard]] bool durable() const noexcept override { return true; }

  void abandon() noexcept override {
    for (auto& d : datasets_) H5Dclose(d.id);
    datasets_.clear();
    if (file_ >= 0) H5Fclose(file_);
    file_ = -1;
    H5Eclear2(H5E_DEFAULT);
  }

 private:
  struct Dataset {
    hid_t id;
    bool integer;
    hsize_t size;
    std::string path;
  };

  static hid_t file_access() {
    const hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    // SWMR needs the 1.10 file format.
    H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
    // The metadata cache (chunk indices, object headers) adapts its size up
    // to 32 MiB by default; 2 MiB is plenty for a recording's few objects.
    H5AC_cache_config_t mdc{};
    mdc.version = H5AC__CURR_CACHE_CONFIG_VERSION;
    H5Pget_mdc_config(fapl, &mdc);
    mdc.set_initial_size = true;
    mdc.initial_size = 1 << 20;
    mdc.min_size = 1 << 20;
    mdc.max_size = 2 << 20;
    H5Pset_mdc_config(fapl, &mdc);
    return fapl;
  }
  // Two chunks of cache per dataset: the one being filled and one being
  // written; memory stays bounded by the number of columns.
  static hid_t dataset_access() {
    const hid_t dapl = H5Pcreate(H5P_DATASET_ACCESS);
    H5Pset_chunk_cache(dapl, 17, 2 * ColumnFile::kChunk * sizeof(double), 1.0);
    return dapl;
  }
  static bool fail(std::string* error, const std::string& what) {
    *error = hdf5_error(what);
    return false;
  }
  // HDF5 names: '/' separates groups, "." alone is the group itself.
  static std::string safe(std::string name) {
    for (auto& c : name) {
      if (c == '/') c = '_';
    }
    return name == "." || name.empty() ? "_" + name : name;
  }
  static std::string safe_path(const std::string& group) {
    const auto slash = group.find('/');
    return slash == std::string::npos ? safe(group) : group.substr(0, slash + 1) + safe(group.substr(slash + 1));
  }
  static hid_t string_type() {
    const hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, H5T_VARIABLE);
    H5Tset_cset(t, H5T_CSET_UTF8);
    return t;
  }
  static bool text(hid_t object, const std::string& key, const std::string& value) {
    const hid_t type = string_type();
    const hid_t space = H5Screate(H5S_SCALAR);
    const hid_t a = H5Acreate2(object, key.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT);
    const char* p = value.c_str();
    const bool ok = a >= 0 && H5Awrite(a, type, &p) >= 0;
    if (a >= 0) H5Aclose(a);
    H5Sclose(space);
    H5Tclose(type);
    return ok;
  }
  static bool number(hid_t object, const std::string& key, double value) {
    const hid_t space = H5Screate(H5S_SCALAR);
    const hid_t a = H5Acreate2(object, key.c_str(), H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT);
    const bool ok = a >= 0 && H5Awrite(a, H5T_NATIVE_DOUBLE, &value) >= 0;
    if (a >= 0) H5Aclose(a);
    H5Sclose(space);
    return ok;
  }

  // In SWMR mode the library's memory grows with every chunk written
  // (about 2 MB per 5000 chunks with 1.10.8) and is released only when the
  // file closes: after every 2^21 values (2^9 chunks) the file is closed,
  // which also flushes it, and opened again for SWMR writing.
  static constexpr std::size_t kReopenEvery = std::size_t{1} << 21;
  bool reopen(std::string* error) {
    for (auto& d : datasets_) H5Dclose(d.id);
    if (H5Fclose(file_) < 0) {
      file_ = -1;
      for (auto& d : datasets_) d.id = -1;
      return fail(error, "write failed");
    }
    const hid_t fapl = file_access();
    file_ = H5Fopen(name_.c_str(), H5F_ACC_RDWR | H5F_ACC_SWMR_WRITE, fapl);
    H5Pclose(fapl);
    if (file_ < 0) return fail(error, "reopening the file failed");
    const hid_t dapl = dataset_access();
    for (auto& d : datasets_) d.id = H5Dopen2(file_, d.path.c_str(), dapl);
    H5Pclose(dapl);
    for (const auto& d : datasets_) {
      if (d.id < 0) return fail(error, "reopening dataset '" + d.path + "' failed");
    }
    appended_ = 0;
    return true;
  }

  std::string name_;
  std::size_t appended_ = 0;  // values since the file was opened
  hid_t file_ = -1;
  std::vector<Dataset> datasets_;
};

}  // namespace

void prepare_hdf5() noexcept {
  // Once, before the library initialises. After a write error HDF5 (and
  // matio over it) may be unable to close a file; at exit the library would
  // then try again and crash (1.10.8, seen with a full disk). Without its
  // exit handler the file is left as the error left it, and the recording's
  // error says so.
  static const bool done = [] {
    H5dont_atexit();
    // HDF5 keeps freed blocks on its own free lists, by default up to
    // tens of MB; 256 kB per kind keeps a long recording's memory flat.
    H5set_free_list_limits(256 << 10, 64 << 10, 256 << 10, 64 << 10, 256 << 10, 64 << 10);
    return true;
  }();
  (void)done;
  // Errors reach the recording's error, not stderr.
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

std::unique_ptr<ColumnBackend> make_hdf5_backend(const std::string& file) {
  return std::make_unique<Hdf5Backend>(file);
}

}  // namespace rtcosim::runtime
