// An FMU in a task-graph file: its variables are ports, checked against
// modelDescription.xml with file:line:column diagnostics.
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "rt_config/loader.hpp"

namespace rtcosim::config {
namespace {

const std::string kDir = RTCOSIM_FMU_DIR;

std::vector<std::string> errors_of(const std::string& yaml) {
  const auto r = load_graph_text(yaml, "plant.yaml");
  std::vector<std::string> out;
  for (const auto& d : r.diagnostics) {
    if (d.severity == Diagnostic::Severity::kError) out.push_back(d.str());
  }
  return out;
}

std::string graph(const std::string& params, const std::string& wire = "{from: f.y, to: plant.F}",
                  const std::string& step = "fixed") {
  return "tasks:\n  - {name: t, period: 10ms, integrator: rk4, step: " + step +
         "}\n"
         "blocks:\n"
         "  - {name: f, type: constant, task: t, params: {value: 0}}\n"
         "  - {name: plant, type: fmu, task: t, params: {" +
         params +
         "}}\n"
         "wires:\n  - " +
         wire + "\n";
}

TEST(FmuConfig, AnFmusVariablesArePortsAndStartValuesAreAMapping) {
  const auto r =
      load_graph_text(graph("file: " + kDir + "/msd2.fmu, interface: model_exchange, start: {m: 2.0, x0: 0.5}") +
                          "record: {file: out.csv, signals: [plant.x, plant.v]}\n",
                      "plant.yaml");
  for (const auto& d : r.diagnostics) ADD_FAILURE() << d.str();
  ASSERT_TRUE(r.ok());
  const auto& params = r.graph.diagram.blocks[1].params;
  EXPECT_TRUE(params.has("start.m"));
  EXPECT_TRUE(params.has("start.x0"));
}

TEST(FmuConfig, MisspeltNamesGetDidYouMeanAtTheirLineAndColumn) {
  auto e = errors_of(graph("file: " + kDir + "/msd2.fmu", "{from: f.y, to: plant.f}"));
  ASSERT_EQ(e.size(), 1u);  // plant.F, not connected, keeps its start value: a warning
  EXPECT_EQ(e[0],
            "plant.yaml:7:21: error: block 'plant' (fmu) has no input port 'f' (did you mean 'F'?) — its inputs: F");
  const std::string text = graph("file: " + kDir + "/msd2.fmu, start: {mm: 2}");
  e = errors_of(text);
  ASSERT_EQ(e.size(), 1u);
  // At the misspelt key itself, on line 5.
  const auto line5 = text.find("  - {name: plant");
  const auto column = text.find("mm:") - line5 + 1;
  EXPECT_NE(
      e[0].find("plant.yaml:5:" + std::to_string(column) + ": error: block 'plant' (fmu): 'start' names 'mm', which"),
      std::string::npos)
      << e[0];
  EXPECT_NE(e[0].find("does not declare (did you mean 'm'?)"), std::string::npos) << e[0];
}

// FMI and SSP: an FMU input left unconnected keeps its start value. The
// graph loads with one warning per such input at the block, naming the
// value; a native block's unconnected input stays an error.
TEST(FmuConfig, AnUnconnectedFmuInputKeepsItsStartValueWithAWarning) {
  const std::string text =
      "tasks:\n  - {name: t, period: 10ms, integrator: rk4, step: fixed}\n"
      "blocks:\n"
      "  - {name: m, type: fmu, task: t, params: {file: " +
      kDir + "/count2.fmu}}\n" + "record: {file: out.csv, signals: [m.counter]}\n";
  const auto r = load_graph_text(text, "plant.yaml");
  ASSERT_TRUE(r.ok());
  std::vector<std::string> warnings;
  for (const auto& d : r.diagnostics) {
    if (d.severity == Diagnostic::Severity::kWarning) warnings.push_back(d.str());
  }
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_EQ(warnings[0],
            "plant.yaml:4:5: warning: input 'm.inc' of block 'm' (fmu) is not connected: it keeps its start value 1");
  EXPECT_EQ(
      warnings[1],
      "plant.yaml:4:5: warning: input 'm.enable' of block 'm' (fmu) is not connected: it keeps its start value 1");
  const auto e = errors_of(
      "tasks:\n  - {name: t, period: 10ms, integrator: rk4, step: fixed}\n"
      "blocks:\n"
      "  - {name: g, type: gain, task: t, params: {gain: 1}}\n");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("input 'g.u' of block 'g' (gain) is not connected — wire a block output to it"),
            std::string::npos)
      << e[0];
}

TEST(FmuConfig, CausalityIsChecked) {
  // An input used as an output, an output given a start value.
  auto e = errors_of(graph("file: " + kDir + "/msd2.fmu", "{from: plant.F, to: plant.F}"));
  ASSERT_FALSE(e.empty());
  EXPECT_NE(e[0].find("block 'plant' (fmu) has no output port 'F' ('F' is one of its inputs)"), std::string::npos)
      << e[0];
  // A parameter wired as an input: the FMU says what it is instead.
  e = errors_of(graph("file: " + kDir + "/msd2.fmu", "{from: f.y, to: plant.k}"));
  ASSERT_EQ(e.size(), 1u);  // plant.F keeps its start value
  EXPECT_EQ(e[0],
            "plant.yaml:7:21: error: block 'plant' (fmu) has no input port 'k' ('k' is a fixed parameter Real variable "
            "of the FMU — only its inputs and outputs are ports; to record, probe or wire it, name it in the block's "
            "'observe' (params: {observe: \"k\"}); a parameter takes a start value: start.k) — its inputs: F");
  e = errors_of(graph("file: " + kDir + "/msd2.fmu, start: {a: 1}"));
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("'a' is a continuous output without a start value — only parameters, inputs and variables with a "
                      "start value take one"),
            std::string::npos)
      << e[0];
}

TEST(FmuConfig, AMeasuredStepNeedsAVariableStepFmu) {
  auto e = errors_of(
      graph("file: " + kDir + "/msd2_fixed.fmu, interface: co_simulation", "{from: f.y, to: plant.F}", "measured"));
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(
      e[0].find("plant.yaml:5:5: error: block 'plant' (fmu) runs in task 't' with step: measured, but its FMU declares "
                "canHandleVariableCommunicationStepSize=\"false\""),
      std::string::npos)
      << e[0];
  EXPECT_TRUE(errors_of(graph("file: " + kDir + "/msd2_fixed.fmu, interface: co_simulation")).empty());
  EXPECT_TRUE(
      errors_of(graph("file: " + kDir + "/msd2.fmu, interface: co_simulation", "{from: f.y, to: plant.F}", "measured"))
          .empty());
}

TEST(FmuConfig, BadFmusAreOneErrorAtTheFileParameter) {
  auto e = errors_of(graph("file: " + kDir + "/msd2_wrong_guid.fmu"));
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("plant.yaml:5:48: error: block 'plant' (fmu): "), std::string::npos) << e[0];
  EXPECT_NE(e[0].find("fmi2Instantiate returned no instance"), std::string::npos) << e[0];
  e = errors_of(graph("file: " + kDir + "/bad_xml.fmu"));
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("Start-end tags mismatch"), std::string::npos) << e[0];
  e = errors_of(graph("file: " + kDir + "/bball2.fmu, interface: co_simulation"));
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("has no co_simulation interface — it offers model_exchange"), std::string::npos) << e[0];
}

// Integer, Boolean and Enumeration variables are ports like Real ones
// (wired, recorded); a String stays refused, by name.
TEST(FmuConfig, IntegerBooleanAndEnumerationVariablesArePortsAndStringsAreNot) {
  const std::string head =
      "tasks:\n  - {name: t, period: 10ms, integrator: rk4, step: fixed}\n"
      "blocks:\n"
      "  - {name: n, type: constant, task: t, params: {value: 2}}\n"
      "  - {name: m, type: fmu, task: t, params: {file: " +
      kDir +
      "/count2.fmu}}\n"
      "  - {name: g, type: gain, task: t, params: {gain: 1}}\n"
      "wires:\n"
      "  - {from: n.y, to: m.inc}\n"
      "  - {from: n.y, to: m.enable}\n";
  const auto r = load_graph_text(head + "  - {from: m.mode, to: g.u}\n" +
                                     "record: {file: out.csv, signals: [m.counter, m.odd, m.mode, m.inc_out]}\n",
                                 "plant.yaml");
  for (const auto& d : r.diagnostics) ADD_FAILURE() << d.str();
  EXPECT_TRUE(r.ok());
  const auto e = errors_of(head + "  - {from: m.label, to: g.u}\n");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("block 'm' (fmu) has no output port 'label' ('label' is a discrete output String variable of "
                      "the FMU — String variables are not ports (a port carries numbers))"),
            std::string::npos)
      << e[0];
}

TEST(FmuConfig, ARelativeFileIsFoundBesideTheTaskGraph) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / "fmu_relative";
  std::filesystem::create_directories(dir / "models");
  std::filesystem::copy_file(kDir + "/msd2.fmu", dir / "models" / "plant.fmu",
                             std::filesystem::copy_options::overwrite_existing);
  {
    std::ofstream f(dir / "graph.yaml");
    f << graph("file: models/plant.fmu");
  }
  const auto r = load_graph_file((dir / "graph.yaml").string());
  for (const auto& d : r.diagnostics) ADD_FAILURE() << d.str();
  EXPECT_TRUE(r.ok());
}

// A relative name that is not beside the graph is looked for under
// $RTCOSIM_PATH, then above the running binary (the build tree, where fmus/
// holds the test FMUs), then in the package's data directory
// (docs/config.md, "Files"); beside the graph wins.
TEST(FmuConfig, ARelativeFileNotBesideTheGraphIsSearchedForInOrder) {
  const auto root = std::filesystem::path(::testing::TempDir()) / "fmu_search";
  std::filesystem::remove_all(root);
  for (const char* d : {"graphs", "first/models", "second/models"}) std::filesystem::create_directories(root / d);
  for (const char* d : {"first", "second"}) {
    std::filesystem::copy_file(kDir + "/msd2.fmu", root / d / "models" / "plant.fmu");
  }
  {
    std::ofstream f(root / "graphs" / "graph.yaml");
    f << graph("file: models/plant.fmu");
  }
  auto file_of = [&]() {
    const auto r = load_graph_file((root / "graphs" / "graph.yaml").string());
    for (const auto& d : r.diagnostics) ADD_FAILURE() << d.str();
    return r.ok() ? std::get<std::string>(r.graph.diagram.blocks[1].params.all().at("file")) : std::string();
  };
  const std::string path = (root / "first").string() + ":" + (root / "second").string();
  ::setenv("RTCOSIM_PATH", path.c_str(), 1);
  EXPECT_EQ(file_of(), (root / "first" / "models" / "plant.fmu").string());
  std::filesystem::remove(root / "first" / "models" / "plant.fmu");
  EXPECT_EQ(file_of(), (root / "second" / "models" / "plant.fmu").string());
  std::filesystem::create_directories(root / "graphs" / "models");
  std::filesystem::copy_file(kDir + "/msd2.fmu", root / "graphs" / "models" / "plant.fmu");
  EXPECT_EQ(file_of(), (root / "graphs" / "models" / "plant.fmu").string());
  ::unsetenv("RTCOSIM_PATH");
  // The build tree: this test binary is <build>/bin/..., the FMUs <build>/fmus/.
  const auto r = load_graph_text(graph("file: fmus/msd2.fmu"), (root / "graphs" / "other.yaml").string());
  for (const auto& d : r.diagnostics) ADD_FAILURE() << d.str();
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(std::filesystem::equivalent(std::get<std::string>(r.graph.diagram.blocks[1].params.all().at("file")),
                                          kDir + "/msd2.fmu"));
}

}  // namespace
}  // namespace rtcosim::config
