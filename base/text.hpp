#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace rtcosim::base {

// The candidate closest to `word` by edit distance, if close enough to be a
// plausible typo ("polynomal" -> "polynomial"); empty otherwise. For the
// did-you-mean of error messages; set-up code only.
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

// "2", "[1, 2, 3]": values as a message shows them, each to 17 significant
// digits (a start value read back exactly); set-up code only.
std::string values_text(const std::vector<double>& values);

}  // namespace rtcosim::base
