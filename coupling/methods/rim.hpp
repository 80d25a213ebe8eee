#pragma once

#include "coupling/extrapolator.hpp"
#include "coupling/methods/sample_history.hpp"

namespace rtcosim::coupling::methods {

/*
 * `rim`: the receiving side of a link that carries reduced interface models
 * (interface/rim_payload.hpp: tag, ni, status, condition, M_eff, lambda~, z, w, x).
 * The mechanical block that receives them (interface: rim) integrates its
 * own model with the model this returns at each of its evaluation times.
 *
 * order 0 holds the newest model with tag <= t. order 1 (the default)
 * interpolates linearly between the two models around t, and extrapolates
 * lambda~, z, w and x linearly beyond the newest one while holding its M_eff
 * there (a straight line through two positive definite matrices can leave
 * them). A held lambda~ makes the coupling first order in the macro step,
 * the line second order (tests/tools/rim_coupling_test.cpp). Two models of
 * different dimension or status are never mixed: the earlier one is held.
 * At a model's own tag the model itself comes out, bit for bit.
 * RT-safe: sized in configure; evaluate and push noexcept, allocation-free.
 */
class Rim final : public Extrapolator {
 public:
  static constexpr std::size_t kHistory = 8;
  explicit Rim(int order) : Extrapolator("rim"), order_(order) {}

  void reset() noexcept override { history_.clear(); }
  void evaluate(double t, std::span<double> out) const noexcept override;
  [[nodiscard]] double newest_tag() const noexcept override { return history_.newest_tag(); }
  [[nodiscard]] double oldest_tag() const noexcept override { return history_.oldest_tag(); }

 private:
  void do_configure(std::size_t signal_count) override { history_.configure(kHistory, signal_count); }
  void do_push(const DataBlock& block) noexcept override { history_.push(block, derivatives_known()); }

  int order_;
  SampleHistory history_;
};

}  // namespace rtcosim::coupling::methods
