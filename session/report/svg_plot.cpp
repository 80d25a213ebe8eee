#include "session/report/svg_plot.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

namespace rtcosim::plot {

namespace {

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

std::string tick_label(double v, double step) {
  char buf[32];
  if (std::fabs(v) < step * 1e-6) v = 0.0;
  const double a = std::max(std::fabs(v), step);
  if (a >= 1e5 || a < 1e-3) {
    std::snprintf(buf, sizeof buf, "%.3g", v);
  } else {
    const int decimals = std::max(0, static_cast<int>(std::ceil(-std::log10(step) - 1e-9)));
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  }
  return buf;
}

struct Range {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  void add(double v) {
    if (!std::isfinite(v)) return;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  void settle() {
    if (!(lo <= hi)) {
      lo = 0.0;
      hi = 1.0;
    } else if (hi - lo < 1e-12 * std::max(1.0, std::fabs(hi))) {
      const double pad = std::max(1e-9, std::fabs(hi) * 0.1);
      lo -= pad;
      hi += pad;
    }
  }
};

}  // namespace

std::vector<double> nice_ticks(double lo, double hi, int target_count) {
  std::vector<double> ticks;
  if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi)) return ticks;
  const double raw = (hi - lo) / std::max(1, target_count);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * magnitude >= raw) {
      step = m * magnitude;
      break;
    }
  }
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) ticks.push_back(v);
  return ticks;
}

namespace {

// The figure's geometry and its shared time axis: every panel draws against
// the same x range, so it is worked out once for all of them.
struct Frame {
  double left = 80, right = 20, top = 20, gap = 46, bottom = 50;
  double plot_w = 0, panel_h = 0, height = 0;
  Range xr;
  double sx(double x) const { return left + (x - xr.lo) / (xr.hi - xr.lo) * plot_w; }
};

// The x range covers every series (a bar to its right edge) unless the
// figure pins either end, which then wins even over an empty range.
Range x_range(const Figure& figure) {
  Range xr;
  for (const auto& p : figure.panels) {
    for (const auto& s : p.series) {
      for (double x : s.x) {
        xr.add(x);
        if (s.bars) xr.add(x + s.bar_width);
      }
    }
  }
  if (std::isfinite(figure.x_from)) {
    xr.lo = figure.x_from;
    xr.hi = std::max(xr.hi, figure.x_from);
  }
  if (std::isfinite(figure.x_to)) {
    xr.hi = figure.x_to;
    xr.lo = std::min(xr.lo, figure.x_to);
  }
  xr.settle();
  return xr;
}

Frame frame_of(const Figure& figure) {
  Frame f;
  f.top = figure.title.empty() ? 20 : 44;
  f.plot_w = figure.width - f.left - f.right;
  f.panel_h = figure.panel_height;
  f.height = f.top + static_cast<double>(figure.panels.size()) * (f.panel_h + f.gap) - f.gap + f.bottom;
  f.xr = x_range(figure);
  return f;
}

// On a log axis the range is of log10(y), from the floor 0.5.
constexpr double kLogFloor = 0.5;

// One panel's own y axis: each panel scales to its own series.
struct YScale {
  const Panel& panel;
  double y0, panel_h;
  Range yr;
  double axis(double y) const { return panel.log_y ? std::log10(std::max(y, kLogFloor)) : y; }
  double sy(double y) const { return y0 + panel_h - (axis(y) - yr.lo) / (yr.hi - yr.lo) * panel_h; }
};

// Bars stand on zero and a log axis shows at least a decade, so both are in
// the range; the padding keeps the extremes off the frame.
YScale y_scale(const Panel& panel, double y0, double panel_h) {
  YScale ys{panel, y0, panel_h, {}};
  Range& yr = ys.yr;
  for (const auto& s : panel.series) {
    for (double y : s.y) yr.add(ys.axis(y));
    if (s.bars && !panel.log_y) yr.add(0.0);
  }
  if (panel.log_y) {
    yr.add(ys.axis(kLogFloor));
    yr.add(ys.axis(10.0));
  }
  yr.settle();
  const double pad = 0.05 * (yr.hi - yr.lo);
  if (!panel.log_y) yr.lo -= pad;
  yr.hi += pad;
  return ys;
}

// Grid and ticks go first so that the series and markers draw over them.
void write_axes(std::ostringstream& svg, const Frame& f, const YScale& ys, const std::vector<double>& xticks) {
  const Panel& panel = ys.panel;
  const double y0 = ys.y0, panel_h = f.panel_h, left = f.left, plot_w = f.plot_w;
  svg << "<g>\n<rect x=\"" << fmt(left) << "\" y=\"" << fmt(y0) << "\" width=\"" << fmt(plot_w) << "\" height=\""
      << fmt(panel_h) << "\" fill=\"none\" stroke=\"#444\"/>\n";
  std::vector<double> yticks;
  if (panel.log_y) {
    for (double t = 1.0; std::log10(t) <= ys.yr.hi; t *= 10.0) yticks.push_back(t);
  } else {
    yticks = nice_ticks(ys.yr.lo, ys.yr.hi, 6);
  }
  const double ystep = panel.log_y ? 1.0 : yticks.size() > 1 ? yticks[1] - yticks[0] : 1.0;
  for (double t : yticks) {
    svg << "<line x1=\"" << fmt(left) << "\" x2=\"" << fmt(left + plot_w) << "\" y1=\"" << fmt(ys.sy(t)) << "\" y2=\""
        << fmt(ys.sy(t)) << "\" stroke=\"#e5e5e5\"/>\n<text x=\"" << fmt(left - 6) << "\" y=\"" << fmt(ys.sy(t) + 4)
        << "\" text-anchor=\"end\">" << tick_label(t, ystep) << "</text>\n";
  }
  const double xstep = xticks.size() > 1 ? xticks[1] - xticks[0] : 1.0;
  for (double t : xticks) {
    svg << "<line x1=\"" << fmt(f.sx(t)) << "\" x2=\"" << fmt(f.sx(t)) << "\" y1=\"" << fmt(y0) << "\" y2=\""
        << fmt(y0 + panel_h) << "\" stroke=\"#eeeeee\"/>\n<text x=\"" << fmt(f.sx(t)) << "\" y=\""
        << fmt(y0 + panel_h + 16) << "\" text-anchor=\"middle\">" << tick_label(t, xstep) << "</text>\n";
  }
}

// Markers outside the time range would draw outside the panel: left out.
void write_markers(std::ostringstream& svg, const Frame& f, const YScale& ys) {
  const Panel& panel = ys.panel;
  const double y0 = ys.y0, panel_h = f.panel_h;
  for (double m : panel.markers) {
    if (m < f.xr.lo || m > f.xr.hi) continue;
    svg << "<line class=\"marker\" x1=\"" << fmt(f.sx(m)) << "\" x2=\"" << fmt(f.sx(m)) << "\" y1=\"" << fmt(y0)
        << "\" y2=\"" << fmt(y0 + panel_h) << "\" stroke=\"" << panel.marker_color << "\" stroke-width=\""
        << fmt(panel.marker_width) << "\" stroke-opacity=\"0.7\"/>\n";
  }
  svg << "<text transform=\"translate(" << fmt(18) << ',' << fmt(y0 + panel_h / 2)
      << ") rotate(-90)\" text-anchor=\"middle\">" << escape(panel.y_label) << "</text>\n";
}

// A non-finite sample lifts the pen (a gap, not a line to nowhere); a step
// series holds its value until the next sample.
void write_series(std::ostringstream& svg, const Frame& f, const YScale& ys) {
  const Panel& panel = ys.panel;
  const double y0 = ys.y0, panel_h = f.panel_h;
  const double floor_px = panel.log_y ? y0 + panel_h : std::clamp(ys.sy(0.0), y0, y0 + panel_h);
  for (const auto& s : panel.series) {
    if (s.bars) {
      for (std::size_t i = 0; i < std::min(s.x.size(), s.y.size()); ++i) {
        if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
        const double top_px = ys.sy(s.y[i]);
        svg << "<rect class=\"bar\" x=\"" << fmt(f.sx(s.x[i])) << "\" y=\"" << fmt(std::min(top_px, floor_px))
            << "\" width=\"" << fmt(f.sx(s.x[i] + s.bar_width) - f.sx(s.x[i])) << "\" height=\""
            << fmt(std::fabs(floor_px - top_px)) << "\" fill=\"" << s.color << "\"/>\n";
      }
      continue;
    }
    svg << "<path fill=\"none\" stroke=\"" << s.color << "\" stroke-width=\"" << fmt(s.width) << '"'
        << (s.dashed ? " stroke-dasharray=\"6 3\"" : "") << " d=\"";
    bool pen_down = false;
    double last_y = 0.0;
    for (std::size_t i = 0; i < std::min(s.x.size(), s.y.size()); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) {
        pen_down = false;
        continue;
      }
      if (pen_down && s.steps) svg << 'L' << fmt(f.sx(s.x[i])) << ',' << fmt(ys.sy(last_y));
      svg << (pen_down ? 'L' : 'M') << fmt(f.sx(s.x[i])) << ',' << fmt(ys.sy(s.y[i]));
      pen_down = true;
      last_y = s.y[i];
    }
    svg << "\"/>\n";
  }
}

// Legend, top right inside the panel: last, so that it draws over the data.
void write_legend(std::ostringstream& svg, const Frame& f, const Panel& panel, double y0) {
  double ly = y0 + 16;
  const double lx = f.left + f.plot_w - 230;
  auto legend_entry = [&](const std::string& color, const std::string& label, bool dashed, double w) {
    svg << "<line x1=\"" << fmt(lx) << "\" x2=\"" << fmt(lx + 24) << "\" y1=\"" << fmt(ly - 4) << "\" y2=\""
        << fmt(ly - 4) << "\" stroke=\"" << color << "\" stroke-width=\"" << fmt(w) << '"'
        << (dashed ? " stroke-dasharray=\"6 3\"" : "") << "/>\n<text x=\"" << fmt(lx + 30) << "\" y=\"" << fmt(ly)
        << "\">" << escape(label) << "</text>\n";
    ly += 16;
  };
  for (const auto& s : panel.series) legend_entry(s.color, s.label, s.dashed, s.width);
  if (!panel.markers.empty() && !panel.marker_label.empty())
    legend_entry(panel.marker_color, panel.marker_label, false, std::max(1.0, panel.marker_width));
  svg << "</g>\n";
}

}  // namespace

std::string render_svg(const Figure& figure) {
  const Frame f = frame_of(figure);
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << figure.width << "\" height=\"" << fmt(f.height)
      << "\" viewBox=\"0 0 " << figure.width << ' ' << fmt(f.height)
      << "\" font-family=\"DejaVu Sans, Arial, sans-serif\" font-size=\"12\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  if (!figure.title.empty()) {
    svg << "<text x=\"" << fmt(f.left + f.plot_w / 2) << "\" y=\"26\" text-anchor=\"middle\" font-size=\"15\">"
        << escape(figure.title) << "</text>\n";
  }

  const auto xticks = nice_ticks(f.xr.lo, f.xr.hi, 10);
  for (std::size_t pi = 0; pi < figure.panels.size(); ++pi) {
    const Panel& panel = figure.panels[pi];
    const double y0 = f.top + static_cast<double>(pi) * (f.panel_h + f.gap);
    const YScale ys = y_scale(panel, y0, f.panel_h);
    write_axes(svg, f, ys, xticks);
    write_markers(svg, f, ys);
    write_series(svg, f, ys);
    write_legend(svg, f, panel, y0);
  }
  if (!figure.x_label.empty()) {
    svg << "<text x=\"" << fmt(f.left + f.plot_w / 2) << "\" y=\"" << fmt(f.height - 12) << "\" text-anchor=\"middle\">"
        << escape(figure.x_label) << "</text>\n";
  }
  svg << "</svg>\n";
  return svg.str();
}

bool write_svg(const Figure& figure, const std::string& path, std::string* error) {
  const std::string text = render_svg(figure);
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) {
      if (error) *error = "cannot write '" + temporary + "': " + std::strerror(errno);
      return false;
    }
    out << text;
    out.flush();
    if (!out) {
      if (error) *error = "writing '" + temporary + "' failed: " + std::strerror(errno);
      std::remove(temporary.c_str());
      return false;
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    if (error) *error = "cannot rename '" + temporary + "' to '" + path + "': " + std::strerror(errno);
    std::remove(temporary.c_str());
    return false;
  }
  return true;
}

}  // namespace rtcosim::plot
