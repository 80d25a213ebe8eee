#pragma once

#include <string>
#include <vector>

namespace rtcosim::plot {

/*
 * A small SVG line-chart writer for the command-line tools (evaluation plots,
 * jitter reports): stacked panels sharing the x axis, each with its series,
 * optional vertical markers (coupling times, deadlines), "nice" axis ticks
 * and a legend. Not for the real-time path: it allocates freely.
 */
struct Series {
  std::string label;
  std::vector<double> x;
  std::vector<double> y;
  std::string color = "#1f77b4";
  double width = 1.5;
  bool dashed = false;
  bool steps = false;  // draw as a held (staircase) signal
};

struct Panel {
  std::string y_label;
  std::vector<Series> series;
  std::vector<double> markers;  // x positions of thin vertical lines
  std::string marker_label;     // legend text for the markers
};

struct Figure {
  std::string title;
  std::string x_label;
  std::vector<Panel> panels;
  int width = 960;
  int panel_height = 300;
};

// The SVG document. Non-finite points are skipped (they break a line).
std::string render_svg(const Figure& figure);

// Writes the SVG to `path` through a temporary file and a rename, so a
// failed write never leaves half a picture. Returns false and sets `error`.
bool write_svg(const Figure& figure, const std::string& path, std::string* error);

// Tick positions covering [lo, hi] at 1, 2 or 5 times a power of ten.
std::vector<double> nice_ticks(double lo, double hi, int target_count = 6);

}  // namespace rtcosim::plot
