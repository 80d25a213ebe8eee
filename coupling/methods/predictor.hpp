#pragma once

#include <vector>

#include "coupling/extrapolator.hpp"
#include "coupling/methods/sample_history.hpp"

namespace rtcosim::coupling::methods {

/*
 * Derivative-based second-order predictor (`predictor`, reference eq. 8.14,
 * 10.5, 10.6): the receiver reconstructs u(t_k + D) with the same
 * variable-step AB-2 predictor a task integrates with,
 *   u = y_k + D [y'_k + D / (2 (t_k - t_{k-1})) (y'_k - y'_{k-1})],
 * first order (y_k + D y'_k) while one block is known. A signal without a
 * valid derivative uses the derivative-free second-order variant, a parabola
 * through the newest three values; one whose previous block has none, the
 * parabola with the newest value and slope through the previous value. Both
 * raise the fallback flag.
 *
 * Every form is stored as u = a + D (b + D c), so evaluation is two
 * multiply-adds per signal (with every derivative known, a and b are the
 * newest block's own values and derivatives, read from the history).
 * Before the blocks the form was built from (the previous block's tag) the
 * signal comes from the stored blocks instead (SampleHistory::interpolate):
 * the polynomial carried backwards leaves the data at once.
 */
class Predictor final : public Extrapolator {
 public:
  Predictor() : Extrapolator("predictor") {}

  void reset() noexcept override { history_.clear(); }
  void evaluate(double t, std::span<double> out) const noexcept override;

 private:
  void do_configure(std::size_t signal_count) override;
  void do_push(const DataBlock& block) noexcept override;
  [[nodiscard]] double newest_tag() const noexcept override { return history_.newest_tag(); }
  [[nodiscard]] double oldest_tag() const noexcept override { return history_.oldest_tag(); }

  SampleHistory history_;
  std::vector<double> a_, b_, c_;
  // Every derivative of the newest two blocks known: a and b are the
  // newest block's values and derivatives in the history, a_ and b_ unused.
  bool direct_ = false;
};

}  // namespace rtcosim::coupling::methods
