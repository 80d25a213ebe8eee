#include "session/report/plant_summary.hpp"

#include <cmath>

#include "base/duration.hpp"
#include "base/json.hpp"
#include "session/report/text_table.hpp"
#include "tasks/plant/live_feed.hpp"

namespace rtcosim::session {

using tasks::plant::LiveStatus;

std::string plant_lines() {
  const auto sources = tasks::plant::live_status();
  if (sources.empty()) return {};
  auto count = [](std::uint64_t LiveStatus::*field) {
    return [field](const LiveStatus& s) { return format_count(s.*field); };
  };
  const std::vector<Field<LiveStatus>> columns = {
      {"source", Align::kLeft, [](const LiveStatus& s) { return s.key; }},
      {"good", Align::kRight, count(&LiveStatus::good)},
      {"malformed", Align::kRight, count(&LiveStatus::malformed)},
      {"ring full", Align::kRight, count(&LiveStatus::ring_full)},
      {"late", Align::kRight, count(&LiveStatus::late)},
      {"out of order", Align::kRight, count(&LiveStatus::out_of_order)},
      {"seq gaps", Align::kRight, count(&LiveStatus::sequence_gaps)},
      {"seq resets", Align::kRight, count(&LiveStatus::sequence_resets)},
      {"too far ahead", Align::kRight, count(&LiveStatus::too_far_ahead)},
      {"overflowing", Align::kRight, count(&LiveStatus::overflowing)},
      {"unsent", Align::kRight, count(&LiveStatus::unsent)},
      {"taken", Align::kRight, count(&LiveStatus::aged)},
      {"age p50", Align::kRight,
       [](const LiveStatus& s) {
         return std::isnan(s.age_median_s) ? std::string("-") : base::format_duration(s.age_median_s);
       }},
      {"last bad", Align::kLeft,
       [](const LiveStatus& s) { return s.last_bad.empty() ? std::string("-") : s.last_bad; }},
  };
  return "plant sources:\n" + render_table(columns, sources);
}

std::string plant_json() {
  std::string out = "[";
  bool first = true;
  for (const auto& s : tasks::plant::live_status()) {
    out += first ? "" : ",";
    first = false;
    out += "{\"source\":" + base::json_string(s.key) + ",\"good\":" + std::to_string(s.good) +
           ",\"malformed\":" + std::to_string(s.malformed) + ",\"ring_full\":" + std::to_string(s.ring_full) +
           ",\"late\":" + std::to_string(s.late) + ",\"out_of_order\":" + std::to_string(s.out_of_order) +
           ",\"sequence_gaps\":" + std::to_string(s.sequence_gaps) +
           ",\"sequence_resets\":" + std::to_string(s.sequence_resets) +
           ",\"too_far_ahead\":" + std::to_string(s.too_far_ahead) +
           ",\"overflowing\":" + std::to_string(s.overflowing) + ",\"unsent\":" + std::to_string(s.unsent) +
           ",\"last_bad\":" + (s.last_bad.empty() ? std::string("null") : base::json_string(s.last_bad)) +
           ",\"taken\":" + std::to_string(s.aged) + ",\"age_median_s\":" + base::json_number(s.age_median_s) + "}";
  }
  return out + "]";
}

}  // namespace rtcosim::session
