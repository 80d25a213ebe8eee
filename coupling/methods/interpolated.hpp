#pragma once

#include <vector>

#include "coupling/extrapolator.hpp"
#include "coupling/methods/newton.hpp"
#include "coupling/methods/sample_history.hpp"

namespace rtcosim::coupling::methods {

/*
 * Integrated extrapolation (`interpolated`, Knorr) and its energy-conserving
 * continuous form (`ecc`, Benedikt; reference eq. 9-12), one class because
 * `ecc` is `interpolated` plus two corrections.
 *
 * interpolated: at each block k an order-n_E polynomial through the newest
 * blocks predicts the value at the next coupling time t_k + h_s; u(t) is the
 * order-n Newton interpolation through the newest n+1 predictions. To stay
 * continuous when tags are not where they were predicted, the newest
 * prediction is replaced by an anchor, the output's own value at the tag
 * t_k; with uniform tags the anchor is exactly the prediction (Knorr's form).
 *
 * ecc adds (1) to each new prediction the error of the plain extrapolation
 * made one block earlier for t_k, y_k - y^_{k-1}(t_k), which gives k(t); and
 * (2) the error total of the last macro step, E = integral of y_I - k over
 * [t_{k-1}, t_k] (y_I the interpolation of the real blocks), spread over the
 * next macro step with the quadratic d(t) = E 6x(1-x)/h_s, x = (t-t_k)/h_s,
 * which is zero at both ends, so u = k + d stays continuous and the
 * correction integrates to exactly E. This is eq. 9-11 with the sum over
 * micro steps replaced by its integral (the sum times h_f), because the
 * consumer's micro steps need not be uniform or known here. When a block
 * arrives before the window of d ends, the rest of its integral is added to
 * the next error total.
 */
class Interpolated final : public Extrapolator {
 public:
  Interpolated(int order, int interp_order, double macro_step, bool energy_conserving)
      : Extrapolator(energy_conserving ? "ecc" : "interpolated"),
        order_(order),
        interp_order_(interp_order),
        macro_step_(macro_step),
        energy_conserving_(energy_conserving) {}

  void reset() noexcept override;
  void evaluate(double t, std::span<double> out) const noexcept override;

  // k(t): the output without the distributed error total (equal to
  // `evaluate` for `interpolated`). For tests and plots.
  void evaluate_uncorrected(double t, std::span<double> out) const noexcept { interpolant_.evaluate(t, out); }

 private:
  void do_configure(std::size_t signal_count) override;
  void do_push(const DataBlock& block) noexcept override;
  [[nodiscard]] double newest_tag() const noexcept override { return history_.newest_tag(); }
  [[nodiscard]] double distribution_weight(double t) const noexcept;

  int order_;
  int interp_order_;
  double macro_step_;  // 0: estimate from tag spacing
  bool energy_conserving_;

  SampleHistory history_;      // the real blocks
  SampleHistory predictions_;  // anchors and the newest prediction
  NewtonSet extrapolant_;      // plain y^_k through the real blocks
  NewtonSet previous_extrapolant_;
  NewtonSet interpolant_;      // k(t) through the predictions
  // ecc's distributed error total: d(t) = error_total_[s] * w(t) on [window_start_, window_end_].
  std::vector<double> error_total_;
  double window_start_ = 0.0;
  double window_end_ = 0.0;
  bool newest_is_prediction_ = false;  // else the newest point is an anchor
  std::vector<double> anchor_;
  std::vector<double> next_;
};

}  // namespace rtcosim::coupling::methods
