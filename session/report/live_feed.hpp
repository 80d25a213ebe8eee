#pragma once

#include <map>
#include <string>

#include "runtime/graph.hpp"
#include "runtime/recorder.hpp"

namespace rtcosim::session {

/*
 * LiveFeed: the graph's part of a live-view snapshot (docs/live.md): each
 * task's histograms, the recorded and probed signals' samples not yet
 * pushed, the graph's shape. Non-real-time: it reads the tasks' statistics
 * (relaxed atomics) and the series the recorder's drain filled; it never
 * touches a task. Owned by the daemon's loop (one thread).
 */
class LiveFeed {
 public:
  // `"hist":{…},"series":[…],"probes":[…],"graph":{…}` (no braces around).
  std::string json(runtime::Graph* graph, const runtime::Recorder* recorder);
  // A new graph: every series starts again.
  void reset() { sent_until_.clear(); }
  // How the new graph is drawn: by Graphviz (served as /graph.svg) or, with
  // `why`, by the page itself.
  void set_layout(bool svg, std::string why) {
    layout_svg_ = svg;
    layout_why_ = std::move(why);
    ++layout_version_;
  }

 private:
  bool layout_svg_ = false;
  std::string layout_why_ = "no graph loaded";
  unsigned layout_version_ = 0;
  std::map<std::string, double> sent_until_;  // per series: the newest sample pushed
};

}  // namespace rtcosim::session
