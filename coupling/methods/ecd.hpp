#pragma once

#include <vector>

#include "coupling/extrapolator.hpp"
#include "coupling/methods/newton.hpp"
#include "coupling/methods/sample_history.hpp"

namespace rtcosim::coupling::methods {

/*
 * Energy-conserving discontinuous extrapolation (`ecd`, Benedikt; reference
 * eq. 8): the polynomial estimate y^(t) is corrected by the error it made one
 * macro step earlier, measured against the interpolation y_I of the real
 * samples, which by then spans that time:
 *   u(t) = y^_k(t) + y_I(t - h_s) - y^_{k-1}(t - h_s),
 * with y^_k the order-n_E polynomial through the newest blocks (y_I is the
 * same polynomial, evaluated inside its span) and y^_{k-1} the one fitted a
 * block earlier. Over a macro step the correction integrates to exactly the
 * estimate's error over the previous macro step, so the integral of the
 * signal is carried over, not lost. Before the oldest block y^_{k-1} was
 * fitted on, the stored blocks answer (SampleHistory::interpolate).
 */
class Ecd final : public Extrapolator {
 public:
  Ecd(int order, double macro_step) : Extrapolator("ecd"), order_(order), macro_step_(macro_step) {}

  void reset() noexcept override {
    history_.clear();
    current_.clear();
    previous_.clear();
    shift_ = 0.0;
  }
  void evaluate(double t, std::span<double> out) const noexcept override;
  [[nodiscard]] double oldest_tag() const noexcept override { return history_.oldest_tag(); }

 private:
  void do_configure(std::size_t signal_count) override;
  void do_push(const DataBlock& block) noexcept override;
  [[nodiscard]] double newest_tag() const noexcept override { return history_.newest_tag(); }

  int order_;
  double macro_step_;  // 0: estimate from tag spacing
  SampleHistory history_;
  NewtonSet current_;
  NewtonSet previous_;
  double shift_ = 0.0;  // h_s at the newest block
  mutable std::vector<double> interpolated_;
  mutable std::vector<double> estimated_;
};

}  // namespace rtcosim::coupling::methods
