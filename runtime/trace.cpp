// The tracepoint calls, in one translation unit compiled without -Wpedantic
// (LTTng's macros use extensions); with RTCOSIM_HAVE_LTTNG unset they are
// empty functions.
#include "runtime/trace.hpp"

#ifdef RTCOSIM_HAVE_LTTNG
#include "runtime/trace/rtcosim_tp.h"
#define RTCOSIM_TP(...) lttng_ust_tracepoint(rtcosim, __VA_ARGS__)
#else
#define RTCOSIM_TP(...) \
  do {                  \
  } while (false)
#endif

namespace rtcosim::runtime::trace {

bool available() noexcept {
#ifdef RTCOSIM_HAVE_LTTNG
  return true;
#else
  return false;
#endif
}

void task_info(std::uint32_t task, const char* name, int cpu, int priority, double period_s) noexcept {
  RTCOSIM_TP(task_info, task, name, cpu, priority, period_s);
  (void)task, (void)name, (void)cpu, (void)priority, (void)period_s;
}
void link_info(std::uint32_t link, const char* source, const char* consumer, const char* method) noexcept {
  RTCOSIM_TP(link_info, link, source, consumer, method);
  (void)link, (void)source, (void)consumer, (void)method;
}
void frame_start(std::uint32_t task, std::uint64_t frame, std::int64_t latency_ns) noexcept {
  RTCOSIM_TP(frame_start, task, frame, latency_ns);
  (void)task, (void)frame, (void)latency_ns;
}
void frame_end(std::uint32_t task, std::uint64_t frame, std::int64_t exec_ns, double step_s, double sim_s) noexcept {
  RTCOSIM_TP(frame_end, task, frame, exec_ns, step_s, sim_s);
  (void)task, (void)frame, (void)exec_ns, (void)step_s, (void)sim_s;
}
void step_health(std::uint32_t task, std::uint64_t frame, std::uint32_t substeps, double owed_s, double lost_s,
                 double local_error, bool diverged) noexcept {
  RTCOSIM_TP(step_health, task, frame, substeps, owed_s, lost_s, local_error,
             static_cast<std::uint8_t>(diverged ? 1 : 0));
  (void)task, (void)frame, (void)substeps, (void)owed_s, (void)lost_s, (void)local_error, (void)diverged;
}
void overrun(std::uint32_t task, std::uint64_t frame, std::uint64_t missed_periods) noexcept {
  RTCOSIM_TP(overrun, task, frame, missed_periods);
  (void)task, (void)frame, (void)missed_periods;
}
void links_publish(const std::uint32_t* links, std::size_t count, std::uint64_t sequence, double tag_s,
                   bool dropped) noexcept {
#ifdef RTCOSIM_HAVE_LTTNG
  if (!lttng_ust_tracepoint_enabled(rtcosim, link_publish)) return;
  for (std::size_t i = 0; i < count; ++i) {
    lttng_ust_do_tracepoint(rtcosim, link_publish, links[i], sequence, tag_s,
                            static_cast<std::uint8_t>(dropped ? 1 : 0));
  }
#endif
  (void)links, (void)count, (void)sequence, (void)tag_s, (void)dropped;
}
void links_drain(const std::uint32_t* links, std::size_t count, std::uint32_t blocks, double newest_tag_s,
                 double age_s) noexcept {
#ifdef RTCOSIM_HAVE_LTTNG
  if (!lttng_ust_tracepoint_enabled(rtcosim, link_drain)) return;
  for (std::size_t i = 0; i < count; ++i) {
    lttng_ust_do_tracepoint(rtcosim, link_drain, links[i], blocks, newest_tag_s, age_s);
  }
#endif
  (void)links, (void)count, (void)blocks, (void)newest_tag_s, (void)age_s;
}
void remote_send(std::uint32_t link, std::uint64_t sequence, double tag_s, bool ok) noexcept {
  RTCOSIM_TP(remote_send, link, sequence, tag_s, static_cast<std::uint8_t>(ok ? 1 : 0));
  (void)link, (void)sequence, (void)tag_s, (void)ok;
}
void remote_receive(std::uint32_t link, std::uint64_t sequence, double tag_s, bool ring_full) noexcept {
  RTCOSIM_TP(remote_receive, link, sequence, tag_s, static_cast<std::uint8_t>(ring_full ? 1 : 0));
  (void)link, (void)sequence, (void)tag_s, (void)ring_full;
}
void remote_lost(std::uint32_t link, std::uint64_t sequence, std::uint64_t lost, bool reset) noexcept {
  RTCOSIM_TP(remote_lost, link, sequence, lost, static_cast<std::uint8_t>(reset ? 1 : 0));
  (void)link, (void)sequence, (void)lost, (void)reset;
}
void task_state(std::uint32_t task, std::uint8_t state) noexcept {
  RTCOSIM_TP(task_state, task, state);
  (void)task, (void)state;
}

void link_health(std::uint32_t link, std::uint64_t stale, std::uint64_t rejected_tags, std::uint64_t rejected_values,
                 std::uint64_t fallback_frames, std::uint64_t beyond_horizon_frames, double longest_gap_s) noexcept {
  RTCOSIM_TP(link_health, link, stale, rejected_tags, rejected_values, fallback_frames, beyond_horizon_frames,
             longest_gap_s);
  (void)link, (void)stale, (void)rejected_tags, (void)rejected_values, (void)fallback_frames,
      (void)beyond_horizon_frames, (void)longest_gap_s;
}

}  // namespace rtcosim::runtime::trace
