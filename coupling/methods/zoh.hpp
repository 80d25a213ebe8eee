#pragma once

#include "coupling/extrapolator.hpp"
#include "coupling/methods/sample_history.hpp"

namespace rtcosim::coupling::methods {

/*
 * Zero-order hold (`zoh`) and input averaging (`zoh_average`, reference
 * eq. 10.7). u(t) is the value of the newest block with tag <= t (the oldest
 * kept block before that). The step mean is the exact segment sum of the held
 * signal, so a non-integer or changing frame ratio adds no first-order error;
 * `zoh_average` additionally asks its consumer to use that mean for the whole
 * step. Keeps the newest `kHistory` blocks so that a consumer step spanning
 * several producer frames is averaged exactly.
 */
class Zoh final : public Extrapolator {
 public:
  static constexpr std::size_t kHistory = 64;
  explicit Zoh(bool averaging) : Extrapolator(averaging ? "zoh_average" : "zoh"), averaging_(averaging) {}

  void reset() noexcept override { history_.clear(); }
  void evaluate(double t, std::span<double> out) const noexcept override;
  void evaluate_mean(double t0, double t1, std::span<double> out) const noexcept override;
  [[nodiscard]] bool averages_over_step() const noexcept override { return averaging_; }

 private:
  void do_configure(std::size_t signal_count) override { history_.configure(kHistory, signal_count); }
  void do_push(const DataBlock& block) noexcept override { history_.push(block); }
  [[nodiscard]] double newest_tag() const noexcept override { return history_.newest_tag(); }
  // Index of the block held at time t.
  [[nodiscard]] std::size_t held_at(double t) const noexcept;

  bool averaging_;
  SampleHistory history_;
};

}  // namespace rtcosim::coupling::methods
