// A sample external coupling method, built as a plugin: `linear_hold`, the
// line through the two newest blocks, held constant beyond `max_horizon`
// after the newest tag (so a stalled producer does not send the consumer's
// input off to infinity).
#include <algorithm>
#include <memory>

#include "coupling/methods/sample_history.hpp"
#include "coupling/plugin_api.hpp"

namespace {

using namespace rtcosim::coupling;

class LinearHold final : public Extrapolator {
 public:
  explicit LinearHold(double max_horizon) : Extrapolator("linear_hold"), max_horizon_(max_horizon) {}
  void reset() noexcept override { history_.clear(); }
  void evaluate(double t, std::span<double> out) const noexcept override {
    if (history_.empty()) {
      std::fill(out.begin(), out.end(), 0.0);
      return;
    }
    const double t0 = history_.tag(0);
    const double at = max_horizon_ > 0.0 ? std::min(t, t0 + max_horizon_) : t;
    for (std::size_t s = 0; s < out.size(); ++s) {
      if (history_.size() < 2) {
        out[s] = history_.value(0, s);
        continue;
      }
      const double slope = (history_.value(0, s) - history_.value(1, s)) / (t0 - history_.tag(1));
      out[s] = history_.value(0, s) + slope * (at - t0);
    }
  }
  [[nodiscard]] double newest_tag() const noexcept override { return history_.newest_tag(); }

 private:
  void do_configure(std::size_t signal_count) override { history_.configure(2, signal_count); }
  void do_push(const DataBlock& block) noexcept override { history_.push(block); }
  double max_horizon_;
  methods::SampleHistory history_;
};

}  // namespace

RTCOSIM_COUPLING_PLUGIN(registrar) {
  if (registrar->abi_version() != kPluginAbiVersion) return 1;
  registrar->add({"linear_hold",
                  "line through the two newest blocks, held beyond max_horizon (sample plugin)",
                  false,
                  {ParamSpec{"max_horizon", ParamKind::kDuration, 0.0, 3600.0, 0.0,
                             "hold the value this long after the newest tag; 0 never holds"}},
                  [](const ParamValues& p) { return std::make_unique<LinearHold>(p.get("max_horizon")); }});
  return 0;
}
