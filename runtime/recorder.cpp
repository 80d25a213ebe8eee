#include "runtime/recorder.hpp"

#include <cstdio>

#include "base/sha256.hpp"

namespace rtcosim::runtime {

namespace {

// Ring entry: time, the task's drop count when it was taken, the values.
constexpr std::size_t kHeader = 2;

}  // namespace

Recorder::Recorder(Graph& graph, Options options) : keep_(options.keep) {
  const auto& spec = graph.spec();
  const auto& signals = spec.record.signals;
  for (std::size_t probe = 0; probe < signals.size(); ++probe) {
    const auto& signal = signals[probe];
    std::string task_name;
    for (const auto& b : spec.diagram.blocks) {
      if (b.name == signal.block) task_name = b.task;
    }
    TaskRuntime* task = graph.find_task(task_name);
    if (!task || !task->local()) continue;  // recorded by its own host
    std::size_t index = 0;
    while (index < channels_.size() && channels_[index]->task != task) ++index;
    if (index == channels_.size()) {
      channels_.push_back(std::make_unique<Channel>());
      channels_.back()->task = task;
      append_csv_field(channels_.back()->csv_task, task_name);
      const auto& ts = task->spec();
      layout_.push_back(
          {task_name, ts.period, std::string(tasks::integrator_name(ts.integrator)), config::to_string(ts.step), {}});
    }
    Channel* channel = channels_[index].get();
    // What a column file says of the signal: its unit as the file gives it,
    // and the couplings of the links that carry it to other tasks.
    std::string coupling;
    for (const auto& w : spec.wires) {
      if (!w.crosses_tasks || w.wire.from.block != signal.block || w.wire.from.port != signal.port) continue;
      const std::string& method = spec.coupling_of(w).method;
      if (("," + coupling + ",").find("," + method + ",") == std::string::npos) {
        coupling += (coupling.empty() ? "" : ",") + method;
      }
    }
    const auto unit = spec.record.units.find(signal.str());
    const auto ref = task->partition().find_output(signal);
    channel->refs.push_back(ref);
    for (std::size_t i = 0; i < ref.width; ++i) {
      channel->series.push_back(series_.size());
      series_.push_back(
          {ref.width == 1 ? signal.str() : signal.str() + "[" + std::to_string(i) + "]", task_name, probe, i, {}, {}});
      layout_[index].signals.push_back({series_.back().signal, signal.block, signal.port, i,
                                        unit == spec.record.units.end() ? std::string() : unit->second, coupling});
      std::string name = ",";
      append_csv_field(name, task_name);
      name += ',';
      append_csv_field(name, series_.back().signal);
      csv_names_.push_back(name + ',');
    }
    channel->width += ref.width;
  }
  if (options.probes > 0) {
    for (const auto& t : graph.tasks()) {
      if (!t->local()) continue;
      const auto& p = t->partition();
      for (std::size_t b = 0; b < p.block_count(); ++b) {
        const auto& block = p.block(b);
        for (const auto& port : block.outputs()) {
          const auto ref = p.find_output({block.name(), port.name});
          for (std::size_t i = 0; i < ref.width; ++i) {
            const std::string name = block.name() + "." + port.name;
            probeable_.push_back(
                {ref.width == 1 ? name : name + "[" + std::to_string(i) + "]", t.get(), ref.offset + i});
          }
        }
      }
    }
  }
  for (std::size_t i = 0; i < options.probes; ++i) {
    probe_slots_.push_back(std::make_unique<ProbeSlot>());
    probe_slots_.back()->ring = std::make_unique<boost::lockfree::spsc_queue<double>>(3 * options.probe_samples);
    probe_series_.push_back({});
    probe_series_.back().probe = kNoProbe;
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

void Recorder::clear_kept() noexcept {
  for (auto* list : {&series_, &probe_series_}) {
    for (auto& s : *list) {
      s.time.clear();
      s.value.clear();
    }
  }
}

std::size_t Recorder::retained_samples() const noexcept {
  std::size_t n = 0;
  for (const auto& s : series_) n += s.time.size();
  return n;
}

bool Recorder::has_room(const TaskRuntime& task) const noexcept {
  for (const auto& c : channels_) {
    if (c->task == &task && c->ring->write_available() < c->width + kHeader) return false;
  }
  return true;
}

std::vector<std::uint64_t> Recorder::reachable() const {
  std::vector<std::uint64_t> out;
  for (const auto& c : channels_) out.push_back(c->samples + c->ring->read_available() / c->row.size());
  return out;
}

void Recorder::drop(const TaskRuntime& task) noexcept {
  for (auto& c : channels_) {
    if (c->task == &task) c->dropped.fetch_add(1, std::memory_order_relaxed);
  }
}

void Recorder::sample_start(Graph& graph) noexcept {
  for (const auto& t : graph.tasks()) {
    if (t->local()) (void)sample(*t);
  }
}

bool Recorder::sample(const TaskRuntime& task) noexcept {
  for (auto& slot : probe_slots_) {
    // Acquire: the ring is the same, but the choice was made after the
    // drain discarded the previous one's samples.
    const std::uint64_t choice = slot->choice.load(std::memory_order_acquire);
    const std::uint64_t index = choice & 0xffffffffu;
    if (index == 0 || probeable_[index - 1].task != &task) continue;
    // Acquire/release on the flag orders one producer's pushes before the
    // next one's: the single-producer ring sees one producer at a time.
    if (slot->pushing.test_and_set(std::memory_order_acquire)) {
      slot->dropped.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    if (slot->ring->write_available() < 3) {
      slot->dropped.fetch_add(1, std::memory_order_relaxed);
    } else {
      const double entry[3] = {static_cast<double>(choice >> 32), task.partition().time(),
                               task.partition().output(tasks::OutputRef{probeable_[index - 1].offset, 1})[0]};
      (void)slot->ring->push(entry, 3);
    }
    slot->pushing.clear(std::memory_order_release);
  }
  for (auto& c : channels_) {
    if (c->task != &task) continue;
    const std::uint64_t dropped = c->dropped.load(std::memory_order_relaxed);
    if (c->ring->write_available() < c->width + kHeader) {
      c->dropped.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    std::size_t k = 0;
    c->scratch[k++] = task.partition().time();
    // Exact: a double holds every count below 2^53.
    c->scratch[k++] = static_cast<double>(dropped);
    for (const auto& ref : c->refs) {
      for (double v : task.partition().output(ref)) c->scratch[k++] = v;
    }
    (void)c->ring->push(c->scratch.data(), k);
    return true;
  }
  return true;
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

std::size_t Recorder::find_probeable(const std::string& signal) const noexcept {
  for (std::size_t i = 0; i < probeable_.size(); ++i) {
    if (probeable_[i].signal == signal) return i;
  }
  return kNoProbe;
}

bool Recorder::set_probe(std::size_t slot, std::size_t index) {
  if (slot >= probe_slots_.size() || (index != kNoProbe && index >= probeable_.size())) return false;
  drain_probes();  // what the previous choice left is kept or dropped now
  ProbeSlot& s = *probe_slots_[slot];
  ++s.generation;
  Series& series = probe_series_[slot];
  series.time.clear();
  series.value.clear();
  series.probe = index;
  series.signal = index == kNoProbe ? std::string() : probeable_[index].signal;
  series.task = index == kNoProbe ? std::string() : probeable_[index].task->spec().name;
  s.choice.store(index == kNoProbe ? 0 : (std::uint64_t{s.generation} << 32) | (index + 1), std::memory_order_release);
  return true;
}

std::uint64_t Recorder::probe_dropped() const noexcept {
  std::uint64_t n = 0;
  for (const auto& s : probe_slots_) n += s->dropped.load(std::memory_order_relaxed);
  return n;
}

void Recorder::drain_probes() {
  for (std::size_t i = 0; i < probe_slots_.size(); ++i) {
    ProbeSlot& s = *probe_slots_[i];
    double entry[3];
    while (s.ring->read_available() >= 3) {
      (void)s.ring->pop(entry, 3);
      // Samples of an earlier choice, still in the ring, are not this one's.
      if (static_cast<std::uint32_t>(entry[0]) == s.generation) keep(probe_series_[i], entry[1], entry[2]);
    }
  }
}

template <class OnSample>
void Recorder::pop_all(std::span<const std::uint64_t> upto, OnSample&& on_sample) {
  drain_probes();
  for (std::size_t index = 0; index < channels_.size(); ++index) {
    auto& c = *channels_[index];
    auto& row = c.row;
    const std::uint64_t limit = index < upto.size() ? upto[index] : std::numeric_limits<std::uint64_t>::max();
    while (c.samples < limit && c.ring->read_available() >= row.size()) {
      (void)c.ring->pop(row.data(), row.size());
      const double time = row[0];
      const auto dropped = static_cast<std::uint64_t>(row[1]);
      const std::uint64_t missing = dropped - c.reported;
      c.reported = dropped;
      ++c.samples;
      for (std::size_t i = 0; i < c.width; ++i) keep(series_[c.series[i]], time, row[i + kHeader]);
      on_sample(index, c, missing, time, row.data() + kHeader);
      c.last_time = time;
    }
  }
}

void Recorder::drain(RecordFile* file, std::span<const std::uint64_t> upto) {
  char buf[64];
  pop_all(upto, [&](std::size_t, const Channel& c, std::uint64_t missing, double time, const double* values) {
    if (!file) return;
    if (!file->failed()) {
      if (missing > 0) write_drop_marker(*file, c, missing);
      std::string& rows = file->rows();
      std::snprintf(buf, sizeof buf, "%.9g", time);
      for (std::size_t i = 0; i < c.width; ++i) {
        rows += buf;
        rows += csv_names_[c.series[i]];
        char value[32];
        std::snprintf(value, sizeof value, "%.17g\n", values[i]);
        rows += value;
      }
    }
    file->sample(time);
  });
  if (file) (void)file->flush();
}

void Recorder::drain(ColumnFile& file, std::span<const std::uint64_t> upto) {
  pop_all(upto, [&](std::size_t index, const Channel& c, std::uint64_t missing, double time, const double* values) {
    if (missing > 0) file.dropped(index, c.last_time, missing);
    file.sample(index, time, values);
  });
  file.end_batch();
}

void Recorder::finish(ColumnFile& file) {
  drain(file);
  for (std::size_t index = 0; index < channels_.size(); ++index) {
    auto& c = *channels_[index];
    const std::uint64_t dropped = c.dropped.load(std::memory_order_relaxed);
    if (dropped != c.reported) file.dropped(index, c.last_time, dropped - c.reported);
    c.reported = dropped;
  }
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

RecordLayout record_layout(Graph& graph, const Recorder& recorder, const std::string& graph_text, bool frames) {
  RecordLayout layout;
  layout.tasks = recorder.layout();
  if (frames) {
    for (const auto& t : graph.tasks()) layout.frame_tasks.push_back(t->spec().name);
  }
  layout.graph_name = graph.spec().name;
  layout.graph_file = graph.spec().file;
  layout.graph_text = graph_text;
  layout.graph_sha256 = base::sha256_hex(graph_text);
  return layout;
}

}  // namespace rtcosim::runtime
