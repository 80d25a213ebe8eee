// Continuous PID with a filtered derivative and anti-windup.
#include <algorithm>
#include <cmath>
#include <limits>

#include "tasks/block_registry.hpp"

namespace rtcosim::tasks {

namespace {

/*
 * u = kp e + I + D, on the error input e:
 *   I' = ki e + kb (sat(v) - v)           (back-calculation, v the unsaturated u)
 *   D  = kd N (e - f),  f' = N (e - f)     (kd s N / (s + N): derivative filtered at N rad/s)
 * and u = sat(v) between the output limits. Anti-windup:
 *   back_calculation  kb feeds the saturation excess back into the integral.
 *                     Default kb = 1/T_t with Astrom and Hagglund's rule
 *                     T_t = sqrt(T_i T_d) = sqrt(kd/ki) when there is a
 *                     derivative term (T_t belongs between T_d and T_i:
 *                     smaller, and derivative noise that touches the limit
 *                     resets the integral; larger, and it winds up),
 *                     T_t = T_i (kb = ki/kp) for a PI, 0 without an
 *                     integral term (nothing to wind up, and a tracking
 *                     state would add dynamics nobody asked for), and
 *                     1/s for a pure I controller, whose gains define no
 *                     time scale. Gains may be negative (reverse-acting
 *                     loops); kb is a rate and always >= 0;
 *   clamping          the integral stops while the output is saturated and
 *                     the error would drive it further;
 *   none              the integral winds up.
 */
class Pid final : public Block {
 public:
  Pid(const std::string& name, const BlockParams& p) : Block(name, "pid") {
    kp_ = p.number(name, "kp", 1.0);
    ki_ = p.number(name, "ki", 0.0);
    kd_ = p.number(name, "kd", 0.0);
    n_ = p.positive(name, "filter", 100.0);
    lower_ = p.number(name, "lower", -std::numeric_limits<double>::infinity());
    upper_ = p.number(name, "upper", std::numeric_limits<double>::infinity());
    if (!(lower_ < upper_)) {
      throw BlockError("block '" + name + "': lower (" + describe(lower_) + ") must be below upper (" +
                           describe(upper_) + ") — expected lower < upper",
                       name, "lower");
    }
    const std::string mode = p.text(name, "anti_windup", "back_calculation");
    if (mode == "back_calculation") {
      mode_ = Mode::kBackCalculation;
    } else if (mode == "clamping") {
      mode_ = Mode::kClamping;
    } else if (mode == "none") {
      mode_ = Mode::kNone;
    } else {
      throw BlockError("block '" + name + "': 'anti_windup' = '" + mode +
                           "' — expected \"back_calculation\", \"clamping\" or \"none\"",
                       name, "anti_windup");
    }
    // A tracking gain under another mode would be silently ignored: most
    // likely the mode is not what the author meant.
    if (p.has("tracking_gain") && mode_ != Mode::kBackCalculation) {
      throw BlockError("block '" + name + "': parameter 'tracking_gain' is given with anti_windup '" + mode +
                           "' — expected it only with anti_windup \"back_calculation\"",
                       name, "tracking_gain");
    }
    kb_ = p.non_negative(name, "tracking_gain", default_tracking_gain());
    add_input("e", 1);
    add_output("u", 1);
    set_continuous_states(2);  // integral, derivative filter
  }
  void output(const BlockContext& c) const noexcept override { c.out(0, 0, std::clamp(raw(c), lower_, upper_)); }
  void derivatives(const BlockContext& c, std::span<double> dx) const noexcept override {
    const double e = c.in(0);
    const double v = raw(c);
    const double u = std::clamp(v, lower_, upper_);
    double di = ki_ * e;
    switch (mode_) {
      case Mode::kBackCalculation:
        di += kb_ * (u - v);
        break;
      case Mode::kClamping:
        if ((v > upper_ && di > 0.0) || (v < lower_ && di < 0.0)) di = 0.0;
        break;
      case Mode::kNone:
        break;
    }
    dx[0] = di;
    dx[1] = n_ * (e - c.x[1]);
  }
  void output_derivatives(const BlockContext& c, std::span<const double> dx) const noexcept override {
    const double v = raw(c);
    if (v < lower_ || v > upper_) {
      c.out_derivative(0, 0, 0.0);
      return;
    }
    // u' = kp e' + I' + kd N (e' - f').
    const bool known = c.du_valid[0][0] != 0 || (kp_ == 0.0 && kd_ == 0.0);
    const double de = c.du[0][0];
    c.out_derivative(0, 0, kp_ * de + dx[0] + kd_ * n_ * (de - dx[1]), known);
  }

 private:
  enum class Mode { kBackCalculation, kClamping, kNone };
  double default_tracking_gain() const noexcept {
    if (ki_ == 0.0) return 0.0;
    if (kd_ != 0.0) return std::sqrt(std::fabs(ki_ / kd_));
    if (kp_ != 0.0) return std::fabs(ki_ / kp_);
    return 1.0;
  }
  double raw(const BlockContext& c) const noexcept {
    const double e = c.in(0);
    return kp_ * e + c.x[0] + kd_ * n_ * (e - c.x[1]);
  }
  double kp_, ki_, kd_, n_, lower_, upper_, kb_;
  Mode mode_ = Mode::kBackCalculation;
};

}  // namespace

void register_controller_blocks(BlockRegistry& r) {
  r.add({"pid", "PID on the error e with a filtered derivative, output limits and anti-windup",
         {{"kp", "number", "1", "proportional gain"},
          {"ki", "number", "0", "integral gain"},
          {"kd", "number", "0", "derivative gain"},
          {"filter", "positive number", "100", "derivative filter N (rad/s)"},
          {"lower", "number", "-inf", "output limit"},
          {"upper", "number", "+inf", "output limit"},
          {"anti_windup", "text", "back_calculation", "back_calculation, clamping or none"},
          {"tracking_gain", "number >= 0", "sqrt|ki/kd|, or |ki/kp| without kd",
           "back-calculation gain kb (1/s); 0 without ki, 1 for a pure I"}},
         make_factory<Pid>()});
}

}  // namespace rtcosim::tasks
