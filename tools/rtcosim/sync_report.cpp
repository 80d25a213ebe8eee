#include "tools/rtcosim/sync_report.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "base/duration.hpp"

namespace rtcosim::tools {
namespace {

const runtime::Recorder::Series& find_series(const runtime::Recorder& recorder, const tasks::Endpoint& e) {
  for (const auto& s : recorder.series()) {
    if (s.signal == e.str()) return s;
  }
  throw std::runtime_error("sync: '" + e.str() + "' was not recorded — list it under 'record.signals'");
}

// The last sample at or before t (the first before the recording starts);
// `cycle` > 0 first moves t back to the acquisition's last cycle.
double held(const runtime::Recorder::Series& s, double t, double cycle) {
  if (cycle > 0.0) t = cycle * std::floor(t / cycle + 1e-9);
  const auto it = std::upper_bound(s.time.begin(), s.time.end(), t + 1e-12);
  const auto i = it == s.time.begin() ? 0 : static_cast<std::size_t>(it - s.time.begin()) - 1;
  return s.value[i];
}

}  // namespace

std::vector<SyncPairResult> sync_comparison(const config::SyncSpec& sync, const runtime::Recorder& recorder) {
  std::vector<SyncPairResult> out;
  for (const auto& pair : sync.compare) {
    const auto& y = find_series(recorder, pair.simulated);
    const auto& m = find_series(recorder, pair.measured);
    SyncPairResult r{pair.simulated.str(), pair.measured.str(), pair.weight};
    if (y.time.empty() || m.time.empty()) {
      out.push_back(r);
      continue;
    }
    const double last = m.time.back();
    double sum0 = 0.0, sum1 = 0.0;
    for (std::size_t k = 0; k < y.time.size(); ++k) {
      const double t = y.time[k];
      if (t + sync.delay > last + 1e-9) break;
      const double e0 = y.value[k] - held(m, t, sync.acquisition_cycle);
      const double e1 = y.value[k] - held(m, t + sync.delay, sync.acquisition_cycle);
      sum0 += e0 * e0;
      sum1 += e1 * e1;
      r.max_without = std::max(r.max_without, std::abs(e0));
      r.max_with = std::max(r.max_with, std::abs(e1));
      ++r.instants;
    }
    if (r.instants > 0) {
      r.mse_without = sum0 / static_cast<double>(r.instants);
      r.mse_with = sum1 / static_cast<double>(r.instants);
    }
    out.push_back(r);
  }
  return out;
}

std::string sync_summary(const config::SyncSpec& sync, const std::vector<SyncPairResult>& results) {
  std::ostringstream o;
  o << "sync: output delay Delta_o " << base::format_duration(sync.delay);
  if (sync.automatic) {
    const auto d = coupling::sync::output_delay(sync.measurement_path, sync.simulation_path, sync.grid);
    o << " (delay model: measurement path mode " << base::format_duration(d.measurement_mode)
      << ", simulation path mode " << base::format_duration(d.simulation_mode) << ", grid "
      << base::format_duration(sync.grid) << ")";
  }
  o << '\n';
  o.setf(std::ios::scientific);
  o.precision(4);
  for (const auto& r : results) {
    o << "  " << r.simulated << " vs " << r.measured << " (weight " << r.weight << ", " << r.instants
      << " instants): without compensation MSE " << r.mse_without << " MAX " << r.max_without << "; with Delta_o MSE "
      << r.mse_with << " MAX " << r.max_with << '\n';
  }
  return o.str();
}

}  // namespace rtcosim::tools
