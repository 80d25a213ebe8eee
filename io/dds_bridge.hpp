#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "io/remote_state.hpp"
#include "runtime/graph.hpp"

namespace rtcosim::io {

/*
 * DdsBridge: carries the remote links of one host's part of a graph over
 * Eclipse Cyclone DDS (docs/dds.md). One participant in the hosts' domain,
 * one best-effort keep-last topic per remote link, and three threads that
 * are the other ends of the tasks' lock-free rings: a sending thread, woken
 * by the producers' publishes, drains the rings of links whose producer
 * runs here and writes each block as a sample; Cyclone's listener thread
 * takes the samples of links whose consumer runs here and pushes them into
 * that link's ring; the bridge thread announces this host and answers and
 * sends clock pings. The tasks' frames never meet DDS (dds_write
 * allocates): they push and drain their ordinary rings.
 *
 * Clocks: the bridge thread pings every other host every 100 ms and
 * answers their pings at once (NTP-style, io/clock_offset.hpp); the graph's
 * host_clocks() hold each estimate.
 *
 * Start: `coordinate_start` blocks until every host of the graph announced
 * the same graph (text hash) and every remote link here has matched its
 * other end, then returns the common epoch (CLOCK_REALTIME) that the first
 * host of `hosts:` chose. Each host announces on a start topic of its own
 * (dds_host_start_topic_name), which DDS Security's permissions let only
 * that host's certificate publish (scripts/dds-security-docs.sh); an
 * announce whose name is not its topic's host is refused and counted. The
 * bridge thread keeps announcing the host every 100 ms during the run; a
 * host silent for kSilence is reported by name.
 *
 * Ownership: the bridge borrows the graph (which must outlive it) and owns
 * every DDS entity. Set-up code throws std::runtime_error with what was
 * wrong; the bridge's own threads are not real-time threads (SCHED_OTHER, or
 * SCHED_FIFO at `dds: bridge_priority`, below the tasks).
 */
class DdsBridge {
 public:
  static constexpr double kSilence = 0.5;  // seconds without an announce: a host is lost
  // How far beyond `start_delay` from now an announced start may lie (the
  // hosts' clocks may differ that much; docs/dds.md).
  static constexpr double kStartMargin = 1.0;

  // Fills `remote` (made from `graph` after its set_host; it must outlive
  // the bridge). `clock_shift_ns` is added to every CLOCK_REALTIME reading
  // of the clock ping-pong: a host whose clock is off by that much (tests).
  DdsBridge(runtime::Graph& graph, RemoteState& remote, std::int64_t clock_shift_ns = 0);
  ~DdsBridge();
  DdsBridge(const DdsBridge&) = delete;
  DdsBridge& operator=(const DdsBridge&) = delete;

  // Blocks until all hosts agree (see above) or `timeout` seconds pass;
  // returns the epoch in CLOCK_REALTIME nanoseconds. Throws naming the
  // hosts that did not answer, or the host that runs another graph.
  std::int64_t coordinate_start(double timeout, double start_delay);
  // Makes a coordinate_start running on another thread give up within one
  // round (20 ms): it throws "the start was cancelled". Any thread; for the
  // life of this bridge (a daemon makes a new bridge for each start).
  void cancel_start() noexcept;

  // The bridge thread: `fifo` when the process may use SCHED_FIFO.
  void start(bool fifo);
  void stop();

  // Hosts that fell silent during the run, each reported once (then
  // cleared). Any thread.
  [[nodiscard]] std::vector<std::string> take_lost_hosts();
  // Hosts whose estimated clock offset (RemoteState::host_clocks, once a full
  // window of exchanges is in) exceeds `dds: max_clock_offset`, one warning
  // each per run (then cleared). Any thread.
  [[nodiscard]] std::vector<std::string> take_clock_warnings();
  // Start announces passed over (an impersonation, below; another graph
  // text; a start time not within start_delay + kStartMargin from now), and
  // the last one's description. Any thread.
  [[nodiscard]] std::uint64_t ignored_announces() const noexcept;
  [[nodiscard]] std::string last_ignored_announce() const;
  // Of those, the impersonations refused: an announce on a host's start
  // topic under another name, or on this host's own topic from another
  // participant; and the last one's description. Any thread. The count is
  // the run's RemoteState::announces(), which the summaries read.
  [[nodiscard]] std::uint64_t impersonations() const noexcept;
  [[nodiscard]] std::string last_impersonation() const;
  // How the bridge thread runs ("fifo 70 cpu 0", "other"), and its set-up
  // problem if any; after start.
  [[nodiscard]] std::string placement() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The topic on which host `host` of `graph` announces itself:
// "rtcosim_GRAPH__start/HOST", HOST with every byte outside [A-Za-z0-9]
// written as '_' and two lower-case hex digits ("plant-pc" -> "plant_2dpc"),
// so that no two host names share a topic and no link topic is one
// (docs/dds.md, "Security"; scripts/dds-security-docs.sh grants each
// certificate's subject publish on its host's topic only).
[[nodiscard]] std::string dds_host_start_topic_name(const config::GraphSpec& graph, const std::string& host);

// The epoch as CLOCK_MONOTONIC nanoseconds: what the executor sleeps on.
[[nodiscard]] std::int64_t monotonic_from_realtime(std::int64_t realtime_ns) noexcept;

}  // namespace rtcosim::io
