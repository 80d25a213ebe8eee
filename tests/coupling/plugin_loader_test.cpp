#include "coupling/plugin_loader.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "rt_config/loader.hpp"

namespace rtcosim::coupling {
namespace {

namespace fs = std::filesystem;

TEST(Plugins, TheSampleRegistersLinearHoldWhichReproducesALine) {
  auto registry = MethodRegistry::with_builtins();
  const auto found = load_plugins(registry, {RTCOSIM_PLUGIN_DIR});
  ASSERT_EQ(found.size(), 1u);
  EXPECT_TRUE(found[0].ok) << found[0].message;
  EXPECT_EQ(found[0].methods, std::vector<std::string>{"linear_hold"});
  const MethodInfo* info = registry.find("linear_hold");
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->origin, (fs::path(RTCOSIM_PLUGIN_DIR) / "sample_linear.so").string());

  auto e = registry.create("linear_hold", {}, 1);
  DataBlock b(1);
  for (double t : {0.1, 0.13}) {  // y = 2 - 3t
    b.tag = t;
    b.set(0, 2.0 - 3.0 * t, -3.0);
    e->push(b);
  }
  double out = 0.0;
  for (double t : {0.05, 0.12, 0.2, 1.0}) {
    e->evaluate(t, std::span<double>(&out, 1));
    EXPECT_NEAR(out, 2.0 - 3.0 * t, 1e-12) << t;
  }
  // Its parameter: held beyond max_horizon after the newest tag.
  auto held = registry.create("linear_hold", {{"max_horizon", "10ms"}}, 1);
  for (double t : {0.1, 0.13}) {
    b.tag = t;
    b.set(0, 2.0 - 3.0 * t, -3.0);
    held->push(b);
  }
  held->evaluate(1.0, std::span<double>(&out, 1));
  EXPECT_NEAR(out, 2.0 - 3.0 * 0.14, 1e-12);
  // Its parameters are validated like a built-in's.
  try {
    (void)registry.create("linear_hold", {{"max_horizon", "-1s"}}, 1);
    FAIL();
  } catch (const CouplingError& err) {
    EXPECT_EQ(std::string(err.what()),
              "coupling method 'linear_hold': parameter 'max_horizon' = '-1s' is out of range — expected a duration "
              "from 0 s to 1 h");
  }
}

TEST(Plugins, FailuresNameTheFileAndLoadingGoesOn) {
  const auto dir = fs::temp_directory_path() / "rtcosim_plugins_mixed";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "bogus.so") << "not a shared library\n";
  fs::copy_file(fs::path(RTCOSIM_BROKEN_PLUGIN_DIR) / "duplicate_zoh.so", dir / "a_duplicate.so");
  fs::copy_file(fs::path(RTCOSIM_PLUGIN_DIR) / "sample_linear.so", dir / "z_sample.so");

  auto registry = MethodRegistry::with_builtins();
  const auto found = load_plugins(registry, {dir, dir / "missing"});
  ASSERT_EQ(found.size(), 4u);
  EXPECT_FALSE(found[0].ok);  // a_duplicate.so
  EXPECT_EQ(found[0].path, (dir / "a_duplicate.so").string());
  EXPECT_NE(found[0].message.find("'zoh' is already registered (by built-in)"), std::string::npos) << found[0].message;
  EXPECT_FALSE(found[1].ok);  // bogus.so
  EXPECT_NE(found[1].message.find("cannot load plugin"), std::string::npos) << found[1].message;
  EXPECT_TRUE(found[2].ok) << found[2].message;  // z_sample.so, after both failures
  EXPECT_FALSE(found[3].ok);
  EXPECT_EQ(found[3].path, (dir / "missing").string());
  EXPECT_EQ(registry.find("zoh")->origin, "built-in");
  EXPECT_NE(registry.find("linear_hold"), nullptr);
  fs::remove_all(dir);
}

TEST(Plugins, ATaskGraphNamingThePluginDirectoryMayUseItsMethods) {
  const auto dir = fs::temp_directory_path() / "rtcosim_plugins_graph";
  fs::create_directories(dir);
  const auto file = dir / "graph.yaml";
  std::ofstream(file) << "plugins: [" << RTCOSIM_PLUGIN_DIR << "]\n"
                      << "tasks:\n  - {name: a, period: 10ms}\n  - {name: b, period: 1ms}\n"
                      << "blocks:\n  - {name: s, type: sine, task: a}\n  - {name: g, type: gain, task: b, params: {gain: 1}}\n"
                      << "wires:\n  - {from: s.y, to: g.u, coupling: {method: linear_hold, max_horizon: 20ms}}\n";
  const auto loaded = config::load_graph_file(file.string());
  for (const auto& d : loaded.diagnostics) ADD_FAILURE() << d.str();
  EXPECT_TRUE(loaded.ok());
  const auto without = config::load_graph_text("tasks: [{name: a, period: 10ms}, {name: b, period: 1ms}]\n"
                                               "blocks: [{name: s, type: sine, task: a}, {name: g, type: gain, task: b, params: {gain: 1}}]\n"
                                               "wires: [{from: s.y, to: g.u, coupling: {method: linear_hold}}]\n",
                                               "no_plugins.yaml");
  EXPECT_FALSE(without.ok());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace rtcosim::coupling
