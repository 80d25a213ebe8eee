#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace rtcosim::base {

// The candidate closest to `word` by edit distance, if close enough to be a
// plausible typo ("polynomal" -> "polynomial"); empty otherwise. For the
// did-you-mean of error messages; set-up code only.
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace rtcosim::base
