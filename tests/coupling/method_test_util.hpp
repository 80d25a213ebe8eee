#pragma once

// Shared pieces of the coupling-method suites: building methods through the
// registry, pushing blocks, and references written independently of the
// code under test (Lagrange form instead of Newton form, an n-point
// Gauss-Legendre rule computed here instead of the library's 5-point table),
// so that a shared mistake cannot make a test pass.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <limits>
#include <memory>
#include <numbers>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "coupling/data_block.hpp"
#include "coupling/extrapolator.hpp"
#include "coupling/registry.hpp"
#include "tests/support/alloc_counter.hpp"

namespace rtcosim::coupling::testing {

using Fn = std::function<double(double)>;

inline std::unique_ptr<Extrapolator> make_method(std::string_view id, const ParamSettings& params = {},
                                                 std::size_t signal_count = 1) {
  return MethodRegistry::with_builtins().create(id, params, signal_count);
}

// The method's reconstruction alone, also behind the blocks it is built
// from (an unbounded lookback): for the suites that hold its closed form
// there. history_behind_test.cpp holds what a method gives there by default.
inline std::unique_ptr<Extrapolator> make_form(std::string_view id, const ParamSettings& params = {},
                                               std::size_t signal_count = 1) {
  auto ex = make_method(id, params, signal_count);
  ex->set_lookback(std::numeric_limits<double>::infinity());
  return ex;
}

// A block at `tag`; an empty `derivatives` means no signal has a valid one.
inline DataBlock make_block(double tag, const std::vector<double>& values, const std::vector<double>& derivatives = {},
                            bool discontinuity = false) {
  DataBlock block(values.size());
  block.tag = tag;
  block.discontinuity = discontinuity;
  for (std::size_t s = 0; s < values.size(); ++s) {
    const bool valid = s < derivatives.size();
    block.set(s, values[s], valid ? derivatives[s] : 0.0, valid);
  }
  return block;
}

inline void push_block(Extrapolator& ex, double tag, const std::vector<double>& values,
                       const std::vector<double>& derivatives = {}, bool discontinuity = false) {
  ex.push(make_block(tag, values, derivatives, discontinuity));
}

// One-signal block of f (and f' when given) at `tag`.
inline void push_sample(Extrapolator& ex, double tag, const Fn& f, const Fn& df = nullptr) {
  if (df) {
    push_block(ex, tag, {f(tag)}, {df(tag)});
  } else {
    push_block(ex, tag, {f(tag)});
  }
}

inline std::vector<double> eval(const Extrapolator& ex, double t) {
  std::vector<double> out(ex.signal_count(), -12345.0);
  ex.evaluate(t, out);
  return out;
}

inline double eval1(const Extrapolator& ex, double t) {
  double out = -12345.0;
  ex.evaluate(t, std::span<double>(&out, 1));
  return out;
}

inline double mean1(const Extrapolator& ex, double t0, double t1) {
  double out = -12345.0;
  ex.evaluate_mean(t0, t1, std::span<double>(&out, 1));
  return out;
}

// Lagrange form of the interpolating polynomial through (nodes, values).
inline double lagrange(std::span<const double> nodes, std::span<const double> values, double t) {
  double sum = 0.0;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    double basis = 1.0;
    for (std::size_t j = 0; j < nodes.size(); ++j) {
      if (j != i) basis *= (t - nodes[j]) / (nodes[i] - nodes[j]);
    }
    sum += basis * values[i];
  }
  return sum;
}

// Polynomial through f at the newest min(count, order+1) of `tags` (tags
// ascending), evaluated at t: the extrapolation reference y^.
inline double newest_lagrange(const std::vector<double>& tags, std::size_t count, int order, const Fn& f, double t) {
  const std::size_t used = std::min(count, static_cast<std::size_t>(order) + 1);
  std::vector<double> nodes, values;
  for (std::size_t i = count - used; i < count; ++i) {
    nodes.push_back(tags[i]);
    values.push_back(f(tags[i]));
  }
  return lagrange(nodes, values, t);
}

// n-point Gauss-Legendre on [a, b], nodes found by Newton's method on P_n:
// exact for polynomials of degree <= 2n-1.
inline double gauss_legendre(double a, double b, const Fn& f, int n = 12) {
  const double mid = 0.5 * (a + b);
  const double half = 0.5 * (b - a);
  double sum = 0.0;
  for (int i = 1; i <= n; ++i) {
    double x = std::cos(std::numbers::pi * (i - 0.25) / (n + 0.5));
    double dp = 1.0;
    for (int iteration = 0; iteration < 100; ++iteration) {
      double p0 = 1.0;
      double p1 = x;
      for (int k = 2; k <= n; ++k) {
        const double p2 = ((2.0 * k - 1.0) * x * p1 - (k - 1.0) * p0) / k;
        p0 = p1;
        p1 = p2;
      }
      dp = n * (x * p1 - p0) / (x * x - 1.0);
      const double dx = p1 / dp;
      x -= dx;
      if (std::abs(dx) < 1e-16) break;
    }
    const double weight = 2.0 / ((1.0 - x * x) * dp * dp);
    sum += weight * f(mid + half * x);
  }
  return half * sum;
}

// sum_j c_j ((t - center) / scale)^j: scaled so that every term matters over
// a span of `scale`, which keeps a test of high orders from being decided by
// the low coefficients alone.
struct ScaledPolynomial {
  std::vector<double> coefficients;
  double center = 0.0;
  double scale = 1.0;

  double operator()(double t) const {
    const double x = (t - center) / scale;
    double p = 0.0;
    for (std::size_t j = coefficients.size(); j-- > 0;) p = p * x + coefficients[j];
    return p;
  }
  double derivative(double t) const {
    const double x = (t - center) / scale;
    double p = 0.0;
    for (std::size_t j = coefficients.size(); j-- > 1;) p = p * x + static_cast<double>(j) * coefficients[j];
    return p / scale;
  }
};

// Coefficients that are deterministic, of mixed sign and all of order one.
inline ScaledPolynomial test_polynomial(int degree, double center, double scale) {
  ScaledPolynomial p{{}, center, scale};
  for (int j = 0; j <= degree; ++j) p.coefficients.push_back(std::sin(1.3 * j + 0.4) + 0.3 * (j % 2 == 0 ? 1 : -1));
  return p;
}

inline std::vector<double> uniform_tags(double start, double step, std::size_t count) {
  std::vector<double> tags;
  for (std::size_t k = 0; k < count; ++k) tags.push_back(start + static_cast<double>(k) * step);
  return tags;
}

// Tags whose spacing wanders within step*(1 +- jitter) without a pattern a
// consumer step could line up with: the frame ratio is never an integer and
// changes every block.
inline std::vector<double> jittered_tags(double start, double step, std::size_t count, double jitter = 0.3) {
  std::vector<double> tags{start};
  for (std::size_t k = 1; k < count; ++k) {
    const double wobble = std::sin(2.3 * static_cast<double>(k) + 0.7) * std::cos(0.37 * static_cast<double>(k));
    tags.push_back(tags.back() + step * (1.0 + jitter * wobble));
  }
  return tags;
}

inline double sine(double t) { return std::sin(2.0 * std::numbers::pi * t); }
inline double sine_derivative(double t) { return 2.0 * std::numbers::pi * std::cos(2.0 * std::numbers::pi * t); }

// The output's largest change across the push of `block` at its own tag,
// relative to the output's size (at least 1).
inline double jump_at_push(Extrapolator& ex, const DataBlock& block) {
  const auto before = eval(ex, block.tag);
  ex.push(block);
  const auto after = eval(ex, block.tag);
  double worst = 0.0;
  for (std::size_t s = 0; s < before.size(); ++s) {
    worst = std::max(worst, std::abs(after[s] - before[s]) / std::max(1.0, std::abs(before[s])));
  }
  return worst;
}

// ---------------------------------------------------------------------------
// Behaviour every method shares, run by each method's own suite.

// Evaluation times around the newest tag: behind it, at it and ahead of it.
inline std::vector<double> probe_times(double newest, double step) {
  return {newest - 1.5 * step,  newest - 0.4 * step, newest,
          newest + 0.25 * step, newest + 0.8 * step, newest + 1.7 * step};
}

inline void expect_zeros_before_any_block(std::string_view id, const ParamSettings& params = {}) {
  auto ex = make_method(id, params, 3);
  for (double t : {-1.0, 0.0, 0.37, 12.0}) {
    for (double v : eval(*ex, t)) EXPECT_EQ(v, 0.0) << id << " at " << t;
  }
  std::vector<double> mean(3, -1.0);
  ex->evaluate_mean(0.1, 0.2, mean);
  for (double v : mean) EXPECT_EQ(v, 0.0) << id;
  // After a reset, too.
  push_block(*ex, 0.5, {1.0, 2.0, 3.0}, {0.1, 0.2, 0.3});
  ex->reset();
  for (double v : eval(*ex, 0.7)) EXPECT_EQ(v, 0.0) << id << " after reset";
}

inline void expect_stale_blocks_ignored(std::string_view id, const ParamSettings& params = {}) {
  auto ex = make_method(id, params);
  const auto tags = jittered_tags(0.2, 0.01, 8);
  for (double t : tags) push_sample(*ex, t, sine, sine_derivative);
  EXPECT_EQ(ex->stale_blocks(), 0u) << id;
  EXPECT_EQ(ex->blocks_taken(), tags.size()) << id;

  const auto probes = probe_times(tags.back(), 0.01);
  std::vector<double> before;
  for (double t : probes) before.push_back(eval1(*ex, t));

  // Same tag as the newest, and an older one, with different values: both ignored.
  push_block(*ex, tags.back(), {5.0}, {-3.0});
  push_block(*ex, tags[5], {-7.0}, {2.0});
  EXPECT_EQ(ex->stale_blocks(), 2u) << id;
  EXPECT_EQ(ex->blocks_taken(), tags.size()) << id;
  for (std::size_t i = 0; i < probes.size(); ++i)
    EXPECT_EQ(eval1(*ex, probes[i]), before[i]) << id << " at " << probes[i];
}

// A discontinuity block drops the history, even when its tag goes back in
// time: afterwards the method behaves exactly as a fresh one given only the
// blocks from the discontinuity on.
inline void expect_discontinuity_restarts(std::string_view id, const ParamSettings& params = {}) {
  for (bool rewind : {false, true}) {
    auto ex = make_method(id, params);
    auto fresh = make_method(id, params);
    const auto tags = jittered_tags(0.1, 0.01, 10);
    for (double t : tags) push_sample(*ex, t, sine, sine_derivative);

    const double step_tag = rewind ? tags[3] + 0.002 : tags.back() + 0.011;
    auto stepped = [](double t) { return 4.0 + 0.5 * t * t; };
    auto stepped_derivative = [](double t) { return t; };
    const auto block = make_block(step_tag, {stepped(step_tag)}, {stepped_derivative(step_tag)}, true);
    ex->push(block);
    fresh->push(block);
    EXPECT_EQ(ex->stale_blocks(), 0u) << id;
    for (double t : probe_times(step_tag, 0.01)) EXPECT_EQ(eval1(*ex, t), eval1(*fresh, t)) << id << " at " << t;

    // And it keeps doing so with the blocks that follow.
    for (int k = 1; k <= 6; ++k) {
      const double t_k = step_tag + 0.0093 * k + 0.001 * (k % 3);
      push_sample(*ex, t_k, stepped, stepped_derivative);
      push_sample(*fresh, t_k, stepped, stepped_derivative);
      for (double t : probe_times(t_k, 0.01)) {
        EXPECT_EQ(eval1(*ex, t), eval1(*fresh, t)) << id << " block " << k << " at " << t;
      }
      EXPECT_EQ(mean1(*ex, t_k, t_k + 0.007), mean1(*fresh, t_k, t_k + 0.007)) << id;
    }
  }
}

// Three signals in one extrapolator give what three one-signal extrapolators
// give; the third signal carries no derivatives, so methods that want them
// fall back for that signal only.
inline void expect_signals_independent(std::string_view id, const ParamSettings& params = {}) {
  const std::vector<Fn> f = {sine, [](double t) { return std::exp(-1.5 * t) * std::cos(3.0 * t); },
                             [](double t) { return 2.0 - t + 0.7 * t * t * t; }};
  const std::vector<Fn> df = {
      sine_derivative,
      [](double t) { return std::exp(-1.5 * t) * (-1.5 * std::cos(3.0 * t) - 3.0 * std::sin(3.0 * t)); }, nullptr};
  auto all = make_method(id, params, 3);
  std::vector<std::unique_ptr<Extrapolator>> single;
  for (std::size_t s = 0; s < 3; ++s) single.push_back(make_method(id, params, 1));

  const auto tags = jittered_tags(0.05, 0.02, 14);
  for (double tag : tags) {
    DataBlock block(3);
    block.tag = tag;
    for (std::size_t s = 0; s < 3; ++s) {
      block.set(s, f[s](tag), df[s] ? df[s](tag) : 0.0, static_cast<bool>(df[s]));
      push_sample(*single[s], tag, f[s], df[s]);
    }
    all->push(block);
    for (double t : probe_times(tag, 0.02)) {
      const auto u = eval(*all, t);
      for (std::size_t s = 0; s < 3; ++s)
        EXPECT_DOUBLE_EQ(u[s], eval1(*single[s], t)) << id << " signal " << s << " at " << t;
    }
    std::vector<double> mean(3);
    all->evaluate_mean(tag + 0.001, tag + 0.0137, mean);
    for (std::size_t s = 0; s < 3; ++s) {
      EXPECT_NEAR(mean[s], mean1(*single[s], tag + 0.001, tag + 0.0137), 1e-14) << id << " signal " << s;
    }
  }
  EXPECT_EQ(all->used_derivative_fallback(), single[2]->used_derivative_fallback()) << id;
  EXPECT_FALSE(single[0]->used_derivative_fallback()) << id;
}

// From the first block on, the output is finite and of the signal's size,
// ahead of and behind the newest tag, with non-uniform tags.
inline void expect_sensible_start(std::string_view id, const ParamSettings& params = {}) {
  auto ex = make_method(id, params);
  const auto tags = jittered_tags(0.13, 0.02, 12);
  for (std::size_t k = 0; k < tags.size(); ++k) {
    push_sample(*ex, tags[k], sine, sine_derivative);
    for (double t : probe_times(tags[k], 0.02)) {
      const double u = eval1(*ex, t);
      EXPECT_TRUE(std::isfinite(u)) << id << " after " << k + 1 << " blocks at " << t;
      EXPECT_LT(std::abs(u), 3.0) << id << " after " << k + 1 << " blocks at " << t;
    }
  }
}

// push, evaluate, evaluate_mean, step_mean and reset run on the real-time path: once
// configured, a method allocates nothing there, not even while its history
// fills or after a discontinuity.
inline void expect_real_time_path_allocates_nothing(std::string_view id, const ParamSettings& params = {}) {
  auto ex = make_method(id, params, 2);
  const auto tags = jittered_tags(0.0, 0.01, 40);
  std::vector<DataBlock> blocks;
  for (std::size_t k = 0; k < tags.size(); ++k) {
    blocks.push_back(make_block(tags[k], {sine(tags[k]), std::cos(tags[k])}, {sine_derivative(tags[k])}, k == 25));
  }
  std::vector<double> out(2);
  rtcosim::testing::AllocationScope scope;
  for (const auto& block : blocks) {
    ex->set_clock(block.tag);
    ex->push(block);
    ex->evaluate(block.tag + 0.004, out);
    ex->evaluate(block.tag - 0.003, out);
    ex->evaluate_mean(block.tag, block.tag + 0.0037, out);
    ex->step_mean(block.tag, block.tag + 0.0037, out);
  }
  ex->reset();
  ex->push(blocks.front());
  EXPECT_EQ(scope.count(), 0u) << id;
}

}  // namespace rtcosim::coupling::testing
