// Reads 'blocks', 'wires' and 'coupling' (the default and each wire's) and checks the diagram they make.
#include <algorithm>
#include <set>
#include <string_view>
#include <unordered_map>
#include <variant>

#include "base/text.hpp"
#include "rt_config/load_context.hpp"
#include "tasks/partition.hpp"

namespace rtcosim::config::detail {

namespace {

const std::vector<std::string> kBlockKeys = {"name", "type", "task", "params"};
const std::vector<std::string> kWireKeys = {"from", "to", "coupling"};

// The ports that wires (their `from`) and `record.signals` name, by block,
// as written, for the blocks that can observe a variable on demand. Read
// once for the whole file: a scan per block made the load of 10^4 blocks
// quadratic (61 s for `rtcosim check` of 10^4 tasks, 0.7 s before it).
using NamedPorts = std::unordered_map<std::string, std::vector<std::string>>;
NamedPorts named_ports(const yaml::Node& root) {
  NamedPorts out;
  auto take = [&](const yaml::Node& n) {
    if (!n || !n.IsScalar()) return;
    const std::string& s = n.Scalar();
    const auto dot = s.find('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == s.size()) return;
    auto& ports = out[s.substr(0, dot)];
    std::string port = s.substr(dot + 1);
    if (std::find(ports.begin(), ports.end(), port) == ports.end()) ports.push_back(std::move(port));
  };
  if (const auto wires = root["wires"]; wires && wires.IsSequence()) {
    for (const auto& w : wires) {
      if (w.IsMap()) take(w["from"]);
    }
  }
  if (const auto record = root["record"]; record && record.IsMap()) {
    if (const auto signals = record["signals"]; signals && signals.IsSequence()) {
      for (const auto& sig : signals) take(sig);
    }
  }
  return out;
}

// "block.port" is split at its first dot: a block's name has none (a
// port's may: an FMU's structured variable names).
void check_block_name(Reader& in, const yaml::Node& node, const std::string& name, const std::string& what) {
  if (name.find('.') != std::string::npos) {
    std::string plain = name;
    std::replace(plain.begin(), plain.end(), '.', '_');
    in.error(node["name"],
             what + ": a block's name has no '.' — \"block.port\" is split at the first dot (e.g. '" + plain + "')");
  }
}

// One parameter with the location of its key, so that an error the block
// raises about it later points at the line that gave it.
bool take_block_param(Reader& in, const yaml::Node& key, const yaml::Node& value, const std::string& name,
                      const std::string& what, tasks::BlockSpec& spec, BlockInfo& info) {
  info.param_locations[name] = location_of(key);
  if (auto v = in.param_value(value, what + ": parameter '" + name + "'")) {
    spec.params.set(name, std::move(*v));
    return true;
  }
  return false;
}

// The block is created here, while its node is at hand: the registry's
// error names a parameter, which is reported at that parameter's key.
void create_block(Reader& in, const tasks::BlockRegistry& blocks, const yaml::Node& node, const NamedPorts& named,
                  const std::string& name, const std::string& type, const std::string& what, tasks::BlockSpec& spec,
                  BlockInfo& info) {
  try {
    info.block = blocks.create(type, name, spec.params);
    // A variable a wire or the recording names that the block can show
    // as an output (an FMU's local or parameter): observed, as if its
    // `observe` named it, so that a user looking into a model need not.
    std::vector<std::string> observe;
    if (const auto it = named.find(name); it != named.end()) {
      for (const auto& port : it->second) {
        if (info.block->can_observe(port)) observe.push_back(port);
      }
    }
    if (!observe.empty()) {
      const auto* given =
          std::get_if<std::string>(spec.params.has("observe") ? &spec.params.all().at("observe") : nullptr);
      std::string observed = given ? *given : std::string();
      for (const auto& o : observe) observed += (observed.empty() ? "" : ", ") + o;
      spec.params.set("observe", observed);
      info.block = blocks.create(type, name, spec.params);
      std::string names;
      for (const auto& o : observe) names += (names.empty() ? "'" : ", '") + o + "'";
      in.note(info.where, what + ": observes " + names +
                              " (no output of the FMU; named by a wire or record.signals), as 'observe' would");
    }
  } catch (const tasks::BlockError& e) {
    Location where = location_of(node["type"]);
    if (const auto it = info.param_locations.find(e.parameter()); it != info.param_locations.end()) {
      where = it->second;
    } else if (!e.parameter().empty() && node["params"]) {
      where = location_of(node["params"]);
    }
    in.error(where, e.what());
  }
}

// A block's task is checked before its wires: a wrong name is one
// message with a did-you-mean, not one per wire that crosses it.
void check_block_tasks(Reader& in, const GraphSpec& graph) {
  std::vector<std::string> block_names;
  for (const auto& b : graph.diagram.blocks) block_names.push_back(b.name);
  std::vector<std::string> task_names;
  std::set<std::string_view> task_set;  // a scan per block made 10^4 tasks a quadratic load
  for (const auto& t : graph.tasks) {
    if (task_set.insert(t.name).second) task_names.push_back(t.name);
  }
  for (std::size_t i = 0; i < graph.diagram.blocks.size(); ++i) {
    const auto& b = graph.diagram.blocks[i];
    if (b.task.empty() || task_set.count(b.task) || graph.tasks.empty()) continue;
    std::string message = "block '" + b.name + "' runs in task '" + b.task + "', which is not defined";
    if (const auto guess = base::closest_match(b.task, task_names); !guess.empty())
      message += " (did you mean '" + guess + "'?)";
    in.error(graph.block_locations[i], message + " — expected one of: " + join(task_names));
  }
}

// Every input needs a source, but an FMU's input (FMI, SSP) may keep its
// start value: a warning there, an error elsewhere. False when the wiring
// is not whole, so that the loop check does not run on it.
bool check_inputs_connected(Reader& in, const std::vector<BlockInfo>& infos, bool wires_unread,
                            const std::set<std::string>& wired_inputs,
                            const std::map<std::string, std::string>& driver) {
  bool ok = true;
  for (std::size_t i = 0; i < infos.size(); ++i) {
    const auto& info = infos[i];
    if (!info.block) {
      ok = false;
      continue;
    }
    for (const auto& port : info.block->inputs()) {
      const std::string key = info.block->name() + "." + port.name;
      if (wires_unread || wired_inputs.count(key)) {
        ok = false;
      } else if (!driver.count(key) && port.start.size() == port.width) {
        // FMI and SSP: an unconnected input keeps its start value.
        in.warning(info.where, "input '" + key + "' of block '" + info.block->name() + "' (" + info.block->type() +
                                   ") is not connected: it keeps its start value " + base::values_text(port.start));
      } else if (!driver.count(key)) {
        in.error(info.where, "input '" + key + "' of block '" + info.block->name() + "' (" + info.block->type() +
                                 ") is not connected — wire a block output to it");
        ok = false;
      }
    }
  }
  return ok;
}

// The partition takes the loader's blocks over: building fresh ones held a second model of the whole diagram
// at the loader's peak. What check_fixed_steps reads of them is taken before (BlockInfo::fixed_step_reason).
void check_algebraic_loops(Reader& in, const GraphSpec& graph, std::vector<BlockInfo>& infos,
                           const std::map<std::string, std::size_t>& block_index) {
  try {
    std::vector<std::unique_ptr<tasks::Block>> merged;
    merged.reserve(infos.size());
    for (auto& info : infos) merged.push_back(std::move(info.block));
    tasks::Partition check("whole diagram", std::move(merged), graph.diagram.wires, {}, tasks::IntegratorKind::kEuler);
  } catch (const tasks::BlockError& e) {
    const auto it = block_index.find(e.block());
    in.error(it != block_index.end() ? graph.block_locations[it->second] : Location{1, 1}, e.what());
  }
}

}  // namespace

void GraphLoader::read_blocks(const yaml::Node& list, const yaml::Node& root) {
  if (!list) {
    in_.error(root, "the task graph has no 'blocks' — expected a list of blocks (name, type, task, params)");
    return;
  }
  if (!list.IsSequence()) {
    in_.error(list, "'blocks' is " + Reader::kind(list) + " — expected a list of blocks");
    return;
  }
  const NamedPorts named = named_ports(root);
  // Sized from the list: grown by doubling, a large graph's spec held up to twice its size.
  graph_.diagram.blocks.reserve(list.size());
  graph_.block_locations.reserve(list.size());
  infos_.reserve(list.size());
  for (const auto& node : list) {
    tasks::BlockSpec spec;
    BlockInfo info;
    info.where = location_of(node);
    if (!in_.mapping(node, "a block", kBlockKeys)) continue;
    const auto name = in_.text(node, "name", "a block", true);
    const std::string what = "block '" + name.value_or("?") + "'";
    const auto type = in_.text(node, "type", what, true);
    const auto task = in_.text(node, "task", what, true);
    if (name) spec.name = *name;
    if (name) check_block_name(in_, node, *name, what);
    if (type) spec.type = *type;
    if (task) spec.task = *task;
    bool params_ok = true;
    if (const auto params = node["params"]) {
      if (params.IsMap()) {
        in_.unique_keys(params, what + ": 'params'");
        for (auto it = params.begin(); it != params.end(); ++it) {
          const std::string key = it->first.Scalar();
          if (it->second.IsMap() && type && takes_mapping(*type, key)) {
            // A mapping parameter (an FMU's start values) becomes one
            // parameter per entry, "key.entry", each with its location.
            in_.unique_keys(it->second, what + ": parameter '" + key + "'");
            for (auto sub = it->second.begin(); sub != it->second.end(); ++sub) {
              const std::string flat = key + "." + sub->first.Scalar();
              if (!take_block_param(in_, sub->first, sub->second, flat, what, spec, info)) params_ok = false;
            }
            continue;
          }
          if (!take_block_param(in_, it->first, it->second, key, what, spec, info)) params_ok = false;
        }
        if (type && !resolve_paths(*type, spec.params, info.param_locations, what)) params_ok = false;
      } else if (!params.IsNull()) {
        in_.error(params, what + ": 'params' is " + Reader::kind(params) +
                              " — expected a mapping of parameter names to values");
        params_ok = false;
      }
    }
    if (name && block_index_.count(*name)) {
      in_.error(node["name"], "a second block is named '" + *name + "' — block names must be unique");
      continue;
    }
    if (name && type && params_ok) create_block(in_, blocks_, node, named, *name, *type, what, spec, info);
    if (name) block_index_[*name] = graph_.diagram.blocks.size();
    graph_.diagram.blocks.push_back(std::move(spec));
    graph_.block_locations.push_back(info.where);
    infos_.push_back(std::move(info));
  }
}

// True when the block type documents `param` as a mapping (an FMU's
// start values); any other parameter given as a mapping is an error.
bool GraphLoader::takes_mapping(const std::string& type, const std::string& param) const {
  const tasks::BlockTypeInfo* info = blocks_.find(type);
  if (!info) return false;
  return std::any_of(info->params.begin(), info->params.end(),
                     [&](const tasks::BlockParamDoc& d) { return d.name == param && d.type == "mapping"; });
}

// A parameter documented as a "path" names a file relative to the
// task-graph file's directory, wherever rtcosim is started from. Where
// the options confine files, the path is replaced by its canonical form
// inside a root (what is checked is what is opened), or refused.
bool GraphLoader::resolve_paths(const std::string& type, tasks::BlockParams& params,
                                const std::map<std::string, Location>& locations, const std::string& what) {
  const tasks::BlockTypeInfo* info = blocks_.find(type);
  if (!info) return true;
  bool ok = true;
  for (const auto& doc : info->params) {
    if (doc.type != "path" || !params.has(doc.name)) continue;
    const auto* text = std::get_if<std::string>(&params.all().at(doc.name));
    if (!text || text->empty()) continue;
    const auto at = locations.find(doc.name);
    const auto path = graph_file(*text, at != locations.end() ? at->second : Location{}, what + ": '" + doc.name + "'");
    if (!path) {
      ok = false;
      continue;
    }
    params.set(doc.name, *path);
  }
  return ok;
}

// A block that can only take equal steps (a co-simulated FMU without
// variable communication steps) in a task with `step: measured`.
void GraphLoader::check_fixed_steps() {
  for (std::size_t i = 0; i < infos_.size() && i < graph_.diagram.blocks.size(); ++i) {
    // Taken over by the loop check (check_diagram), the block left its reason behind.
    const std::string why = infos_[i].block ? infos_[i].block->fixed_step_reason() : infos_[i].fixed_step_reason;
    if (why.empty()) continue;
    const std::string& type = infos_[i].block ? infos_[i].block->type() : infos_[i].type;
    const auto& b = graph_.diagram.blocks[i];
    for (const auto& t : graph_.tasks) {
      if (t.name == b.task && t.step == StepPolicy::kMeasured) {
        in_.error(infos_[i].where, "block '" + b.name + "' (" + type + ") runs in task '" + t.name +
                                       "' with step: measured, but " + why +
                                       " — give the task step: fixed, or use an FMU that can vary its step");
      }
    }
  }
}

std::optional<CouplingSpec> GraphLoader::coupling_spec(const yaml::Node& node, const std::string& what) {
  if (!node.IsMap()) {
    in_.error(node, what + " is " + Reader::kind(node) + " — expected a mapping with 'method' and its parameters");
    return std::nullopt;
  }
  CouplingSpec c;
  c.where = location_of(node);
  in_.unique_keys(node, what);
  const auto method = in_.text(node, "method", what, true);
  if (!method) return std::nullopt;
  c.method = *method;
  std::map<std::string, Location> where;
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string key = it->first.Scalar();
    if (key == "method") continue;
    if (key == "max_extrapolation" || key == "max_tag_lead") {
      const auto seconds = in_.duration(node, key, what, false);
      if (!seconds) return std::nullopt;
      if (!(*seconds > 0.0)) {
        in_.error(it->second, what + ": '" + key + "' must be positive — expected a duration like \"50ms\"");
        return std::nullopt;
      }
      (key == "max_extrapolation" ? c.max_extrapolation : c.max_tag_lead) = seconds;
      continue;
    }
    where[key] = location_of(it->first);
    if (!it->second.IsScalar()) {
      in_.error(it->second,
                what + ": parameter '" + key + "' is " + Reader::kind(it->second) + " — expected a single value");
      return std::nullopt;
    }
    c.params.push_back({key, it->second.Scalar()});
  }
  if (plugins_not_loaded_ && !methods_->find(c.method)) {
    // May come from a plugin; it is checked when the plugins are loaded.
    in_.note(location_of(node["method"]), what + ": method '" + c.method +
                                              "' is not built in; the plugins were not loaded to check it "
                                              "(rtcosim check --load-plugins --plugin-dir DIR does)");
    return c;
  }
  try {
    (void)methods_->resolve(c.method, c.params);
  } catch (const coupling::CouplingError& e) {
    const auto it = where.find(e.parameter());
    in_.error(it != where.end() ? it->second : location_of(node["method"]), e.what());
    return std::nullopt;
  }
  return c;
}

void GraphLoader::read_wires(const yaml::Node& list) {
  // No 'wires' (or 'wires:' with nothing) is a graph without wires: one
  // block with no inputs runs alone. Without a readable wire list, every
  // input would be "not connected": one mistake, one message.
  if (!list || list.IsNull()) return;
  if (!list.IsSequence()) {
    in_.error(list, "'wires' is " + Reader::kind(list) + " — expected a list of wires");
    wires_unread_ = true;
    return;
  }
  graph_.wires.reserve(list.size());
  graph_.diagram.wires.reserve(list.size());
  wire_nodes_.reserve(list.size());
  for (const auto& node : list) {
    if (!in_.mapping(node, "a wire", kWireKeys)) continue;
    WireEntry w;
    w.where = location_of(node);
    const auto from = node["from"] ? in_.endpoint(node["from"], "'from'") : std::nullopt;
    const auto to = node["to"] ? in_.endpoint(node["to"], "'to'") : std::nullopt;
    if (!node["from"]) in_.error(node, "a wire has no 'from' — it is required (\"block.port\")");
    if (!node["to"]) in_.error(node, "a wire has no 'to' — it is required (\"block.port\")");
    if (!from || !to) {
      if (to) wired_inputs_.insert(to->str());  // reported already; not "not connected" as well
      continue;
    }
    w.wire = {*from, *to};
    if (node["coupling"]) {
      // An invalid coupling is reported; the wire itself stays, so its
      // input is not reported as unconnected too.
      w.coupling = coupling_spec(node["coupling"], "the coupling of wire '" + from->str() + " -> " + to->str() + "'");
    }
    wire_nodes_.push_back(node);
    graph_.diagram.wires.push_back(w.wire);
    graph_.wires.push_back(std::move(w));
  }
}

// Ports, widths, sources, unconnected inputs, task assignment, couplings
// and, when all of that holds, algebraic loops over the whole diagram.
void GraphLoader::check_diagram() {
  check_block_tasks(in_, graph_);

  std::map<std::string, std::string> driver;  // "block.input" -> "block.output"
  std::map<std::string, int> drive_count;
  bool wiring_ok = true;
  for (std::size_t w = 0; w < graph_.wires.size(); ++w) {
    auto& entry = graph_.wires[w];
    const yaml::Node& node = wire_nodes_[w];
    const auto out_port = find_port(entry.wire.from, node["from"], true);
    const auto in_port = find_port(entry.wire.to, node["to"], false);
    if (in_port) driver.emplace(entry.wire.to.str(), entry.wire.from.str());  // no cascade of "not connected"
    if (!out_port || !in_port) {
      wiring_ok = false;
      continue;
    }
    if (out_port->width != in_port->width) {
      in_.error(node, "wire '" + entry.wire.from.str() + " -> " + entry.wire.to.str() + "': widths differ (" +
                          entry.wire.from.str() + " has " + std::to_string(out_port->width) + " signal(s), " +
                          entry.wire.to.str() + " expects " + std::to_string(in_port->width) +
                          ") — expected ports of equal width");
      wiring_ok = false;
    }
    const auto it = driver.find(entry.wire.to.str());
    if (it->second != entry.wire.from.str() || ++drive_count[entry.wire.to.str()] > 1) {
      in_.error(node["to"], "input '" + entry.wire.to.str() + "' is driven twice: by '" + it->second + "' and by '" +
                                entry.wire.from.str() + "' — an input takes one source");
      wiring_ok = false;
    }
    const auto& from_task = graph_.diagram.blocks[block_index_[entry.wire.from.block]].task;
    const auto& to_task = graph_.diagram.blocks[block_index_[entry.wire.to.block]].task;
    entry.crosses_tasks = from_task != to_task;
    if (!entry.crosses_tasks && entry.coupling) {
      in_.error(node["coupling"], "wire '" + entry.wire.from.str() + " -> " + entry.wire.to.str() +
                                      "' stays within task '" + from_task +
                                      "' and takes no coupling — only wires between tasks become links");
    }
    if (entry.crosses_tasks) check_rim_link(entry, node, *out_port, *in_port);
  }
  if (!check_inputs_connected(in_, infos_, wires_unread_, wired_inputs_, driver)) wiring_ok = false;
  for (std::size_t r = 0; r < graph_.record.signals.size(); ++r) {
    (void)find_port(graph_.record.signals[r], record_nodes_[r], true);
  }
  if (!wiring_ok || has_errors(result_.diagnostics)) return;

  // Algebraic loops across the whole diagram: the merged partition finds them.
  for (auto& info : infos_) {
    info.fixed_step_reason = info.block->fixed_step_reason();
    info.type = info.block->type();
  }
  check_algebraic_loops(in_, graph_, infos_, block_index_);
}

// A reduced interface model (a mechanical block's `rim` port, docs/rim.md)
// is a packed matrix payload, not a signal: only the `rim` method carries
// it between tasks, and the `rim` method carries nothing else.
void GraphLoader::check_rim_link(const WireEntry& entry, const yaml::Node& node, const tasks::PortInfo& out,
                                 const tasks::PortInfo& in) {
  const std::string& method = graph_.coupling_of(entry).method;
  const bool payload = out.name == "rim" && in.name == "rim";
  const std::string wire = "wire '" + entry.wire.from.str() + " -> " + entry.wire.to.str() + "'";
  const Location at = entry.coupling ? location_of(node["coupling"]) : location_of(node);
  if (payload && method != "rim") {
    in_.error(at, wire + " carries a reduced interface model, which method '" + method +
                      "' would extrapolate like a signal — expected coupling: {method: rim}");
  } else if (!payload && method == "rim") {
    in_.error(at, wire +
                      " uses method 'rim', which carries a reduced interface model from a mechanical "
                      "block's 'rim' output to another's 'rim' input — expected a signal method (e.g. zoh, "
                      "predictor) here, or a wire from X.rim to Y.rim");
  }
}

std::optional<tasks::PortInfo> GraphLoader::find_port(const tasks::Endpoint& e, const yaml::Node& at, bool output) {
  const auto it = block_index_.find(e.block);
  if (it == block_index_.end()) {
    std::vector<std::string> names;
    for (const auto& [n, i] : block_index_) names.push_back(n);
    std::string message = "no block named '" + e.block + "'";
    if (const auto guess = base::closest_match(e.block, names); !guess.empty())
      message += " (did you mean '" + guess + "'?)";
    in_.error(at, message + " in '" + e.str() + "'");
    return std::nullopt;
  }
  const auto& block = infos_[it->second].block;
  if (!block) return std::nullopt;  // already reported
  const auto& ports = output ? block->outputs() : block->inputs();
  std::vector<std::string> names;
  for (const auto& p : ports) {
    if (p.name == e.port) return p;
    names.push_back(p.name);
  }
  std::string message = "block '" + e.block + "' (" + block->type() + ") has no " + (output ? "output" : "input") +
                        " port '" + e.port + "'";
  const auto& other = output ? block->inputs() : block->outputs();
  if (std::any_of(other.begin(), other.end(), [&](const tasks::PortInfo& p) { return p.name == e.port; })) {
    message += " ('" + e.port + "' is one of its " + (output ? "inputs" : "outputs") + ")";
  } else if (const auto why = block->why_not_a_port(e.port); !why.empty()) {
    message += " (" + why + ")";
  } else if (const auto guess = base::closest_match(e.port, names); !guess.empty()) {
    message += " (did you mean '" + guess + "'?)";
  }
  in_.error(at, message + " — its " + (output ? "outputs" : "inputs") + ": " + (names.empty() ? "none" : join(names)));
  return std::nullopt;
}

}  // namespace rtcosim::config::detail
