#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace rtcosim::base {

/*
 * Durations as people write them in configuration files and on the command
 * line: a number and a unit, "5ms", "250us", "0.02s", "1.5 min" (also "ns",
 * "h"). A bare number is seconds. Returns seconds, or nullopt with `error`
 * saying what was wrong and what is accepted. Set-up phase only.
 */
std::optional<double> parse_duration(std::string_view text, std::string* error = nullptr);

// "40 ms", "1.5 s", "250 us": the shortest exact-looking form for messages.
std::string format_duration(double seconds);

}  // namespace rtcosim::base
