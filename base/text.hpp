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

// "not built into this rtcosim: its build left out the part 'fmi' (...)":
// what a stand-in of an optional part (RTCOSIM_WITHOUT) says, with how to
// build it. Set-up code only.
std::string not_built(std::string_view part);

// "a, b, c": items between separators, for messages; set-up code only.
std::string join(const std::vector<std::string>& items, std::string_view separator = ", ");

}  // namespace rtcosim::base
