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
 * order-n Newton interpolation I(t) through the newest n+1 predictions, each
 * older one taken at the tag where its block actually came (the polynomial
 * that made it, evaluated there). To stay continuous when tags are not where
 * they were predicted, the jump J = u_before(t_k) - I(t_k) is carried and
 * blended out over the macro step, k(t) = I(t) + J g((t - t_k)/h_s) with
 * Kossel's g (smoothed.hpp). With uniform tags J is zero (Knorr's form).
 * Because g stays within [0, 1], a jump never grows from block to block;
 * putting the output's own value into the interpolation's nodes instead
 * would make old errors grow like n |1 - (t_{k+1} - t_k)/h_s| per block,
 * which diverges at higher n with jittery tags.
 *
 * ecc adds (1) to each new prediction the error of the plain extrapolation
 * made one block earlier for t_k, y_k - y^_{k-1}(t_k), which gives k(t),
 * scaled by w_k(T) / w_{k-1}(t_k), the ratio of the two extrapolants' nodal
 * polynomials (products of the distances to their nodes) at the predicted
 * time T and at t_k: an extrapolation's error is the next derivative's term
 * times that product, so the scaled correction is the error of the
 * prediction at hand also when tags are uneven (it is exact for a signal of
 * degree n_E + 1). With uniform tags and T = t_k + h_s the ratio is 1, the
 * paper's form. Unscaled, a step 20 % longer than the last had its
 * correction half its error, and ecc lost 21x its accuracy at +-20 % tag
 * jitter (ecd 1.8x); scaled it loses 2.5x. What remains is the method's
 * nature: the interpolation through unevenly spaced predictions, whose
 * amplification grows with the interpolation order n (order 8: 41x, as
 * plain `interpolated` loses 7.5x there), and the error total spread over
 * the window the last spacing predicts, which the next block may cut short
 * (the rest is carried, never lost); and
 * (2) the error total of the last macro step, E = integral of y_I - k over
 * [t_{k-1}, t_k] (y_I the interpolation of the real blocks), spread over the
 * next macro step with the quadratic d(t) = E 6x(1-x)/h_s, x = (t-t_k)/h_s,
 * which is zero at both ends, so u = k + d stays continuous and the
 * correction integrates to exactly E. This is eq. 9-11 with the sum over
 * micro steps replaced by its integral (the sum times h_f), because the
 * consumer's micro steps need not be uniform or known here. When a block
 * arrives before the window of d ends, the rest of its integral is added to
 * the next error total.
 *
 * Before the oldest block the extrapolant was fitted on and the oldest
 * prediction the interpolation runs through, the stored blocks answer
 * (SampleHistory::interpolate): I(t) carried backwards leaves the data.
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
  [[nodiscard]] double oldest_tag() const noexcept override { return history_.oldest_tag(); }

  // k(t): the output without the distributed error total (equal to
  // `evaluate` for `interpolated`). For tests and plots.
  void evaluate_uncorrected(double t, std::span<double> out) const noexcept;

 private:
  void do_configure(std::size_t signal_count) override;
  void do_push(const DataBlock& block) noexcept override;
  [[nodiscard]] double newest_tag() const noexcept override { return history_.newest_tag(); }
  [[nodiscard]] double distribution_weight(double t) const noexcept;
  // g((t - t_k)/h_s), 1 before t_k and 0 after the window.
  [[nodiscard]] double jump_weight(double t) const noexcept;
  // k(t) of signal s.
  [[nodiscard]] double uncorrected_one(double t, std::size_t s) const noexcept;
  // What the correction is multiplied by for a prediction of the current
  // extrapolant at t.
  [[nodiscard]] double correction_scale(double t) const noexcept;

  int order_;
  int interp_order_;
  double macro_step_;  // 0: estimate from tag spacing
  bool energy_conserving_;

  SampleHistory history_;      // the real blocks
  SampleHistory predictions_;  // predictions at the tags that came, and the newest one
  NewtonSet extrapolant_;      // plain y^_k through the real blocks
  NewtonSet previous_extrapolant_;
  NewtonSet interpolant_;  // I(t) through the predictions
  // Both corrections live on the macro step after the newest block,
  // [window_start_, window_end_]: ecc's error total d(t) = error_total_[s] * w(t),
  // and the continuity jump jump_[s] * g(x).
  std::vector<double> error_total_;
  std::vector<double> jump_;
  double window_start_ = 0.0;
  double window_end_ = 0.0;
  bool newest_is_prediction_ = false;  // else the newest point is at the newest tag
  std::vector<double> correction_;     // ecc's y_k - y^_{k-1}(t_k), added to the predictions of y^_k
  // The nodal polynomial of y^_{k-1} at t_k, and its node count: a
  // prediction of y^_k at T gets the correction times w_k(T) / w_{k-1}(t_k)
  // (1 for uniform tags), the error the extrapolation makes over the
  // distance it actually spans.
  double correction_reference_ = 0.0;
  std::size_t correction_nodes_ = 0;
  std::vector<double> anchor_;  // the output at the new tag, before the push
  std::vector<double> at_tag_;  // the newest prediction, moved to the tag that came
  std::vector<double> next_;
};

}  // namespace rtcosim::coupling::methods
