#include "session/report/trace/trace_report.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "base/duration.hpp"
#include "base/json.hpp"
#include "runtime/stats.hpp"
#include "session/report/svg_plot.hpp"
#include "session/report/text_table.hpp"

namespace rtcosim::trace_report {

namespace {

std::vector<std::int64_t> latencies(const TracedTask& t) {
  std::vector<std::int64_t> v;
  for (const auto& f : t.frames) {
    // -1: the frame did not follow a sleep (a later frame of a cycle, or a
    // cycle started late without sleeping), so it has no wake-up latency.
    if (f.latency_ns >= 0) v.push_back(f.latency_ns);
  }
  return v;
}

std::vector<std::int64_t> executions(const TracedTask& t) {
  std::vector<std::int64_t> v;
  for (const auto& f : t.frames) {
    if (f.ended) v.push_back(f.exec_ns);
  }
  return v;
}

struct AgeSummary {
  double mean = std::nan("");
  double max = std::nan("");
  std::size_t count = 0;
};

// Mean and max of a link's data age when consumed; NaN when never consumed.
AgeSummary age_of(const TracedLink& l) {
  AgeSummary a;
  a.count = l.age_s.size();
  if (l.age_s.empty()) return a;
  a.max = *std::max_element(l.age_s.begin(), l.age_s.end());
  double sum = 0.0;
  for (double v : l.age_s) sum += v;
  a.mean = sum / static_cast<double>(a.count);
  return a;
}

std::string quantile_json(const Quantiles& q) {
  return "{\"p50\":" + std::to_string(q.p50) + ",\"p99\":" + std::to_string(q.p99) +
         ",\"p999\":" + std::to_string(q.p999) + ",\"max\":" + std::to_string(q.max) + "}";
}

// Text histogram in coarse log buckets (four per power of two, so that a
// run fits a screen), over the occupied range.
std::string histogram(const std::vector<std::int64_t>& values) {
  using H = runtime::DisplayBuckets;
  std::vector<std::uint64_t> counts(H::kBuckets, 0);
  for (auto v : values) ++counts[static_cast<std::size_t>(H::bucket_of(v))];
  int lo = H::kBuckets, hi = -1;
  for (int i = 0; i < H::kBuckets; ++i) {
    if (counts[static_cast<std::size_t>(i)]) {
      lo = std::min(lo, i);
      hi = std::max(hi, i);
    }
  }
  if (hi < 0) return "    (no samples)\n";
  const std::uint64_t most = *std::max_element(counts.begin(), counts.end());
  session::TextTable table({{"from", session::Align::kRight},
                            {"to", session::Align::kRight},
                            {"frames", session::Align::kRight},
                            {"", session::Align::kLeft}});
  for (int i = lo; i <= hi; ++i) {
    const auto n = counts[static_cast<std::size_t>(i)];
    const auto bar = static_cast<std::size_t>(std::ceil(40.0 * static_cast<double>(n) / static_cast<double>(most)));
    table.add_row({session::format_nanoseconds(i == 0 ? 0 : H::bucket_upper(i - 1)),
                   session::format_nanoseconds(H::bucket_upper(i)), session::format_count(n),
                   std::string(n ? bar : 0, '#')});
  }
  return table.render("    ");
}

}  // namespace

Quantiles quantiles(std::vector<std::int64_t> v) {
  Quantiles q;
  if (v.empty()) return q;
  std::sort(v.begin(), v.end());
  auto rank = [&](double p) {
    const auto k = static_cast<std::size_t>(std::ceil(p * static_cast<double>(v.size())));
    return v[std::min(v.size() - 1, k == 0 ? 0 : k - 1)];
  };
  q.p50 = rank(0.5);
  q.p99 = rank(0.99);
  q.p999 = rank(0.999);
  q.max = v.back();
  return q;
}

std::string text_report(const std::string& directory, const TraceData& d) {
  using session::Align;
  using session::format_nanoseconds;
  std::ostringstream out;
  out << "trace " << directory << ": " << d.events << " events, " << d.discarded_events << " discarded\n";
  for (const auto& [id, t] : d.tasks) {
    out << "\ntask " << t.name << " (id " << id << ", cpu " << t.cpu << ", priority " << t.priority << ", period "
        << session::format_seconds(t.period_s) << "): " << t.frames.size() << " frames\n";
    const std::vector<session::Field<std::pair<const char*, Quantiles>>> quantile_columns = {
        {"", session::Align::kLeft, [](const auto& r) { return std::string(r.first); }},
        {"p50", session::Align::kRight, [](const auto& r) { return session::format_nanoseconds(r.second.p50); }},
        {"p99", session::Align::kRight, [](const auto& r) { return session::format_nanoseconds(r.second.p99); }},
        {"p99.9", session::Align::kRight, [](const auto& r) { return session::format_nanoseconds(r.second.p999); }},
        {"max", session::Align::kRight, [](const auto& r) { return session::format_nanoseconds(r.second.max); }},
    };
    const std::vector<std::pair<const char*, Quantiles>> rows = {{"wake-up latency", quantiles(latencies(t))},
                                                                 {"execution time", quantiles(executions(t))}};
    out << session::render_table(quantile_columns, rows) << "  wake-up latency histogram:\n"
        << histogram(latencies(t)) << "  deadline misses: " << t.overruns.size() << '\n';
    if (!t.overruns.empty()) {
      const std::vector<session::Field<TracedOverrun>> overrun_columns = {
          {"at", session::Align::kRight,
           [&d](const TracedOverrun& o) {
             return session::format_seconds(static_cast<double>(o.time_ns - d.first_ns) * 1e-9);
           }},
          {"frame", session::Align::kRight, [](const TracedOverrun& o) { return session::format_count(o.frame); }},
          {"periods missed", session::Align::kRight,
           [](const TracedOverrun& o) { return session::format_count(o.missed_periods); }},
      };
      out << session::render_table(overrun_columns, t.overruns, "    ");
    }
  }
  if (!d.links.empty()) {
    const std::vector<session::Field<TracedLink>> link_columns = {
        {"from -> to", session::Align::kLeft, [](const TracedLink& l) { return l.source + " -> " + l.consumer; }},
        {"method", session::Align::kLeft, [](const TracedLink& l) { return l.method; }},
        {"published", session::Align::kRight, [](const TracedLink& l) { return session::format_count(l.published); }},
        {"dropped", session::Align::kRight, [](const TracedLink& l) { return session::format_count(l.dropped); }},
        {"data age mean", session::Align::kRight,
         [](const TracedLink& l) { return session::format_seconds(age_of(l).mean); }},
        {"data age max", session::Align::kRight,
         [](const TracedLink& l) { return session::format_seconds(age_of(l).max); }},
    };
    std::vector<const TracedLink*> links, remote;
    for (const auto& [id, l] : d.links) {
      links.push_back(&l);
      if (l.is_remote()) remote.push_back(&l);
    }
    out << "\nlinks (data age when consumed):\n" << session::render_table(link_columns, links);
    if (!remote.empty()) {
      const auto count = [](std::uint64_t TracedLink::Remote::*field) {
        return [field](const TracedLink& l) { return session::format_count(l.remote.*field); };
      };
      const std::vector<session::Field<TracedLink>> remote_columns = {
          {"from -> to", session::Align::kLeft, [](const TracedLink& l) { return l.source + " -> " + l.consumer; }},
          {"sent", session::Align::kRight, count(&TracedLink::Remote::sent)},
          {"received", session::Align::kRight, count(&TracedLink::Remote::received)},
          {"lost", session::Align::kRight, count(&TracedLink::Remote::lost)},
          {"resets", session::Align::kRight, count(&TracedLink::Remote::resets)},
      };
      out << "\nremote links (DDS, this host's bridge):\n" << session::render_table(remote_columns, remote);
    }
  }
  return out.str();
}

std::string json_report(const TraceData& d) {
  std::string out = "{\"tasks\":[";
  bool first = true;
  for (const auto& [id, t] : d.tasks) {
    out += (first ? "" : ",") + std::string("{\"name\":") + base::json_string(t.name) +
           ",\"frames\":" + std::to_string(t.frames.size()) +
           ",\"latency_ns\":" + quantile_json(quantiles(latencies(t))) +
           ",\"exec_ns\":" + quantile_json(quantiles(executions(t))) +
           ",\"deadline_misses\":" + std::to_string(t.overruns.size()) + "}";
    first = false;
  }
  out += "],\"links\":[";
  first = true;
  for (const auto& [id, l] : d.links) {
    const AgeSummary age = age_of(l);
    char ages[96];
    std::snprintf(ages, sizeof ages, ",\"age_s\":{\"mean\":%.9g,\"max\":%.9g}", age.count ? age.mean : 0.0,
                  age.count ? age.max : 0.0);
    out += (first ? "" : ",") + std::string("{\"from\":") + base::json_string(l.source) +
           ",\"to\":" + base::json_string(l.consumer) + ",\"method\":" + base::json_string(l.method) +
           ",\"published\":" + std::to_string(l.published) + ",\"dropped\":" + std::to_string(l.dropped) + ages +
           (l.is_remote() ? ",\"remote\":{\"sent\":" + std::to_string(l.remote.sent) +
                                ",\"send_errors\":" + std::to_string(l.remote.send_errors) +
                                ",\"received\":" + std::to_string(l.remote.received) + ",\"ring_full\":" +
                                std::to_string(l.remote.ring_full) + ",\"lost\":" + std::to_string(l.remote.lost) +
                                ",\"resets\":" + std::to_string(l.remote.resets) + "}"
                          : std::string()) +
           "}";
    first = false;
  }
  return out + "],\"discarded_events\":" + std::to_string(d.discarded_events) + "}\n";
}

std::string perfetto_json(const TraceData& d) {
  std::ostringstream out;
  out << "{\"traceEvents\":[";
  bool first = true;
  auto sep = [&] {
    if (!first) out << ',';
    first = false;
  };
  for (const auto& [id, t] : d.tasks) {
    sep();
    out << "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":" << id
        << ",\"args\":{\"name\":" << base::json_string(t.name) << "}}";
    for (const auto& f : t.frames) {
      if (!f.ended) continue;
      sep();
      char buf[256];
      std::snprintf(
          buf, sizeof buf,
          "{\"name\":\"frame\",\"ph\":\"X\",\"pid\":1,\"tid\":%u,\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"frame\":%llu,"
          "\"latency_ns\":%lld,\"step_s\":%.9g,\"sim_s\":%.9g}}",
          static_cast<unsigned>(id), static_cast<double>(f.start_ns - d.first_ns) * 1e-3,
          static_cast<double>(f.exec_ns) * 1e-3, static_cast<unsigned long long>(f.frame),
          static_cast<long long>(f.latency_ns), f.step_s, f.sim_s);
      out << buf;
    }
    for (const auto& o : t.overruns) {
      sep();
      out << "{\"name\":\"overrun\",\"ph\":\"i\",\"s\":\"t\",\"pid\":1,\"tid\":" << id
          << ",\"ts\":" << static_cast<double>(o.time_ns - d.first_ns) * 1e-3
          << ",\"args\":{\"missed_periods\":" << o.missed_periods << "}}";
    }
  }
  out << "],\"displayTimeUnit\":\"ns\"}\n";
  return out.str();
}

plot::Figure latency_histogram(const TraceData& d) {
  // Linear microseconds, equal-width buckets, log counts: the plot known
  // from cyclictest, where a bar's height means the same at every latency.
  // Buckets are 1 us wide up to 1000 us of range, then 2, 5, 10, ... us so
  // that no panel has more than 1000 of them.
  std::int64_t worst = 0;
  for (const auto& [id, t] : d.tasks) {
    for (auto v : latencies(t)) worst = std::max(worst, v);
  }
  std::int64_t width_ns = 1000;
  for (std::int64_t decade = 1000; worst > 1000 * width_ns;) {
    if (width_ns == decade) {
      width_ns = 2 * decade;
    } else if (width_ns == 2 * decade) {
      width_ns = 5 * decade;
    } else {
      width_ns = decade *= 10;
    }
  }
  plot::Figure hist;
  hist.title = "wake-up latency per task";
  const std::string bucket = base::format_duration(static_cast<double>(width_ns) * 1e-9);
  hist.x_label = "wake-up latency (us); one bar per " + bucket + " bucket, the count of frames in it on a log scale";
  hist.x_from = 0.0;
  // Room right of the last bar, so that the max marker stands clear of the frame.
  hist.x_to = static_cast<double>((worst / width_ns + 1) * width_ns) * 1e-3 * 1.03;
  for (const auto& [id, t] : d.tasks) {
    std::map<std::int64_t, std::uint64_t> counts;
    std::int64_t max = -1;
    for (auto v : latencies(t)) {
      const std::int64_t ns = std::max<std::int64_t>(v, 0);
      ++counts[ns / width_ns];
      max = std::max(max, ns);
    }
    plot::Panel p;
    p.y_label = t.name + " (frames)";
    p.log_y = true;
    plot::Series s{t.name, {}, {}, "#1f77b4", 1.5, false, false, true, static_cast<double>(width_ns) * 1e-3};
    for (const auto& [k, n] : counts) {
      s.x.push_back(static_cast<double>(k * width_ns) * 1e-3);
      s.y.push_back(static_cast<double>(n));
    }
    p.series.push_back(s);
    if (max >= 0) {
      p.markers = {static_cast<double>(max) * 1e-3};
      p.marker_label = "max " + session::format_nanoseconds(max);
      p.marker_color = "#d62728";
      p.marker_width = 1.5;
    }
    hist.panels.push_back(p);
  }
  hist.panel_height = 200;
  return hist;
}

bool write_svgs(const TraceData& d, const std::string& directory, std::string* error) {
  // The SVG writer's own error would only say that a file in it cannot be
  // written; the directory's is the one to give.
  std::error_code ec;
  std::filesystem::create_directories(directory, ec);
  if (ec) {
    *error = "cannot create the directory '" + directory + "': " + ec.message();
    return false;
  }
  plot::Figure timeline;
  // The second around the worst wake-up of any task.
  std::int64_t worst_at = d.first_ns, worst = -1;
  for (const auto& [id, t] : d.tasks) {
    for (const auto& f : t.frames) {
      if (f.latency_ns > worst) {
        worst = f.latency_ns;
        worst_at = f.start_ns;
      }
    }
  }
  timeline.title = "the second around the worst wake-up (" + session::format_nanoseconds(worst) + ")";
  timeline.x_label = "time since the trace began (s)";
  for (const auto& [id, t] : d.tasks) {
    plot::Panel tl;
    tl.y_label = t.name + " (us)";
    plot::Series lat{"wake-up latency", {}, {}, "#d62728", 1.2, false, false};
    plot::Series exe{"execution time", {}, {}, "#2ca02c", 1.2, false, false};
    for (const auto& f : t.frames) {
      if (std::llabs(f.start_ns - worst_at) > 500'000'000) continue;
      const double x = static_cast<double>(f.start_ns - d.first_ns) * 1e-9;
      lat.x.push_back(x);
      lat.y.push_back(static_cast<double>(f.latency_ns) * 1e-3);
      if (f.ended) {
        exe.x.push_back(x);
        exe.y.push_back(static_cast<double>(f.exec_ns) * 1e-3);
      }
    }
    for (const auto& o : t.overruns) {
      if (std::llabs(o.time_ns - worst_at) <= 500'000'000)
        tl.markers.push_back(static_cast<double>(o.time_ns - d.first_ns) * 1e-9);
    }
    tl.marker_label = "deadline misses";
    tl.series = {lat, exe};
    timeline.panels.push_back(tl);
  }
  timeline.panel_height = 200;
  return plot::write_svg(latency_histogram(d), (std::filesystem::path(directory) / "latency_histograms.svg").string(),
                         error) &&
         plot::write_svg(timeline, (std::filesystem::path(directory) / "timeline.svg").string(), error);
}

}  // namespace rtcosim::trace_report
