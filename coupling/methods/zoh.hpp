#pragma once

#include <vector>

#include "coupling/extrapolator.hpp"
#include "coupling/methods/sample_history.hpp"

namespace rtcosim::coupling::methods {

/*
 * Zero-order hold (`zoh`) and input averaging (`zoh_average`, reference
 * eq. 10.7). u(t) is the value of the newest block with tag <= t (the oldest
 * kept block before that). The step mean is the exact integral of the held
 * signal, so a non-integer or changing frame ratio adds no first-order error;
 * `zoh_average` additionally asks its consumer to use that mean inside its
 * integration formulas.
 *
 * Any number of blocks per consumer step: besides the newest `kHistory`
 * blocks (for `evaluate` behind the newest tag), the method keeps a mark at
 * the end of the consumer's last step (`step_mean`; until the first one, the
 * first block's tag) and the running integral of the held signal from that
 * mark to the newest tag, one value per signal, updated at every block.
 *
 * A slower consumer's step spans blocks that do not exist yet when it
 * starts. Its mean is causal (docs/config.md, "Input averaging"): the
 * integral over the step of the held signal as known at the step's start,
 * plus what the earlier steps missed — a block that arrives with a tag
 * before the mark changes the held signal over [tag, mark], and that change
 * of the integral (`owed_`) is added to the next step's mean. The consumer's
 * integral of its input therefore equals, after every step, the integral of
 * the held signal as known at that step's start, from the first block to the
 * step's end: nothing a block carried is lost, whatever the frame ratio.
 * For a consumer whose steps are covered by blocks already published (a
 * faster consumer, or blocks tagged ahead) nothing is owed and the mean is
 * eq. 10.7's.
 */
class Zoh final : public Extrapolator {
 public:
  static constexpr std::size_t kHistory = kLookBackBlocks;
  explicit Zoh(bool averaging) : Extrapolator(averaging ? "zoh_average" : "zoh"), averaging_(averaging) {}

  void reset() noexcept override;
  void evaluate(double t, std::span<double> out) const noexcept override;
  void evaluate_mean(double t0, double t1, std::span<double> out) const noexcept override;
  void step_mean(double t0, double t1, std::span<double> out) noexcept override;
  [[nodiscard]] bool averages_over_step() const noexcept override { return averaging_; }
  [[nodiscard]] double oldest_tag() const noexcept override { return history_.oldest_tag(); }

 private:
  void do_configure(std::size_t signal_count) override;
  void do_push(const DataBlock& block) noexcept override;
  [[nodiscard]] double newest_tag() const noexcept override { return history_.newest_tag(); }
  // Index of the block held at time t.
  [[nodiscard]] std::size_t held_at(double t) const noexcept;
  // out = integral of the held signal from the newest tag to t (negative
  // behind it), walking the kept blocks back from the newest.
  void integral_from_newest(double t, std::span<double> out) const noexcept;
  // True when the integral up to t follows from the mark: t is the mark
  // (up to the rounding of a sum of steps), or the mark is the first block
  // and t is before it.
  [[nodiscard]] bool from_mark(double t) const noexcept;

  bool averaging_;
  SampleHistory history_;
  bool marked_ = false;
  bool mark_is_origin_ = false;  // the mark is the first block since a reset
  double mark_ = 0.0;
  std::vector<double> since_mark_;  // integral of the held signal from the mark to the newest tag
  std::vector<double> mark_value_;  // value held at the mark
  std::vector<double> owed_;        // integral up to the mark the consumer's steps did not see
  mutable std::vector<double> scratch_;
};

}  // namespace rtcosim::coupling::methods
