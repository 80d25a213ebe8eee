// A file's bytes in, a file's bytes out: what tests write and read back.
#pragma once

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace rtcosim::testing {

// The whole file, byte for byte ("" when it cannot be read).
inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Replaces the file's contents with `bytes`.
inline void spit(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << bytes;
}

}  // namespace rtcosim::testing
