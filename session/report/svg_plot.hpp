#pragma once

#include <cmath>
#include <string>
#include <vector>

namespace rtcosim::plot {

/*
 * A small SVG line-chart writer for the command-line tools (evaluation plots,
 * jitter reports): stacked panels sharing the x axis, each with its series,
 * optional vertical markers (coupling times, deadlines), "nice" axis ticks
 * and a legend; series may be bars and a panel's y axis logarithmic (a
 * latency histogram). Bars carry class="bar" and markers class="marker", so
 * that tests and scripts can find them. Not for the real-time path: it allocates freely.
 */
struct Series {
  std::string label;
  std::vector<double> x;
  std::vector<double> y;
  std::string color = "#1f77b4";
  double width = 1.5;
  bool dashed = false;
  bool steps = false;  // draw as a held (staircase) signal
  // Draw as bars instead of a line: point i is a bar from x[i] to
  // x[i] + bar_width, from the panel's floor (0, or 0.5 on a log axis) to y[i].
  bool bars = false;
  double bar_width = 1.0;
};

struct Panel {
  std::string y_label;
  std::vector<Series> series;
  std::vector<double> markers;  // x positions of thin vertical lines
  std::string marker_label;     // legend text for the markers
  std::string marker_color = "#f4a261";
  double marker_width = 0.6;
  // A log10 y axis with ticks at the powers of ten, for counts: from 0.5, so
  // that a count of 1 still shows (values <= 0 sit on the floor), to at
  // least 10, so that a bar of 1 looks small.
  bool log_y = false;
};

struct Figure {
  std::string title;
  std::string x_label;
  std::vector<Panel> panels;
  int width = 960;
  int panel_height = 300;
  double x_from = std::nan("");  // where the x axis starts; NaN: at the smallest x
  double x_to = std::nan("");    // where it ends; NaN: at the largest x
};

// The SVG document. Non-finite points are skipped (they break a line).
std::string render_svg(const Figure& figure);

// Writes the SVG to `path` through a temporary file and a rename, so a
// failed write never leaves half a picture. Returns false and sets `error`.
bool write_svg(const Figure& figure, const std::string& path, std::string* error);

// Tick positions covering [lo, hi] at 1, 2 or 5 times a power of ten.
std::vector<double> nice_ticks(double lo, double hi, int target_count = 6);

}  // namespace rtcosim::plot
