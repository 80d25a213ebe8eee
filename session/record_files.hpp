#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace rtcosim::session {

// The files a running graph's recording is asked to write (rtcosimd's
// `record start`, docs/daemon.md): sizes and rotation names as a client
// writes them, and files opened beneath the recording directory. Set-up
// code on the daemon's loop; never on the real-time path.

// Rotation bounds: a file is cut at most once a second, and never below the
// size the format starts at (an empty HDF5 file is about 18 kB: a smaller
// limit cut every file at once, 799 files in 10 s).
constexpr double kMinRotateBytes = 4000.0;             // "4kB"
constexpr double kMinColumnarRotateBytes = 1000000.0;  // "1MB": HDF5 and MAT
constexpr double kMinRotateSeconds = 1.0;

// "64MB", "512k", "1G", "1048576": bytes; 0 with `error` set otherwise.
std::uint64_t parse_size(const std::string& text, std::string* error);

// "run.h5", 2 -> "run.2.h5" (the suffix before the extension, in the same directory).
std::string rotated_name(const std::string& name, std::uint64_t n);

// A file of a `record start`, opened beneath the recording directory and
// not yet written: one this request created is removed again when the
// request is refused after all, and an existing one (overwrite) is
// truncated only once everything is accepted. The caller owns `fd`.
struct NewFile {
  int fd = -1;
  std::string path;  // the full name, as status shows it
  bool created = false;
};
// Opens `name` beneath `root` (no link followed, no escape), created new or,
// with `overwrite`, existing; false with `why` set.
bool open_new_file(const std::string& root, const std::string& name, bool overwrite, NewFile* f, std::string* why);
// Closes it and removes it again if this request created it.
void discard(NewFile& f);

// Two names of one file (a hard link, another spelling): refused before
// either is truncated.
bool same_file(int a, int b);

// A name in the recording directory as one path: "x", "./x", "sub/../x"
// and "/recordings/x" are one file.
std::filesystem::path canonical_in(const std::string& root, const std::string& name);

}  // namespace rtcosim::session
