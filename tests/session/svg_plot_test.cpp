#include "session/report/svg_plot.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include <gtest/gtest.h>

namespace rtcosim::plot {
namespace {

TEST(NiceTicks, StepsAreOneTwoOrFiveTimesAPowerOfTenAndCoverTheRange) {
  const auto ticks = nice_ticks(0.0, 5.0, 10);
  ASSERT_EQ(ticks.size(), 11u);
  EXPECT_DOUBLE_EQ(ticks.front(), 0.0);
  EXPECT_NEAR(ticks.back(), 5.0, 1e-12);
  const auto small = nice_ticks(-0.013, 0.021, 6);
  ASSERT_GE(small.size(), 2u);
  // (0.021 + 0.013) / 6 = 0.00567: the next of 1, 2, 5, 10 x 10^-3 is 10^-2.
  EXPECT_NEAR(small[1] - small[0], 0.01, 1e-15);
  EXPECT_GE(small.front(), -0.013);
  EXPECT_LE(small.back(), 0.021);
  EXPECT_TRUE(nice_ticks(1.0, 1.0).empty());
  EXPECT_TRUE(nice_ticks(0.0, std::numeric_limits<double>::infinity()).empty());
}

TEST(RenderSvg, DrawsEachSeriesAsOnePathAndSkipsNonFinitePoints) {
  Figure f;
  f.title = "a < b & c";
  Panel p;
  p.series.push_back({"s", {0, 1, 2, 3}, {0, 1, std::nan(""), 3}});
  p.markers = {1.5};
  p.marker_label = "marks";
  f.panels = {p};
  const std::string svg = render_svg(f);
  EXPECT_NE(svg.find("a &lt; b &amp; c"), std::string::npos);
  // The NaN lifts the pen: the path restarts with a move.
  const auto d = svg.find(" d=\"M");
  ASSERT_NE(d, std::string::npos);
  const auto end = svg.find('"', d + 4);
  const std::string path = svg.substr(d + 4, end - d - 4);
  EXPECT_EQ(std::count(path.begin(), path.end(), 'M'), 2);
  EXPECT_EQ(std::count(path.begin(), path.end(), 'L'), 1);
  EXPECT_EQ(svg.rfind("</svg>"), svg.size() - 7);
}

TEST(WriteSvg, WritesAtomicallyAndReportsFailures) {
  const auto dir = std::filesystem::temp_directory_path() / "rtcosim_svg_test";
  std::filesystem::create_directories(dir);
  const auto path = (dir / "plot.svg").string();
  Figure f;
  Panel p;
  p.series.push_back({"s", {0, 1}, {0, 1}});
  f.panels = {p};
  std::string why;
  ASSERT_TRUE(write_svg(f, path, &why)) << why;
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), render_svg(f));
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  EXPECT_FALSE(write_svg(f, (dir / "missing" / "plot.svg").string(), &why));
  EXPECT_NE(why.find("missing"), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace rtcosim::plot
