#pragma once

#include <array>
#include <string_view>

namespace rtcosim::base {

/*
 * The formats a recording can be written in, one row each
 * (docs/recording.md): the name a YAML `format:`, a request's "format" and
 * --format take; the file extensions that mean it (the first row listing an
 * extension is the format that extension chooses; a later row listing it
 * too fits such a file when declared: mat5 in a .mat file); and whether it
 * is a column file (HDF5, MAT: the signals per task, the frame tables, the
 * summary) rather than CSV rows. Plain data, below every layer that names
 * formats: the configuration check, the recorder, the CLI and the daemon.
 *
 * Adding a format: a row here, its enumerator in runtime::RecordFormat
 * (runtime/record_target.hpp, in the same place: static_asserts hold the
 * order), and its backend in runtime/ (ColumnFile's constructor picks
 * make_hdf5_backend or make_mat_backend; a row format writes through
 * RecordFile as CSV does). docs/architecture.md lists the rest.
 */
struct RecordFormatRow {
  std::string_view name;
  std::array<std::string_view, 2> extensions;  // lower case, with the dot; "" unused
  bool columnar = false;
};

inline constexpr std::array<RecordFormatRow, 4> kRecordFormats{{
    {"csv", {".csv", ""}, false},
    {"hdf5", {".h5", ".hdf5"}, true},
    {"mat73", {".mat", ""}, true},
    {"mat5", {".mat", ""}, true},
}};

}  // namespace rtcosim::base
