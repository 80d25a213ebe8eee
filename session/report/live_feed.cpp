#include "session/report/live_feed.hpp"

#include <array>

#include "base/json.hpp"
#include "runtime/stats.hpp"

namespace rtcosim::session {

namespace {

using base::json_number;

// A run's histogram in the display buckets (four per octave), as
// [[upper bound ns, count], ...] for the buckets that hold anything.
std::string display_histogram(const runtime::LogHistogram& h) {
  using D = runtime::DisplayBuckets;
  std::array<std::uint64_t, D::kBuckets> counts{};
  for (int i = 0; i < runtime::LogHistogram::kBuckets; ++i) {
    if (const auto n = h.bucket(i))
      counts[static_cast<std::size_t>(D::bucket_of(runtime::LogHistogram::bucket_lower(i)))] += n;
  }
  std::string out = "[";
  for (int i = 0; i < D::kBuckets; ++i) {
    if (counts[static_cast<std::size_t>(i)] == 0) continue;
    out += (out.size() > 1 ? ",[" : "[") + std::to_string(D::bucket_upper(i)) + "," +
           std::to_string(counts[static_cast<std::size_t>(i)]) + "]";
  }
  return out + "]";
}

// One series' samples newer than `until` (at most 1024), as
// {"signal":…,"task":…,"t":[…],"v":[…]}; `until` moves to the newest.
std::string new_samples(const std::string& signal, const std::string& task, const std::vector<double>& time,
                        const std::vector<double>& value, double& until) {
  std::size_t begin = time.size();
  while (begin > 0 && time[begin - 1] > until && time.size() - begin < 1024) --begin;
  std::string t = "[", v = "[";
  for (std::size_t i = begin; i < time.size(); ++i) {
    t += (i > begin ? "," : "") + json_number(time[i]);
    v += (i > begin ? "," : "") + json_number(value[i]);
  }
  if (begin < time.size()) until = time.back();
  return "{\"signal\":" + base::json_string(signal) + ",\"task\":" + base::json_string(task) + ",\"t\":" + t +
         "],\"v\":" + v + "]}";
}

}  // namespace

std::string LiveFeed::json(runtime::Graph* graph, const runtime::Recorder* recorder) {
  std::string out = "\"hist\":{";
  std::string series = "[", probes = "[", tasks = "[", edges = "[", signals = "[", blocks = "{";
  if (graph) {
    bool first = true;
    for (const auto& t : graph->tasks()) {
      const auto& st = t->stats();
      out += (first ? "" : ",") + base::json_string(t->spec().name) +
             ":{\"latency\":" + display_histogram(st.wakeup_latency_ns) +
             ",\"exec\":" + display_histogram(st.execution_ns) + "}";
      tasks += (first ? "{" : ",{") + std::string("\"name\":") + base::json_string(t->spec().name) +
               ",\"host\":" + base::json_string(t->spec().host) + ",\"period\":" + json_number(t->spec().period) + "}";
      first = false;
    }
    const auto& spec = graph->spec();
    const auto task_of = [&](const std::string& block) {
      for (const auto& b : spec.diagram.blocks) {
        if (b.name == block) return b.task;
      }
      return std::string();
    };
    for (const auto& b : spec.diagram.blocks) {
      blocks += (blocks.size() > 1 ? "," : "") + base::json_string(b.name) + ":" + base::json_string(b.task);
    }
    for (const auto& w : spec.wires) {
      if (!w.crosses_tasks) continue;
      edges += (edges.size() > 1 ? ",{" : "{") + std::string("\"from\":") +
               base::json_string(task_of(w.wire.from.block)) +
               ",\"to\":" + base::json_string(task_of(w.wire.to.block)) +
               ",\"signal\":" + base::json_string(w.wire.from.str()) +
               ",\"method\":" + base::json_string(spec.coupling_of(w).method) + "}";
    }
  }
  if (recorder) {
    // Only what the page has not had, at most 1024 samples per signal and push.
    for (const auto& s : recorder->series()) {
      double& until = sent_until_.try_emplace(s.signal, -1e300).first->second;
      series += (series.size() > 1 ? "," : "") + new_samples(s.signal, s.task, s.time, s.value, until);
    }
    const auto& slots = recorder->probes();
    for (std::size_t i = 0; i < slots.size(); ++i) {
      const auto& s = slots[i];
      if (s.signal.empty()) continue;
      // A new choice of the slot starts from its first sample.
      double& until = sent_until_.try_emplace("probe " + std::to_string(i) + " " + s.signal, -1e300).first->second;
      probes += (probes.size() > 1 ? ",{\"slot\":" : "{\"slot\":") + std::to_string(i) + "," +
                new_samples(s.signal, s.task, s.time, s.value, until).substr(1);
    }
    for (const auto& p : recorder->probeable()) {
      signals += (signals.size() > 1 ? "," : "") + base::json_string(p.signal);
    }
  }
  return out + "},\"series\":" + series + "],\"probes\":" + probes + "],\"graph\":{\"tasks\":" + tasks +
         "],\"edges\":" + edges + "],\"signals\":" + signals + "],\"blocks\":" + blocks +
         "},\"layout\":{\"svg\":" + (layout_svg_ ? "true" : "false") +
         (layout_svg_ ? std::string() : ",\"why\":" + base::json_string(layout_why_)) +
         ",\"version\":" + std::to_string(layout_version_) + "}}";
}

}  // namespace rtcosim::session
