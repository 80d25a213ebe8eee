/*
 * The LTTng-UST tracepoint provider "rtcosim". Tasks and links are named by
 * small integer ids (task_info / link_info, emitted once at start, map them
 * to names) so that no event copies a string on the real-time path.
 */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER rtcosim

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "runtime/trace/rtcosim_tp.h"

#if !defined(RTCOSIM_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define RTCOSIM_TP_H

#include <lttng/tracepoint.h>
#include <stdint.h>

LTTNG_UST_TRACEPOINT_EVENT(rtcosim, task_info,
    LTTNG_UST_TP_ARGS(uint32_t, task, const char*, name, int32_t, cpu, int32_t, priority, double, period_s),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint32_t, task, task)
        lttng_ust_field_string(name, name)
        lttng_ust_field_integer(int32_t, cpu, cpu)
        lttng_ust_field_integer(int32_t, priority, priority)
        lttng_ust_field_float(double, period_s, period_s)))

LTTNG_UST_TRACEPOINT_EVENT(rtcosim, link_info,
    LTTNG_UST_TP_ARGS(uint32_t, link, const char*, source, const char*, consumer, const char*, method),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint32_t, link, link)
        lttng_ust_field_string(source, source)
        lttng_ust_field_string(consumer, consumer)
        lttng_ust_field_string(method, method)))

LTTNG_UST_TRACEPOINT_EVENT(rtcosim, frame_start,
    LTTNG_UST_TP_ARGS(uint32_t, task, uint64_t, frame, int64_t, latency_ns),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint32_t, task, task)
        lttng_ust_field_integer(uint64_t, frame, frame)
        lttng_ust_field_integer(int64_t, latency_ns, latency_ns)))

LTTNG_UST_TRACEPOINT_EVENT(rtcosim, frame_end,
    LTTNG_UST_TP_ARGS(uint32_t, task, uint64_t, frame, int64_t, exec_ns, double, step_s, double, sim_s),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint32_t, task, task)
        lttng_ust_field_integer(uint64_t, frame, frame)
        lttng_ust_field_integer(int64_t, exec_ns, exec_ns)
        lttng_ust_field_float(double, step_s, step_s)
        lttng_ust_field_float(double, sim_s, sim_s)))

LTTNG_UST_TRACEPOINT_EVENT(rtcosim, overrun,
    LTTNG_UST_TP_ARGS(uint32_t, task, uint64_t, frame, uint64_t, missed_periods),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint32_t, task, task)
        lttng_ust_field_integer(uint64_t, frame, frame)
        lttng_ust_field_integer(uint64_t, missed_periods, missed_periods)))

LTTNG_UST_TRACEPOINT_EVENT(rtcosim, link_publish,
    LTTNG_UST_TP_ARGS(uint32_t, link, uint64_t, sequence, double, tag_s, uint8_t, dropped),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint32_t, link, link)
        lttng_ust_field_integer(uint64_t, sequence, sequence)
        lttng_ust_field_float(double, tag_s, tag_s)
        lttng_ust_field_integer(uint8_t, dropped, dropped)))

LTTNG_UST_TRACEPOINT_EVENT(rtcosim, link_drain,
    LTTNG_UST_TP_ARGS(uint32_t, link, uint32_t, blocks, double, newest_tag_s, double, age_s),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint32_t, link, link)
        lttng_ust_field_integer(uint32_t, blocks, blocks)
        lttng_ust_field_float(double, newest_tag_s, newest_tag_s)
        lttng_ust_field_float(double, age_s, age_s)))

LTTNG_UST_TRACEPOINT_EVENT(rtcosim, link_health,
    LTTNG_UST_TP_ARGS(uint32_t, link, uint64_t, stale, uint64_t, rejected_tags, uint64_t, rejected_values,
                      uint64_t, fallback_frames, uint64_t, beyond_horizon_frames, double, longest_gap_s),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint32_t, link, link)
        lttng_ust_field_integer(uint64_t, stale, stale)
        lttng_ust_field_integer(uint64_t, rejected_tags, rejected_tags)
        lttng_ust_field_integer(uint64_t, rejected_values, rejected_values)
        lttng_ust_field_integer(uint64_t, fallback_frames, fallback_frames)
        lttng_ust_field_integer(uint64_t, beyond_horizon_frames, beyond_horizon_frames)
        lttng_ust_field_float(double, longest_gap_s, longest_gap_s)))

LTTNG_UST_TRACEPOINT_EVENT(rtcosim, remote_send,
                           LTTNG_UST_TP_ARGS(uint32_t, link, uint64_t, sequence, double, tag_s, uint8_t, ok),
                           LTTNG_UST_TP_FIELDS(lttng_ust_field_integer(uint32_t, link, link)
                                                   lttng_ust_field_integer(uint64_t, sequence, sequence)
                                                       lttng_ust_field_float(double, tag_s, tag_s)
                                                           lttng_ust_field_integer(uint8_t, ok, ok)))

LTTNG_UST_TRACEPOINT_EVENT(rtcosim, remote_receive,
                           LTTNG_UST_TP_ARGS(uint32_t, link, uint64_t, sequence, double, tag_s, uint8_t, ring_full),
                           LTTNG_UST_TP_FIELDS(lttng_ust_field_integer(uint32_t, link, link)
                                                   lttng_ust_field_integer(uint64_t, sequence, sequence)
                                                       lttng_ust_field_float(double, tag_s, tag_s)
                                                           lttng_ust_field_integer(uint8_t, ring_full, ring_full)))

LTTNG_UST_TRACEPOINT_EVENT(rtcosim, remote_lost,
                           LTTNG_UST_TP_ARGS(uint32_t, link, uint64_t, sequence, uint64_t, lost, uint8_t, reset),
                           LTTNG_UST_TP_FIELDS(lttng_ust_field_integer(uint32_t, link, link)
                                                   lttng_ust_field_integer(uint64_t, sequence, sequence)
                                                       lttng_ust_field_integer(uint64_t, lost, lost)
                                                           lttng_ust_field_integer(uint8_t, reset, reset)))

LTTNG_UST_TRACEPOINT_EVENT(rtcosim, step_health,
    LTTNG_UST_TP_ARGS(uint32_t, task, uint64_t, frame, uint32_t, substeps, double, owed_s, double, lost_s,
                      double, local_error, uint8_t, diverged),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint32_t, task, task)
        lttng_ust_field_integer(uint64_t, frame, frame)
        lttng_ust_field_integer(uint32_t, substeps, substeps)
        lttng_ust_field_float(double, owed_s, owed_s)
        lttng_ust_field_float(double, lost_s, lost_s)
        lttng_ust_field_float(double, local_error, local_error)
        lttng_ust_field_integer(uint8_t, diverged, diverged)))

LTTNG_UST_TRACEPOINT_EVENT(rtcosim, task_state,
    LTTNG_UST_TP_ARGS(uint32_t, task, uint8_t, state),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint32_t, task, task)
        lttng_ust_field_integer(uint8_t, state, state)))

#endif /* RTCOSIM_TP_H */

#include <lttng/tracepoint-event.h>
