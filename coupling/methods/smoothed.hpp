#pragma once

#include <array>
#include <vector>

#include "coupling/extrapolator.hpp"
#include "coupling/methods/newton.hpp"
#include "coupling/methods/sample_history.hpp"

namespace rtcosim::coupling::methods {

// Kossel's blending function (reference eq. 7): g(0) = 1, g(1) = 0, and its
// first and second derivatives vanish at both ends.
[[nodiscard]] constexpr double smoothing_blend(double x) noexcept {
  return ((-6.0 * x + 15.0) * x - 10.0) * x * x * x + 1.0;
}

/*
 * Smoothed extrapolation (`smoothed`, reference eq. 3-7): at each block a new
 * polynomial f_n (order n_E through the newest blocks) takes over from the
 * previous output f_p over half a macro step, u = g(x) f_p + (1 - g(x)) f_n,
 * x = (t - t_i) / (h_s / 2); afterwards u = f_n. The output is C2 at every
 * coupling time. f_p is the previous output itself, blended or not, so a
 * block that arrives inside the previous blend window keeps the output
 * continuous too; the last kDepth outputs are kept for that. Before the
 * oldest block the oldest of them was fitted on, the stored blocks answer
 * (SampleHistory::interpolate).
 */
class Smoothed final : public Extrapolator {
 public:
  static constexpr std::size_t kDepth = 4;
  Smoothed(int order, double macro_step) : Extrapolator("smoothed"), order_(order), macro_step_(macro_step) {}

  void reset() noexcept override {
    history_.clear();
    states_ = 0;
  }
  void evaluate(double t, std::span<double> out) const noexcept override {
    // State d was fitted on blocks d .. d + order.
    if (behind_reconstruction(t, history_.tag_of_newest(states_ + static_cast<std::size_t>(order_)),
                              history_.newest_tag())) {
      history_.interpolate(t, out);
    } else {
      evaluate_state(0, t, out);
    }
  }
  [[nodiscard]] double oldest_tag() const noexcept override { return history_.oldest_tag(); }

 private:
  struct State {
    double start = 0.0;      // t_i: the tag of the block that made it
    double blend_end = 0.0;  // t_s = t_i + h_s/2
    NewtonSet poly;
  };
  void do_configure(std::size_t signal_count) override;
  void do_push(const DataBlock& block) noexcept override;
  [[nodiscard]] double newest_tag() const noexcept override { return history_.newest_tag(); }
  // depth 0 is the newest output.
  void evaluate_state(std::size_t depth, double t, std::span<double> out) const noexcept;
  [[nodiscard]] const State& state(std::size_t depth) const noexcept {
    return ring_[(head_ + kDepth - depth) % kDepth];
  }

  int order_;
  double macro_step_;  // 0: estimate from tag spacing
  SampleHistory history_;
  std::array<State, kDepth> ring_;
  std::size_t head_ = 0;
  std::size_t states_ = 0;
  mutable std::array<std::vector<double>, kDepth> scratch_;
};

}  // namespace rtcosim::coupling::methods
