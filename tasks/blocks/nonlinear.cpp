// Static and rate nonlinearities. Each passes the time derivative on where
// the nonlinearity is smooth (slope * u'), and gives the exact slope of a
// limited rate.
#include <algorithm>
#include <cmath>
#include <limits>

#include "tasks/block_registry.hpp"

namespace rtcosim::tasks {

namespace {

class Saturation final : public Block {
 public:
  Saturation(const std::string& name, const BlockParams& p)
      : Block(name, "saturation"), lower_(p.number(name, "lower")), upper_(p.number(name, "upper")) {
    if (!(lower_ < upper_)) {
      throw BlockError("block '" + name + "': lower (" + describe(lower_) + ") must be below upper (" +
                           describe(upper_) + ") — expected lower < upper",
                       name, "lower");
    }
    add_input("u", 1);
    add_output("y", 1);
  }
  void output(const BlockContext& c) const noexcept override { c.out(0, 0, std::clamp(c.in(0), lower_, upper_)); }
  void output_derivatives(const BlockContext& c, std::span<const double>) const noexcept override {
    const double u = c.in(0);
    const bool inside = u > lower_ && u < upper_;
    c.out_derivative(0, 0, inside ? c.du[0][0] : 0.0, !inside || c.du_valid[0][0] != 0);
  }

 private:
  double lower_, upper_;
};

// Zero inside [start, end]; u - end above, u - start below.
class DeadZone final : public Block {
 public:
  DeadZone(const std::string& name, const BlockParams& p)
      : Block(name, "dead_zone"), start_(p.number(name, "start")), end_(p.number(name, "end")) {
    if (!(start_ <= end_)) {
      throw BlockError("block '" + name + "': start (" + describe(start_) + ") is above end (" + describe(end_) +
                           ") — expected start <= end",
                       name, "start");
    }
    add_input("u", 1);
    add_output("y", 1);
  }
  void output(const BlockContext& c) const noexcept override {
    const double u = c.in(0);
    c.out(0, 0, u > end_ ? u - end_ : u < start_ ? u - start_ : 0.0);
  }
  void output_derivatives(const BlockContext& c, std::span<const double>) const noexcept override {
    const double u = c.in(0);
    const bool outside = u > end_ || u < start_;
    c.out_derivative(0, 0, outside ? c.du[0][0] : 0.0, !outside || c.du_valid[0][0] != 0);
  }

 private:
  double start_, end_;
};

// y follows u with |dy/dt| limited to `rising` upwards and `falling`
// downwards. The memory (last output and its time) is updated once per
// major step, so every evaluation within a step limits against the same
// point; the first evaluation passes u through.
class RateLimiter final : public Block {
 public:
  RateLimiter(const std::string& name, const BlockParams& p)
      : Block(name, "rate_limiter"), rising_(p.positive(name, "rising")), falling_(p.number(name, "falling", rising_)) {
    // Some tools take the falling rate as a negative slope; say so rather
    // than only "expected a positive number".
    if (!(falling_ > 0.0)) {
      throw BlockError("block '" + name + "': parameter 'falling' = " + describe(falling_) +
                           " — expected a positive number (the magnitude of the fastest fall, per second)",
                       name, "falling");
    }
    add_input("u", 1);
    add_output("y", 1);
    set_discrete_states(3);  // last output, its time, started flag
    set_sample_time(kEveryMajorStep);
  }
  void output(const BlockContext& c) const noexcept override { c.out(0, 0, limited(c)); }
  void update(const BlockContext& c) const noexcept override {
    c.xd[0] = limited(c);
    c.xd[1] = c.t;
    c.xd[2] = 1.0;
  }
  void output_derivatives(const BlockContext& c, std::span<const double>) const noexcept override {
    if (c.xd[2] == 0.0) {
      c.out_derivative(0, 0, c.du[0][0], c.du_valid[0][0] != 0);
      return;
    }
    const double dt = c.t - c.xd[1];
    const double u = c.in(0);
    if (dt > 0.0 && u > c.xd[0] + rising_ * dt) {
      c.out_derivative(0, 0, rising_);
    } else if (dt > 0.0 && u < c.xd[0] - falling_ * dt) {
      c.out_derivative(0, 0, -falling_);
    } else {
      c.out_derivative(0, 0, c.du[0][0], c.du_valid[0][0] != 0);
    }
  }

 private:
  double limited(const BlockContext& c) const noexcept {
    const double u = c.in(0);
    if (c.xd[2] == 0.0) return u;
    const double dt = std::max(0.0, c.t - c.xd[1]);
    return std::clamp(u, c.xd[0] - falling_ * dt, c.xd[0] + rising_ * dt);
  }
  double rising_, falling_;
};

// Linear interpolation in a table; outside the breakpoints it clips (holds
// the end values) or extrapolates the end segments linearly.
class Lookup1D final : public Block {
 public:
  Lookup1D(const std::string& name, const BlockParams& p)
      : Block(name, "lookup_1d"), x_(p.vector(name, "breakpoints")), y_(p.vector(name, "table")) {
    if (x_.size() != y_.size()) {
      throw BlockError("block '" + name + "': 'table' has " + std::to_string(y_.size()) + " values and 'breakpoints' " +
                           std::to_string(x_.size()) + " — expected one value per breakpoint",
                       name, "table");
    }
    if (x_.size() < 2) {
      throw BlockError("block '" + name + "': 'breakpoints' has " + std::to_string(x_.size()) +
                           " value(s) — expected at least 2",
                       name, "breakpoints");
    }
    for (std::size_t i = 1; i < x_.size(); ++i) {
      if (!(x_[i] > x_[i - 1])) {
        throw BlockError("block '" + name + "': 'breakpoints' are not strictly increasing at position " +
                             std::to_string(i + 1) + " (" + describe(x_[i - 1]) + ", " + describe(x_[i]) +
                             ") — expected strictly increasing values",
                         name, "breakpoints");
      }
    }
    const std::string mode = p.text(name, "extrapolation", "clip");
    if (mode != "clip" && mode != "linear") {
      throw BlockError("block '" + name + "': 'extrapolation' = '" + mode + "' — expected \"clip\" or \"linear\"", name,
                       "extrapolation");
    }
    linear_ = mode == "linear";
    add_input("u", 1);
    add_output("y", 1);
  }
  void output(const BlockContext& c) const noexcept override {
    double slope = 0.0;
    c.out(0, 0, evaluate(c.in(0), slope));
  }
  void output_derivatives(const BlockContext& c, std::span<const double>) const noexcept override {
    double slope = 0.0;
    (void)evaluate(c.in(0), slope);
    c.out_derivative(0, 0, slope * c.du[0][0], slope == 0.0 || c.du_valid[0][0] != 0);
  }

 private:
  double evaluate(double u, double& slope) const noexcept {
    const std::size_t n = x_.size();
    if (!linear_ && u <= x_.front()) return slope = 0.0, y_.front();
    if (!linear_ && u >= x_.back()) return slope = 0.0, y_.back();
    std::size_t i = static_cast<std::size_t>(std::upper_bound(x_.begin(), x_.end(), u) - x_.begin());
    i = std::clamp<std::size_t>(i, 1, n - 1);
    slope = (y_[i] - y_[i - 1]) / (x_[i] - x_[i - 1]);
    return y_[i - 1] + slope * (u - x_[i - 1]);
  }
  Vector x_, y_;
  bool linear_ = false;
};

}  // namespace

void register_nonlinear_blocks(BlockRegistry& r) {
  r.add({"saturation", "y = u clipped to [lower, upper]",
         {{"lower", "number", "", ""}, {"upper", "number", "", "> lower"}}, make_factory<Saturation>()});
  r.add({"dead_zone", "zero inside [start, end], u - end above, u - start below",
         {{"start", "number", "", ""}, {"end", "number", "", ">= start"}}, make_factory<DeadZone>()});
  r.add({"rate_limiter", "y follows u with its rate limited",
         {{"rising", "positive number", "", "max dy/dt, per second"},
          {"falling", "positive number", "rising", "max -dy/dt, per second"}},
         make_factory<RateLimiter>()});
  r.add({"lookup_1d", "linear interpolation in a table",
         {{"breakpoints", "list of numbers", "", "strictly increasing"},
          {"table", "list of numbers", "", "one per breakpoint"},
          {"extrapolation", "text", "clip", "\"clip\" or \"linear\" outside the breakpoints"}},
         make_factory<Lookup1D>()});
}

}  // namespace rtcosim::tasks
