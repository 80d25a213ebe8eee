#pragma once

#include <string>

namespace rtcosim::session {

// What render_svg accepts and returns at most, and how long it waits.
struct SvgLimits {
  std::size_t max_input = 1u << 20;   // DOT text
  std::size_t max_output = 4u << 20;  // SVG text
  double timeout_s = 5.0;
};

/*
 * render_svg: DOT text to SVG with Graphviz (`program -Tsvg`, e.g. "dot",
 * looked up in PATH), started with posix_spawnp, no shell, its input on a
 * pipe and its output read back, both bounded; killed (SIGKILL) when it has
 * not finished within the timeout. The SVG, or "" and *why (not found,
 * failed, too slow, too large). Non-real-time: blocks the caller up to the
 * timeout.
 */
std::string render_svg(const std::string& program, const std::string& dot, std::string* why,
                       const SvgLimits& limits = {});

}  // namespace rtcosim::session
