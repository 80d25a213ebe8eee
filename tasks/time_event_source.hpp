#pragma once

namespace rtcosim::tasks {

/*
 * TimeEventSource: a capability a Block with events (Block::has_events) may
 * add when it knows the time of its next event in advance (an FMU's
 * nextEventTime). A partition whose integrator is a one-step method (euler,
 * rk2, rk4) ends a sub-step exactly there, calls the block's `event` at that
 * instant and integrates the rest of the step after it (Partition::step);
 * with ab2 the event is handled at the end of the step that contains it.
 * Kept out of Block itself: only the blocks that have time events carry it.
 */
class TimeEventSource {
 public:
  TimeEventSource() = default;
  TimeEventSource(const TimeEventSource&) = delete;
  TimeEventSource& operator=(const TimeEventSource&) = delete;
  virtual ~TimeEventSource() = default;
  // The next time event, +inf when none. RT-safe: noexcept, allocation-free.
  [[nodiscard]] virtual double next_time_event() const noexcept = 0;
};

}  // namespace rtcosim::tasks
