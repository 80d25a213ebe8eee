// Reads 'sync' (its 'delay', 'compare' and 'optimise').
#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <sstream>

#include "rt_config/delay_model.hpp"
#include "rt_config/load_context.hpp"

namespace rtcosim::config::detail {

namespace {

// A name that is not a task is reported at its own entry; the others are
// still taken, so that one reading reports every wrong name.
void read_optimise_tasks(Reader& in, const GraphSpec& graph, const yaml::Node& tasks, const std::string& what,
                         std::vector<std::string>& out) {
  if (!tasks.IsSequence() || tasks.size() == 0) {
    in.error(tasks, what + ": 'tasks' is " + Reader::kind(tasks) + " — expected a list of task names");
  } else {
    for (const auto& t : tasks) {
      if (!t.IsScalar() || !graph.find_task(t.Scalar())) {
        in.error(t, what + ": 'tasks' names " + Reader::kind(t) + ", which is not a task of this graph");
      } else {
        out.push_back(t.Scalar());
      }
    }
  }
}

// All three numbers are reported before their order is checked, so that
// one reading names every missing or malformed bound.
bool read_variable_bounds(Reader& in, const yaml::Node& v, const tasks::Endpoint& param, SyncVariable& var) {
  bool good = true;
  for (auto [key, out] : {std::pair{"lower", &var.lower}, {"upper", &var.upper}, {"start", &var.start}}) {
    const yaml::Node n = v[key];
    double x = 0.0;
    if (!n || !n.IsScalar() || !yaml::decode(n, x) || !std::isfinite(x)) {
      in.error(n ? n : v, std::string("a decision variable's '") + key + "' is " +
                              (n ? Reader::kind(n) : std::string("missing")) + " — expected a finite number");
      good = false;
    }
    *out = x;
  }
  if (good && !(var.lower < var.upper && var.lower <= var.start && var.start <= var.upper)) {
    auto num = [](double x) {
      std::ostringstream text;
      text << x;
      return text.str();
    };
    in.error(v, "decision variable '" + param.str() + "': lower " + num(var.lower) + ", start " + num(var.start) +
                    ", upper " + num(var.upper) + " — expected lower < upper and the start between them");
    good = false;
  }
  return good;
}

// Only a parameter the block can change between runs can be optimised;
// the message lists those it has, since they are few and fixed per type.
bool is_tunable(Reader& in, const yaml::Node& v, const tasks::Endpoint& param, const tasks::Block& block) {
  std::vector<std::string> names;
  std::string listed;
  for (const char* n : block.tunable_parameters()) {
    listed += (names.empty() ? "" : ", ") + std::string(n);
    names.emplace_back(n);
  }
  if (std::find(names.begin(), names.end(), param.port) == names.end()) {
    in.error(v["parameter"], "block '" + param.block + "' (" + block.type() + ") has no tunable parameter '" +
                                 param.port + "' — " +
                                 (names.empty() ? std::string("it has none (a scalar gain's 'gain' and a "
                                                              "scalar constant's 'value' are)")
                                                : "expected one of: " + listed));
    return false;
  }
  return true;
}

// Each element is read on its own: a wrong one is reported and skipped,
// the others still taken, so that one reading reports every wrong element.
std::map<std::string, config::DelayElement> read_delay_elements(Reader& in, const GraphSpec& graph,
                                                                const yaml::Node& list) {
  std::map<std::string, config::DelayElement> elements;
  for (const auto& e : list) {
    const std::string name = e.first.Scalar();
    const std::string what = "sync element '" + name + "'";
    if (!in.mapping(e.second, what, {"dead_time", "cycle", "task"})) continue;
    config::DelayElement element{name, in.duration(e.second, "dead_time", what, true).value_or(0.0), 0.0};
    if (auto task = in.text(e.second, "task", what, false)) {
      const auto it =
          std::find_if(graph.tasks.begin(), graph.tasks.end(), [&](const TaskSpec& t) { return t.name == *task; });
      if (it == graph.tasks.end()) {
        in.error(e.second["task"], what + " takes its cycle from task '" + *task + "', which 'tasks' does not list");
      } else {
        element.cycle = it->period;
      }
    } else {
      element.cycle = in.duration(e.second, "cycle", what + " (or 'task')", true).value_or(0.0);
    }
    elements[name] = element;
  }
  return elements;
}

// A hop is one line of text, "A -> B sync ^n": parsed by words here, so
// that a malformed one is reported at its own line with the whole syntax.
void read_delay_hops(Reader& in, const yaml::Node& seq, std::map<std::string, config::DelayElement>& elements,
                     std::vector<config::Hop>& hops) {
  for (const auto& h : seq) {
    std::istringstream words(h.IsScalar() ? h.Scalar() : std::string());
    std::string from, arrow, to, kind, power, rest;
    words >> from >> arrow >> to >> kind >> power >> rest;
    // "^n": the hop n times over (eq. 4.15's alpha^n_CM, n = T_D).
    int repeat = 1;
    bool power_ok = power.empty();
    if (!power.empty() && power[0] == '^') {
      const std::string digits = power.substr(1);
      power_ok = !digits.empty() && digits.size() <= 4 &&
                 std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c); });
      if (power_ok) repeat = std::stoi(digits);
      power_ok = power_ok && repeat >= 1 && repeat <= 1000;
    }
    if (arrow != "->" || (kind != "sync" && kind != "async") || !elements.count(from) || !elements.count(to) ||
        !power_ok || !rest.empty()) {
      in.error(h, "hop " + Reader::kind(h) +
                      " — expected \"A -> B sync\" or \"A -> B async\", optionally followed by ^n "
                      "(the hop n times over, 1..1000), with A and B among 'sync.delay.elements'");
      continue;
    }
    hops.push_back({elements[from], elements[to],
                    kind == "sync" ? config::HopKind::synchronous : config::HopKind::asynchronous, repeat});
  }
}

}  // namespace

// docs/sync.md. Elements name a dead time and a cycle time (or the task
// whose period is its cycle); hops are "A -> B sync|async".
void GraphLoader::read_sync(const yaml::Node& node) {
  if (!node) return;
  if (!in_.mapping(node, "'sync'", {"delay", "compare", "optimise"})) return;
  SyncSpec& sync = graph_.sync;
  sync.enabled = true;
  const yaml::Node delay = node["delay"];
  if (delay && delay.IsScalar() && delay.Scalar() == "measured") {
    sync.measured = true;
  } else if (delay && delay.IsScalar() && delay.Scalar() != "auto") {
    if (auto d = in_.duration(node, "delay", "'sync'", true)) sync.delay = *d;
  } else if (delay && delay.IsMap()) {
    read_sync_delay(delay);
  } else if (delay) {
    in_.error(delay, "'sync.delay' is " + Reader::kind(delay) +
                         " — expected a duration (\"8ms\"), 'measured' (from the plant data's time tags) or a "
                         "mapping with 'auto: true', 'elements', 'measurement' and 'simulation'");
  }
  const yaml::Node compare = node["compare"];
  if (!compare || !compare.IsSequence() || compare.size() == 0) {
    in_.error(compare ? compare : node,
              "'sync' needs 'compare': a list of {simulated: block.port, measured: "
              "block.port}, both among 'record.signals'");
    return;
  }
  for (const auto& pair : compare) {
    if (!in_.mapping(pair, "a 'sync.compare' entry", {"simulated", "measured", "weight"})) continue;
    auto sim = in_.endpoint(pair["simulated"], "'simulated'");
    auto meas = in_.endpoint(pair["measured"], "'measured'");
    if (!sim || !meas) continue;
    SyncComparison c{*sim, *meas, 1.0};
    if (pair["weight"]) {
      if (!pair["weight"].IsScalar() || !(pair["weight"].as<double>(-1.0) > 0.0)) {
        in_.error(pair["weight"], "'weight' is " + Reader::kind(pair["weight"]) + " — expected a number > 0");
      } else {
        c.weight = pair["weight"].as<double>();
      }
    }
    for (const auto* e : {&c.simulated, &c.measured}) {
      const bool recorded = std::any_of(graph_.record.signals.begin(), graph_.record.signals.end(),
                                        [&](const tasks::Endpoint& r) { return r.str() == e->str(); });
      if (!recorded) in_.error(pair, "'sync.compare' names '" + e->str() + "', which 'record.signals' does not list");
    }
    sync.compare.push_back(c);
  }
  read_sync_optimise(node["optimise"]);
}

// docs/sync.md, "The state synchronisation from a task graph".
void GraphLoader::read_sync_optimise(const yaml::Node& node) {
  if (!node) return;
  const std::string what = "'sync.optimise'";
  if (!in_.mapping(
          node, what,
          {"variables", "tasks", "step", "horizon", "scheme", "solver", "max_evaluations", "max_time", "reduce"}))
    return;
  SyncOptimiseSpec& o = graph_.sync.optimise;
  o.enabled = true;
  o.where = location_of(node);
  if (const yaml::Node tasks = node["tasks"]) read_optimise_tasks(in_, graph_, tasks, what, o.tasks);
  if (auto h = in_.duration(node, "step", what, false)) {
    if (!(*h > 0.0)) in_.error(node["step"], what + ": 'step' must be > 0 — the common macro step h");
    o.step = *h;
  }
  if (auto n = in_.integer(node, "horizon", what, 1, 1000)) o.horizon = static_cast<int>(*n);
  if (auto scheme = in_.choice(node, "scheme", what, {"static", "dynamic"})) o.dynamic = *scheme == "dynamic";
  if (auto solver = in_.choice(node, "solver", what, {"bobyqa", "nelder_mead", "sbplx"})) o.solver = *solver;
  if (auto n = in_.integer(node, "max_evaluations", what, 1, 1000000)) o.max_evaluations = static_cast<int>(*n);
  if (auto t = in_.duration(node, "max_time", what, false)) o.max_time = *t;
  if (auto r = in_.boolean(node, "reduce", what)) o.reduce = *r;
  const yaml::Node vars = node["variables"];
  if (!vars || !vars.IsSequence() || vars.size() == 0) {
    in_.error(vars ? vars : node, what +
                                      " needs 'variables': a list of {parameter: block.name, lower, upper, "
                                      "start}, each a tunable parameter of a block");
    return;
  }
  for (const auto& v : vars) {
    if (!in_.mapping(v, "a 'sync.optimise.variables' entry", {"parameter", "lower", "upper", "start"})) continue;
    const auto param = in_.endpoint(v["parameter"], "'parameter'");
    if (!param) continue;
    SyncVariable var{param->block, param->port, 0.0, 0.0, 0.0, location_of(v)};
    bool good = read_variable_bounds(in_, v, *param, var);
    const auto it = block_index_.find(param->block);
    if (it == block_index_.end()) {
      in_.error(v["parameter"], "decision variable '" + param->str() + "': no block named '" + param->block + "'");
      continue;
    }
    const auto& block = infos_[it->second].block;
    if (block && !is_tunable(in_, v, *param, *block)) good = false;
    if (good) o.variables.push_back(var);
  }
}

void GraphLoader::read_sync_delay(const yaml::Node& delay) {
  SyncSpec& sync = graph_.sync;
  if (!in_.mapping(delay, "'sync.delay'", {"auto", "grid", "acquisition", "elements", "measurement", "simulation"}))
    return;
  sync.automatic = in_.boolean(delay, "auto", "'sync.delay'").value_or(false);
  if (!sync.automatic) {
    in_.error(delay, "'sync.delay' as a mapping needs 'auto: true' — or give the delay itself, e.g. \"8ms\"");
    return;
  }
  if (auto g = in_.duration(delay, "grid", "'sync.delay'", false)) sync.grid = *g;
  if (auto a = in_.text(delay, "acquisition", "'sync.delay'", false)) acquisition_ = *a;
  const yaml::Node list = delay["elements"];
  if (!list || !list.IsMap()) {
    in_.error(list ? list : delay,
              "'sync.delay.elements' must be a mapping of element name to {dead_time, cycle "
              "or task}, e.g. {P: {dead_time: 10ms, cycle: 0.1ms}}");
    return;
  }
  std::map<std::string, config::DelayElement> elements = read_delay_elements(in_, graph_, list);
  if (!acquisition_.empty()) {
    if (!elements.count(acquisition_)) {
      in_.error(delay["acquisition"], "'sync.delay.acquisition' is '" + acquisition_ + "', not an element");
    } else {
      sync.acquisition_cycle = elements[acquisition_].cycle;
    }
  }
  for (const char* path : {"measurement", "simulation"}) {
    auto& hops = std::string(path) == "measurement" ? sync.measurement_path : sync.simulation_path;
    const yaml::Node seq = delay[path];
    if (!seq || !seq.IsSequence()) {
      in_.error(seq ? seq : delay,
                std::string("'sync.delay.") + path + "' must be a list of hops like \"C -> P sync\"");
      continue;
    }
    read_delay_hops(in_, seq, elements, hops);
  }
  try {
    sync.delay = config::output_delay(sync.measurement_path, sync.simulation_path, sync.grid).delta_o;
  } catch (const config::DelayModelError& e) {
    in_.error(delay, e.what());
  }
}

}  // namespace rtcosim::config::detail
