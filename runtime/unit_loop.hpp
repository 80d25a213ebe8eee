#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "runtime/frame_log.hpp"
#include "runtime/recorder.hpp"
#include "runtime/thread_unit.hpp"
#include "runtime/trace.hpp"

namespace rtcosim::runtime {

/*
 * MonotonicClock: the wall clock of real-time runs, CLOCK_MONOTONIC in ns.
 * `before_integration` is where a test clock spends a frame's scripted
 * execution time; the real clock has nothing to add there.
 */
struct MonotonicClock {
  std::int64_t now() noexcept;
  void sleep_until(std::int64_t deadline_ns) noexcept;
  void before_integration(const TaskRuntime&, std::uint64_t) noexcept {}
};

// Where the frames of a unit report, beside the task statistics.
struct UnitSinks {
  Recorder* recorder = nullptr;
  FrameLog* frame_log = nullptr;
};

/*
 * run_unit: the periodic loop of one thread (a task or a rate group) on the
 * given clock, from its first release until `end_ns` (0: none) or until
 * `running` turns false. One cycle:
 *
 *   start = max(release, now); stop if start >= end
 *   if the release lies ahead: sleep until it (the cycle's wake-up latency
 *     is wake - release, measured only then)
 *   start lateness = first frame's start - release
 *   each frame of the plan: drain inputs, [the clock's scripted work],
 *     integration point: h from ThreadUnit::step_of, step, publish, record
 *   cycle time, overrun and missed periods, next release (Deadlines)
 *
 * The real-time path: noexcept, no allocation, no lock; the only blocking
 * call is the clock's sleep, never longer than kStopCheckNs. Templated on the clock so that tests drive the
 * same code with a fake one.
 */
// The longest single sleep of run_unit: how long a stop may wait for a
// thread whose next release is far ahead.
inline constexpr std::int64_t kStopCheckNs = 100'000'000;

// One body, not split into steps: every line of it runs each frame or each
// cycle, and one body lets the compiler keep the loop's state (the unit,
// the clock, the first frame's latency) in registers across the loop. Its
// only set-up is two lines, too little to be worth a call.
template <class Clock>
void run_unit(ThreadUnit& u, Clock& clock, std::int64_t epoch_ns, std::int64_t end_ns, const std::atomic<bool>& running,
              UnitSinks sinks) noexcept {
  auto wall_of = [epoch_ns](std::int64_t t) noexcept { return static_cast<double>(t - epoch_ns) * 1e-9; };
  // The cycle's wake-up latency and start lateness go with its first frame;
  // -1 on the others (and latency -1 when the thread did not sleep).
  std::int64_t first_latency = -1, first_lateness = -1;
  auto frame = [&](std::size_t member) noexcept {
    TaskRuntime& t = *u.members[member];
    // A member of a rate group that stopped (failed, or its model ended the
    // run) takes no more frames in the cycles its group finishes.
    if (t.stopped()) return;
    const std::int64_t start = clock.now();
    const std::uint64_t k = t.stats().frames.load(std::memory_order_relaxed);
    trace::frame_start(t.id(), k, first_latency);
    const std::int64_t latency = first_latency, lateness = first_lateness;
    first_latency = first_lateness = -1;
    // A clock may take over a frame's drain and publish: the replay log's
    // (runtime/replay_log.hpp) notes what they did, a replay's repeats it.
    if constexpr (requires { clock.drain(t, member); }) {
      clock.drain(t, member);
    } else {
      t.drain();
    }
    clock.before_integration(t, k);
    // A frame held up for more than a period between its drain and its
    // integration point (preempted, stalled) drains again: it integrates
    // that much real time and should do so with what its producers
    // published meanwhile (docs/stalls.md). A clock that takes over the
    // drains (a replay's log) keeps them as logged.
    if constexpr (!requires { clock.drain(t, member); }) {
      if (clock.now() - start > t.period_ns()) t.drain();
    }
    const double wall = wall_of(clock.now());
    const double h = u.step_of(member, wall);
    t.step(h);
    if constexpr (requires { clock.publish(t, member); }) {
      clock.publish(t, member);
    } else {
      t.publish();
    }
    // ... and the recording's drops.
    if (sinks.recorder) {
      if constexpr (requires { clock.sample(t, member, *sinks.recorder); }) {
        clock.sample(t, member, *sinks.recorder);
      } else {
        (void)sinks.recorder->sample(t);
      }
    }
    const std::int64_t end = clock.now();
    u.frame_done(member, start, end, wall);
    if (sinks.frame_log) {
      const FrameRow row{k, wall, t.partition().time(), h, latency, end - start, lateness};
      if constexpr (requires { clock.add_row(member, *sinks.frame_log, u.index[member], row); }) {
        clock.add_row(member, *sinks.frame_log, u.index[member], row);
      } else {
        (void)sinks.frame_log->add(u.index[member], row);
      }
    }
    trace::frame_end(t.id(), k, end - start, h, t.partition().time());
  };

  u.wait_for_data = !requires { clock.drain(u.owner(), std::size_t{0}); };
  for (const TaskRuntime* m : u.members) trace::task_state(m->id(), 0);
  std::int64_t now = clock.now();
  while (running.load(std::memory_order_relaxed)) {
    if (end_ns != 0 && u.deadlines.start_at(now) >= end_ns) break;
    // A model that ended the simulation itself ends every thread's loop at
    // its next cycle (TaskRuntime::ended); a replay's log says where each
    // thread's loop ended instead (its cycles after the end are logged).
    if constexpr (!requires { clock.drain(u.owner(), std::size_t{0}); }) {
      if (u.owner().run_ended()) break;
    }
    const std::int64_t release = u.deadlines.release();
    const bool slept = release > now;
    if (slept) {
      // A release far ahead (a coordinated start's epoch) is slept towards
      // in pieces of at most kStopCheckNs, so that a stop (SIGTERM, `ctl
      // stop`, a reload) ends the wait within one piece, not at the epoch.
      while (release - now > kStopCheckNs && running.load(std::memory_order_relaxed)) {
        clock.sleep_until(now + kStopCheckNs);
        now = clock.now();
      }
      if (!running.load(std::memory_order_relaxed)) break;
      clock.sleep_until(release);
      now = clock.now();
      if (!running.load(std::memory_order_relaxed)) break;
    }
    // A fixed-step cycle whose data lags with its producer lets the producer
    // catch up first (ThreadUnit::data_wait); not where a replay log takes
    // over the drains (wait_for_data, above).
    if (const std::int64_t wait = u.data_wait(now); wait > 0) {
      // Never past the end, and within kStopCheckNs of a stop.
      std::int64_t until = now + std::min(wait, kStopCheckNs);
      if (end_ns != 0 && until > end_ns) until = end_ns;
      clock.sleep_until(until);
      now = clock.now();
      continue;
    }
    const std::int64_t cycle_start = now;
    u.cycle_started(cycle_start, slept, now);
    first_latency = slept ? now - release : -1;
    first_lateness = now - release;
    for (const std::size_t member : u.plan) frame(member);
    now = clock.now();
    // A task whose FMU failed stops here, cleanly: the frame is accounted,
    // its thread leaves the loop, the other units run on.
    bool failed = false;
    for (const TaskRuntime* m : u.members) failed = failed || m->stopped();
    TaskRuntime& owner = u.owner();
    const std::uint64_t missed_before = u.deadlines.missed_periods();
    if (u.cycle_done(cycle_start, now)) {
      trace::overrun(owner.id(), owner.stats().frames.load(std::memory_order_relaxed) - 1,
                     u.deadlines.missed_periods() - missed_before);
    }
    if (failed) break;
  }
  u.finish(end_ns != 0 && end_ns < now ? end_ns : now);
  for (const TaskRuntime* m : u.members) trace::task_state(m->id(), 1);
}

}  // namespace rtcosim::runtime
