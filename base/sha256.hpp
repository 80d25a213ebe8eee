#pragma once

#include <string>
#include <string_view>

namespace rtcosim::base {

// SHA-256 of `data` as 64 lower-case hex digits (FIPS 180-4), as
// `sha256sum` prints it: recordings name the graph file they ran by it.
std::string sha256_hex(std::string_view data);

}  // namespace rtcosim::base
