#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rt_config/sync_spec.hpp"
#include "runtime/recorder.hpp"

namespace rtcosim::session {

/*
 * The time-synchronisation comparison of a finished run (docs/sync.md): for
 * each `sync.compare` pair, the simulated signal's recorded samples y_k are
 * compared with the measured signal held at t_k (without compensation) and
 * at t_k + Delta_o (with), MSE and MAX of the differences over the instants
 * t_k for which t_k + Delta_o lies within the measured recording. Runs after
 * the tasks have stopped, on the recorder's in-memory series.
 */
struct SyncPairResult {
  std::string simulated, measured;
  double weight = 1.0;
  std::size_t instants = 0;
  double mse_without = 0.0, max_without = 0.0;
  double mse_with = 0.0, max_with = 0.0;
};

// MSE and MAX of y - y^ without and with Delta_o, one instant at a time.
class PairErrors {
 public:
  void add(double without, double with) noexcept;
  void finish(SyncPairResult& r) const noexcept;  // instants, mse_*, max_*

 private:
  double sum_without_ = 0.0, sum_with_ = 0.0, max_without_ = 0.0, max_with_ = 0.0;
  std::size_t instants_ = 0;
};

// `delay: measured` (docs/sync.md): the median age of the live plant rows
// when frames took them (the source with the most rows), once at least
// `min_rows` were taken; nullopt before, or without a live plant source.
std::optional<double> measured_output_delay(std::uint64_t min_rows = 1);

std::vector<SyncPairResult> sync_comparison(const config::SyncSpec& sync, const runtime::Recorder& recorder);
std::string sync_summary(const config::SyncSpec& sync, const std::vector<SyncPairResult>& results);

}  // namespace rtcosim::session
