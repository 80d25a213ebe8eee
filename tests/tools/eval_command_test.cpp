#include "tools/rtcosim/eval_command.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "coupling/evaluation.hpp"
#include "tools/rtcosim/cli_args.hpp"

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
  const std::vector<std::string> header = {"variant", "signal", "zoh", "polynomial", "hermite", "interpolated",
                                           "smoothed", "ecd", "ecc", "predictor"};
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

TEST(EvalTable, ZohOnTheSineMatchesAnIndependentComputation) {
  // zoh with h_s = 40 ms: at t the held value is y(floor(t / h_s) h_s).
  const auto registry = coupling::MethodRegistry::with_builtins();
  const auto rows = split_tsv(eval_table(registry, TableFormat::kTsv));
  double sum = 0.0;
  for (int i = 0; i < 5000; ++i) {
    const int held_ms = (i / 40) * 40;
    const double y = std::sin(2.0 * M_PI * i * 1e-3);
    const double u = std::sin(2.0 * M_PI * held_ms * 1e-3);
    sum += (y - u) * (y - u);
  }
  char expected[32];
  std::snprintf(expected, sizeof expected, "%.3g", sum / 5000.0);
  EXPECT_EQ(rows[1][2], expected);
}

TEST(EvalTable, MarkdownHasTheSameCells) {
  const auto registry = coupling::MethodRegistry::with_builtins();
  const std::string md = eval_table(registry, TableFormat::kMarkdown);
  const auto rows = split_tsv(eval_table(registry, TableFormat::kTsv));
  EXPECT_NE(md.find("| variant | signal | zoh | polynomial | hermite | interpolated | smoothed | ecd | ecc | predictor |"),
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

TEST(EvalCommand, PlotToAnUnwritablePlaceFailsWithoutLeavingAFile) {
  EXPECT_EQ(run_eval_command({"--plot", "/nonexistent-dir/plot.svg", "--duration", "0.1s"}), 1);
}

}  // namespace
}  // namespace rtcosim::tools
