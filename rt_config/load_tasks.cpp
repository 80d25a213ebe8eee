// Reads 'tasks' (with each task's 'execution') and checks CPUs, priorities, rate groups and schedulability.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string_view>
#include <tuple>

#include <unistd.h>

#include "base/duration.hpp"
#include "rt_config/load_context.hpp"
#include "rt_config/schedulability.hpp"
#include "tasks/integrator.hpp"

namespace rtcosim::config::detail {

namespace {

const std::vector<std::string> kTaskKeys = {"name",       "period",     "cpu",       "priority",     "integrator",
                                            "step",       "overrun",    "max_step",  "max_substeps", "max_owed",
                                            "divergence", "rate_group", "execution", "host",         "wait_for_data"};

// Too short a period is an error only where no run could keep it; below
// the practical floors it is a warning, as some runs still can.
void check_task_period(Reader& in, const yaml::Node& node, const std::string& what, double p) {
  if (!(p > 0.0)) {
    in.error(node["period"], what + ": 'period' = " + node["period"].Scalar() +
                                 " is not positive — expected a duration > 0, e.g. \"5ms\"");
  } else if (p < kMinVirtualPeriod * (1.0 - 1e-9)) {
    in.error(node["period"], what + ": 'period' = " + node["period"].Scalar() + " is below the floor of " +
                                 base::format_duration(kMinVirtualPeriod) +
                                 " (virtual time counts whole nanoseconds) — expected at least \"1ns\"");
  } else if (p < kMinPeriod * (1.0 - 1e-9)) {  // "1us" parses a hair below 1e-6
    in.warning(location_of(node["period"]),
               what + ": 'period' = " + node["period"].Scalar() +
                   " is below 1us: it runs only in virtual time (rtcosim run --virtual); a real-time run "
                   "refuses it");
  } else if (p < kPracticalMinPeriod * (1.0 - 1e-9)) {
    in.warning(location_of(node["period"]), what + ": 'period' = " + node["period"].Scalar() + " is below " +
                                                base::format_duration(kPracticalMinPeriod) +
                                                ", the practical floor: wake-up latency alone can take a whole period");
  }
}

// max_substeps and max_owed bound a measured step's catching up: given to a
// fixed step they would be ignored silently, so they are refused.
void read_task_measured_step(Reader& in, const yaml::Node& node, const std::string& what, TaskSpec& t) {
  for (const char* key : {"max_substeps", "max_owed"}) {
    if (node[key] && t.step != StepPolicy::kMeasured) {
      in.error(node[key], what + ": '" + key +
                              "' applies to measured steps only (a fixed step owes no real time) — add "
                              "'step: measured' or remove it");
    }
  }
  if (auto n = in.integer(node, "max_substeps", what, 1, 64)) t.max_substeps = static_cast<int>(*n);
  if (auto o = in.duration(node, "max_owed", what, false)) {
    if (*o > 0.0) {
      t.max_owed = *o;
    } else {
      in.error(node["max_owed"], what + ": 'max_owed' = " + node["max_owed"].Scalar() +
                                     " — expected a duration > 0 (the debt a stall may leave, e.g. \"1s\")");
    }
  }
}

// A rate group runs period_slowest / period_member frames of each member
// per cycle: every member's period must divide the slowest one.
void check_rate_group_periods(Reader& in, const std::map<std::string, std::vector<const TaskSpec*>>& groups) {
  for (const auto& [group, members] : groups) {
    const TaskSpec* slowest = members.front();
    for (const TaskSpec* m : members) {
      if (m->period > slowest->period) slowest = m;
    }
    for (const TaskSpec* m : members) {
      if (m == slowest || !(m->period > 0.0)) continue;
      const double ratio = slowest->period / m->period;
      if (std::fabs(ratio - std::round(ratio)) > 1e-9 * ratio) {
        char shown[32];
        std::snprintf(shown, sizeof shown, "%g", ratio);
        in.error(m->where, "task '" + m->name + "' in rate group '" + group + "' has period " +
                               base::format_duration(m->period) + ", and the group's slowest task '" + slowest->name +
                               "' " + base::format_duration(slowest->period) + ": the ratio is " + shown +
                               " — a rate group runs a whole number of each member's frames per cycle; make the"
                               " ratio an integer, or give the task its own thread (no rate_group), where links"
                               " couple any ratio asynchronously");
      }
    }
  }
}

// The declared execution times against the periods: only warnings, as a
// file may be meant for another machine and its times are a script.
void warn_unschedulable(Reader& in, const GraphSpec& graph, std::map<CpuId, Location>& first_on_cpu) {
  const Schedulability sched = analyse_schedulability(graph);
  for (const auto& [cpu, u] : sched.cpu_load) {
    if (u > 1.0) {
      in.warning(first_on_cpu[cpu], cpu.str() + " is loaded to " + std::to_string(std::lround(u * 100)) +
                                        " % by the declared execution times — its tasks will overrun");
    }
  }
  for (const auto& th : sched.threads) {
    const auto load = sched.cpu_load.find(CpuId{th.host, th.cpu});
    if (th.meets_deadline() || (load != sched.cpu_load.end() && load->second > 1.0)) continue;
    const TaskSpec* first = graph.find_task(th.tasks.front());
    const std::string what = th.tasks.size() > 1 ? "rate group '" + th.name + "'" : "task '" + th.name + "'";
    const std::string response =
        std::isfinite(th.response) ? base::format_duration(th.response) : std::string("unbounded");
    const std::string where = th.cpu >= 0 ? " on " + CpuId{th.host, th.cpu}.str() : std::string();
    std::string why = "longest scripted execution " + base::format_duration(th.execution);
    if (!std::isfinite(th.response)) {
      why += "; the higher priorities on the CPU leave it too little time";
    } else if (th.response > th.execution) {
      why += ", preempted by higher priorities for " + base::format_duration(th.response - th.execution);
    }
    in.warning(first->where, what + where + ": worst-case response time " + response + " exceeds its period " +
                                 base::format_duration(th.period) + " — its frames will overrun (" + why + ")");
  }
}

}  // namespace

void GraphLoader::read_tasks(const yaml::Node& list, const yaml::Node& root) {
  if (!list) {
    in_.error(root, "the task graph has no 'tasks' — expected a list of tasks (name, period, ...)");
    return;
  }
  if (!list.IsSequence() || list.size() == 0) {
    in_.error(list, "'tasks' is " + Reader::kind(list) + " — expected a non-empty list of tasks");
    return;
  }
  std::set<std::string> names;
  for (const auto& node : list) {
    TaskSpec t;
    t.where = location_of(node);
    if (!in_.mapping(node, "a task", kTaskKeys)) continue;
    auto name = in_.text(node, "name", "a task", true);
    const std::string what = "task '" + name.value_or("?") + "'";
    if (name) {
      t.name = *name;
      if (!names.insert(*name).second)
        in_.error(node["name"], "a second task is named '" + *name + "' — task names must be unique");
    }
    if (auto p = in_.duration(node, "period", what, true)) {
      check_task_period(in_, node, what, *p);
      t.period = *p;
    }
    if (auto cpu = in_.integer(node, "cpu", what, 0, 4095)) t.cpu = static_cast<int>(*cpu);
    if (auto prio = in_.integer(node, "priority", what, 1, 99)) t.priority = static_cast<int>(*prio);
    if (auto name_of = in_.choice(node, "integrator", what, {"euler", "ab2", "rk2", "rk4", "ros1", "ros2"})) {
      t.integrator = *tasks::parse_integrator(*name_of);
    }
    if (auto s = in_.choice(node, "step", what, {"fixed", "measured"})) {
      t.step = *s == "measured" ? StepPolicy::kMeasured : StepPolicy::kFixed;
    }
    // A measured step has absorbed the delay already: repaying the grid
    // with back-to-back frames would only burn CPU, so such a task
    // re-phases unless told otherwise.
    t.overrun = t.step == StepPolicy::kMeasured ? OverrunPolicy::kRephase : OverrunPolicy::kCatchUp;
    if (auto o = in_.choice(node, "overrun", what, {"catch_up", "skip", "rephase"})) {
      t.overrun = *o == "skip"      ? OverrunPolicy::kSkip
                  : *o == "rephase" ? OverrunPolicy::kRephase
                                    : OverrunPolicy::kCatchUp;
    }
    if (auto m = in_.duration(node, "max_step", what, false)) {
      t.max_step = *m;
      if (t.period > 0.0 && *m < t.period) {
        in_.error(node["max_step"], what + ": 'max_step' (" + base::format_duration(*m) + ") is below the period (" +
                                        base::format_duration(t.period) + ") — expected at least one period");
      }
    }
    read_task_measured_step(in_, node, what, t);
    if (auto w = in_.boolean(node, "wait_for_data", what)) t.wait_for_data = *w;
    if (auto g = in_.text(node, "rate_group", what, false)) t.rate_group = *g;
    if (auto h = in_.text(node, "host", what, false)) {
      t.host = *h;
      host_locations_[graph_.tasks.size()] = location_of(node["host"]);
    }
    if (const auto ex = node["execution"]) read_execution(ex, what, t.execution);
    if (const auto d = node["divergence"]) read_divergence(d, what, t.divergence);
    graph_.tasks.push_back(std::move(t));
  }
}

void GraphLoader::read_execution(const yaml::Node& node, const std::string& what, ExecutionTimes& out) {
  if (!in_.mapping(node, what + ": 'execution'", {"nominal", "spikes"})) return;
  out.declared = true;
  if (auto n = in_.duration(node, "nominal", what + ": 'execution'", true)) {
    if (*n < 0.0) {
      in_.error(node["nominal"], what + ": 'execution': 'nominal' = " + node["nominal"].Scalar() +
                                     " is negative — expected a duration >= 0");
    }
    out.nominal = *n;
  }
  const auto spikes = node["spikes"];
  if (!spikes) return;
  if (!spikes.IsSequence()) {
    in_.error(spikes, what + ": 'spikes' is " + Reader::kind(spikes) + " — expected a list of {frame, time}");
    return;
  }
  for (const auto& s : spikes) {
    if (!in_.mapping(s, what + ": a spike", {"frame", "time"})) continue;
    ExecutionSpike spike;
    if (auto f = in_.integer(s, "frame", what + ": a spike", 0, 1LL << 53))
      spike.frame = static_cast<std::uint64_t>(*f);
    else if (!s["frame"])
      in_.error(s, what + ": a spike has no 'frame' — it is required");
    if (auto tm = in_.duration(s, "time", what + ": a spike", true)) {
      if (*tm < 0.0) {
        in_.error(s["time"],
                  what + ": a spike: 'time' = " + s["time"].Scalar() + " is negative — expected a duration >= 0");
      }
      spike.time = *tm;
    }
    out.spikes.push_back(spike);
  }
}

void GraphLoader::read_divergence(const yaml::Node& node, const std::string& what, TaskSpec::Divergence& out) {
  const std::string where = what + ": 'divergence'";
  if (!in_.mapping(node, where, {"tolerance", "steps", "state_bound"})) return;
  // A non-negative finite number; 0 turns the check off.
  auto number = [&](const char* key, double& into) {
    const auto v = node[key];
    if (!v) return;
    const std::string text = v.IsScalar() ? v.Scalar() : std::string();
    char* end = nullptr;
    const double x = text.empty() ? std::nan("") : std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(x) || x < 0.0) {
      in_.error(v, where + ": '" + key + "' is " + (v.IsScalar() ? "'" + text + "'" : Reader::kind(v)) +
                       " — expected a number >= 0 (0 turns the check off)");
      return;
    }
    into = x;
  };
  number("tolerance", out.tolerance);
  number("state_bound", out.state_bound);
  if (auto n = in_.integer(node, "steps", where, 1, 1000000)) out.steps = static_cast<int>(*n);
}

void GraphLoader::check_tasks() {
  const int cpus = options_.cpu_count > 0 ? options_.cpu_count : static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  // Per host: tasks on two machines may share a CPU number and priority.
  std::map<std::tuple<std::string, int, int>, std::string> cpu_priority;
  std::map<std::string, const TaskSpec*> group_leader;
  std::map<std::string, std::vector<const TaskSpec*>> groups;
  std::map<CpuId, Location> first_on_cpu;
  std::set<std::string_view> tasks_with_blocks;
  for (const auto& b : graph_.diagram.blocks) tasks_with_blocks.insert(b.task);
  for (const auto& t : graph_.tasks) {
    const std::string what = "task '" + t.name + "'";
    if (t.cpu >= cpus) {
      in_.warning(t.where, what + " is pinned to CPU " + std::to_string(t.cpu) + ", but this machine has " +
                               std::to_string(cpus) + " CPU(s) (0-" + std::to_string(cpus - 1) +
                               ") — fine if the file is meant for another machine");
    }
    // One thread per task, or per rate group (its first task stands for it).
    const bool own_thread = t.rate_group.empty() || !group_leader.count(t.rate_group);
    if (t.cpu >= 0 && t.priority > 0 && own_thread) {
      const auto [it, fresh] = cpu_priority.emplace(std::make_tuple(t.host, t.cpu, t.priority), t.name);
      if (!fresh) {
        in_.error(t.where, what + " and task '" + it->second + "' share CPU " + std::to_string(t.cpu) +
                               " and priority " + std::to_string(t.priority) +
                               " — SCHED_FIFO would run them in arrival order; give them different priorities or CPUs");
      }
    }
    if (!t.rate_group.empty()) {
      const auto [it, fresh] = group_leader.emplace(t.rate_group, &t);
      if (!fresh) {
        const TaskSpec& lead = *it->second;
        if (lead.cpu != t.cpu || lead.priority != t.priority) {
          in_.error(t.where, what + " is in rate group '" + t.rate_group + "' with task '" + lead.name +
                                 "' but has another cpu or priority — a rate group runs in one thread");
        }
      }
      groups[t.rate_group].push_back(&t);
    }
    if (t.cpu >= 0) first_on_cpu.emplace(CpuId{t.host, t.cpu}, t.where);
    if (!tasks_with_blocks.count(t.name) && !t.name.empty()) in_.warning(t.where, what + " runs no block");
  }
  check_rate_group_periods(in_, groups);
  warn_unschedulable(in_, graph_, first_on_cpu);
}

}  // namespace rtcosim::config::detail
