#include "coupling/methods/interpolated.hpp"

#include <algorithm>
#include <array>
#include <utility>

#include "coupling/methods/polynomial.hpp"
#include "coupling/methods/smoothed.hpp"
#include "coupling/quadrature.hpp"

namespace rtcosim::coupling::methods {

void Interpolated::do_configure(std::size_t signal_count) {
  history_.configure(history_blocks(), signal_count);
  predictions_.configure(static_cast<std::size_t>(interp_order_) + 1, signal_count);
  extrapolant_.configure(signal_count);
  previous_extrapolant_.configure(signal_count);
  interpolant_.configure(signal_count);
  error_total_.assign(signal_count, 0.0);
  jump_.assign(signal_count, 0.0);
  correction_.assign(signal_count, 0.0);
  anchor_.assign(signal_count, 0.0);
  at_tag_.assign(signal_count, 0.0);
  next_.assign(signal_count, 0.0);
}

void Interpolated::reset() noexcept {
  history_.clear();
  predictions_.clear();
  extrapolant_.clear();
  previous_extrapolant_.clear();
  interpolant_.clear();
  std::fill(error_total_.begin(), error_total_.end(), 0.0);
  std::fill(jump_.begin(), jump_.end(), 0.0);
  std::fill(correction_.begin(), correction_.end(), 0.0);
  correction_reference_ = 0.0;
  correction_nodes_ = 0;
  window_start_ = window_end_ = 0.0;
  newest_is_prediction_ = false;
}

double Interpolated::distribution_weight(double t) const noexcept {
  const double width = window_end_ - window_start_;
  if (!(width > 0.0) || !(t > window_start_) || !(t < window_end_)) return 0.0;
  const double x = (t - window_start_) / width;
  return 6.0 * x * (1.0 - x) / width;  // integrates to 1 over the window
}

double Interpolated::jump_weight(double t) const noexcept {
  if (!(t > window_start_)) return 1.0;
  if (!(t < window_end_)) return 0.0;
  return smoothing_blend((t - window_start_) / (window_end_ - window_start_));
}

double Interpolated::uncorrected_one(double t, std::size_t s) const noexcept {
  return interpolant_.evaluate_one(t, s) + jump_[s] * jump_weight(t);
}

namespace {

// The nodal polynomial of the extrapolant through the newest min(size,
// order + 1) blocks of `history`, at t: its extrapolation error at t is the
// next derivative's term times this.
double nodal(const SampleHistory& history, int order, double t) noexcept {
  const std::size_t count = std::min(history.size(), static_cast<std::size_t>(order) + 1);
  double w = 1.0;
  for (std::size_t i = 0; i < count; ++i) w *= t - history.tag(i);
  return w;
}

}  // namespace

double Interpolated::correction_scale(double t) const noexcept {
  const std::size_t nodes = std::min(history_.size(), static_cast<std::size_t>(order_) + 1);
  if (nodes != correction_nodes_ || correction_reference_ == 0.0) return 1.0;
  return nodal(history_, order_, t) / correction_reference_;
}

void Interpolated::do_push(const DataBlock& block) noexcept {
  const double tk = block.tag;
  const auto y = block.values();
  const std::size_t n = y.size();
  const bool first = interpolant_.empty();

  // The output's own value at the new tag, before anything changes: the
  // new output starts from it, which keeps u continuous. The prediction
  // for this coupling time moves to the tag that came.
  if (first) {
    std::copy(y.begin(), y.end(), anchor_.begin());
    std::copy(y.begin(), y.end(), at_tag_.begin());
  } else {
    evaluate(tk, anchor_);
    const double scale = correction_scale(tk);
    for (std::size_t s = 0; s < n; ++s) at_tag_[s] = extrapolant_.evaluate_one(tk, s) + correction_[s] * scale;
  }
  // The nodes the extrapolant about to become the previous one was fitted
  // on, and its nodal polynomial at the new tag: what its error there, the
  // new correction, is relative to.
  const double reference = nodal(history_, order_, tk);
  const std::size_t reference_nodes = std::min(history_.size(), static_cast<std::size_t>(order_) + 1);

  history_.push(block, derivatives_known());
  std::swap(extrapolant_, previous_extrapolant_);
  fit_newest(extrapolant_, history_, order_);
  const double h = macro_step_ > 0.0 ? macro_step_ : history_.newest_spacing();

  if (energy_conserving_) {
    // Part of the old distribution not yet delivered when this block came early.
    const double leftover_start = std::max(tk, window_start_);
    // k has a seam where the old jump window ends; integrate on both sides.
    const double seam = std::clamp(window_end_, history_.tag(1), tk);
    for (std::size_t s = 0; s < n; ++s) {
      double total = 0.0;
      if (!first) {
        if (window_end_ > leftover_start) {
          total += error_total_[s] *
                   gauss_legendre5(leftover_start, window_end_, [&](double t) { return distribution_weight(t); });
        }
        // E: how far k fell short of the real signal over the macro step
        // just completed; y_I is the new extrapolant inside its span.
        const auto shortfall = [&](double t) { return extrapolant_.evaluate_one(t, s) - uncorrected_one(t, s); };
        total += gauss_legendre5(history_.tag(1), seam, shortfall) + gauss_legendre5(seam, tk, shortfall);
      }
      error_total_[s] = total;
    }
    if (!previous_extrapolant_.empty()) {
      for (std::size_t s = 0; s < n; ++s) correction_[s] = y[s] - previous_extrapolant_.evaluate_one(tk, s);
      correction_reference_ = reference;
      correction_nodes_ = reference_nodes;
    }
  }

  // Prediction for the next coupling time.
  if (h > 0.0) {
    extrapolant_.evaluate(tk + h, next_);
    const double scale = correction_scale(tk + h);
    for (std::size_t s = 0; s < n; ++s) next_[s] += correction_[s] * scale;
  }

  if (newest_is_prediction_) {
    predictions_.overwrite_newest(tk, at_tag_.data());
  } else {
    predictions_.push_values(tk, at_tag_.data());
  }
  newest_is_prediction_ = h > 0.0;
  if (newest_is_prediction_) predictions_.push_values(tk + h, next_.data());

  std::array<double, kMaxOrder + 1> nodes{};
  const std::size_t count = predictions_.size();
  for (std::size_t k = 0; k < count; ++k) nodes[k] = predictions_.tag(k);
  interpolant_.fit(std::span<const double>(nodes.data(), count),
                   [&](int k, std::size_t s) { return predictions_.value(static_cast<std::size_t>(k), s); });

  for (std::size_t s = 0; s < n; ++s) jump_[s] = anchor_[s] - interpolant_.evaluate_one(tk, s);
  window_start_ = tk;
  window_end_ = tk + h;
}

void Interpolated::evaluate_uncorrected(double t, std::span<double> out) const noexcept {
  interpolant_.evaluate(t, out);
  const double g = jump_weight(t);
  if (g == 0.0) return;
  for (std::size_t s = 0; s < out.size(); ++s) out[s] += jump_[s] * g;
}

void Interpolated::evaluate(double t, std::span<double> out) const noexcept {
  const double built_from =
      std::min(history_.tag_of_newest(static_cast<std::size_t>(order_) + 1), predictions_.oldest_tag());
  if (behind_reconstruction(t, built_from, history_.newest_tag())) {
    history_.interpolate(t, out);
    return;
  }
  evaluate_uncorrected(t, out);
  if (!energy_conserving_) return;
  const double w = distribution_weight(t);
  if (w == 0.0) return;
  for (std::size_t s = 0; s < out.size(); ++s) out[s] += error_total_[s] * w;
}

}  // namespace rtcosim::coupling::methods
