// HDF5 and MAT-file recordings left out of this build (RTCOSIM_WITHOUT
// columns): ColumnFile::open refuses such a recording by name, before the
// run starts, and removes its empty file.
#include "runtime/column_file.hpp"

namespace rtcosim::runtime {

std::unique_ptr<ColumnBackend> make_hdf5_backend(const std::string&) { return nullptr; }

std::unique_ptr<ColumnBackend> make_mat_backend(const std::string&, const std::string&, bool) { return nullptr; }

void prepare_hdf5() noexcept {}

}  // namespace rtcosim::runtime
