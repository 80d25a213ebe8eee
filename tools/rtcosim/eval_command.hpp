#pragma once

#include <string>
#include <vector>

#include "coupling/registry.hpp"

namespace rtcosim::tools {

enum class TableFormat { kMarkdown, kTsv };

// The paper's grid, variants A1-A3 x signals y1-y3 x the table's methods,
// each cell the MSE in %.3g. TSV has exactly the header
// "variant signal zoh polynomial hermite interpolated smoothed ecd ecc predictor".
std::string eval_table(const coupling::MethodRegistry& registry, TableFormat format, double jitter = 0.0);

// `rtcosim eval ARGS...`: returns the exit code; prints to stdout/stderr.
int run_eval_command(const std::vector<std::string>& args);

}  // namespace rtcosim::tools
