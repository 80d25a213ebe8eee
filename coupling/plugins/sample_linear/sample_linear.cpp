// A sample external coupling method, built as a plugin (docs/plugins.md):
// `linear_hold`, the line through the two newest blocks, held constant from
// `max_horizon` after the newest tag on, so that a stalled producer does not
// send the consumer's input off along the line forever. One block alone is
// held as a constant.
#include <algorithm>
#include <limits>
#include <memory>
#include <span>
#include <vector>

#include "coupling/methods/sample_history.hpp"
#include "coupling/plugin_api.hpp"

namespace {

using namespace rtcosim::coupling;

class LinearHold final : public Extrapolator {
 public:
  // max_horizon 0 never holds.
  explicit LinearHold(double max_horizon) : Extrapolator("linear_hold"), max_horizon_(max_horizon) {}

  void reset() noexcept override {
    history_.clear();
    std::fill(slopes_.begin(), slopes_.end(), 0.0);
  }

  void evaluate(double t, std::span<double> out) const noexcept override { line_at(std::min(t, hold_from()), out); }

  // The line is affine in its time argument, so the mean of the held line
  // over the step is the line at the mean of min(t, hold_from) — exact, where
  // the default quadrature would blur the kink.
  void evaluate_mean(double t0, double t1, std::span<double> out) const noexcept override {
    const double th = hold_from();
    if (!(t1 > t0)) {
      evaluate(t0, out);
    } else if (t1 <= th) {
      line_at(0.5 * (t0 + t1), out);
    } else if (t0 >= th) {
      line_at(th, out);
    } else {
      line_at(((th - t0) * 0.5 * (t0 + th) + (t1 - th) * th) / (t1 - t0), out);
    }
  }

  [[nodiscard]] double newest_tag() const noexcept override { return history_.newest_tag(); }

 private:
  // Set-up phase: the only allocations this method ever makes.
  void do_configure(std::size_t signal_count) override {
    history_.configure(2, signal_count);
    slopes_.assign(signal_count, 0.0);
  }

  // The base class has already dropped stale blocks, so the two newest tags
  // differ and the division is safe.
  void do_push(const DataBlock& block) noexcept override {
    history_.push(block);
    if (history_.size() < 2) {
      std::fill(slopes_.begin(), slopes_.end(), 0.0);
      return;
    }
    const double inv_dt = 1.0 / (history_.tag(0) - history_.tag(1));
    for (std::size_t s = 0; s < slopes_.size(); ++s) {
      slopes_[s] = (history_.value(0, s) - history_.value(1, s)) * inv_dt;
    }
  }

  [[nodiscard]] double hold_from() const noexcept {
    return max_horizon_ > 0.0 ? history_.newest_tag() + max_horizon_ : std::numeric_limits<double>::infinity();
  }

  void line_at(double t, std::span<double> out) const noexcept {
    if (history_.empty()) {
      std::fill(out.begin(), out.end(), 0.0);
      return;
    }
    const double dt = t - history_.tag(0);
    for (std::size_t s = 0; s < out.size(); ++s) out[s] = history_.value(0, s) + slopes_[s] * dt;
  }

  double max_horizon_;
  rtcosim::coupling::methods::SampleHistory history_;
  std::vector<double> slopes_;
};

}  // namespace

RTCOSIM_COUPLING_PLUGIN(registrar) {
  // Nothing else of the registrar may be touched when the layouts differ.
  if (registrar->abi_version() != kPluginAbiVersion) return 1;
  registrar->add({"linear_hold",
                  "line through the two newest blocks, held beyond max_horizon (sample plugin)",
                  false,
                  {ParamSpec{"max_horizon", ParamKind::kDuration, 0.0, 3600.0, 0.0,
                             "hold the value from this long after the newest tag on; 0 never holds"}},
                  [](const ParamValues& p) { return std::make_unique<LinearHold>(p.get("max_horizon")); }});
  return 0;
}
