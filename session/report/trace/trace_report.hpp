#pragma once

#include <string>
#include <vector>

#include "session/report/svg_plot.hpp"
#include "session/report/trace/trace_reader.hpp"

namespace rtcosim::trace_report {

struct Quantiles {
  std::int64_t p50 = 0, p99 = 0, p999 = 0, max = 0;
};
// Exact quantiles of the values (nearest rank).
Quantiles quantiles(std::vector<std::int64_t> values);

std::string text_report(const std::string& directory, const TraceData& data);
std::string json_report(const TraceData& data);
std::string perfetto_json(const TraceData& data);
// The wake-up latency histogram, one panel per task: linear microseconds on
// x in equal buckets (1 us, or 2, 5, 10 ... us when the largest latency
// exceeds 1000 buckets), the count of frames per bucket on a log y axis, the
// largest latency marked.
plot::Figure latency_histogram(const TraceData& data);
// Writes latency_histograms.svg and timeline.svg into `directory`.
bool write_svgs(const TraceData& data, const std::string& directory, std::string* error);

}  // namespace rtcosim::trace_report
