#include "tools/rtcosim/eval_command.hpp"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>

#include "coupling/evaluation.hpp"
#include "tools/common/cli_args.hpp"

namespace rtcosim::tools {
namespace {

std::vector<std::vector<std::string>> split_tsv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells;
    std::istringstream cells_in(line);
    for (std::string cell; std::getline(cells_in, cell, '\t');) cells.push_back(cell);
    rows.push_back(cells);
  }
  return rows;
}

TEST(EvalTable, TsvHasTheExactHeaderAndNineRowsOfMethodValues) {
  const auto registry = coupling::MethodRegistry::with_builtins();
  const auto rows = split_tsv(eval_table(registry, TableFormat::kTsv));
  ASSERT_EQ(rows.size(), 10u);
  const std::vector<std::string> header = {"variant",      "signal",   "zoh", "polynomial", "hermite",
                                           "interpolated", "smoothed", "ecd", "ecc",        "predictor"};
  EXPECT_EQ(rows[0], header);
  const std::vector<std::string> variants = {"A1", "A1", "A1", "A2", "A2", "A2", "A3", "A3", "A3"};
  const std::vector<std::string> signals = {"y1", "y2", "y3", "y1", "y2", "y3", "y1", "y2", "y3"};
  for (std::size_t r = 1; r < rows.size(); ++r) {
    ASSERT_EQ(rows[r].size(), header.size()) << "row " << r;
    EXPECT_EQ(rows[r][0], variants[r - 1]);
    EXPECT_EQ(rows[r][1], signals[r - 1]);
  }
}

TEST(EvalTable, EveryCellIsTheMseOfItsOwnRunInPercentThreeG) {
  const auto registry = coupling::MethodRegistry::with_builtins();
  const auto rows = split_tsv(eval_table(registry, TableFormat::kTsv));
  const auto& variants = coupling::eval_variants();
  for (std::size_t r = 1; r < rows.size(); ++r) {
    const auto& variant = variants[(r - 1) / 3];
    for (std::size_t c = 2; c < rows[r].size(); ++c) {
      coupling::EvalSettings settings;
      settings.signal = rows[r][1];
      settings.method = rows[0][c];
      settings.macro_step = variant.macro_step;
      settings.params = coupling::variant_params(registry, settings.method, variant);
      char expected[32];
      std::snprintf(expected, sizeof expected, "%.3g", coupling::run_evaluation(registry, settings).mse);
      EXPECT_EQ(rows[r][c], expected) << variant.id << ' ' << settings.signal << ' ' << settings.method;
    }
  }
}

// The test signals, written out here rather than taken from the code under
// test.
double y1(double t) { return std::sin(2.0 * M_PI * t); }
double y2(double t) { return std::exp(-1.5 * t) * std::cos(3.0 * t); }
double y3(double t) { return t < 3.0 ? (4.0 * t - t * t) / 3.0 : 1.0; }

// The table's MSE for a method that, at each micro step t_i = i ms of 5 s,
// evaluates the polynomial through the newest `points` samples of y taken
// every `macro_us` microseconds at or before t_i (one point: zero-order
// hold; order n: n + 1 points), in Lagrange form rather than the code's
// Newton form.
double lagrange_mse(double (*y)(double), std::int64_t macro_us, int points) {
  double sum = 0.0;
  for (std::int64_t i = 0; i < 5000; ++i) {
    const double t = static_cast<double>(i) * 1e-3;
    const std::int64_t newest = i * 1000 / macro_us;  // the newest sample index: floor(t / h)
    double u = 0.0;
    for (int j = 0; j < points; ++j) {
      const double tj = static_cast<double>((newest - j) * macro_us) * 1e-6;
      double weight = 1.0;
      for (int m = 0; m < points; ++m) {
        const double tm = static_cast<double>((newest - m) * macro_us) * 1e-6;
        if (m != j) weight *= (t - tm) / (tj - tm);
      }
      u += weight * y(tj);
    }
    sum += (y(t) - u) * (y(t) - u);
  }
  return sum / 5000.0;
}

std::string three_g(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", v);
  return text;
}

TEST(EvalTable, CellsMatchIndependentlyComputedMses) {
  const auto registry = coupling::MethodRegistry::with_builtins();
  const auto rows = split_tsv(eval_table(registry, TableFormat::kTsv));
  ASSERT_EQ(rows.size(), 10u);
  // Rows: A1 y1..y3, A2 y1..y3, A3 y1..y3; columns: variant, signal, zoh, polynomial, ...
  EXPECT_EQ(rows[1][2], three_g(lagrange_mse(y1, 40000, 1)));  // A1 y1 zoh
  EXPECT_EQ(rows[3][2], three_g(lagrange_mse(y3, 40000, 1)));  // A1 y3 zoh
  EXPECT_EQ(rows[7][2], three_g(lagrange_mse(y1, 75000, 1)));  // A3 y1 zoh
  EXPECT_EQ(rows[1][3], three_g(lagrange_mse(y1, 40000, 4)));  // A1 y1 polynomial, n_E 3
  EXPECT_EQ(rows[5][3], three_g(lagrange_mse(y2, 40000, 5)));  // A2 y2 polynomial, n_E 4
  EXPECT_EQ(rows[9][3], three_g(lagrange_mse(y3, 75000, 4)));  // A3 y3 polynomial, n_E 3
}

TEST(EvalTable, ZohOnTheSineHasAClosedForm) {
  // zoh with h_s = 40 ms over 5 s: 125 holds whose start phases are 25
  // equally spaced points of the circle, five times, so the mean over them
  // of (sin(a + b) - sin a)^2 is exactly 1 - cos b, and the MSE is
  // (1/40) sum_{k<40} (1 - cos(k x)), x = 2 pi * 1 ms; the sum of cosines
  // is sin(20 x) cos(19.5 x) / sin(x / 2).
  const double x = 2.0 * M_PI * 1e-3;
  const double closed = 1.0 - std::sin(20.0 * x) * std::cos(19.5 * x) / std::sin(0.5 * x) / 40.0;
  EXPECT_NEAR(closed, lagrange_mse(y1, 40000, 1), 1e-15);
  const auto rows = split_tsv(eval_table(coupling::MethodRegistry::with_builtins(), TableFormat::kTsv));
  EXPECT_EQ(rows[1][2], three_g(closed));
  EXPECT_EQ(rows[4][2], three_g(closed));  // A2 differs from A1 only in n_E, which zoh has not
}

TEST(EvalTable, MarkdownHasTheSameCells) {
  const auto registry = coupling::MethodRegistry::with_builtins();
  const std::string md = eval_table(registry, TableFormat::kMarkdown);
  const auto rows = split_tsv(eval_table(registry, TableFormat::kTsv));
  EXPECT_NE(
      md.find("| variant | signal | zoh | polynomial | hermite | interpolated | smoothed | ecd | ecc | predictor |"),
      std::string::npos);
  std::string first_row = "| A1 | y1 |";
  for (std::size_t c = 2; c < rows[1].size(); ++c) first_row += " " + rows[1][c] + " |";
  EXPECT_NE(md.find(first_row), std::string::npos) << md;
}

TEST(CliArgs, ParsesValuesFlagsAndRepeats) {
  CliArgs args("eval", {"method", "param"}, {"table"}, {"param"});
  args.parse({"--method=ecc", "--table", "--param", "a=1", "--param=b=2"});
  EXPECT_EQ(args.value("method"), "ecc");
  EXPECT_TRUE(args.flag("table"));
  EXPECT_EQ(args.values("param"), (std::vector<std::string>{"a=1", "b=2"}));
}

TEST(CliArgs, RejectsUnknownMissingAndDuplicateOptionsByName) {
  auto message = [](std::vector<std::string> argv) {
    CliArgs args("eval", {"method", "signal"}, {"table"});
    try {
      args.parse(argv);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message({"--sigal", "y1"}), "unknown option '--sigal' for 'rtcosim eval' (did you mean '--signal'?)");
  EXPECT_EQ(message({"--method"}), "option --method needs a value");
  EXPECT_EQ(message({"--method", "a", "--method", "b"}), "option --method given twice ('a' and 'b')");
  EXPECT_EQ(message({"--table=yes"}), "option --table takes no value");
}

TEST(EvalCommand, ExitCodesSayWhetherTheInputWasUsable) {
  EXPECT_EQ(run_eval_command({"--signal", "y2", "--method", "ecd", "--duration", "1s"}), 0);
  EXPECT_EQ(run_eval_command({"--method", "polynomal"}), 2);
  EXPECT_EQ(run_eval_command({"--order", "0"}), 2);
  EXPECT_EQ(run_eval_command({"--macro", "-5ms"}), 2);
  EXPECT_EQ(run_eval_command({"--signal", "y4"}), 2);
  EXPECT_EQ(run_eval_command({"--table", "--method", "zoh"}), 2);
  EXPECT_EQ(run_eval_command({"--format", "csv", "--table"}), 2);
  EXPECT_EQ(run_eval_command({"--help"}), 0);
  EXPECT_EQ(run_eval_command({"--method", "ecc", "--jitter", "0.4", "--duration", "1s"}), 0);
  EXPECT_EQ(run_eval_command({"--jitter", "1"}), 2);
  EXPECT_EQ(run_eval_command({"--jitter", "-0.1"}), 2);
  EXPECT_EQ(run_eval_command({"--jitter", "20%"}), 2);
}

// The jittered table: same shape, other figures than the grid's.
TEST(EvalTable, WithJitterEveryCellIsComputedOnTheJitteredTags) {
  const auto registry = coupling::MethodRegistry::with_builtins();
  const auto grid = split_tsv(eval_table(registry, TableFormat::kTsv));
  const auto jittered = split_tsv(eval_table(registry, TableFormat::kTsv, 0.4));
  ASSERT_EQ(jittered.size(), grid.size());
  EXPECT_EQ(jittered[0], grid[0]);
  coupling::EvalSettings settings;
  settings.signal = "y2";
  settings.method = "ecc";
  settings.macro_step = 0.075;
  settings.params = {{"order", "3"}};
  settings.jitter = 0.4;
  char expected[32];
  std::snprintf(expected, sizeof expected, "%.3g", coupling::run_evaluation(registry, settings).mse);
  EXPECT_EQ(jittered[8][8], expected);  // A3, y2, ecc
  EXPECT_NE(jittered[8][8], grid[8][8]);
}

// What `rtcosim eval --plot PATH` returns and prints on stderr.
std::pair<int, std::string> eval_with_plot(const std::string& path) {
  ::testing::internal::CaptureStderr();
  const int code = run_eval_command({"--plot", path, "--duration", "0.1s"});
  return {code, ::testing::internal::GetCapturedStderr()};
}

TEST(EvalCommand, PlotToAnUnwritablePlaceFailsWithoutLeavingAFile) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("rtcosim_eval_plot_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);

  // No such directory: the temporary file cannot be opened.
  const std::string nowhere = (dir / "absent" / "plot.svg").string();
  EXPECT_EQ(eval_with_plot(nowhere),
            std::make_pair(1, "rtcosim eval: cannot write '" + nowhere + ".tmp': No such file or directory\n"));
  EXPECT_FALSE(fs::exists(dir / "absent"));

  // The disk fills up: the temporary file is a link to /dev/full, writing
  // fails and the temporary (the link) is removed.
  const fs::path full = dir / "full.svg";
  fs::create_symlink("/dev/full", dir / "full.svg.tmp");
  EXPECT_EQ(eval_with_plot(full.string()),
            std::make_pair(1, "rtcosim eval: writing '" + full.string() + ".tmp' failed: No space left on device\n"));
  EXPECT_FALSE(fs::exists(full));
  EXPECT_FALSE(fs::is_symlink(dir / "full.svg.tmp"));

  // The place is taken by a directory: the finished temporary cannot be
  // renamed onto it and is removed; the directory stays as it was.
  const fs::path taken = dir / "taken.svg";
  fs::create_directories(taken / "content");
  EXPECT_EQ(eval_with_plot(taken.string()),
            std::make_pair(1, "rtcosim eval: cannot rename '" + taken.string() + ".tmp' to '" + taken.string() +
                                  "': Is a directory\n"));
  EXPECT_FALSE(fs::exists(dir / "taken.svg.tmp"));
  EXPECT_TRUE(fs::is_directory(taken / "content"));

  std::size_t left = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir)) ++left;
  EXPECT_EQ(left, 1u);  // only taken.svg
  fs::remove_all(dir);
}

}  // namespace
}  // namespace rtcosim::tools
