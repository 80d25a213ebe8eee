#include "tools/rtcosim/run_summary.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "base/json.hpp"

namespace rtcosim::tools {

namespace {

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string pad(std::string s, std::size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

}  // namespace

std::string run_summary(runtime::Graph& graph) {
  std::ostringstream out;
  out << "tasks:\n  " << pad("name", 14) << pad("frames", 9) << pad("step min/mean/max (ms)", 26)
      << pad("overruns", 10) << pad("missed", 8) << pad("lag max (ms)", 14) << pad("lost (ms)", 11)
      << pad("exec p99 (us)", 15) << "ab2 LTE max\n";
  for (auto& t : graph.tasks()) {
    const auto& s = t->stats();
    out << "  " << pad(t->spec().name, 14) << pad(std::to_string(s.frames.load()), 9)
        << pad(fmt("%.4g", s.step.min() * 1e3) + " / " + fmt("%.4g", s.step.mean() * 1e3) + " / " +
                   fmt("%.4g", s.step.max() * 1e3),
               26)
        << pad(std::to_string(s.overruns.load()), 10) << pad(std::to_string(s.missed_periods.load()), 8)
        << pad(fmt("%.3g", s.lag.max() * 1e3), 14) << pad(fmt("%.3g", s.lost_real_time.load() * 1e3), 11)
        << pad(fmt("%.4g", static_cast<double>(s.execution_ns.percentile(0.99)) * 1e-3), 15)
        << (t->partition().integrator() == tasks::IntegratorKind::kAb2 ? fmt("%.3g", s.truncation_error.max()) : "-")
        << '\n';
  }
  // Wake-up latency and execution time as the histograms saw them: the
  // tails are what a real-time run is judged by.
  out << "timing (us):\n  " << pad("name", 14) << pad("wake-up latency p50 / p99 / p99.9 / max", 42)
      << "execution p50 / p99 / p99.9 / max\n";
  auto percentiles = [](const runtime::LogHistogram& h) {
    std::string text;
    for (double p : {0.5, 0.99, 0.999}) text += fmt("%.4g", static_cast<double>(h.percentile(p)) * 1e-3) + " / ";
    return text + fmt("%.4g", static_cast<double>(h.max()) * 1e-3);
  };
  for (auto& t : graph.tasks()) {
    const auto& s = t->stats();
    out << "  " << pad(t->spec().name, 14) << pad(percentiles(s.wakeup_latency_ns), 42)
        << percentiles(s.execution_ns) << '\n';
  }
  if (!graph.links().empty()) {
    out << "links:\n  " << pad("from -> to", 44) << pad("method", 14) << pad("published", 11) << pad("dropped", 9)
        << pad("ring", 6) << pad("data age mean/max (ms)", 24) << "extrapolation max (ms)\n";
    for (auto& l : graph.links()) {
      out << "  " << pad(l->source + " (" + l->producer + ") -> " + l->consumer, 44) << pad(l->method, 14)
          << pad(std::to_string(l->link->published()), 11) << pad(std::to_string(l->link->dropped()), 9)
          << pad(std::to_string(l->link->capacity_blocks()), 6)
          << pad(fmt("%.3g", l->stats.data_age.mean() * 1e3) + " / " + fmt("%.3g", l->stats.data_age.max() * 1e3), 24)
          << fmt("%.3g", l->stats.extrapolation_interval.max() * 1e3) << '\n';
    }
  }
  return out.str();
}

std::vector<ReferenceError> reference_errors(const runtime::Graph&, const runtime::Recorder& recorder,
                                             const tasks::ReferenceSolver& reference) {
  std::vector<ReferenceError> out;
  for (const auto& s : recorder.series()) {
    ReferenceError e{s.signal, 0.0, 0.0, s.time.size()};
    double sum = 0.0;
    for (std::size_t k = 0; k < s.time.size(); ++k) {
      const double d = s.value[k] - reference.value(s.probe, s.time[k], s.element);
      sum += d * d;
      e.max = std::max(e.max, std::fabs(d));
    }
    e.rms = s.time.empty() ? 0.0 : std::sqrt(sum / static_cast<double>(s.time.size()));
    out.push_back(e);
  }
  return out;
}

}  // namespace rtcosim::tools

namespace rtcosim::tools {

namespace {


std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

std::string percentiles(const runtime::LogHistogram& h) {
  return "{\"p50\":" + std::to_string(h.percentile(0.5)) + ",\"p99\":" + std::to_string(h.percentile(0.99)) +
         ",\"p999\":" + std::to_string(h.percentile(0.999)) + ",\"max\":" + std::to_string(h.max()) + "}";
}

}  // namespace

std::string summary_json(runtime::Graph& graph, const std::vector<ReferenceError>& errors, const std::string& policy,
                         const std::string& recording) {
  std::string out = "{\"tasks\":[";
  bool first = true;
  for (auto& t : graph.tasks()) {
    const auto& s = t->stats();
    out += first ? "" : ",";
    first = false;
    out += "{\"name\":" + base::json_string(t->spec().name) + ",\"cpu\":" + std::to_string(t->spec().cpu) +
           ",\"policy\":" + base::json_string(policy) + ",\"priority\":" + std::to_string(t->spec().priority) +
           ",\"frames\":" + std::to_string(s.frames.load()) + ",\"overruns\":" + std::to_string(s.overruns.load()) +
           ",\"missed_periods\":" + std::to_string(s.missed_periods.load()) +
           ",\"latency_ns\":" + percentiles(s.wakeup_latency_ns) + ",\"exec_ns\":" + percentiles(s.execution_ns) +
           ",\"step_s\":{\"min\":" + json_number(s.step.min()) + ",\"mean\":" + json_number(s.step.mean()) +
           ",\"max\":" + json_number(s.step.max()) + "},\"lag_s\":" + json_number(s.lag.last()) +
           ",\"lost_s\":" + json_number(s.lost_real_time.load()) + "}";
  }
  out += "],\"links\":[";
  first = true;
  for (auto& l : graph.links()) {
    out += first ? "" : ",";
    first = false;
    out += "{\"from\":" + base::json_string(l->source) + ",\"to\":" + base::json_string(l->consumer) +
           ",\"method\":" + base::json_string(l->method) + ",\"published\":" + std::to_string(l->link->published()) +
           ",\"dropped\":" + std::to_string(l->link->dropped()) + "}";
  }
  out += "],\"signals\":[";
  first = true;
  for (const auto& e : errors) {
    out += first ? "" : ",";
    first = false;
    out += "{\"name\":" + base::json_string(e.signal) + ",\"rms_error\":" + json_number(e.rms) +
           ",\"max_error\":" + json_number(e.max) + "}";
  }
  return out + "]" + (recording.empty() ? "" : ",\"recording\":" + recording) + "}\n";
}

}  // namespace rtcosim::tools
