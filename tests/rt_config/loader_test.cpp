// The task-graph loader: the examples load and round-trip, a file reports
// all its errors, bad input of any kind ends as a diagnostic (quickly, never
// a crash), and the values read from the two-task example are right.
#include "rt_config/loader.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <variant>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>

#include "rt_config/writer.hpp"
#include "tests/support/unprivileged.hpp"

#ifndef RTCOSIM_EXAMPLES_DIR
#error "RTCOSIM_EXAMPLES_DIR must name the examples directory"
#endif

namespace rtcosim::config {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::vector<std::string> example_files() {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(RTCOSIM_EXAMPLES_DIR, ec)) {
    if (entry.is_regular_file() && entry.path().extension() == ".yaml") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string all_of(const LoadResult& r) {
  std::string out;
  for (const auto& d : r.diagnostics) out += "\n  " + d.str();
  return out.empty() ? "\n  (no diagnostics)" : out;
}

std::size_t errors(const LoadResult& r) { return count(r.diagnostics, Diagnostic::Severity::kError); }

bool mentions(const LoadResult& r, const std::string& text) {
  return std::any_of(r.diagnostics.begin(), r.diagnostics.end(),
                     [&](const Diagnostic& d) { return d.message.find(text) != std::string::npos; });
}

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// A scratch directory of this test process, removed at the end.
class ScratchDir {
 public:
  ScratchDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() /
            ("rtcosim_loader_test_" + std::to_string(::getpid()) + "_" + (info ? info->name() : "x"));
    fs::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::permissions(path_, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  [[nodiscard]] std::string write(const std::string& name, const std::string& content) const {
    const fs::path p = path_ / name;
    std::ofstream out(p, std::ios::binary);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    return p.string();
  }
  [[nodiscard]] const fs::path& path() const noexcept { return path_; }

 private:
  fs::path path_;
};

// A small valid graph to vary.
constexpr const char* kSmall = R"(tasks:
  - {name: fast, period: 1ms, cpu: 0, priority: 80}
blocks:
  - {name: src, type: constant, task: fast, params: {value: 1}}
  - {name: out, type: gain, task: fast, params: {gain: 2}}
wires:
  - {from: src.y, to: out.u}
)";

LoadOptions two_cpus() { return LoadOptions{.cpu_count = 2}; }

// ---------------------------------------------------------------- examples

class Example : public ::testing::TestWithParam<std::string> {};

TEST_P(Example, LoadsWithoutErrors) {
  const LoadResult r = load_graph_file(GetParam());
  EXPECT_TRUE(r.ok()) << all_of(r);
  EXPECT_FALSE(r.graph.tasks.empty());
  EXPECT_FALSE(r.graph.diagram.blocks.empty());
}

TEST_P(Example, RoundTrips) {
  const LoadResult first = load_graph_file(GetParam());
  ASSERT_TRUE(first.ok()) << all_of(first);
  const std::string text = write_graph(first.graph);
  const LoadResult second = load_graph_text(text, "written");
  ASSERT_TRUE(second.ok()) << all_of(second) << "\nwritten:\n" << text;
  std::string difference;
  EXPECT_TRUE(same_graph(first.graph, second.graph, &difference)) << difference << "\nwritten:\n" << text;
  // Writing is a normal form: the second writing is the first.
  EXPECT_EQ(write_graph(second.graph), text);
}

std::string example_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = fs::path(info.param).stem().string();
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Files, Example, ::testing::ValuesIn(example_files()), example_name);

TEST(Examples, TheIssueExamplesArePresent) {
  const auto files = example_files();
  for (const char* name : {"flight_control.yaml", "two_task_sine.yaml", "four_task.yaml"}) {
    EXPECT_TRUE(std::any_of(files.begin(), files.end(), [&](const std::string& f) {
      return fs::path(f).filename() == name;
    })) << name;
  }
}

// ------------------------------------------------------- all errors at once

TEST(Loader, ReportsEveryErrorOfAFile) {
  // Five independent mistakes, one per marked line.
  const std::string text = R"(tasks:
  - {name: fast, period: 40, cpu: 0, priority: 80}
  - {name: slow, period: 10ms, cpu: 1, priority: 100}
blocks:
  - {name: src, type: constant, task: fast, params: {value: 1}}
  - {name: out, type: gian, task: fast}
  - {name: use, type: gain, task: slow, params: {gain: 2}}
wires:
  - {from: src.y, to: use.u, coupling: {method: polynomial, order: 9}}
trace: {enabled: maybe}
)";
  const LoadResult r = load_graph_text(text, "five.yaml", two_cpus());
  EXPECT_FALSE(r.ok());
  ASSERT_EQ(errors(r), 5u) << all_of(r);
  std::vector<int> lines;
  for (const auto& d : r.diagnostics) {
    if (d.severity == Diagnostic::Severity::kError) lines.push_back(d.line);
  }
  EXPECT_EQ(lines, (std::vector<int>{2, 3, 6, 9, 10}));  // in file order
  EXPECT_EQ(r.diagnostics.front().str(),
            "five.yaml:2:26: error: task 'fast': 'period' = 40 has no unit — expected a duration with a unit, "
            "e.g. \"40ms\" or \"40s\"");
  for (const auto& d : r.diagnostics) EXPECT_GT(d.column, 0) << d.str();
}

// max_extrapolation and max_tag_lead belong to the link, whatever its
// method: read as durations, written back, and wrong ones pointed at.
TEST(Loader, ACouplingTakesTheLinkParameters) {
  const std::string text = R"(tasks:
  - {name: fast, period: 1ms, cpu: 0, priority: 80}
  - {name: slow, period: 10ms, cpu: 1, priority: 70}
blocks:
  - {name: src, type: sine, task: slow}
  - {name: out, type: gain, task: fast, params: {gain: 2}}
wires:
  - {from: src.y, to: out.u, coupling: {method: polynomial, order: 3, max_extrapolation: 30ms, max_tag_lead: 2s}}
)";
  const LoadResult r = load_graph_text(text, "link.yaml", two_cpus());
  ASSERT_TRUE(r.ok()) << all_of(r);
  const auto& c = *r.graph.wires.front().coupling;
  ASSERT_EQ(c.params.size(), 1u);  // only 'order' goes to the method
  EXPECT_EQ(c.max_extrapolation, 0.030);
  EXPECT_EQ(c.max_tag_lead, 2.0);
  const LoadResult again = load_graph_text(write_graph(r.graph), "again.yaml", two_cpus());
  ASSERT_TRUE(again.ok()) << all_of(again);
  EXPECT_TRUE(same_graph(r.graph, again.graph));

  auto error_of = [&](const std::string& from, const std::string& to) {
    std::string bad = text;
    bad.replace(bad.find(from), from.size(), to);
    const LoadResult b = load_graph_text(bad, "bad.yaml", two_cpus());
    EXPECT_EQ(errors(b), 1u) << all_of(b);
    return b.diagnostics.empty() ? std::string() : b.diagnostics.front().str();
  };
  EXPECT_EQ(error_of("max_extrapolation: 30ms", "max_extrapolation: 30"),
            "bad.yaml:8:90: error: the coupling of wire 'src.y -> out.u': 'max_extrapolation' = 30 has no unit — "
            "expected a duration with a unit, e.g. \"30ms\" or \"30s\"");
  EXPECT_EQ(error_of("max_tag_lead: 2s", "max_tag_lead: -2s"),
            "bad.yaml:8:110: error: the coupling of wire 'src.y -> out.u': 'max_tag_lead' must be positive — "
            "expected a duration like \"50ms\"");
}

TEST(Loader, TheSmallGraphIsValid) {
  const LoadResult r = load_graph_text(kSmall, "small.yaml", two_cpus());
  EXPECT_TRUE(r.ok()) << all_of(r);
  EXPECT_TRUE(r.diagnostics.empty()) << all_of(r);
}

// A period below 1 us is an error (nanosecond periods ran for minutes and
// took gigabytes); below 20 us a warning. Both say where and which floor.
// One block with no inputs runs alone: 'wires' absent, null or empty is a
// graph without wires (an unwired input is still refused: the invalid file
// missing_wires.yaml).
TEST(Loader, AGraphWithoutWiresIsValid) {
  const std::string head =
      "name: alone\ntasks:\n  - {name: fast, period: 1ms, cpu: 0, priority: 80}\nblocks:\n"
      "  - {name: src, type: sine, task: fast}\n";
  for (const std::string tail : {"", "wires:\n", "wires: []\n"}) {
    const LoadResult r = load_graph_text(head + tail, "alone.yaml", two_cpus());
    EXPECT_TRUE(r.ok()) << tail << all_of(r);
    EXPECT_TRUE(r.diagnostics.empty()) << tail << all_of(r);
    EXPECT_TRUE(r.graph.wires.empty());
    EXPECT_EQ(r.graph.diagram.blocks.size(), 1u);
  }
}

TEST(Loader, PeriodsBelowTheFloorsAreAnErrorOrAWarning) {
  const auto with_period = [](const std::string& period) {
    return "tasks:\n  - {name: t, period: " + period +
           "}\nblocks:\n  - {name: k, type: constant, task: t, params: {value: [1]}}\nwires: []\n";
  };
  const LoadResult tiny = load_graph_text(with_period("0.5ns"), "tiny.yaml");
  EXPECT_FALSE(tiny.ok());
  ASSERT_EQ(tiny.diagnostics.size(), 1u) << all_of(tiny);
  EXPECT_EQ(tiny.diagnostics[0].str(),
            "tiny.yaml:2:23: error: task 't': 'period' = 0.5ns is below the floor of 1 ns (virtual time counts whole "
            "nanoseconds) — expected at least \"1ns\"");
  // Below 1 us: virtual time only (a model's reference step of 0.1 us), a
  // warning here, refused by a real-time run (GraphSpec::realtime_refusal).
  const LoadResult sub_us = load_graph_text(with_period("100ns"), "sub.yaml");
  EXPECT_TRUE(sub_us.ok()) << all_of(sub_us);
  ASSERT_EQ(sub_us.diagnostics.size(), 1u) << all_of(sub_us);
  EXPECT_EQ(sub_us.diagnostics[0].str(),
            "sub.yaml:2:23: warning: task 't': 'period' = 100ns is below 1us: it runs only in virtual time (rtcosim "
            "run --virtual); a real-time run refuses it");
  EXPECT_EQ(sub_us.graph.realtime_refusal(),
            "task 't' runs every 100 ns, below the real-time floor of 1us — such a period runs only in virtual time "
            "(rtcosim run --virtual)");
  EXPECT_EQ(load_graph_text(with_period("1us"), "one.yaml").graph.realtime_refusal(), "");
  const LoadResult fast = load_graph_text(with_period("10us"), "fast.yaml");
  EXPECT_TRUE(fast.ok()) << all_of(fast);
  ASSERT_EQ(fast.diagnostics.size(), 1u) << all_of(fast);
  EXPECT_EQ(fast.diagnostics[0].str(),
            "fast.yaml:2:23: warning: task 't': 'period' = 10us is below 20 us, the practical floor: wake-up latency "
            "alone can take a whole period");
  const LoadResult ok = load_graph_text(with_period("20us"), "ok.yaml");
  EXPECT_TRUE(ok.ok() && ok.diagnostics.empty()) << all_of(ok);
}

// -------------------------------------------------------------- bad input

TEST(BadInput, BinaryJunk) {
  std::string junk(4096, '\0');
  std::uint32_t x = 2463534242u;
  for (char& c : junk) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    c = static_cast<char>(x & 0xFF);
  }
  const LoadResult r = load_graph_text(junk, "junk.bin");
  EXPECT_FALSE(r.ok());
  ASSERT_EQ(r.diagnostics.size(), 1u) << all_of(r);
  EXPECT_NE(r.diagnostics[0].message.find("expected a YAML text file"), std::string::npos) << all_of(r);
}

TEST(BadInput, NulBytes) {
  const std::string text = std::string("tasks:\n  - {name: fast,") + '\0' + " period: 1ms}\n";
  const LoadResult r = load_graph_text(text, "nul.yaml");
  EXPECT_FALSE(r.ok());
  ASSERT_EQ(r.diagnostics.size(), 1u) << all_of(r);
  EXPECT_EQ(r.diagnostics[0].str(), "nul.yaml:2:17: error: the file holds a NUL byte — expected a YAML text file");
}

TEST(BadInput, InvalidUtf8) {
  const LoadResult r = load_graph_text("name: caf\xE9\ntasks: []\n", "latin1.yaml");
  EXPECT_FALSE(r.ok());
  ASSERT_EQ(r.diagnostics.size(), 1u) << all_of(r);
  EXPECT_EQ(r.diagnostics[0].str(),
            "latin1.yaml:1:10: error: the file holds a byte that is not UTF-8 — expected a YAML text file");
  // A truncated multi-byte sequence at the very end.
  EXPECT_FALSE(load_graph_text(std::string(kSmall) + "# \xE2\x82", "cut.yaml").ok());
}

TEST(BadInput, ValidUtf8IsFine) {
  std::string text = kSmall;
  text.replace(text.find("period: 1ms"), 11, "period: 250µs");
  text = "# Stellgröße, 制御\nname: café\n" + text;
  const LoadResult r = load_graph_text(text, "utf8.yaml", two_cpus());
  ASSERT_TRUE(r.ok()) << all_of(r);
  EXPECT_EQ(r.graph.name, "café");
  EXPECT_DOUBLE_EQ(r.graph.tasks.at(0).period, 250e-6);
}

TEST(BadInput, EmptyText) {
  for (const std::string text : {"", "\n\n", "   \n", "# only a comment\n", "---\n", "~\n"}) {
    const LoadResult r = load_graph_text(text, "empty.yaml");
    EXPECT_FALSE(r.ok()) << '"' << text << '"';
    ASSERT_EQ(r.diagnostics.size(), 1u) << all_of(r);
    EXPECT_EQ(r.diagnostics[0].str(),
              "empty.yaml:1:1: error: the file holds no task graph — expected a mapping with 'tasks', 'blocks' and "
              "'wires'");
  }
}

TEST(BadInput, EmptyFile) {
  const ScratchDir dir;
  const std::string path = dir.write("empty.yaml", "");
  const LoadResult r = load_graph_file(path);
  EXPECT_FALSE(r.ok());
  ASSERT_EQ(r.diagnostics.size(), 1u) << all_of(r);
  EXPECT_NE(r.diagnostics[0].message.find("holds no task graph"), std::string::npos) << all_of(r);
  EXPECT_EQ(r.diagnostics[0].file, path);
}

TEST(BadInput, TenMegabyteFileIsRefusedBySizeQuickly) {
  const ScratchDir dir;
  std::string big;
  big.reserve(10u << 20);
  while (big.size() < (10u << 20)) big += "# padding padding padding padding padding padding padding padding\n";
  const std::string path = dir.write("big.yaml", big);
  const auto start = Clock::now();
  const LoadResult r = load_graph_file(path);
  const double took = seconds_since(start);
  EXPECT_FALSE(r.ok());
  ASSERT_EQ(r.diagnostics.size(), 1u) << all_of(r);
  EXPECT_EQ(r.diagnostics[0].str(),
            path + ": error: the file is larger than 4 MiB — expected a task graph of a few kilobytes");
  EXPECT_LT(took, 1.0);

  // The same text handed over directly is refused by its size as well.
  const auto start_text = Clock::now();
  const LoadResult t = load_graph_text(big, "big.yaml");
  EXPECT_LT(seconds_since(start_text), 1.0);
  EXPECT_FALSE(t.ok());
  ASSERT_EQ(t.diagnostics.size(), 1u) << all_of(t);
  EXPECT_EQ(t.diagnostics[0].str(), "big.yaml: error: the file is " + std::to_string(big.size()) +
                                        " bytes — expected a task graph under 4 MiB");
}

TEST(BadInput, DeeplyNestedLists) {
  for (const bool closed : {false, true}) {
    std::string text = "tasks: " + std::string(100000, '[');
    if (closed) text += std::string(100000, ']');
    text += "\n";
    const auto start = Clock::now();
    const LoadResult r = load_graph_text(text, "deep.yaml");
    EXPECT_LT(seconds_since(start), 2.0);
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(errors(r), 1u) << all_of(r);
    EXPECT_TRUE(mentions(r, "not valid YAML")) << all_of(r);
  }
}

TEST(BadInput, DeeplyNestedMappingsAndBlockLists) {
  std::string flow = "tasks: ";
  for (int i = 0; i < 20000; ++i) flow += "{a: ";
  const LoadResult r1 = load_graph_text(flow + "\n", "deep_maps.yaml");
  EXPECT_FALSE(r1.ok());
  std::string block = "tasks:\n";
  for (int i = 0; i < 3000; ++i) block += std::string(static_cast<std::size_t>(i) * 2 + 2, ' ') + "- \n";
  const LoadResult r2 = load_graph_text(block, "deep_block.yaml");
  EXPECT_FALSE(r2.ok());
}

TEST(BadInput, NestingWithinYamlLimitsIsReportedNotRecursed) {
  // Deep, but within what the parser accepts: the loader itself must not
  // recurse into it.
  const std::string params = std::string(200, '[') + "1" + std::string(200, ']');
  std::string text = kSmall;
  text.replace(text.find("{gain: 2}"), 9, "{gain: " + params + "}");
  const LoadResult r = load_graph_text(text, "nested.yaml", two_cpus());
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(errors(r), 1u) << all_of(r);
}

TEST(BadInput, AnchorsAndAliasesWork) {
  const std::string text = R"(tasks:
  - &task {name: fast, period: 1ms, cpu: 0, priority: 80}
blocks:
  - {name: src, type: constant, task: fast, params: {value: 1}}
  - {name: a, type: gain, task: fast, params: &twice {gain: 2}}
  - {name: b, type: gain, task: fast, params: *twice}
wires:
  - {from: src.y, to: a.u}
  - {from: a.y, to: b.u}
)";
  const LoadResult r = load_graph_text(text, "anchors.yaml", two_cpus());
  ASSERT_TRUE(r.ok()) << all_of(r);
  ASSERT_EQ(r.graph.diagram.blocks.size(), 3u);
  EXPECT_EQ(r.graph.diagram.blocks[2].params.all(), r.graph.diagram.blocks[1].params.all());

  // An alias of a whole task repeats it: a duplicate name, reported.
  const std::string twice = std::string(text).replace(text.find("blocks:"), 0, "  - *task\n");
  const LoadResult d = load_graph_text(twice, "twice.yaml", two_cpus());
  EXPECT_FALSE(d.ok());
  EXPECT_TRUE(mentions(d, "a second task is named 'fast'")) << all_of(d);

  // An alias of an anchor not (yet) defined.
  const LoadResult u = load_graph_text("tasks: *nowhere\n", "unknown_anchor.yaml");
  EXPECT_FALSE(u.ok());
  EXPECT_EQ(u.diagnostics.size(), 1u) << all_of(u);
}

TEST(BadInput, AliasBombFinishesFast) {
  // "Billion laughs": ten levels of nine aliases, 9^10 leaves if expanded.
  std::string text = "l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  for (int i = 1; i <= 10; ++i) {
    std::string row;
    for (int k = 0; k < 9; ++k) row += (k ? ", *l" : "*l") + std::to_string(i - 1);
    text += "l" + std::to_string(i) + ": &l" + std::to_string(i) + " [" + row + "]\n";
  }
  text += R"(tasks: *l10
blocks:
  - {name: b, type: state_space, task: t, params: {A: *l10, B: *l9, C: *l8}}
  - {name: c, type: gain, task: t, params: *l10}
wires: *l10
record: {signals: *l10, file: *l10}
trace: *l10
plugins: *l10
coupling: *l10
)";
  const auto start = Clock::now();
  const LoadResult r = load_graph_text(text, "bomb.yaml");
  EXPECT_LT(seconds_since(start), 1.0);
  EXPECT_FALSE(r.ok());
  EXPECT_LT(r.diagnostics.size(), 200u) << "the aliases were expanded";

  // The same bomb under keys the loader walks item by item.
  const std::string text2 = text.substr(0, text.find("tasks:")) + "tasks:\n  - {name: t, period: 1ms}\nblocks: *l10\n" +
                            "wires: []\nrecord: {signals: [b.y], file: x.csv}\n";
  const auto start2 = Clock::now();
  const LoadResult r2 = load_graph_text(text2, "bomb2.yaml");
  EXPECT_LT(seconds_since(start2), 1.0);
  EXPECT_FALSE(r2.ok());
}

TEST(BadInput, DirectoryPath) {
  const ScratchDir dir;
  const LoadResult r = load_graph_file(dir.path().string());
  EXPECT_FALSE(r.ok());
  ASSERT_EQ(r.diagnostics.size(), 1u) << all_of(r);
  EXPECT_EQ(r.diagnostics[0].file, dir.path().string());
  EXPECT_NE(r.diagnostics[0].message.find("directory"), std::string::npos) << all_of(r);
}

TEST(BadInput, MissingFile) {
  const ScratchDir dir;
  const std::string path = (dir.path() / "absent.yaml").string();
  const LoadResult r = load_graph_file(path);
  EXPECT_FALSE(r.ok());
  ASSERT_EQ(r.diagnostics.size(), 1u) << all_of(r);
  EXPECT_EQ(r.diagnostics[0].str(), path + ": error: cannot read the file: No such file or directory");
}

// As root (CI) the load runs in a child that has dropped to nobody.
TEST(BadInput, FileWithoutReadPermission) {
  const ScratchDir dir;
  const std::string path = dir.write("secret.yaml", kSmall);
  fs::permissions(path, fs::perms::none);
  const std::string got = testing::run_unprivileged([&] {
    const LoadResult r = load_graph_file(path);
    return r.ok() ? std::string("loaded") : all_of(r);
  });
  EXPECT_EQ(got, "\n  " + path + ": error: cannot read the file: Permission denied");
}

TEST(BadInput, NotYaml) {
  for (const std::string text : {"tasks: [\n", "a: b: c\n", "\t- tab\n", "{", "key: 'unterminated\n", "]]]\n",
                                 "- a\nb: c\n", "%YAML 9.9\n---\na: 1\n", "&a\n", "!!binary x\n"}) {
    const LoadResult r = load_graph_text(text, "bad.yaml");
    EXPECT_FALSE(r.ok()) << text;
    EXPECT_FALSE(r.diagnostics.empty()) << text;
  }
}

TEST(BadInput, WeirdScalarsDoNotSlipThrough) {
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"period: 1ms", "period: nan"},
           {"period: 1ms", "period: inf ms"},
           {"period: 1ms", "period: 1e400ms"},
           {"period: 1ms", "period: ''"},
           {"period: 1ms", "period: [1ms]"},
           {"cpu: 0", "cpu: 99999999999999999999999"},
           {"cpu: 0", "cpu: 0x1"},
           {"priority: 80", "priority: ~"},
           {"{gain: 2}", "{gain: nan}"},
           {"{gain: 2}", "{gain: -inf}"},
           {"{gain: 2}", "{gain: 1e999}"},
           {"{gain: 2}", "{gain: [1, .nan]}"},
           {"{value: 1}", "{value: [[1, 2], [3]]}"},
           {"src.y", "src.y."},
           {"src.y", ".y"},
       }) {
    std::string text = kSmall;
    text.replace(text.find(from), from.size(), to);
    const LoadResult r = load_graph_text(text, "weird.yaml", two_cpus());
    EXPECT_FALSE(r.ok()) << to;
    EXPECT_GE(errors(r), 1u) << to;
  }
}

// ------------------------------------------------------------ parsed values

TEST(ParsedValues, TwoTaskSine) {
  const LoadResult r = load_graph_file(std::string(RTCOSIM_EXAMPLES_DIR) + "/two_task_sine.yaml", two_cpus());
  ASSERT_TRUE(r.ok()) << all_of(r);
  const GraphSpec& g = r.graph;
  EXPECT_EQ(g.name, "two_task_sine");
  EXPECT_EQ(g.duration, 5.0);
  EXPECT_EQ(g.realtime, RealtimeMode::kPreferred);

  ASSERT_EQ(g.tasks.size(), 2u);
  const TaskSpec& slow = g.tasks[0];
  const TaskSpec& fast = g.tasks[1];
  EXPECT_EQ(slow.name, "slow");
  EXPECT_DOUBLE_EQ(slow.period, 0.040);
  EXPECT_EQ(slow.cpu, 0);
  EXPECT_EQ(slow.priority, 70);
  EXPECT_EQ(slow.integrator, tasks::IntegratorKind::kRk4);
  EXPECT_EQ(slow.step, StepPolicy::kFixed);
  EXPECT_EQ(slow.overrun, OverrunPolicy::kCatchUp);
  EXPECT_EQ(slow.max_step, 0.0);
  EXPECT_TRUE(slow.rate_group.empty());
  EXPECT_FALSE(slow.execution.declared);
  EXPECT_EQ(fast.name, "fast");
  EXPECT_DOUBLE_EQ(fast.period, 0.001);
  EXPECT_EQ(fast.cpu, 1);
  EXPECT_EQ(fast.priority, 80);
  EXPECT_EQ(fast.integrator, tasks::IntegratorKind::kRk4);
  EXPECT_EQ(g.find_task("fast"), &fast);
  EXPECT_EQ(g.find_task("medium"), nullptr);
  EXPECT_EQ(fast.where.line, 11);
  EXPECT_EQ(fast.where.column, 5);

  // The default coupling and the couplings of the links.
  EXPECT_EQ(g.default_coupling.method, "polynomial");
  ASSERT_EQ(g.default_coupling.params.size(), 1u);
  EXPECT_EQ(g.default_coupling.params[0].name, "order");
  EXPECT_EQ(g.default_coupling.params[0].value, "3");

  ASSERT_EQ(g.wires.size(), 8u);
  ASSERT_EQ(g.diagram.wires.size(), g.wires.size());
  std::size_t links = 0;
  for (const auto& w : g.wires) links += w.crosses_tasks ? 1 : 0;
  EXPECT_EQ(links, 3u);
  const WireEntry& y1 = g.wires[5];
  EXPECT_EQ(y1.wire.from.str(), "y1.y");
  EXPECT_EQ(y1.wire.to.str(), "use_y1.u");
  EXPECT_TRUE(y1.crosses_tasks);
  ASSERT_TRUE(y1.coupling.has_value());
  EXPECT_EQ(y1.coupling->method, "hermite");
  ASSERT_EQ(y1.coupling->params.size(), 1u);
  EXPECT_EQ(y1.coupling->params[0].name, "order");
  EXPECT_EQ(y1.coupling->params[0].value, "3");
  const WireEntry& y2 = g.wires[6];
  EXPECT_TRUE(y2.crosses_tasks);
  EXPECT_FALSE(y2.coupling.has_value());
  EXPECT_EQ(g.coupling_of(y2).method, "polynomial");
  const WireEntry& y3 = g.wires[7];
  ASSERT_TRUE(y3.coupling.has_value());
  EXPECT_EQ(y3.coupling->method, "zoh");
  EXPECT_TRUE(y3.coupling->params.empty());
  EXPECT_EQ(&g.coupling_of(y3), &*y3.coupling);
  EXPECT_FALSE(g.wires[0].crosses_tasks);
  EXPECT_EQ(g.wires[0].wire.from.block, "no_input");
  EXPECT_EQ(g.wires[0].wire.from.port, "y");

  // Blocks with their tasks and parameters: numbers, vectors, matrices, text.
  ASSERT_EQ(g.diagram.blocks.size(), 11u);
  ASSERT_EQ(g.block_locations.size(), g.diagram.blocks.size());
  const auto& blocks = g.diagram.blocks;
  EXPECT_EQ(blocks[0].name, "y1");
  EXPECT_EQ(blocks[0].type, "sine");
  EXPECT_EQ(blocks[0].task, "slow");
  EXPECT_EQ(std::get<double>(blocks[0].params.all().at("frequency")), 1.0);
  EXPECT_EQ(blocks[1].name, "y2");
  EXPECT_EQ(blocks[1].type, "state_space");
  EXPECT_EQ(std::get<tasks::Matrix>(blocks[1].params.all().at("A")), (tasks::Matrix{{0, 1}, {-11.25, -3}}));
  EXPECT_EQ(std::get<tasks::Matrix>(blocks[1].params.all().at("B")), (tasks::Matrix{{0}, {0}}));
  EXPECT_EQ(std::get<tasks::Matrix>(blocks[1].params.all().at("C")), (tasks::Matrix{{1, 0}}));
  EXPECT_EQ(std::get<tasks::Vector>(blocks[1].params.all().at("initial")), (tasks::Vector{1, -1.5}));
  EXPECT_EQ(std::get<double>(blocks[3].params.all().at("initial")), 1.3333333333333333);
  EXPECT_EQ(std::get<double>(blocks[3].params.all().at("slope")), -0.6666666666666666);
  EXPECT_EQ(blocks[6].name, "y3_rate");
  EXPECT_EQ(std::get<std::string>(blocks[6].params.all().at("criterion")), ">=");
  EXPECT_TRUE(blocks[7].params.all().empty());
  EXPECT_EQ(blocks[8].task, "fast");
  EXPECT_EQ(g.block_locations[1].line, 17);  // the block mapping "name: y2"
  EXPECT_EQ(g.block_locations[1].column, 5);

  ASSERT_EQ(g.record.signals.size(), 3u);
  EXPECT_EQ(g.record.signals[2].str(), "use_y3.y");
  EXPECT_EQ(g.record.file, "two_task_sine.csv");
  EXPECT_FALSE(g.trace.enabled);
  EXPECT_EQ(g.trace.directory, "traces");
  EXPECT_TRUE(g.plugins.empty());
}

TEST(ParsedValues, ExecutionTimesAndRateGroups) {
  const LoadResult r = load_graph_file(std::string(RTCOSIM_EXAMPLES_DIR) + "/overrun_virtual.yaml", two_cpus());
  ASSERT_TRUE(r.ok()) << all_of(r);
  const GraphSpec& g = r.graph;
  EXPECT_EQ(g.realtime, RealtimeMode::kOff);
  ASSERT_EQ(g.tasks.size(), 2u);
  EXPECT_DOUBLE_EQ(g.tasks[0].period, 2.25e-3);
  EXPECT_EQ(g.tasks[0].rate_group, "single_processor");
  EXPECT_EQ(g.tasks[0].step, StepPolicy::kMeasured);
  EXPECT_TRUE(g.tasks[0].execution.declared);
  EXPECT_DOUBLE_EQ(g.tasks[0].execution.nominal, 1e-3);
  EXPECT_TRUE(g.tasks[0].execution.spikes.empty());
  EXPECT_DOUBLE_EQ(g.tasks[1].max_step, 0.1);
  ASSERT_EQ(g.tasks[1].execution.spikes.size(), 1u);
  EXPECT_EQ(g.tasks[1].execution.spikes[0].frame, 1u);
  EXPECT_DOUBLE_EQ(g.tasks[1].execution.spikes[0].time, 20e-3);
}

// wait_for_data: on unless a task says false; written back only when off; a
// value that is not a boolean is named where it stands.
TEST(ParsedValues, WaitForDataIsOnUnlessATaskTurnsItOff) {
  const std::string text = R"(tasks:
  - {name: fast, period: 1ms, cpu: 0, priority: 80, wait_for_data: false}
  - {name: slow, period: 4ms, cpu: 1, priority: 70}
blocks:
  - {name: src, type: constant, task: slow, params: {value: 1}}
  - {name: out, type: gain, task: fast, params: {gain: 2}}
wires:
  - {from: src.y, to: out.u}
)";
  const LoadResult r = load_graph_text(text, "wait.yaml", two_cpus());
  ASSERT_TRUE(r.ok()) << all_of(r);
  EXPECT_FALSE(r.graph.tasks[0].wait_for_data);
  EXPECT_TRUE(r.graph.tasks[1].wait_for_data);
  const std::string written = write_graph(r.graph);
  EXPECT_NE(written.find("wait_for_data: false"), std::string::npos) << written;
  EXPECT_EQ(written.find("wait_for_data: true"), std::string::npos) << written;
  const LoadResult again = load_graph_text(written, "again.yaml", two_cpus());
  ASSERT_TRUE(again.ok()) << all_of(again);
  EXPECT_TRUE(same_graph(r.graph, again.graph));

  std::string bad = text;
  bad.replace(bad.find("wait_for_data: false"), 20, "wait_for_data: maybe");
  const LoadResult b = load_graph_text(bad, "bad.yaml", two_cpus());
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.diagnostics.front().line, 2) << b.diagnostics.front().str();
  EXPECT_NE(b.diagnostics.front().str().find("wait_for_data"), std::string::npos) << b.diagnostics.front().str();
}

TEST(ParsedValues, OptionalSectionsAndDefaults) {
  const std::string text = std::string(kSmall) + R"(name: with_extras
duration: 1.5 min
realtime: required
trace: {enabled: true, directory: out/traces}
plugins: [a, b_2]
record: {signals: [out.y], file: out.csv}
)";
  const LoadResult r = load_graph_text(text, "extras.yaml", two_cpus());
  ASSERT_TRUE(r.ok()) << all_of(r);
  EXPECT_EQ(r.graph.duration, 90.0);
  EXPECT_EQ(r.graph.realtime, RealtimeMode::kRequired);
  EXPECT_TRUE(r.graph.trace.enabled);
  EXPECT_EQ(r.graph.trace.directory, "out/traces");
  EXPECT_EQ(r.graph.plugins, (std::vector<std::string>{"a", "b_2"}));
  EXPECT_EQ(r.graph.default_coupling.method, "zoh");  // no 'coupling' section
  EXPECT_EQ(r.graph.tasks[0].integrator, tasks::IntegratorKind::kAb2);

  const LoadResult again = load_graph_text(write_graph(r.graph), "again.yaml", two_cpus());
  ASSERT_TRUE(again.ok()) << all_of(again);
  EXPECT_TRUE(same_graph(r.graph, again.graph));
}

}  // namespace
}  // namespace rtcosim::config
