#include "runtime/graph.hpp"

#include <algorithm>
#include <cmath>

#include "runtime/trace.hpp"

namespace rtcosim::runtime {

void LinkInputs::bind(GraphLink* link) {
  links_.push_back(link);
  mean_offsets_.push_back(means_.size());
  means_.resize(means_.size() + link->link->signal_count(), 0.0);
}

void LinkInputs::begin_step(double t, double h) noexcept {
  for (std::size_t i = 0; i < links_.size(); ++i) {
    coupling::Extrapolator& e = links_[i]->link->extrapolator();
    if (!e.averages_over_step()) continue;
    e.step_mean(t, t + h, std::span<double>(means_.data() + mean_offsets_[i], e.signal_count()));
  }
}

void LinkInputs::sample(std::size_t input, double t, std::span<double> out) noexcept {
  GraphLink& l = *links_[input];
  const coupling::Extrapolator& e = l.link->extrapolator();
  if (pass_ == tasks::InputPass::kIntegration && e.averages_over_step()) {
    const double* mean = means_.data() + mean_offsets_[input];
    std::copy(mean, mean + out.size(), out.begin());
  } else {
    e.evaluate(t, out);
  }
  const double newest = e.newest_tag();
  if (std::isfinite(newest)) l.stats.extrapolation_interval.add(t - newest);
}

TaskRuntime::TaskRuntime(const config::TaskSpec& spec, std::unique_ptr<tasks::Partition> partition)
    : spec_(spec),
      partition_(std::move(partition)),
      policy_(spec.step == config::StepPolicy::kMeasured ? StepPolicy::Kind::kMeasured : StepPolicy::Kind::kFixed,
              spec.period, spec.max_step) {}

void TaskRuntime::drain() noexcept {
  const double t = partition_->time();
  for (GraphLink* l : inputs_.links()) {
    const std::size_t blocks = l->link->drain();
    const double newest = l->link->extrapolator().newest_tag();
    if (std::isfinite(newest)) l->stats.data_age.add(t - newest);
    trace::link_drain(l->id, static_cast<std::uint32_t>(blocks), newest, t - newest);
  }
}

void TaskRuntime::step(double h) noexcept {
  partition_->step(partition_->time(), h, inputs_);
  stats_.step.add(h);
  if (partition_->integrator() == tasks::IntegratorKind::kAb2) stats_.truncation_error.add(partition_->truncation_error());
  stage_outputs();
}

void TaskRuntime::stage_outputs() noexcept {
  ++sequence_;
  for (OutputBinding& o : outputs_) {
    o.block.tag = partition_->time();
    o.block.sequence = sequence_;
    o.block.producer_step = stats_.step.last();
    o.block.discontinuity = false;
    const auto v = partition_->output(o.ref);
    const auto d = partition_->output_derivative(o.ref);
    const auto known = partition_->output_derivative_flags(o.ref);
    for (std::size_t i = 0; i < v.size(); ++i) o.block.set(i, v[i], d[i], known[i] != 0);
  }
}

void TaskRuntime::publish() noexcept {
  for (OutputBinding& o : outputs_) {
    const bool delivered = o.link->link->publish(o.block);
    trace::link_publish(o.link->id, o.block.sequence, o.block.tag, !delivered);
  }
}

void TaskRuntime::publish_initial() noexcept {
  partition_->refresh_outputs(inputs_);
  sequence_ = 0;
  stage_outputs();
  publish();
}

TaskRuntime* Graph::find_task(const std::string& name) noexcept {
  for (auto& t : tasks_) {
    if (t->spec().name == name) return t.get();
  }
  return nullptr;
}

std::unique_ptr<Graph> Graph::build(const config::GraphSpec& spec, const tasks::BlockRegistry& blocks,
                                    const coupling::MethodRegistry& methods) {
  std::unique_ptr<Graph> g(new Graph(spec));
  const auto parts = tasks::split_by_task(blocks, g->spec_.diagram);
  auto task_of_block = [&](const std::string& block) -> std::string {
    for (const auto& b : g->spec_.diagram.blocks) {
      if (b.name == block) return b.task;
    }
    return {};
  };
  for (const auto& ts : g->spec_.tasks) {
    const auto it = std::find_if(parts.begin(), parts.end(), [&](const auto& p) { return p.task == ts.name; });
    std::unique_ptr<tasks::Partition> partition =
        it == parts.end() ? tasks::build_partition(blocks, ts.name, {}, {}, {}, ts.integrator)
                          : tasks::build_partition(blocks, ts.name, it->blocks, it->wires, it->externals, ts.integrator);
    g->tasks_.push_back(std::make_unique<TaskRuntime>(ts, std::move(partition)));
    g->tasks_.back()->set_id(static_cast<std::uint16_t>(g->tasks_.size() - 1));
  }
  for (auto& consumer : g->tasks_) {
    for (const auto& external : consumer->partition().externals()) {
      const std::string producer_name = task_of_block(external.name.substr(0, external.name.rfind('.')));
      TaskRuntime* producer = g->find_task(producer_name);
      if (!producer) throw tasks::BlockError("internal: no producer task for link '" + external.name + "'");
      // The coupling of the first wire from this port into this task.
      const config::CouplingSpec* coupling = &g->spec_.default_coupling;
      for (const auto& w : g->spec_.wires) {
        if (w.wire.from.str() == external.name && task_of_block(w.wire.to.block) == consumer->spec().name) {
          coupling = &g->spec_.coupling_of(w);
          break;
        }
      }
      auto link = std::make_unique<GraphLink>();
      link->id = static_cast<std::uint16_t>(g->links_.size());
      link->source = external.name;
      link->producer = producer->spec().name;
      link->consumer = consumer->spec().name;
      link->method = coupling->method;
      const double consumer_max = consumer->policy().max_step();
      link->link = std::make_unique<coupling::Link>(
          external.width,
          coupling::LinkTiming{producer->spec().period, consumer->spec().period, consumer_max, 2},
          methods.create(coupling->method, coupling->params, external.width));
      consumer->inputs().bind(link.get());
      const auto dot = external.name.rfind('.');
      OutputBinding out;
      out.ref = producer->partition().find_output({external.name.substr(0, dot), external.name.substr(dot + 1)});
      out.block = coupling::DataBlock(external.width);
      out.link = link.get();
      producer->outputs().push_back(std::move(out));
      g->links_.push_back(std::move(link));
    }
  }
  return g;
}

void Graph::trace_names() const noexcept {
  for (const auto& t : tasks_) {
    trace::task_info(t->id(), t->spec().name.c_str(), t->spec().cpu, t->spec().priority, t->spec().period);
  }
  for (const auto& l : links_) trace::link_info(l->id, l->source.c_str(), l->consumer.c_str(), l->method.c_str());
}

void Graph::reset() noexcept {
  for (auto& l : links_) {
    l->link->drain_to([](const coupling::DataBlock&) noexcept {});
    l->link->extrapolator().reset();
  }
  for (auto& t : tasks_) t->partition().reset(0.0);
  for (auto& t : tasks_) t->publish_initial();
}

}  // namespace rtcosim::runtime
