#include "session/sync/sync_report.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "base/duration.hpp"
#include "tasks/plant/live_feed.hpp"

namespace rtcosim::session {
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

std::optional<double> measured_output_delay(std::uint64_t min_rows) {
  std::optional<double> delay;
  std::uint64_t most = 0;
  for (const auto& s : tasks::plant::live_status()) {
    if (s.aged >= std::max<std::uint64_t>(min_rows, 1) && s.aged > most) {
      most = s.aged;
      delay = s.age_median_s;
    }
  }
  return delay;
}

void PairErrors::add(double without, double with) noexcept {
  sum_without_ += without * without;
  sum_with_ += with * with;
  max_without_ = std::max(max_without_, std::abs(without));
  max_with_ = std::max(max_with_, std::abs(with));
  ++instants_;
}

void PairErrors::finish(SyncPairResult& r) const noexcept {
  r.instants = instants_;
  r.max_without = max_without_;
  r.max_with = max_with_;
  if (instants_ > 0) {
    r.mse_without = sum_without_ / static_cast<double>(instants_);
    r.mse_with = sum_with_ / static_cast<double>(instants_);
  }
}

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
    PairErrors errors;
    for (std::size_t k = 0; k < y.time.size(); ++k) {
      const double t = y.time[k];
      if (t + sync.delay > last + 1e-9) break;
      errors.add(y.value[k] - held(m, t, sync.acquisition_cycle),
                 y.value[k] - held(m, t + sync.delay, sync.acquisition_cycle));
    }
    errors.finish(r);
    out.push_back(r);
  }
  return out;
}

std::string sync_summary(const config::SyncSpec& sync, const std::vector<SyncPairResult>& results) {
  std::ostringstream o;
  o << "sync: output delay Delta_o " << base::format_duration(sync.delay);
  if (sync.measured) {
    o << " (measured: the median age of the live plant rows when the frames took them)";
  } else if (sync.automatic) {
    const auto d = config::output_delay(sync.measurement_path, sync.simulation_path, sync.grid);
    o << " (delay model: measurement path mode " << base::format_duration(d.measurement_mode)
      << ", simulation path mode " << base::format_duration(d.simulation_mode) << ", grid "
      << base::format_duration(sync.grid) << ")\n";
    // Eq. 4.15 term by term, and each path's density (docs/sync.md).
    auto path = [&](const char* what, const std::vector<config::Hop>& hops, const config::DelayDensity& density) {
      o << "  " << what << ':';
      if (hops.empty()) o << " no hop";
      for (std::size_t i = 0; i < hops.size(); ++i) o << (i ? " * " : " ") << config::describe(hops[i]);
      // The continuous density's support: each hop adds its delta or [0, theta].
      double from = 0.0, to = 0.0;
      for (const auto& h : hops) {
        const bool sync_hop = h.kind == config::HopKind::synchronous;
        from += h.repeat * (sync_hop ? h.from.dead_time + h.to.dead_time : 0.0);
        to += h.repeat * (sync_hop ? h.from.dead_time + h.to.dead_time : h.to.cycle);
      }
      o << "\n    density on [" << base::format_duration(from) << ", " << base::format_duration(to) << "], mean "
        << base::format_duration(density.mean()) << ", rightmost mode "
        << base::format_duration(density.rightmost_mode()) << '\n';
    };
    path("y^ available (measurement path)", sync.measurement_path, d.measurement);
    path("y available (simulation path)", sync.simulation_path, d.simulation);
  } else {
    o << '\n';
  }
  o.setf(std::ios::scientific);
  o.precision(4);
  for (const auto& r : results) {
    o << "  " << r.simulated << " vs " << r.measured << " (weight " << r.weight << ", " << r.instants
      << " instants): without compensation MSE " << r.mse_without << " MAX " << r.max_without << "; with Delta_o MSE "
      << r.mse_with << " MAX " << r.max_with << '\n';
  }
  return o.str();
}

}  // namespace rtcosim::session
