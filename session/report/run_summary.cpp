#include "session/report/run_summary.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <optional>

#include "base/json.hpp"
#include "session/report/plant_summary.hpp"
#include "session/report/text_table.hpp"

namespace rtcosim::session {

namespace {

using runtime::GraphLink;
using runtime::TaskRuntime;

// "-" where the histogram has no sample: a rate group's fast member owns no
// cycle, a thread that never slept has no wake-up latency.
std::string percentile_of(const runtime::LogHistogram& h, double p) {
  return h.count() ? format_nanoseconds(h.percentile(p)) : std::string("-");
}
std::string max_of(const runtime::LogHistogram& h) {
  return h.count() ? format_nanoseconds(h.max()) : std::string("-");
}

// How the task's thread ran: "fifo 90 cpu 1", "other", "virtual".
std::string placement_of(const TaskRuntime& t) {
  const auto& p = t.placement();
  return runtime::policy_text(p) + (p.cpu >= 0 ? " cpu " + std::to_string(p.cpu) : std::string());
}

// What this process ran: with --host, its host's tasks and the links with
// an end here.
std::vector<const TaskRuntime*> local_tasks(runtime::Graph& graph) {
  std::vector<const TaskRuntime*> out;
  for (const auto& t : graph.tasks()) {
    if (t->local()) out.push_back(t.get());
  }
  return out;
}
std::vector<const GraphLink*> local_links(runtime::Graph& graph) {
  std::vector<const GraphLink*> out;
  for (const auto& l : graph.links()) {
    if (l->producer_local || l->consumer_local) out.push_back(l.get());
  }
  return out;
}

// Remote links as one end saw them: the producer's host counts what it
// wrote, the consumer's what it received, lost and how old it was. Then,
// with a host, the other hosts' clocks and the start announces refused as
// impersonations.
std::string remote_link_lines(const io::RemoteState& state) {
  using Remote = io::RemoteState::Link;
  std::vector<const Remote*> remote;
  for (const auto& e : state.links()) remote.push_back(e.get());
  auto here = [](const Remote& r) { return r.link->producer_local; };
  // The consumer's one-way latency (mean or max), "-" at the producer or before any sample.
  auto latency = [&](const Remote& r, double (runtime::RunningRange::*of)() const noexcept) {
    const auto& l = r.stats.latency;
    return here(r) || l.count() == 0 ? std::string("-") : format_seconds((l.*of)());
  };
  // A consumer's counter, "-" at the producer.
  auto received = [&](const Remote& r, const std::atomic<std::uint64_t>& n) {
    return here(r) ? std::string("-") : format_count(n.load());
  };
  const std::vector<Field<Remote>> columns = {
      {"from -> to", Align::kLeft,
       [](const Remote& r) { return r.link->source + " (" + r.link->producer + ") -> " + r.link->consumer; }},
      {"end", Align::kLeft, [&](const Remote& r) { return std::string(here(r) ? "producer" : "consumer"); }},
      {"published", Align::kRight,
       [&](const Remote& r) { return here(r) ? format_count(r.stats.written.load()) : std::string("-"); }},
      {"received", Align::kRight, [&](const Remote& r) { return received(r, r.stats.received); }},
      {"lost", Align::kRight, [&](const Remote& r) { return received(r, r.stats.lost); }},
      {"resets", Align::kRight, [&](const Remote& r) { return received(r, r.stats.sequence_resets); }},
      {"malformed", Align::kRight, [&](const Remote& r) { return received(r, r.stats.malformed); }},
      {"deadline missed", Align::kRight, [](const Remote& r) { return format_count(r.stats.deadline_missed.load()); }},
      {"latency mean", Align::kRight, [&](const Remote& r) { return latency(r, &runtime::RunningRange::mean); }},
      {"latency max", Align::kRight, [&](const Remote& r) { return latency(r, &runtime::RunningRange::max); }},
      {"data age mean", Align::kRight,
       [&](const Remote& r) { return here(r) ? std::string("-") : format_seconds(r.link->stats->data_age.mean()); }},
      {"data age max", Align::kRight,
       [&](const Remote& r) { return here(r) ? std::string("-") : format_seconds(r.link->stats->data_age.max()); }},
      {"topic", Align::kLeft, [](const Remote& r) { return r.topic; }},
  };
  std::string out = remote.empty() ? std::string() : "remote links (DDS):\n" + render_table(columns, remote);
  // The other hosts' clocks, from the bridge's ping-pong (docs/dds.md, "Clocks").
  std::vector<const io::HostClock*> clocks;
  for (const auto& c : state.host_clocks()) clocks.push_back(c.get());
  const std::vector<Field<io::HostClock>> clock_columns = {
      {"host", Align::kLeft, [](const io::HostClock& c) { return c.host; }},
      {"clock offset", Align::kRight,
       [](const io::HostClock& c) {
         return c.exchanges.load() ? format_seconds(static_cast<double>(c.offset_ns.load()) * 1e-9) : std::string("-");
       }},
      {"round trip", Align::kRight,
       [](const io::HostClock& c) {
         return c.exchanges.load() ? format_seconds(static_cast<double>(c.round_trip_ns.load()) * 1e-9)
                                   : std::string("-");
       }},
      {"exchanges", Align::kRight, [](const io::HostClock& c) { return format_count(c.exchanges.load()); }},
  };
  if (clocks.empty()) return out;
  out += "other hosts' clocks (theirs - this host's, DDS ping-pong):\n" + render_table(clock_columns, clocks);
  // docs/dds.md, "What an announce cannot do".
  const io::AnnounceStats& announces = state.announces();
  out += "impersonations: " + format_count(announces.impersonations.load(std::memory_order_relaxed)) +
         " (start announces refused: another host's name on a host's topic, or another participant on this "
         "host's own)\n";
  if (const std::string last = announces.last_impersonation.load(); !last.empty()) out += "  the last: " + last + "\n";
  return out;
}

// The per-task figures every run has: frames, steps, overruns, lag.
std::string task_table(const std::vector<const TaskRuntime*>& local) {
  const std::vector<Field<TaskRuntime>> task_columns = {
      {"name", Align::kLeft, [](const TaskRuntime& t) { return t.spec().name; }},
      {"frames", Align::kRight, [](const TaskRuntime& t) { return format_count(t.stats().frames.load()); }},
      {"step min", Align::kRight, [](const TaskRuntime& t) { return format_seconds(t.stats().step.min()); }},
      {"step mean", Align::kRight, [](const TaskRuntime& t) { return format_seconds(t.stats().step.mean()); }},
      {"step max", Align::kRight, [](const TaskRuntime& t) { return format_seconds(t.stats().step.max()); }},
      {"overruns", Align::kRight, [](const TaskRuntime& t) { return format_count(t.stats().overruns.load()); }},
      {"missed", Align::kRight, [](const TaskRuntime& t) { return format_count(t.stats().missed_periods.load()); }},
      {"lag min", Align::kRight, [](const TaskRuntime& t) { return format_seconds(t.stats().lag.min()); }},
      {"lag max", Align::kRight, [](const TaskRuntime& t) { return format_seconds(t.stats().lag.max()); }},
      {"lost", Align::kRight, [](const TaskRuntime& t) { return format_seconds(t.stats().lost_real_time.load()); }},
      {"exec p99", Align::kRight, [](const TaskRuntime& t) { return percentile_of(t.stats().execution_ns, 0.99); }},
      {"ab2 LTE max", Align::kRight,
       [](const TaskRuntime& t) {
         return t.partition().integrator() == tasks::IntegratorKind::kAb2
                    ? format_general(t.stats().truncation_error.max())
                    : std::string("-");
       }},
      {"local err max", Align::kRight,
       [](const TaskRuntime& t) { return format_general(t.stats().local_error.max()); }},
      {"thread", Align::kLeft, placement_of},
  };
  return "tasks:\n" + render_table(task_columns, local);
}

// Wake-up latency and execution time as the histograms saw them: the
// tails are what a real-time run is judged by.
std::string timing_table(const std::vector<const TaskRuntime*>& local) {
  const std::vector<Field<TaskRuntime>> timing_columns = {
      {"name", Align::kLeft, [](const TaskRuntime& t) { return t.spec().name; }},
      {"latency p50", Align::kRight,
       [](const TaskRuntime& t) { return percentile_of(t.stats().wakeup_latency_ns, 0.5); }},
      {"latency p99", Align::kRight,
       [](const TaskRuntime& t) { return percentile_of(t.stats().wakeup_latency_ns, 0.99); }},
      {"latency p99.9", Align::kRight,
       [](const TaskRuntime& t) { return percentile_of(t.stats().wakeup_latency_ns, 0.999); }},
      {"latency max", Align::kRight, [](const TaskRuntime& t) { return max_of(t.stats().wakeup_latency_ns); }},
      {"late start p99", Align::kRight,
       [](const TaskRuntime& t) { return percentile_of(t.stats().start_lateness_ns, 0.99); }},
      {"late start max", Align::kRight, [](const TaskRuntime& t) { return max_of(t.stats().start_lateness_ns); }},
      {"exec p50", Align::kRight, [](const TaskRuntime& t) { return percentile_of(t.stats().execution_ns, 0.5); }},
      {"exec p99", Align::kRight, [](const TaskRuntime& t) { return percentile_of(t.stats().execution_ns, 0.99); }},
      {"exec p99.9", Align::kRight, [](const TaskRuntime& t) { return percentile_of(t.stats().execution_ns, 0.999); }},
      {"exec max", Align::kRight, [](const TaskRuntime& t) { return max_of(t.stats().execution_ns); }},
      {"cycle p99", Align::kRight, [](const TaskRuntime& t) { return percentile_of(t.stats().cycle_ns, 0.99); }},
      {"cycle max", Align::kRight, [](const TaskRuntime& t) { return max_of(t.stats().cycle_ns); }},
  };
  return "timing:\n" + render_table(timing_columns, local);
}

// Only when a measured step met a stall: what it owed and how it repaid
// it (docs/stalls.md).
std::string stall_table(const std::vector<const TaskRuntime*>& local) {
  std::string out;
  std::vector<const TaskRuntime*> stalled;
  for (const TaskRuntime* t : local) {
    const runtime::TaskStats& s = t->stats();
    if (s.stalls.load() > 0 || s.lost_real_time.load() > 0.0 || s.data_waits.load() > 0) stalled.push_back(t);
  }
  if (!stalled.empty()) {
    const std::vector<Field<TaskRuntime>> stall_columns = {
        {"name", Align::kLeft, [](const TaskRuntime& t) { return t.spec().name; }},
        {"stalls", Align::kRight, [](const TaskRuntime& t) { return format_count(t.stats().stalls.load()); }},
        {"absorbed", Align::kRight,
         [](const TaskRuntime& t) { return format_count(t.stats().stalls_absorbed.load()); }},
        {"catch-up frames", Align::kRight,
         [](const TaskRuntime& t) { return format_count(t.stats().catch_up_frames.load()); }},
        {"longest catch-up", Align::kRight,
         [](const TaskRuntime& t) { return format_count(t.stats().longest_catch_up.load()); }},
        {"extra sub-steps", Align::kRight,
         [](const TaskRuntime& t) { return format_count(t.stats().extra_substeps.load()); }},
        {"owed max", Align::kRight, [](const TaskRuntime& t) { return format_seconds(t.stats().owed_max.load()); }},
        {"owed at end", Align::kRight, [](const TaskRuntime& t) { return format_seconds(t.stats().owed.load()); }},
        {"lost", Align::kRight, [](const TaskRuntime& t) { return format_seconds(t.stats().lost_real_time.load()); }},
        {"data waits", Align::kRight, [](const TaskRuntime& t) { return format_count(t.stats().data_waits.load()); }},
    };
    out +=
        "stalls (measured steps repay the real time a long frame took, fixed steps wait for lagging data; "
        "docs/stalls.md):\n" +
        render_table(stall_columns, stalled);
  }
  return out;
}

// Only for tasks whose blocks had events (an FMU's): how many, how many
// were located inside a frame, what locating cost, and the bounds
// reached (docs/config.md "Events").
std::string event_table(const std::vector<const TaskRuntime*>& local) {
  std::string out;
  std::vector<const TaskRuntime*> eventful;
  for (const TaskRuntime* t : local) {
    if (t->stats().events.load(std::memory_order_relaxed) > 0) eventful.push_back(t);
  }
  if (!eventful.empty()) {
    auto count = [](const std::atomic<std::uint64_t>& c) { return format_count(c.load(std::memory_order_relaxed)); };
    const std::vector<Field<TaskRuntime>> event_columns = {
        {"name", Align::kLeft, [](const TaskRuntime& t) { return t.spec().name; }},
        {"handled", Align::kRight, [&](const TaskRuntime& t) { return count(t.stats().events); }},
        {"located", Align::kRight, [&](const TaskRuntime& t) { return count(t.stats().events_located); }},
        {"trials", Align::kRight, [&](const TaskRuntime& t) { return count(t.stats().location_trials); }},
        {"trial bound", Align::kRight, [&](const TaskRuntime& t) { return count(t.stats().location_trial_limits); }},
        {"landing bound", Align::kRight, [&](const TaskRuntime& t) { return count(t.stats().landing_limits); }},
    };
    out += "events (docs/figures.md; state events located inside frames: docs/config.md, \"Events\"):\n" +
           render_table(event_columns, eventful);
  }
  return out;
}

// A table of 10^4 links is a megabyte nobody reads: above kLinkRows, the rows are the links that dropped the
// most blocks, then those read furthest ahead of their data, in graph order; a line counts the rest. --json has
// every link (docs/figures.md, "Per link").
constexpr std::size_t kLinkRows = 40;

std::vector<const GraphLink*> shown_links(const std::vector<const GraphLink*>& links) {
  if (links.size() <= kLinkRows) return links;
  std::vector<std::size_t> order(links.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto rank = [&](std::size_t i) {
    const GraphLink& l = *links[i];
    return std::pair{l.link->dropped(), l.stats->extrapolation_interval.max()};
  };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return rank(a) > rank(b); });
  order.resize(kLinkRows);
  std::sort(order.begin(), order.end());
  std::vector<const GraphLink*> shown;
  for (std::size_t i : order) shown.push_back(links[i]);
  return shown;
}

// The local links, then their health lines: nothing when no link has an end here.
std::string link_table(runtime::Graph& graph, const std::vector<const GraphLink*>& links) {
  const std::vector<Field<GraphLink>> link_columns = {
      {"from -> to", Align::kLeft,
       [](const GraphLink& l) { return l.source + " (" + l.producer + ") -> " + l.consumer; }},
      {"method", Align::kLeft, [](const GraphLink& l) { return l.method; }},
      {"published", Align::kRight, [](const GraphLink& l) { return format_count(l.link->published()); }},
      {"dropped", Align::kRight, [](const GraphLink& l) { return format_count(l.link->dropped()); }},
      {"ring", Align::kRight, [](const GraphLink& l) { return format_count(l.link->capacity_blocks()); }},
      {"data age mean", Align::kRight, [](const GraphLink& l) { return format_seconds(l.stats->data_age.mean()); }},
      {"data age max", Align::kRight, [](const GraphLink& l) { return format_seconds(l.stats->data_age.max()); }},
      {"extrapolation max", Align::kRight,
       [](const GraphLink& l) { return format_seconds(l.stats->extrapolation_interval.max()); }},
  };
  if (links.empty()) return {};
  const auto shown = shown_links(links);
  std::string out = "links:\n" + render_table(link_columns, shown);
  if (shown.size() < links.size()) {
    // Links, not blocks: a bundle's drops show on each of its wires.
    std::size_t dropping = 0;
    for (const GraphLink* l : links) dropping += l->link->dropped() > 0 ? 1 : 0;
    for (const GraphLink* l : shown) dropping -= l->link->dropped() > 0 ? 1 : 0;
    out += "  ... and " + format_count(links.size() - shown.size()) + " more link(s), " +
           (dropping == 0 ? std::string("none of which dropped a block")
                          : format_count(dropping) + " of which dropped blocks") +
           " (the " + std::to_string(kLinkRows) +
           " above dropped the most, then were read furthest ahead; --json FILE lists every link)\n";
  }
  return out + link_health_lines(graph);
}

}  // namespace

// Each table is its own step, in the order printed: docs/figures.md says
// what each figure is.
std::string run_summary(runtime::Graph& graph, const io::RemoteState* remote) {
  const auto tasks = local_tasks(graph);
  const auto links = local_links(graph);
  std::string out = task_table(tasks);
  out += timing_table(tasks);
  out += stall_table(tasks);
  out += event_table(tasks);
  out += link_table(graph, links);
  // Without a run's state (a virtual run, a build without DDS): the zeroes
  // of a fresh one, so that the tables keep their shape.
  const std::optional<io::RemoteState> fresh = remote != nullptr ? std::nullopt : std::optional<io::RemoteState>(graph);
  return out + remote_link_lines(remote != nullptr ? *remote : *fresh) + plant_lines();
}

std::vector<Field<ReferenceError>> reference_error_columns() {
  return {
      {"signal", Align::kLeft, [](const ReferenceError& e) { return e.signal; }},
      {"RMS", Align::kRight, [](const ReferenceError& e) { return format_general(e.rms); }},
      {"max", Align::kRight, [](const ReferenceError& e) { return format_general(e.max); }},
      {"samples", Align::kRight, [](const ReferenceError& e) { return format_count(e.samples); }},
  };
}

std::string link_health_lines(runtime::Graph& graph) {
  std::vector<const GraphLink*> degraded;
  for (auto& l : graph.links()) {
    if ((l->producer_local || l->consumer_local) && l->health().degraded()) degraded.push_back(l.get());
  }
  if (degraded.empty()) return "link health: no link degraded\n";
  const std::vector<Field<GraphLink>> columns = {
      {"from -> to", Align::kLeft,
       [](const GraphLink& l) { return l.source + " (" + l.producer + ") -> " + l.consumer; }},
      {"stale", Align::kRight, [](const GraphLink& l) { return format_count(l.health().stale); }},
      {"rejected tags", Align::kRight, [](const GraphLink& l) { return format_count(l.health().rejected_tags); }},
      {"rejected values", Align::kRight, [](const GraphLink& l) { return format_count(l.health().rejected_values); }},
      {"fallback frames", Align::kRight, [](const GraphLink& l) { return format_count(l.health().fallback_frames); }},
      {"beyond horizon", Align::kRight,
       [](const GraphLink& l) { return format_count(l.health().beyond_horizon_frames); }},
      {"horizon", Align::kRight, [](const GraphLink& l) { return format_seconds(l.max_extrapolation); }},
      {"longest gap", Align::kRight, [](const GraphLink& l) { return format_seconds(l.health().longest_gap); }},
  };
  // What the table's counts meant for the input, in words, per link: a
  // link read beyond its horizon or behind its data is what makes a loop
  // through it go wrong in a stall (docs/stalls.md).
  std::string said;
  for (const GraphLink* l : degraded) {
    const runtime::LinkHealth h = l->health();
    const std::string name = "  " + l->source + " (" + l->producer + ") -> " + l->consumer + ": ";
    if (h.beyond_horizon_frames > 0) {
      said += name + format_count(h.beyond_horizon_frames) + " frame(s) read beyond its " +
              format_seconds(l->max_extrapolation) + " horizon (up to " + format_seconds(h.longest_gap) +
              " past its newest block): the input was held at the horizon\n";
    }
    if (h.behind_history_frames > 0) {
      said += name + format_count(h.behind_history_frames) +
              " frame(s) read behind the oldest block its method keeps: the input was held at that block\n";
    }
  }
  return "link health:\n" + render_table(columns, degraded) + said;
}

std::vector<ReferenceError> reference_errors(const runtime::Graph&, const runtime::Recorder& recorder,
                                             const tasks::ReferenceSolver& reference, double after) {
  std::vector<ReferenceError> out;
  for (const auto& s : recorder.series()) {
    ReferenceError e{s.signal, 0.0, 0.0, s.time.size()};
    double sum = 0.0, sum_after = 0.0;
    double low = std::numeric_limits<double>::infinity(), high = -low;
    for (std::size_t k = 0; k < s.time.size(); ++k) {
      const double r = reference.value(s.probe, s.time[k], s.element);
      low = std::min(low, r);
      high = std::max(high, r);
      const double d = s.value[k] - r;
      sum += d * d;
      e.max = std::max(e.max, std::fabs(d));
      if (s.time[k] >= after) {
        sum_after += d * d;
        ++e.samples_after;
      }
    }
    e.rms = s.time.empty() ? 0.0 : std::sqrt(sum / static_cast<double>(s.time.size()));
    e.rms_after = e.samples_after == 0 ? 0.0 : std::sqrt(sum_after / static_cast<double>(e.samples_after));
    e.range = s.time.empty() ? 0.0 : high - low;
    out.push_back(e);
  }
  return out;
}

}  // namespace rtcosim::session

namespace rtcosim::session {

namespace {

using base::json_number;

// The link's LinkHealth as members of its JSON object.
std::string link_health_json(const runtime::GraphLink& l) {
  const runtime::LinkHealth h = l.health();
  return ",\"stale\":" + std::to_string(h.stale) + ",\"rejected_tags\":" + std::to_string(h.rejected_tags) +
         ",\"rejected_values\":" + std::to_string(h.rejected_values) +
         ",\"fallback_frames\":" + std::to_string(h.fallback_frames) +
         ",\"beyond_horizon_frames\":" + std::to_string(h.beyond_horizon_frames) +
         ",\"max_extrapolation_s\":" + json_number(l.max_extrapolation) +
         ",\"longest_gap_s\":" + json_number(h.longest_gap) +
         ",\"behind_history_frames\":" + std::to_string(h.behind_history_frames);
}

std::string percentiles(const runtime::LogHistogram& h) {
  return "{\"count\":" + std::to_string(h.count()) + ",\"p50\":" + std::to_string(h.percentile(0.5)) +
         ",\"p99\":" + std::to_string(h.percentile(0.99)) + ",\"p999\":" + std::to_string(h.percentile(0.999)) +
         ",\"max\":" + std::to_string(h.max()) + "}";
}

// A task's events (docs/output.md): handled, and of those located inside a
// frame with what they cost and which bounds they reached; nothing for a
// partition that has had none.
std::string events_json(const runtime::TaskStats& s) {
  const std::uint64_t handled = s.events.load(std::memory_order_relaxed);
  if (handled == 0) return {};
  return ",\"events\":{\"handled\":" + std::to_string(handled) +
         ",\"located\":" + std::to_string(s.events_located.load(std::memory_order_relaxed)) +
         ",\"location_trials\":" + std::to_string(s.location_trials.load(std::memory_order_relaxed)) +
         ",\"trial_limits\":" + std::to_string(s.location_trial_limits.load(std::memory_order_relaxed)) +
         ",\"landing_limits\":" + std::to_string(s.landing_limits.load(std::memory_order_relaxed)) + "}";
}

std::string range(const runtime::RunningRange& r) {
  return "{\"min\":" + json_number(r.min()) + ",\"mean\":" + json_number(r.mean()) +
         ",\"max\":" + json_number(r.max()) + ",\"last\":" + json_number(r.last()) + "}";
}

// A remote link's counters (docs/figures.md, "Per remote link"); nothing
// for a local link.
std::string remote_json(const GraphLink& l, const io::RemoteState& state) {
  const io::RemoteState::Link* e = state.find(&l);
  if (e == nullptr) return "";
  const io::RemoteLinkStats& r = e->stats;
  return ",\"remote\":{\"topic\":" + base::json_string(e->topic) +
         ",\"end\":" + base::json_string(l.producer_local ? "producer" : "consumer") +
         ",\"published\":" + std::to_string(r.written.load()) +
         ",\"write_errors\":" + std::to_string(r.write_errors.load()) +
         ",\"received\":" + std::to_string(r.received.load()) + ",\"lost\":" + std::to_string(r.lost.load()) +
         ",\"sequence_resets\":" + std::to_string(r.sequence_resets.load()) +
         ",\"malformed\":" + std::to_string(r.malformed.load()) +
         ",\"deadline_missed\":" + std::to_string(r.deadline_missed.load()) +
         ",\"ring_full\":" + std::to_string(r.ring_full.load()) + ",\"latency_s\":" + range(r.latency) +
         ",\"data_age_s\":" + range(l.stats->data_age) + "}";
}

}  // namespace

std::string summary_json(runtime::Graph& graph, const std::vector<ReferenceError>& errors, const std::string& policy,
                         const std::string& recording, const io::RemoteState* remote) {
  const std::optional<io::RemoteState> fresh = remote != nullptr ? std::nullopt : std::optional<io::RemoteState>(graph);
  const io::RemoteState& state = remote != nullptr ? *remote : *fresh;
  std::string out = "{\"tasks\":[";
  bool first = true;
  for (const TaskRuntime* t : local_tasks(graph)) {
    const auto& s = t->stats();
    out += first ? "" : ",";
    first = false;
    // What the thread actually got, read back from the kernel; the file's
    // request beside it.
    const runtime::ThreadPlacement& p = t->placement();
    const bool placed = p.policy != "none";
    out += "{\"name\":" + base::json_string(t->spec().name) +
           ",\"cpu\":" + std::to_string(placed ? p.cpu : t->spec().cpu) +
           ",\"policy\":" + base::json_string(placed ? p.policy : policy) +
           ",\"priority\":" + std::to_string(placed ? p.priority : t->spec().priority) +
           ",\"requested\":{\"cpu\":" + std::to_string(t->spec().cpu) +
           ",\"priority\":" + std::to_string(t->spec().priority) + "}" +
           (p.problem.empty() ? std::string() : ",\"setup_problem\":" + base::json_string(p.problem)) +
           ",\"overrun_policy\":" + base::json_string(config::to_string(t->spec().overrun)) +
           ",\"frames\":" + std::to_string(s.frames.load()) + ",\"cycles\":" + std::to_string(s.cycles.load()) +
           ",\"overruns\":" + std::to_string(s.overruns.load()) +
           ",\"missed_periods\":" + std::to_string(s.missed_periods.load()) +
           ",\"latency_ns\":" + percentiles(s.wakeup_latency_ns) +
           ",\"start_lateness_ns\":" + percentiles(s.start_lateness_ns) +
           ",\"exec_ns\":" + percentiles(s.execution_ns) + ",\"cycle_ns\":" + percentiles(s.cycle_ns) +
           ",\"step_s\":" + range(s.step) + ",\"lag_s\":" + range(s.lag) + ",\"local_error\":" + range(s.local_error) +
           ",\"lost_s\":" + json_number(s.lost_real_time.load()) +
           ",\"stalls\":{\"count\":" + std::to_string(s.stalls.load()) +
           ",\"absorbed\":" + std::to_string(s.stalls_absorbed.load()) +
           ",\"catch_up_frames\":" + std::to_string(s.catch_up_frames.load()) +
           ",\"longest_catch_up_frames\":" + std::to_string(s.longest_catch_up.load()) +
           ",\"extra_substeps\":" + std::to_string(s.extra_substeps.load()) +
           ",\"owed_max_s\":" + json_number(s.owed_max.load()) + ",\"owed_s\":" + json_number(s.owed.load()) +
           ",\"data_waits\":" + std::to_string(s.data_waits.load()) + "}" + events_json(s) +
           (t->failed() ? ",\"failure\":" + base::json_string(t->failure()) : std::string()) +
           (t->ended() ? ",\"ended_run\":" + base::json_string(t->ending()) : std::string());
    std::string allocations;
    for (const auto& line : t->allocation_reports())
      allocations += (allocations.empty() ? "" : ",") + base::json_string(line);
    out += (allocations.empty() ? "" : ",\"allocation_warnings\":[" + allocations + "]") + "}";
  }
  out += "],\"links\":[";
  first = true;
  for (const GraphLink* l : local_links(graph)) {
    out += first ? "" : ",";
    first = false;
    out += "{\"from\":" + base::json_string(l->source) + ",\"to\":" + base::json_string(l->consumer) +
           ",\"method\":" + base::json_string(l->method) + ",\"published\":" + std::to_string(l->link->published()) +
           ",\"dropped\":" + std::to_string(l->link->dropped()) + link_health_json(*l) +
           ",\"data_age_s\":" + range(l->stats->data_age) + remote_json(*l, state) + "}";
  }
  out += "],\"signals\":[";
  first = true;
  for (const auto& e : errors) {
    out += first ? "" : ",";
    first = false;
    out += "{\"name\":" + base::json_string(e.signal) + ",\"rms_error\":" + json_number(e.rms) +
           ",\"max_error\":" + json_number(e.max) + "}";
  }
  out += "],\"plant\":" + plant_json();
  if (!state.host_clocks().empty()) {
    out += ",\"hosts\":[";
    first = true;
    for (const auto& c : state.host_clocks()) {
      out += std::string(first ? "" : ",") + "{\"name\":" + base::json_string(c->host) +
             ",\"clock_offset_s\":" + json_number(static_cast<double>(c->offset_ns.load()) * 1e-9) +
             ",\"round_trip_s\":" + json_number(static_cast<double>(c->round_trip_ns.load()) * 1e-9) +
             ",\"exchanges\":" + std::to_string(c->exchanges.load()) + "}";
      first = false;
    }
    const io::AnnounceStats& announces = state.announces();
    const std::string last = announces.last_impersonation.load();
    out += "],\"impersonations\":" + std::to_string(announces.impersonations.load(std::memory_order_relaxed)) +
           (last.empty() ? std::string() : ",\"last_impersonation\":" + base::json_string(last));
  }
  return out + (recording.empty() ? "" : ",\"recording\":" + recording) + "}\n";
}

}  // namespace rtcosim::session
