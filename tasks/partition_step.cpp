#include <algorithm>
#include <cmath>
#include <limits>

#include "base/finite.hpp"
#include "tasks/partition.hpp"
#include "tasks/partition_impl.hpp"

namespace rtcosim::tasks {

/*
 * The stages of one Partition::step, in the order step() runs them: the
 * discrete pass, the one-step methods' integration in segments between
 * events (or ab2's real-time form), the check that every state is still a
 * number, the divergence guard, and the outputs at the step's end. It lives
 * on the frame's stack and holds only references and scalars: no
 * allocation, no lock, nothing thrown (the real-time path, docs/architecture.md).
 */
struct Partition::Step {
  Partition& p;
  Impl& m;
  Impl::State& s;
  InputSource& inputs;
  const IntegratorKind integrator;
  const std::size_t n_ext;
  const double t;
  double h;  // shortened when a model ends itself inside the step
  std::vector<double>& x = s.x;
  const std::size_t nx = m.nx;
  // Events located inside the step (one-step methods with indicators).
  bool locating = false;
  double tolerance = 0.0;
  // ros1/ros2: f(t0, x), J and f_t of the last step, reused by a
  // location's trials (advance), and whether that step used f_t.
  bool ros_reuse = false, ros_timed = false;

  // A block that can fail (an FMU) did; a model ended the simulation.
  [[nodiscard]] bool failed() const noexcept { return !m.fallible.empty() && p.failed(); }
  [[nodiscard]] bool terminated() const noexcept { return !m.fallible.empty() && p.terminated(); }

  void sample(double at, InputPass pass = InputPass::kIntegration) noexcept {
    inputs.begin_pass(pass);
    if (n_ext > 0) inputs.sample_all(at, m.ext, m.ext_offsets);
  }

  void discrete_pass() noexcept {
    sample(t, InputPass::kDiscrete);
    m.major_pass(t, h);
    // A co-simulated model that ended itself inside the step (its last
    // successful time) ends the partition's step there too.
    if (terminated()) {
      double te = std::numeric_limits<double>::infinity();
      for (std::size_t i : m.fallible) te = std::min(te, m.slots[i].block->termination_time());
      if (te > t && te < t + h) h = te - t;
    }
  }

  // One step of a one-step method from t0 to t0 + hs.
  void one_step(double t0, double hs) noexcept {
    switch (integrator) {
      case IntegratorKind::kEuler:
        sample(t0);
        m.evaluate(t0, x, m.k1);
        for (std::size_t i = 0; i < nx; ++i) x[i] += hs * m.k1[i];
        break;
      case IntegratorKind::kRk2:
        sample(t0);
        m.evaluate(t0, x, m.k1);
        for (std::size_t i = 0; i < nx; ++i) m.xs[i] = x[i] + hs * m.k1[i];
        sample(t0 + hs);
        m.evaluate(t0 + hs, m.xs, m.k2);
        for (std::size_t i = 0; i < nx; ++i) x[i] += 0.5 * hs * (m.k1[i] + m.k2[i]);
        break;
      case IntegratorKind::kRk4:
        sample(t0);
        m.evaluate(t0, x, m.k1);
        for (std::size_t i = 0; i < nx; ++i) m.xs[i] = x[i] + 0.5 * hs * m.k1[i];
        sample(t0 + 0.5 * hs);
        m.evaluate(t0 + 0.5 * hs, m.xs, m.k2);
        for (std::size_t i = 0; i < nx; ++i) m.xs[i] = x[i] + 0.5 * hs * m.k2[i];
        m.evaluate(t0 + 0.5 * hs, m.xs, m.k3);
        for (std::size_t i = 0; i < nx; ++i) m.xs[i] = x[i] + hs * m.k3[i];
        sample(t0 + hs);
        m.evaluate(t0 + hs, m.xs, m.k4);
        for (std::size_t i = 0; i < nx; ++i) x[i] += hs / 6.0 * (m.k1[i] + 2.0 * m.k2[i] + 2.0 * m.k3[i] + m.k4[i]);
        break;
      case IntegratorKind::kRos1:
      case IntegratorKind::kRos2:
        rosenbrock(t0, hs);
        break;
      case IntegratorKind::kAb2:
        break;
    }
  }

  // Linearly implicit: one Jacobian and one LU of W = I - gamma h J per
  // (sub-)step; k1 keeps f(t0, x), as the one-step divergence measure reads
  // it. A location's trials start where the segment did, from the same
  // state: f, J and f_t are the segment's (ros_reuse), only W is new.
  void rosenbrock(double t0, double hs) noexcept {
    const bool ros1 = integrator == IntegratorKind::kRos1;
    constexpr double kRos2Gamma = 1.7071067811865475;  // 1 + 1/sqrt(2): L-stable
    const double gamma = ros1 ? 1.0 : kRos2Gamma;
    // df/dt by a forward difference in time, where f can depend on it
    // (inputs, sources, an FMU's own time): without it a stiff mode that
    // follows a moving equilibrium lags it by about h x' (a W-method keeps
    // its order, not the equilibrium). The time step: a fraction of h, and
    // never so small that t's rounding spoils it. A block that jumps
    // between t0 and t0 + dt (a step source's instant, a switch) would make
    // f_t its jump over dt: then the step goes without f_t, as a W-method may.
    if (!ros_reuse) {
      sample(t0);
      m.evaluate(t0, x, m.k1);
      m.jacobian(t0, x, m.k1, m.jac.data());
      ros_timed = !m.autonomous || !m.fallible.empty();
    }
    if (ros_timed && !ros_reuse) {
      for (std::size_t k = 0; k < m.jumpers.size(); ++k) {
        Impl::Slot& slot = m.slots[m.jumpers[k]];
        m.jump_branch[k] = slot.block->branch(slot.context);
      }
      const double t1 = t0 + std::min(std::max(6.0554544523933395e-06 * hs, 1e-10 * std::fabs(t0)), hs);
      sample(t1);
      m.evaluate(t1, x, m.ft);
      const double dt = t1 - t0;
      for (std::size_t i = 0; i < nx; ++i) m.ft[i] = (m.ft[i] - m.k1[i]) / dt;
      for (std::size_t k = 0; k < m.jumpers.size() && ros_timed; ++k) {
        Impl::Slot& slot = m.slots[m.jumpers[k]];
        ros_timed = slot.block->branch(slot.context) == m.jump_branch[k];
      }
    }
    if (!m.lu->factor(m.jac.data(), gamma * hs)) {
      // W singular at this step: no finite step exists; the state is
      // marked as no number, which stops the partition and says where.
      m.lu_singular = true;
      x[0] = std::numeric_limits<double>::quiet_NaN();
      return;
    }
    const double ght = ros_timed ? gamma * hs : 0.0;  // gamma h f_t's weight
    for (std::size_t i = 0; i < nx; ++i) m.k2[i] = m.k1[i] + ght * m.ft[i];
    m.lu->solve(m.k2.data());  // stage 1
    if (ros1) {
      for (std::size_t i = 0; i < nx; ++i) x[i] += hs * m.k2[i];
      return;
    }
    for (std::size_t i = 0; i < nx; ++i) m.xs[i] = x[i] + hs * m.k2[i];
    sample(t0 + hs);
    m.evaluate(t0 + hs, m.xs, m.k3);
    for (std::size_t i = 0; i < nx; ++i) m.k3[i] -= 2.0 * m.k2[i] + ght * m.ft[i];
    m.lu->solve(m.k3.data());  // stage 2
    for (std::size_t i = 0; i < nx; ++i) x[i] += hs * (1.5 * m.k2[i] + 0.5 * m.k3[i]);
  }

  // The eventful blocks' events at `at` (the outputs there first); true
  // when one was handled.
  bool handle_events(double at) noexcept {
    std::copy(x.begin(), x.end(), m.xe.begin());
    m.outputs(at);
    bool any = false;
    for (std::size_t i : m.eventful) {
      Impl::Slot& slot = m.slots[i];
      if (slot.block->event(slot.context,
                            std::span<double>(x.data() + slot.x_offset, slot.block->continuous_states()))) {
        any = true;
        ++m.events;
      }
    }
    return any;
  }

  // The indicators at `at` for the state in x, into z.
  bool indicators_at(double at, double* z) noexcept {
    sample(at, InputPass::kEvent);
    std::copy(x.begin(), x.end(), m.xe.begin());
    m.outputs(at);
    return m.read_indicators(z);
  }

  // Integrates [a, a + hs]; with indicators that crossed by its end, back
  // to the earliest crossing. The offset reached: hs, or the event's.
  double advance(double a, double hs) noexcept {
    if (!locating || !s.z_known) {
      one_step(a, hs);
      return hs;
    }
    std::copy(x.begin(), x.end(), m.x_from.begin());
    one_step(a, hs);
    if (failed()) return hs;
    if (!indicators_at(a + hs, m.z_end.data())) return hs;
    if (!any_crossed(s.z.data(), m.z_end.data(), s.z.size())) return hs;
    std::copy(x.begin(), x.end(), m.x_right.begin());
    const EventLocator::Result r = m.locator.locate(
        s.z.data(), m.z_end.data(), hs, tolerance, kMaxLocateTrials,
        [&](double theta, double* z) noexcept {
          std::copy(m.x_from.begin(), m.x_from.end(), x.begin());
          ros_reuse = true;
          one_step(a, theta);
          ros_reuse = false;
          return !failed() && indicators_at(a + theta, z);
        },
        [&](double) noexcept { std::copy(x.begin(), x.end(), m.x_right.begin()); });
    std::copy(m.x_right.begin(), m.x_right.end(), x.begin());
    ++m.event_counts.located;
    m.event_counts.trials += static_cast<std::uint64_t>(r.trials);
    if (!r.converged) ++m.event_counts.trial_limits;
    return r.at;
  }

  // Time and state events inside the step, for a one-step method: a
  // segment ends exactly on the next time event (Block::next_time_event);
  // within a segment, a sign change of an event indicator (Block::
  // indicators) is located (EventLocator: the segment integrated again
  // from its start to trial instants). Each event is handled where it is
  // and the rest of the step integrated after it. A time event within
  // 1e-9 h of either end is handled at the step's end (or was, at the last
  // one's). At most kMaxLandings per step (event_counts). False when the
  // step ends here (a block failed, a model ended itself at an event); in
  // *from_out where the last segment began.
  bool integrate_in_segments(double* from_out) noexcept {
    locating = m.locate_events && !m.indicating.empty();
    if (locating && !s.z_known) {
      s.z_known = indicators_at(t, s.z.data());
      if (failed()) return false;
    }
    tolerance = kLocateTolerance * h;
    double& from = *from_out;
    const double margin = 1e-9 * h;
    for (int landings = 0;; ++landings) {
      const bool more = landings < kMaxLandings;
      double te = std::numeric_limits<double>::infinity();
      for (const Block* b : m.timed) te = std::min(te, b->next_time_event());
      const bool timed = te > from + margin && te < t + h - margin;
      if (!more) {
        // The bound: the rest of the step in one piece, its events at the
        // step's end. Counted when the rest held one (a time event, or a
        // crossing by its end).
        const bool crossing_was_known = locating && s.z_known;
        one_step(from, t + h - from);
        if (failed()) return false;
        const bool left = timed || (crossing_was_known && indicators_at(t + h, m.z_end.data()) &&
                                    any_crossed(s.z.data(), m.z_end.data(), s.z.size()));
        if (left) ++m.event_counts.landing_limits;
        return true;
      }
      // (t + h) - t is not h in floating point: without a landing, h itself.
      const double segment = timed ? te - from : (from == t ? h : t + h - from);
      const double reached = advance(from, segment);
      if (failed()) return false;
      if (reached == segment && !timed) return true;
      const double at = reached == segment ? te : from + reached;
      sample(at, InputPass::kEvent);
      (void)handle_events(at);
      if (failed()) return false;
      // A model that ended itself at the event ends the step there, with
      // the outputs after the event (a terminated FMU's are only read).
      if (terminated()) {
        s.time = at;
        m.evaluate(at, x, m.k4, false);
        m.output_derivatives(m.k4);
        m.mark_jumps(true);
        return false;
      }
      from = at;
      // What the next segment's crossings are measured from: after the event.
      if (locating) {
        s.z_known = indicators_at(at, s.z.data());
        if (failed()) return false;
      }
    }
  }

  // Real-time form (reference eq. 10.2/10.9): inputs and time at
  // mid-frame, AB-2 on the state-dependent part. F_n - F_{n-1} is taken
  // under the previous step's input conditions (its mid-frame time,
  // external values and discrete states), so that input changes are
  // integrated once, at mid-frame, and never extrapolated. The error
  // scale when this step estimated its truncation error (m.k3 then holds
  // each state's divided difference), else -1.
  double ab2() noexcept {
    double ab2_error_scale = -1.0;
    const double tau = t + 0.5 * h;
    sample(tau);
    m.evaluate(tau, x, m.k1);  // main: f(x_n, conditions at tau)
    // A step more than kAb2MaxRatio times the last (the first after a
    // stall, docs/stalls.md) restarts the history: the two-step formula
    // would extrapolate the last derivative difference that far, with a
    // weight growing with the ratio, and its error estimate with it.
    if (s.history >= 1 && h > kAb2MaxRatio * s.prev_h) s.history = 0;
    bool prev_ext_is_tau = false;
    if (s.history >= 1) {
      const double r = h / (2.0 * s.prev_h);
      if (m.autonomous) {
        for (std::size_t i = 0; i < nx; ++i) m.k2[i] = m.k1[i];
      } else {
        // The inputs trade places with the previous step's: prev_ext then
        // holds this step's, as it must after the step, and the output
        // pass samples every input anew before anything reads them.
        std::swap_ranges(m.ext.begin(), m.ext.end(), s.prev_ext.begin());
        prev_ext_is_tau = true;
        std::copy(s.xd.begin(), s.xd.end(), m.scratch_xd.begin());
        std::copy(s.prev_xd.begin(), s.prev_xd.end(), s.xd.begin());
        m.evaluate(s.prev_tau, m.xe, m.k2);  // f(x_n, previous conditions); xe holds x_n
        std::copy(m.scratch_xd.begin(), m.scratch_xd.end(), s.xd.begin());
      }
      for (std::size_t i = 0; i < nx; ++i) x[i] += h * (m.k1[i] + r * (m.k2[i] - s.prev_main[i]));
      // From the fourth step of a history on: the oldest of the three
      // derivatives is then at x_1, which the start-up Euler step placed;
      // at x_0 the Euler step's own error would enter the divided
      // difference (eq. 5.6 at h = 10 ms: 0.00204 against a true local
      // error of 0.00106). No states: the estimate stays 0.
      if (s.history >= 3 && nx > 0) ab2_error_scale = ab2_truncation_error();
    } else {
      for (std::size_t i = 0; i < nx; ++i) x[i] += h * m.k1[i];
    }
    std::swap(s.prev2_main, s.prev_main);
    std::copy(m.k1.begin(), m.k1.end(), s.prev_main.begin());
    if (!prev_ext_is_tau) std::copy(m.ext.begin(), m.ext.end(), s.prev_ext.begin());
    std::copy(s.xd.begin(), s.xd.end(), s.prev_xd.begin());
    s.prev_tau = tau;
    s.prev2_h = s.prev_h;
    s.prev_h = h;
    if (s.history < 3) ++s.history;
    return ab2_error_scale;
  }

  // x''' ~ 2 f[t_n, t_{n-1}, t_{n-2}]: the three main evaluations are at
  // the states x_n, x_{n-1}, x_{n-2}, which the steps h_{n-1} and h_{n-2}
  // separate (their mid-frame times would not: with unequal steps they are
  // spaced by the means of two steps). Variable-step AB-2 local error:
  // h_n^2 (h_n/6 + h_{n-1}/4) x''', (5/12) h^3 x''' for equal steps. Sets
  // s.truncation_error; returns the scale per state (times dd_i in k3).
  double ab2_truncation_error() noexcept {
    const double d1 = s.prev_h, d2 = s.prev2_h, d02 = d1 + d2;
    const double factor = h * h * (h / 6.0 + s.prev_h / 4.0) * 2.0;
    // max_i |factor dd_i| = |factor| (max_i |e_i| / d02) to the bit, with
    // dd_i = e_i / d02 (a product's or quotient's magnitude ignores signs,
    // d02 > 0, rounding is monotone): the divisions by d1 and d2 run in one
    // loop the compiler vectorises, the one by d02 once, the maximum in
    // four independent chains (NaNs skipped, as before).
    double* dd = m.k3.data();
    const double* k1 = m.k1.data();
    const double* p1 = s.prev_main.data();
    const double* p2 = s.prev2_main.data();
    for (std::size_t i = 0; i < nx; ++i) dd[i] = std::fabs((k1[i] - p1[i]) / d1 - (p1[i] - p2[i]) / d2);
    double w[4] = {0.0, 0.0, 0.0, 0.0};
    std::size_t i = 0;
    for (; i + 4 <= nx; i += 4) {
      for (std::size_t j = 0; j < 4; ++j) w[j] = w[j] < dd[i + j] ? dd[i + j] : w[j];
    }
    for (; i < nx; ++i) w[0] = w[0] < dd[i] ? dd[i] : w[0];
    const double largest = std::max(std::max(w[0], w[1]), std::max(w[2], w[3]));
    s.truncation_error = std::fabs(factor) * (largest / d02);
    return std::fabs(factor) / d02;
  }

  // A state that is no longer a number stops the partition where the step
  // began: whatever made it (an input that overflowed, a model that
  // diverged), every later value would be NaN, silently. One branch-free
  // sweep per step. False when it stopped.
  bool states_finite() noexcept {
    if (const std::size_t i = base::first_nonfinite(x); i < nx) {
      s.nonfinite = i;
      s.nonfinite_value = x[i];
      s.nonfinite_from = t;
      return false;
    }
    if (const std::size_t i = base::first_nonfinite(s.xd); i < s.xd.size()) {
      s.nonfinite = nx + i;
      s.nonfinite_value = s.xd[i];
      s.nonfinite_from = t;
      return false;
    }
    return true;
  }

  // Outputs at the end of the step, with their time derivatives.
  void outputs_at_end() noexcept {
    const double y = h - s.time_error;
    const double end = t + y;
    s.time_error = (end - t) - y;
    s.time = end;
    sample(end, InputPass::kOutput);
    if (!m.eventful.empty()) {
      // Events of the step just taken: the blocks see their inputs and
      // states at its end, may reset their states; the outputs below then
      // follow the reset. Multistep history across an event would
      // extrapolate over the jump.
      if (handle_events(end)) {
        s.history = 0;
        // The derivative before the event says nothing about the next step's.
        s.have_prev_f = false;
      }
    }
    m.evaluate(end, x, m.k4, false);
    // The outputs just evaluated are at the step's end, after its events:
    // where the next step's crossings are measured from.
    if (locating) s.z_known = m.read_indicators(s.z.data());
    m.output_derivatives(m.k4);
    m.mark_jumps(true);
  }
};

// Flattened: its stages are inlined into it, as they were when they were
// one body (bench/runtime_bench.cpp: called, they cost the model math 15 %).
[[gnu::flatten]] void Partition::step(double t, double h, InputSource& inputs) noexcept {
  if (!(h > 0.0)) return;
  // A model that ended the simulation is asked nothing more.
  if (!impl_->fallible.empty() && terminated()) return;
  // A failed FMU is asked nothing more; states that are no numbers are not integrated on.
  if ((!impl_->fallible.empty() || impl_->s.nonfinite != kNoState || impl_->s.diverged != kNoState) && failed()) return;
  Step st{*this, *impl_, impl_->s, inputs, integrator_, externals_.size(), t, h};
  inputs.begin_step(t, h);
  // A step from anywhere but where the last one ended starts a new sum.
  if (t != st.s.time) st.s.time_error = 0.0;
  st.s.time = t;
  if (!st.m.discrete.empty()) st.discrete_pass();
  double from = t;
  if (integrator_ != IntegratorKind::kAb2 && !st.integrate_in_segments(&from)) return;
  const double ab2_error_scale = integrator_ == IntegratorKind::kAb2 ? st.ab2() : -1.0;
  // A block that failed inside the step (an FMU) leaves time where the
  // step began: the task stops at the frame that did not complete.
  if (st.failed() || !st.states_finite()) return;
  // A step that landed on events integrated in pieces: k1 is the last
  // piece's, not the step's start, and an event may have reset states; the
  // one-step measure skips it and the next step.
  if (from != t) st.s.have_prev_f = false;
  if (guard_divergence(t, st.h, ab2_error_scale)) return;
  if (from != t) st.s.have_prev_f = false;
  st.outputs_at_end();
}

// The relative local error of the step just taken, per state
// e_i / (|x_i| + scale_i), scale_i the largest |x_i| so far: ab2 from its
// truncation-error estimate; the one-step methods from the change of the
// derivative at the steps' starts, h/2 |f_n - f_{n-1}| (the local error of
// an Euler step, an upper estimate for rk2 and rk4 where the solution is
// resolved). Then the guard: tolerance exceeded for `steps` steps in a row,
// or a state beyond the bound, stops the partition. True when it stopped.
bool Partition::guard_divergence(double t, double h, double ab2_error_scale) noexcept {
  Impl& m = *impl_;
  Impl::State& s = m.s;
  const std::size_t nx = m.nx;
  const std::vector<double>& x = s.x;
  const bool one_step = integrator_ != IntegratorKind::kAb2;
  const bool have = one_step ? s.have_prev_f && s.prev_f_h > 0.0 : ab2_error_scale >= 0.0;
  double worst = 0.0;
  std::size_t at = kNoState;
  for (std::size_t i = 0; i < nx; ++i) {
    const double mag = std::fabs(x[i]);
    if (mag > s.scale[i]) s.scale[i] = mag;
    if (!have) continue;
    const double e = one_step ? 0.5 * h * h / s.prev_f_h * std::fabs(m.k1[i] - s.prev_f[i]) : ab2_error_scale * m.k3[i];
    const double denominator = mag + s.scale[i];
    // A state that has been exactly 0 all along has no scale yet.
    if (!(denominator > 0.0)) continue;
    const double rel = e / denominator;
    if (rel > worst) {
      worst = rel;
      at = i;
    }
  }
  if (one_step) {
    std::copy(m.k1.begin(), m.k1.end(), s.prev_f.begin());
    s.prev_f_h = h;
    s.have_prev_f = true;
  }
  s.local_error = worst;
  s.local_error_state = at;
  const DivergenceGuard& g = guard_;
  auto stop = [&](std::size_t i, bool bound) noexcept {
    s.diverged = i;
    s.diverged_value = x[i];
    s.diverged_error = worst;
    s.diverged_from = t;
    s.diverged_bound = bound;
    return true;
  };
  if (g.state_bound > 0.0) {
    for (std::size_t i = 0; i < nx; ++i) {
      if (std::fabs(x[i]) > g.state_bound) return stop(i, true);
    }
  }
  if (g.tolerance > 0.0 && worst > g.tolerance) {
    // Each state's scale when the excess began: a divergence grows, a limit
    // cycle under a held input (as large an error, step after step) does not.
    if (s.over_tolerance++ == 0) std::copy(s.scale.begin(), s.scale.end(), s.scale_at_excess.begin());
    if (s.over_tolerance >= g.steps && s.scale[at] >= kDivergenceGrowth * s.scale_at_excess[at]) return stop(at, false);
  } else {
    s.over_tolerance = 0;
  }
  return false;
}

}  // namespace rtcosim::tasks
