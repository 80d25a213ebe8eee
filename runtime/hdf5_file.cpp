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
    const hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    // SWMR needs the 1.10 file format.
    H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
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
    // Two chunks of cache per dataset: the one being filled and one being
    // written; memory stays bounded by the number of columns.
    const hid_t dapl = H5Pcreate(H5P_DATASET_ACCESS);
    H5Pset_chunk_cache(dapl, 17, 2 * ColumnFile::kChunk * sizeof(double), 1.0);
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
      datasets_.push_back({d, c.integer, 0});
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
    const hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
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
  };

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

  std::string name_;
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
