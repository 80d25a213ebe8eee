#pragma once

#include <string>

#include <sys/types.h>

namespace rtcosim::base {

/*
 * open_beneath: opens `name` inside the directory `root` for a request that
 * came from outside (the control socket). `name` is relative to `root`, or
 * absolute and then inside `root`. The resolution never leaves `root` and
 * follows no symbolic link, not even one inside it (openat2 with
 * RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS; on kernels before 5.6, O_NOFOLLOW
 * on each component with '..' refused). O_NONBLOCK and O_CLOEXEC are always
 * added, so a FIFO never blocks the caller, and anything but a regular file
 * is refused. Returns the descriptor (the caller owns it), or -1 with
 * `error` saying what was wrong and what would be right. A NUL in `name`
 * is refused. Set-up code: it allocates; the system calls do not block.
 */
int open_beneath(const std::string& root, const std::string& name, int flags, mode_t mode, std::string* error);

// Creates the new directory `name` directly in `root` (one component: no
// '/', no '..'; or an absolute path whose parent is `root`) with `mode`;
// an existing one is refused. Returns its full path, or "" with `error`.
std::string make_dir_beneath(const std::string& root, const std::string& name, mode_t mode, std::string* error);

// open(path) for reading a file the caller was told to read, refusing
// anything but a regular file without blocking on it (a FIFO answers at
// once). -1 with `error` set on failure.
int open_regular_file(const std::string& path, std::string* error);

// Reads all of `fd` (a regular file) up to `max_bytes`; false with `error`
// set when it cannot, or when the file is larger.
bool read_all(int fd, std::size_t max_bytes, std::string* text, std::string* error);

}  // namespace rtcosim::base
