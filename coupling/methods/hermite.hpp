#pragma once

#include <vector>

#include "coupling/extrapolator.hpp"
#include "coupling/methods/newton.hpp"
#include "coupling/methods/sample_history.hpp"

namespace rtcosim::coupling::methods {

/*
 * Hermite extrapolation (`hermite`): confluent divided differences in which
 * each block counts twice, with its value and its derivative, newest first,
 * until order+1 conditions are used (the oldest block used may give its value
 * only). A signal whose block has no valid derivative uses the value alone,
 * which makes the method fall back to `polynomial` for that signal; this is
 * flagged once. Nodes differ per signal, so each signal has its own Newton
 * form. Before a signal's oldest node the stored blocks answer for it
 * (SampleHistory::interpolate_one).
 */
class Hermite final : public Extrapolator {
 public:
  explicit Hermite(int order) : Extrapolator("hermite"), order_(order) {}

  void reset() noexcept override;
  void evaluate(double t, std::span<double> out) const noexcept override;
  [[nodiscard]] double oldest_tag() const noexcept override { return history_.oldest_tag(); }

 private:
  static constexpr std::size_t kStride = kMaxOrder + 1;
  void do_configure(std::size_t signal_count) override;
  void do_push(const DataBlock& block) noexcept override;
  [[nodiscard]] double newest_tag() const noexcept override { return history_.newest_tag(); }

  int order_;
  SampleHistory history_;
  std::vector<double> nodes_;  // [signal * kStride + k]
  std::vector<double> coeff_;  // [signal * kStride + k]
  std::vector<int> degree_;    // per signal, -1 when empty
};

}  // namespace rtcosim::coupling::methods
