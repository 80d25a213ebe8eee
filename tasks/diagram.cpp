#include "tasks/diagram.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>
#include <unordered_set>

namespace rtcosim::tasks {

std::unique_ptr<Partition> build_partition(const BlockRegistry& registry, std::string name,
                                           const std::vector<BlockSpec>& blocks, const std::vector<WireSpec>& wires,
                                           std::vector<ExternalInputSpec> externals, IntegratorKind integrator) {
  std::vector<std::unique_ptr<Block>> built;
  built.reserve(blocks.size());
  for (const auto& spec : blocks) built.push_back(registry.create(spec.type, spec.name, spec.params));
  return std::make_unique<Partition>(std::move(name), std::move(built), wires, std::move(externals), integrator);
}

std::vector<TaskPartitionSpec> split_by_task(const BlockRegistry& registry, const DiagramSpec& diagram) {
  std::vector<TaskPartitionSpec> tasks;
  std::map<std::string, std::size_t> task_of_block;
  std::map<std::string, std::size_t> spec_of_block;
  // A block's output widths, learnt by building it once when a wire first leaves its task. Only the widths are
  // kept: keeping every probe block alive held a second copy of the model through the graph's whole set-up.
  std::map<std::string, std::vector<std::pair<std::string, std::size_t>>> widths;
  auto width_of = [&](const Endpoint& e) -> std::size_t {
    auto it = widths.find(e.block);
    if (it == widths.end()) {
      const BlockSpec& spec = diagram.blocks[spec_of_block.at(e.block)];
      const auto probe = registry.create(spec.type, spec.name, spec.params);
      std::vector<std::pair<std::string, std::size_t>> ports;
      for (const auto& port : probe->outputs()) ports.emplace_back(port.name, port.width);
      it = widths.emplace(e.block, std::move(ports)).first;
    }
    std::size_t width = 0;
    for (const auto& [name, w] : it->second) {
      if (name == e.port) width = w;
    }
    return width;
  };
  std::map<std::string, std::size_t> index_of_task;
  auto task_index = [&](const std::string& name) {
    const auto [it, added] = index_of_task.emplace(name, tasks.size());
    if (added) tasks.push_back({name, {}, {}, {}, {}});
    return it->second;
  };
  for (const auto& b : diagram.blocks) {
    if (b.task.empty()) throw BlockError("block '" + b.name + "' is not assigned to a task", b.name);
    const std::size_t t = task_index(b.task);
    tasks[t].blocks.push_back(b);
    task_of_block[b.name] = t;
    spec_of_block[b.name] = static_cast<std::size_t>(&b - diagram.blocks.data());
  }
  // Per task, its externals and exported ports by name: a search per wire
  // made splitting 10^4 links quadratic.
  std::vector<std::unordered_map<std::string, std::size_t>> external_named(tasks.size());
  std::vector<std::unordered_set<std::string>> exported_named(tasks.size());
  auto owner = [&](const Endpoint& e, const std::string& wire) {
    const auto it = task_of_block.find(e.block);
    if (it == task_of_block.end()) throw BlockError(wire + ": no block '" + e.block + "' in the diagram", e.block);
    return it->second;
  };
  for (const auto& w : diagram.wires) {
    const std::string label = "wire '" + w.from.str() + " -> " + w.to.str() + "'";
    const std::size_t from = owner(w.from, label);
    const std::size_t to = owner(w.to, label);
    if (from == to) {
      tasks[to].wires.push_back(w);
      continue;
    }
    const std::size_t width = width_of(w.from);
    if (width == 0) throw BlockError(label + ": block '" + w.from.block + "' has no output port '" + w.from.port + "'");
    auto& externals = tasks[to].externals;
    const std::string name = w.from.str();
    const auto [it, added] = external_named[to].emplace(name, externals.size());
    if (added) externals.push_back({name, width, {}});
    externals[it->second].targets.push_back(w.to);
    if (exported_named[from].insert(name).second) tasks[from].exported.push_back(w.from);
  }
  return tasks;
}

namespace {

class NoInputs final : public InputSource {
 public:
  void sample(std::size_t, double, std::span<double> out) noexcept override { std::fill(out.begin(), out.end(), 0.0); }
};

}  // namespace

ReferenceSolver::ReferenceSolver(const BlockRegistry& registry, const DiagramSpec& diagram, double step) : step_(step) {
  if (!(step > 0.0)) throw BlockError("reference solver: the step must be positive");
  partition_ = build_partition(registry, "reference", diagram.blocks, diagram.wires, {}, IntegratorKind::kRk4);
}

void ReferenceSolver::run(double duration, const std::vector<Endpoint>& probes, const std::atomic<bool>* stop) {
  std::vector<OutputRef> refs;
  for (const auto& p : probes) refs.push_back(partition_->find_output(p));
  const auto steps = static_cast<std::size_t>(std::ceil(duration / step_ - 1e-9));
  stopped_ = false;
  times_.assign(1, 0.0);
  // Up to 2^20 steps ahead: a run that is stopped keeps no more than it made.
  times_.reserve(std::min<std::size_t>(steps, std::size_t{1} << 20) + 1);
  tracks_.assign(refs.size(), {});
  for (std::size_t p = 0; p < refs.size(); ++p) tracks_[p].resize(refs[p].width);

  NoInputs none;
  partition_->reset(0.0);
  auto record = [&] {
    for (std::size_t p = 0; p < refs.size(); ++p) {
      const auto v = partition_->output(refs[p]);
      const auto d = partition_->output_derivative(refs[p]);
      for (std::size_t i = 0; i < refs[p].width; ++i) {
        tracks_[p][i].value.push_back(v[i]);
        tracks_[p][i].slope.push_back(d[i]);
        tracks_[p][i].slope_known = tracks_[p][i].slope_known && partition_->output_derivative_valid(refs[p], i);
      }
    }
  };
  partition_->refresh_outputs(none);
  record();
  double t = 0.0;
  for (std::size_t k = 0; k < steps; ++k) {
    if (stop != nullptr && stop->load(std::memory_order_relaxed)) {
      stopped_ = true;
      break;
    }
    const double next = std::min(duration, static_cast<double>(k + 1) * step_);
    partition_->step(t, next - t, none);
    t = next;
    times_.push_back(t);
    record();
  }
}

const std::vector<double>& ReferenceSolver::samples(std::size_t probe, std::size_t signal) const {
  return tracks_.at(probe).at(signal).value;
}

double ReferenceSolver::value(std::size_t probe, double t, std::size_t signal) const {
  const Track& track = tracks_.at(probe).at(signal);
  if (times_.size() < 2 || t <= times_.front()) return track.value.front();
  if (t >= times_.back()) return track.value.back();
  const auto it = std::upper_bound(times_.begin(), times_.end(), t);
  const auto k = static_cast<std::size_t>(it - times_.begin()) - 1;
  const double t0 = times_[k], t1 = times_[k + 1], h = t1 - t0;
  const double s = (t - t0) / h;
  const double y0 = track.value[k], y1 = track.value[k + 1];
  if (!track.slope_known) return y0 + s * (y1 - y0);
  const double m0 = track.slope[k] * h, m1 = track.slope[k + 1] * h;
  const double s2 = s * s, s3 = s2 * s;
  return (2 * s3 - 3 * s2 + 1) * y0 + (s3 - 2 * s2 + s) * m0 + (-2 * s3 + 3 * s2) * y1 + (s3 - s2) * m1;
}

}  // namespace rtcosim::tasks
