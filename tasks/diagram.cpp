#include "tasks/diagram.hpp"

#include <algorithm>
#include <cmath>

namespace rtcosim::tasks {

std::unique_ptr<Partition> build_partition(const BlockRegistry& registry, std::string name,
                                           const std::vector<BlockSpec>& blocks, const std::vector<WireSpec>& wires,
                                           std::vector<ExternalInputSpec> externals, IntegratorKind integrator) {
  std::vector<std::unique_ptr<Block>> built;
  built.reserve(blocks.size());
  for (const auto& spec : blocks) built.push_back(registry.create(spec.type, spec.name, spec.params));
  return std::make_unique<Partition>(std::move(name), std::move(built), wires, std::move(externals), integrator);
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

void ReferenceSolver::run(double duration, const std::vector<Endpoint>& probes) {
  std::vector<OutputRef> refs;
  for (const auto& p : probes) refs.push_back(partition_->find_output(p));
  const auto steps = static_cast<std::size_t>(std::ceil(duration / step_ - 1e-9));
  times_.assign(1, 0.0);
  times_.reserve(steps + 1);
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
