#pragma once

#include <cstdint>
#include <string>

namespace rtcosim::tasks::fmu {

// Bounds on what an FMU archive may unpack to: it is hostile input.
struct ArchiveLimits {
  std::size_t max_entries = 10000;
  std::size_t max_depth = 32;         // path components of one entry (directories and the file)
  std::size_t max_name_bytes = 1024;  // one entry's name
  std::uint64_t max_entry_bytes = 512ull << 20;
  std::uint64_t max_total_bytes = 2ull << 30;
};

/*
 * ExtractedArchive: an FMU (a zip file) unpacked into a private temporary
 * directory (mode 0700 under $TMPDIR or /tmp), removed again by the
 * destructor. Extraction refuses, with one FmuError naming the file and the
 * entry, anything that could write outside that directory or exhaust the
 * disk: absolute names, '..' components, backslashes, symbolic links, more
 * entries or bytes than the limits, an entry that inflates beyond its
 * declared size. Set-up only.
 */
class ExtractedArchive {
 public:
  ExtractedArchive(const std::string& zip_path, const ArchiveLimits& limits = {});
  ~ExtractedArchive();
  ExtractedArchive(const ExtractedArchive&) = delete;
  ExtractedArchive& operator=(const ExtractedArchive&) = delete;

  [[nodiscard]] const std::string& directory() const noexcept { return dir_; }
  [[nodiscard]] std::size_t files() const noexcept { return files_; }
  [[nodiscard]] std::uint64_t bytes() const noexcept { return bytes_; }

 private:
  std::string dir_;
  std::size_t files_ = 0;
  std::uint64_t bytes_ = 0;
};

}  // namespace rtcosim::tasks::fmu
