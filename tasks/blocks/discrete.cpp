// Discrete blocks: sampled at their sample time. In the major evaluation of
// a sample hit `output` gives the new sample's value and `update` (after
// every block's output) advances the state; between hits the output holds,
// so every discrete block keeps its held output in a discrete state.
#include <cmath>

#include "tasks/block_registry.hpp"

namespace rtcosim::tasks {

namespace {

double sample_time_of(const std::string& name, const BlockParams& p) {
  return p.positive(name, "sample_time");
}

// y = u sampled at the hits, held in between.
class ZeroOrderHold final : public Block {
 public:
  ZeroOrderHold(const std::string& name, const BlockParams& p) : Block(name, "zero_order_hold") {
    width_ = p.count(name, "width", 1, 1, 1u << 20);
    add_input("u", width_, true);
    add_output("y", width_);
    set_discrete_states(width_);
    set_sample_time(sample_time_of(name, p));
  }
  void output(const BlockContext& c) const noexcept override {
    for (std::size_t i = 0; i < width_; ++i) c.out(0, i, c.sample_hit ? c.in(0, i) : c.xd[i]);
  }
  void update(const BlockContext& c) const noexcept override {
    for (std::size_t i = 0; i < width_; ++i) c.xd[i] = c.in(0, i);
  }
  void output_derivatives(const BlockContext& c, std::span<const double>) const noexcept override {
    for (std::size_t i = 0; i < width_; ++i) c.out_derivative(0, i, 0.0);
  }

 private:
  std::size_t width_ = 1;
};

// y[k] = u[k-1]: xd = [held output, pending sample].
class UnitDelay final : public Block {
 public:
  UnitDelay(const std::string& name, const BlockParams& p)
      : Block(name, "unit_delay"), initial_(p.number(name, "initial", 0.0)) {
    add_input("u", 1, false);
    add_output("y", 1);
    set_discrete_states(2);
    set_sample_time(sample_time_of(name, p));
  }
  void initialize(std::span<double>, std::span<double> xd) const noexcept override {
    xd[0] = initial_;
    xd[1] = initial_;
  }
  void output(const BlockContext& c) const noexcept override { c.out(0, 0, c.sample_hit ? c.xd[1] : c.xd[0]); }
  void update(const BlockContext& c) const noexcept override {
    c.xd[0] = c.xd[1];
    c.xd[1] = c.in(0);
  }
  void output_derivatives(const BlockContext& c, std::span<const double>) const noexcept override {
    c.out_derivative(0, 0, 0.0);
  }

 private:
  double initial_;
};

// num(z)/den(z) in descending powers of z, as the difference equation
//   y[k] = sum b_i u[k-i] - sum_{i>=1} a_i y[k-i]   (a_0 = 1 after normalising),
// with xd = [held y, u[k-1..k-n], y[k-1..k-n]].
class DiscreteTransferFunction final : public Block {
 public:
  DiscreteTransferFunction(const std::string& name, const BlockParams& p)
      : Block(name, "discrete_transfer_function") {
    Vector num = p.vector(name, "num");
    Vector den = p.vector(name, "den");
    if (den.front() == 0.0) {
      throw BlockError("block '" + name + "': den[0] is 0 — expected a leading coefficient that is not zero", name,
                       "den");
    }
    if (num.size() > den.size()) {
      throw BlockError("block '" + name + "': the transfer function is not causal (numerator degree " +
                           std::to_string(num.size() - 1) + " > denominator degree " + std::to_string(den.size() - 1) +
                           ") — expected deg(num) <= deg(den)",
                       name, "num");
    }
    order_ = den.size() - 1;
    a_.assign(order_ + 1, 0.0);
    b_.assign(order_ + 1, 0.0);
    for (std::size_t i = 0; i <= order_; ++i) a_[i] = den[i] / den[0];
    // A shorter numerator is aligned to the right: num = [1] over z - 0.5 is 1/(z - 0.5) = z^-1/(1 - 0.5 z^-1).
    for (std::size_t i = 0; i < num.size(); ++i) b_[order_ + 1 - num.size() + i] = num[i] / den[0];
    add_input("u", 1, b_[0] != 0.0);
    add_output("y", 1);
    set_discrete_states(1 + 2 * order_);
    set_sample_time(sample_time_of(name, p));
  }
  void output(const BlockContext& c) const noexcept override { c.out(0, 0, c.sample_hit ? next(c) : c.xd[0]); }
  void update(const BlockContext& c) const noexcept override {
    const double y = next(c);
    const double u = c.in(0);
    // Shift the histories: u[k-1..k-n] at xd[1..n], y[k-1..k-n] at xd[n+1..2n].
    for (std::size_t i = order_; i > 1; --i) {
      c.xd[i] = c.xd[i - 1];
      c.xd[order_ + i] = c.xd[order_ + i - 1];
    }
    if (order_ > 0) {
      c.xd[1] = u;
      c.xd[order_ + 1] = y;
    }
    c.xd[0] = y;
  }
  void output_derivatives(const BlockContext& c, std::span<const double>) const noexcept override {
    c.out_derivative(0, 0, 0.0);
  }

 private:
  double next(const BlockContext& c) const noexcept {
    double y = b_[0] * c.in(0);
    for (std::size_t i = 1; i <= order_; ++i) y += b_[i] * c.xd[i] - a_[i] * c.xd[order_ + i];
    return y;
  }
  std::size_t order_ = 0;
  Vector a_, b_;
};

}  // namespace

void register_discrete_blocks(BlockRegistry& r) {
  r.add({"zero_order_hold", "samples u at the sample time and holds it",
         {{"sample_time", "positive number", "", "s"}, {"width", "integer", "1", "signals"}},
         make_factory<ZeroOrderHold>()});
  r.add({"unit_delay", "y[k] = u[k-1]",
         {{"sample_time", "positive number", "", "s"}, {"initial", "number", "0", "y before the first sample"}},
         make_factory<UnitDelay>()});
  r.add({"discrete_transfer_function", "num(z)/den(z), descending powers of z, as a difference equation",
         {{"num", "list of numbers", "", "numerator"},
          {"den", "list of numbers", "", "denominator, den[0] != 0"},
          {"sample_time", "positive number", "", "s"}},
         make_factory<DiscreteTransferFunction>()});
}

}  // namespace rtcosim::tasks
