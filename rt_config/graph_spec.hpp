#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "coupling/registry.hpp"
#include "rt_config/location.hpp"
#include "rt_config/policies.hpp"
#include "rt_config/sync_spec.hpp"
#include "tasks/diagram.hpp"
#include "tasks/integrator.hpp"

namespace rtcosim::config {

enum class RealtimeMode { kRequired, kPreferred, kOff };

// One frame whose execution takes `time` instead of the nominal (virtual time).
struct ExecutionSpike {
  std::uint64_t frame = 0;
  double time = 0.0;
};

// Scripted execution times of a task's frame, for virtual time and for the
// utilisation estimate.
struct ExecutionTimes {
  bool declared = false;
  double nominal = 0.0;
  std::vector<ExecutionSpike> spikes;
};

// The shortest task period a real-time run accepts: below it a frame's own
// bookkeeping (clock read, sleep, statistics) outlasts the period.
inline constexpr double kMinPeriod = 1e-6;
// The shortest period at all: virtual time counts whole nanoseconds (a
// model's reference step of 0.1 us runs there, not in real time).
inline constexpr double kMinVirtualPeriod = 1e-9;
// Below this a period is accepted with a warning: wake-up latency alone
// (tens of microseconds on PREEMPT_RT) is a whole period or more.
inline constexpr double kPracticalMinPeriod = 20e-6;

struct TaskSpec {
  std::string name;
  double period = 0.0;  // seconds
  int cpu = -1;         // -1: not pinned
  int priority = 0;     // SCHED_FIFO 1..99; 0: not set
  tasks::IntegratorKind integrator = tasks::IntegratorKind::kAb2;
  StepPolicy step = StepPolicy::kFixed;
  OverrunPolicy overrun = OverrunPolicy::kCatchUp;  // the loader: rephase for measured steps unless given
  double max_step = 0.0;                            // seconds; 0: 4 periods
  // Measured steps: sub-steps a frame may integrate while it repays owed
  // real time (0: 4), and the debt beyond which real time is given up
  // (seconds; 0: 1 s). docs/stalls.md.
  int max_substeps = 0;
  double max_owed = 0.0;
  // Whether the task waits (fixed step) or holds its step (measured) for a
  // producer that lags, and a fixed step for room in a consumer's ring
  // (docs/stalls.md); false for a task that must keep its wall-clock
  // deadlines whatever its inputs (one that drives hardware).
  bool wait_for_data = true;
  // What stops the task as diverged (docs/stalls.md, `divergence:`): the
  // relative local error above `tolerance` for `steps` steps in a row, or a
  // state beyond `state_bound`; 0 turns a check off.
  struct Divergence {
    double tolerance = 0.25;
    int steps = 5;
    double state_bound = 1e12;
    bool operator==(const Divergence&) const = default;
  } divergence;
  std::string rate_group;  // tasks sharing one run in one thread
  std::string host;        // the host it runs on (GraphSpec::hosts); empty: a one-host graph
  ExecutionTimes execution;
  Location where;
};

struct CouplingSpec {
  std::string method = "zoh";
  coupling::ParamSettings params;  // the method's own parameters
  // Link parameters, every method: how far the consumer extrapolates before
  // it holds the value at the horizon (unset: the runtime's default, from
  // the producer's period and longest step), and how far ahead of the
  // consumer's clock a tag may be before it is rejected.
  std::optional<double> max_extrapolation;  // seconds
  std::optional<double> max_tag_lead;       // seconds
  Location where;
};

// A wire of the diagram with where it was written and, when it crosses
// tasks, the coupling of its link.
struct WireEntry {
  tasks::WireSpec wire;
  std::optional<CouplingSpec> coupling;  // as written; the default applies when absent
  bool crosses_tasks = false;
  bool crosses_hosts = false;  // a remote link: carried over DDS
  Location where;
};

// One machine of a graph that spans hosts (docs/dds.md): tasks on different
// hosts exchange their links as DDS topics in `domain`.
struct HostSpec {
  std::string name;
  int domain = 0;  // DDS domain id, 0..232 (0..230 with security: Cyclone's governance stops there)
  // DDS Security: this host's identity certificate, its private key and its
  // signed permissions document (absolute paths; read only on this host).
  std::string certificate, private_key, permissions;
  Location where;
};

// DDS Security (docs/dds.md "Security"): the identity CA, the permissions
// CA and the signed governance document every host uses; off when empty.
struct DdsSecuritySpec {
  std::string identity_ca, permissions_ca, governance;  // absolute paths
  Location where;
  [[nodiscard]] bool enabled() const noexcept { return !identity_ca.empty(); }
};

// How a multi-host run starts and how its DDS bridge thread runs.
struct DdsSpec {
  double discovery_timeout = 10.0;  // seconds to wait for every host before giving up
  double start_delay = 1.0;         // seconds between the hosts' agreement and the common epoch
  int bridge_priority = 0;          // SCHED_FIFO 1..99 below the tasks'; 0: SCHED_OTHER
  int bridge_cpu = -1;              // -1: not pinned
  // A received sequence number further than this from the last one, either
  // way, is a reset of the link's count (a restarted producer, or a hostile
  // sample), not a loss.
  std::uint64_t max_sequence_gap = 100000;
  double max_clock_offset = 0.001;  // seconds: the estimated offset to a host beyond this is warned about
  DdsSecuritySpec security;
  Location where;
};

struct RecordSpec {
  std::vector<tasks::Endpoint> signals;
  std::string file;
  std::string format;                        // "csv", "hdf5", "mat73", "mat5"; "": by the file's extension
  std::map<std::string, std::string> units;  // "block.port" -> unit text, stored with HDF5 and MAT recordings
};

struct TraceSpec {
  bool enabled = false;
  std::string directory = "traces";
};

/*
 * GraphSpec: a whole run as the task-graph file describes it, validated, in
 * plain data (no runtime objects): tasks with their timing and real-time
 * settings, the block diagram with each block's task, wires with their
 * couplings, recording, tracing, plugins.
 */
struct GraphSpec {
  std::string file;
  std::string name;
  double duration = 0.0;  // seconds; 0 runs until stopped
  RealtimeMode realtime = RealtimeMode::kPreferred;
  std::vector<TaskSpec> tasks;
  tasks::DiagramSpec diagram;
  std::vector<Location> block_locations;  // parallel to diagram.blocks
  std::vector<WireEntry> wires;           // parallel to diagram.wires
  std::vector<HostSpec> hosts;            // empty: one process runs every task
  DdsSpec dds;
  // FNV-1a 64 of the file's text: hosts agree on the graph by comparing it.
  std::uint64_t text_hash = 0;
  CouplingSpec default_coupling;
  RecordSpec record;
  TraceSpec trace;
  SyncSpec sync;                     // docs/sync.md
  std::vector<std::string> plugins;  // plugin ids (rt_config/plugins.hpp), not paths

  [[nodiscard]] const TaskSpec* find_task(const std::string& name) const;
  [[nodiscard]] const HostSpec* find_host(const std::string& name) const;
  // Why the graph cannot run in real time (a task period below
  // kMinPeriod, which only virtual time runs); empty when it can.
  [[nodiscard]] std::string realtime_refusal() const;
  // The coupling a cross-task wire uses: its own or the default.
  [[nodiscard]] const CouplingSpec& coupling_of(const WireEntry& wire) const {
    return wire.coupling ? *wire.coupling : default_coupling;
  }
};

std::string to_string(StepPolicy p);
std::string to_string(OverrunPolicy p);
std::string to_string(RealtimeMode m);

}  // namespace rtcosim::config
