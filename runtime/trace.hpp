#pragma once

#include <cstddef>
#include <cstdint>

namespace rtcosim::runtime::trace {

/*
 * The runtime's tracepoints. With LTTng-UST (RTCOSIM_LTTNG, the default when
 * liblttng-ust-dev is installed) each emits an event of the provider
 * "rtcosim"; without it they are no-ops and the build does not depend on
 * LTTng. RT-safe: noexcept, no allocation; with no tracing session listening
 * each costs LTTng's own enabled-check.
 *
 * Task states: 0 started, 1 stopped.
 */
[[nodiscard]] bool available() noexcept;

void task_info(std::uint32_t task, const char* name, int cpu, int priority, double period_s) noexcept;
void link_info(std::uint32_t link, const char* source, const char* consumer, const char* method) noexcept;
void frame_start(std::uint32_t task, std::uint64_t frame, std::int64_t latency_ns) noexcept;
void frame_end(std::uint32_t task, std::uint64_t frame, std::int64_t exec_ns, double step_s, double sim_s) noexcept;
void overrun(std::uint32_t task, std::uint64_t frame, std::uint64_t missed_periods) noexcept;
// link_publish / link_drain: one event per wire of a bundle (`links`: their
// ids), with one enabled-check for all of them.
void links_publish(const std::uint32_t* links, std::size_t count, std::uint64_t sequence, double tag_s,
                   bool dropped) noexcept;
void links_drain(const std::uint32_t* links, std::size_t count, std::uint32_t blocks, double newest_tag_s,
                 double age_s) noexcept;
void task_state(std::uint32_t task, std::uint8_t state) noexcept;
// A frame of a measured task that repaid owed real time (docs/stalls.md), or
// whose relative local error passed its divergence tolerance, or that
// stopped the task as diverged: sub-steps it took, real time still owed and
// given up so far, the largest relative local error of its sub-steps.
void step_health(std::uint32_t task, std::uint64_t frame, std::uint32_t substeps, double owed_s, double lost_s,
                 double local_error, bool diverged) noexcept;
// A remote link (DDS) at the bridge thread: a sample handed to dds_write
// (`ok` false: DDS refused it), a sample taken from DDS into the consumer's
// ring (`ring_full`: no room), and a received sequence number that showed
// `lost` numbers skipped since the last, or a jump beyond max_sequence_gap
// (`reset`, lost 0).
void remote_send(std::uint32_t link, std::uint64_t sequence, double tag_s, bool ok) noexcept;
void remote_receive(std::uint32_t link, std::uint64_t sequence, double tag_s, bool ring_full) noexcept;
void remote_lost(std::uint32_t link, std::uint64_t sequence, std::uint64_t lost, bool reset) noexcept;
// A link's degradation counters (runtime/graph.hpp LinkHealth), at the end of a run.
void link_health(std::uint32_t link, std::uint64_t stale, std::uint64_t rejected_tags, std::uint64_t rejected_values,
                 std::uint64_t fallback_frames, std::uint64_t beyond_horizon_frames, double longest_gap_s) noexcept;

}  // namespace rtcosim::runtime::trace
