#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace rtcosim::base {

// `s` as a JSON string literal, quotes included.
std::string json_string(std::string_view s);

// `v` as a JSON number with 9 significant digits; null when not finite
// (JSON has no NaN or infinity).
std::string json_number(double v);

// A JSON object whose values are strings, numbers, booleans or null, as
// text (numbers and booleans as written, null as ""): the requests of the
// control socket. nullopt, with `error` saying what and where, for
// anything else (nested values, trailing junk, bad escapes). Set-up code.
std::optional<std::map<std::string, std::string>> parse_flat_object(std::string_view text, std::string* error);

}  // namespace rtcosim::base
