#include "runtime/recorder.hpp"

#include <cstdio>

namespace rtcosim::runtime {

namespace {

// Ring entry: time, the task's drop count when it was taken, the values.
constexpr std::size_t kHeader = 2;

}  // namespace

Recorder::Recorder(Graph& graph, Options options) : keep_(options.keep) {
  const auto& signals = graph.spec().record.signals;
  for (std::size_t probe = 0; probe < signals.size(); ++probe) {
    const auto& signal = signals[probe];
    std::string task_name;
    for (const auto& b : graph.spec().diagram.blocks) {
      if (b.name == signal.block) task_name = b.task;
    }
    TaskRuntime* task = graph.find_task(task_name);
    if (!task || !task->local()) continue;  // recorded by its own host
    Channel* channel = nullptr;
    for (auto& c : channels_) {
      if (c->task == task) channel = c.get();
    }
    if (!channel) {
      channels_.push_back(std::make_unique<Channel>());
      channel = channels_.back().get();
      channel->task = task;
      append_csv_field(channel->csv_task, task_name);
    }
    const auto ref = task->partition().find_output(signal);
    channel->refs.push_back(ref);
    for (std::size_t i = 0; i < ref.width; ++i) {
      channel->series.push_back(series_.size());
      series_.push_back(
          {ref.width == 1 ? signal.str() : signal.str() + "[" + std::to_string(i) + "]", task_name, probe, i, {}, {}});
      std::string name = ",";
      append_csv_field(name, task_name);
      name += ',';
      append_csv_field(name, series_.back().signal);
      csv_names_.push_back(name + ',');
    }
    channel->width += ref.width;
  }
  for (auto& c : channels_) {
    c->ring = std::make_unique<boost::lockfree::spsc_queue<double>>(options.samples_per_task * (c->width + kHeader));
    c->scratch.assign(c->width + kHeader, 0.0);
    c->row.assign(c->width + kHeader, 0.0);
  }
}

std::size_t Recorder::signal_count() const noexcept { return series_.size(); }

std::uint64_t Recorder::dropped() const noexcept {
  std::uint64_t n = 0;
  for (const auto& c : channels_) n += c->dropped.load(std::memory_order_relaxed);
  return n;
}

std::vector<Recorder::TaskCounts> Recorder::counts() const {
  std::vector<TaskCounts> out;
  for (const auto& c : channels_) {
    out.push_back({c->task->spec().name, c->samples, c->dropped.load(std::memory_order_relaxed)});
  }
  return out;
}

std::size_t Recorder::retained_samples() const noexcept {
  std::size_t n = 0;
  for (const auto& s : series_) n += s.time.size();
  return n;
}

void Recorder::sample(const TaskRuntime& task) noexcept {
  for (auto& c : channels_) {
    if (c->task != &task) continue;
    const std::uint64_t dropped = c->dropped.load(std::memory_order_relaxed);
    if (c->ring->write_available() < c->width + kHeader) {
      c->dropped.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    std::size_t k = 0;
    c->scratch[k++] = task.partition().time();
    // Exact: a double holds every count below 2^53.
    c->scratch[k++] = static_cast<double>(dropped);
    for (const auto& ref : c->refs) {
      for (double v : task.partition().output(ref)) c->scratch[k++] = v;
    }
    (void)c->ring->push(c->scratch.data(), k);
    return;
  }
}

void Recorder::write_header(RecordFile& file) const { file.rows() += "time_s,task,signal,value\n"; }

void Recorder::write_reload_marker(RecordFile& file, std::uint64_t reloads) {
  file.rows() += "0,,#reload," + std::to_string(reloads) + "\n";
}

void Recorder::write_drop_marker(RecordFile& file, const Channel& c, std::uint64_t n) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g,", c.last_time);
  file.rows() += buf;
  file.rows() += c.csv_task;
  file.rows() += ",#dropped," + std::to_string(n) + "\n";
}

void Recorder::keep(Series& s, double time, double value) {
  if (keep_ == 0) return;
  if (keep_ != kKeepAll && s.time.size() + 1 >= 2 * keep_) {
    // Drop the oldest in one go: amortised O(1) per sample, memory bounded.
    const auto excess = static_cast<std::ptrdiff_t>(s.time.size() + 1 - keep_);
    s.time.erase(s.time.begin(), s.time.begin() + excess);
    s.value.erase(s.value.begin(), s.value.begin() + excess);
  }
  s.time.push_back(time);
  s.value.push_back(value);
}

void Recorder::drain(RecordFile* file) {
  char buf[64];
  for (auto& c : channels_) {
    auto& row = c->row;
    while (c->ring->read_available() >= row.size()) {
      (void)c->ring->pop(row.data(), row.size());
      const double time = row[0];
      const auto dropped = static_cast<std::uint64_t>(row[1]);
      const bool write = file && !file->failed();
      if (dropped != c->reported) {
        if (write) write_drop_marker(*file, *c, dropped - c->reported);
        c->reported = dropped;
      }
      ++c->samples;
      c->last_time = time;
      std::string* rows = write ? &file->rows() : nullptr;
      if (rows) std::snprintf(buf, sizeof buf, "%.9g", time);
      for (std::size_t i = 0; i < c->width; ++i) {
        const std::size_t k = c->series[i];
        keep(series_[k], time, row[i + kHeader]);
        if (!rows) continue;
        *rows += buf;
        *rows += csv_names_[k];
        char value[32];
        std::snprintf(value, sizeof value, "%.17g\n", row[i + kHeader]);
        *rows += value;
      }
      if (file) file->sample(time);
    }
  }
  if (file) (void)file->flush();
}

void Recorder::finish(RecordFile* file) {
  drain(file);
  if (!file || file->failed()) return;
  for (auto& c : channels_) {
    const std::uint64_t dropped = c->dropped.load(std::memory_order_relaxed);
    if (dropped != c->reported) write_drop_marker(*file, *c, dropped - c->reported);
    c->reported = dropped;
  }
  (void)file->flush();
}

}  // namespace rtcosim::runtime
