#include "runtime/recorder.hpp"

#include <cstdio>

namespace rtcosim::runtime {

Recorder::Recorder(Graph& graph, std::size_t samples_per_task) {
  const auto& signals = graph.spec().record.signals;
  for (std::size_t probe = 0; probe < signals.size(); ++probe) {
    const auto& signal = signals[probe];
    std::string task_name;
    for (const auto& b : graph.spec().diagram.blocks) {
      if (b.name == signal.block) task_name = b.task;
    }
    TaskRuntime* task = graph.find_task(task_name);
    if (!task) continue;
    Channel* channel = nullptr;
    for (auto& c : channels_) {
      if (c->task == task) channel = c.get();
    }
    if (!channel) {
      channels_.push_back(std::make_unique<Channel>());
      channel = channels_.back().get();
      channel->task = task;
    }
    const auto ref = task->partition().find_output(signal);
    channel->refs.push_back(ref);
    for (std::size_t i = 0; i < ref.width; ++i) {
      channel->series.push_back(series_.size());
      series_.push_back({ref.width == 1 ? signal.str() : signal.str() + "[" + std::to_string(i) + "]", task_name, probe, i,
                         {}, {}});
    }
    channel->width += ref.width;
  }
  for (auto& c : channels_) {
    c->ring = std::make_unique<boost::lockfree::spsc_queue<double>>(samples_per_task * (c->width + 1));
    c->scratch.assign(c->width + 1, 0.0);
  }
}

std::size_t Recorder::signal_count() const noexcept { return series_.size(); }

std::uint64_t Recorder::dropped() const noexcept {
  std::uint64_t n = 0;
  for (const auto& c : channels_) n += c->dropped.load(std::memory_order_relaxed);
  return n;
}

void Recorder::sample(const TaskRuntime& task) noexcept {
  for (auto& c : channels_) {
    if (c->task != &task) continue;
    if (c->ring->write_available() < c->width + 1) {
      c->dropped.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    std::size_t k = 0;
    c->scratch[k++] = task.partition().time();
    for (const auto& ref : c->refs) {
      for (double v : task.partition().output(ref)) c->scratch[k++] = v;
    }
    (void)c->ring->push(c->scratch.data(), k);
    return;
  }
}

void Recorder::write_header(std::ostream& out) const { out << "time_s,task,signal,value\n"; }

void Recorder::drain(std::ostream& out) {
  char buf[64];
  for (auto& c : channels_) {
    std::vector<double> row(c->width + 1);
    while (c->ring->read_available() >= row.size()) {
      (void)c->ring->pop(row.data(), row.size());
      for (std::size_t i = 0; i < c->width; ++i) {
        Series& s = series_[c->series[i]];
        s.time.push_back(row[0]);
        s.value.push_back(row[i + 1]);
        std::snprintf(buf, sizeof buf, "%.9g,", row[0]);
        out << buf << s.task << ',' << s.signal << ',';
        std::snprintf(buf, sizeof buf, "%.17g\n", row[i + 1]);
        out << buf;
      }
    }
  }
}

}  // namespace rtcosim::runtime
