#pragma once

namespace rtcosim::config {

// A place in the configuration file, 1-based; 0 when unknown.
struct Location {
  int line = 0;
  int column = 0;
};

}  // namespace rtcosim::config
