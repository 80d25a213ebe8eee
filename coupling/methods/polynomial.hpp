#pragma once

#include <array>

#include "coupling/extrapolator.hpp"
#include "coupling/methods/newton.hpp"
#include "coupling/methods/sample_history.hpp"

namespace rtcosim::coupling::methods {

// Fits `set` through the newest min(size, order+1) samples of `history`.
// RT-safe.
void fit_newest(NewtonSet& set, const SampleHistory& history, int order) noexcept;

/*
 * Polynomial extrapolation (`polynomial`, reference eq. 1-2): Newton divided
 * differences through the newest order+1 blocks, refitted on each push, so
 * the output jumps at coupling times. With fewer blocks it uses the order
 * they allow. Evaluation is one Horner scheme per signal; before the oldest
 * block of the fit, the stored blocks answer (SampleHistory::interpolate).
 */
class Polynomial final : public Extrapolator {
 public:
  explicit Polynomial(int order) : Extrapolator("polynomial"), order_(order) {}

  void reset() noexcept override {
    history_.clear();
    poly_.clear();
  }
  void evaluate(double t, std::span<double> out) const noexcept override {
    if (behind_reconstruction(t, history_.tag_of_newest(static_cast<std::size_t>(order_) + 1), history_.newest_tag())) {
      history_.interpolate(t, out);
    } else {
      poly_.evaluate(t, out);
    }
  }
  [[nodiscard]] double oldest_tag() const noexcept override { return history_.oldest_tag(); }

 private:
  void do_configure(std::size_t signal_count) override {
    history_.configure(history_blocks(), signal_count);
    poly_.configure(signal_count);
  }
  void do_push(const DataBlock& block) noexcept override {
    history_.push(block, derivatives_known());
    fit_newest(poly_, history_, order_);
  }
  [[nodiscard]] double newest_tag() const noexcept override { return history_.newest_tag(); }

  int order_;
  SampleHistory history_;
  NewtonSet poly_;
};

}  // namespace rtcosim::coupling::methods
