#include "coupling/plugin_loader.hpp"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "coupling/plugin_api.hpp"
#include "rt_config/loader.hpp"
#include "tests/support/alloc_counter.hpp"
#include "tests/support/unprivileged.hpp"

// RTCOSIM_PLUGIN_DIR holds sample_linear.so; RTCOSIM_BROKEN_PLUGIN_DIR holds
// duplicate_zoh.so, no_entry_point.so, refusing.so and throwing.so (see
// coupling/plugins/broken/).

namespace rtcosim::coupling {
namespace {

namespace fs = std::filesystem;

const fs::path kSample = fs::path(RTCOSIM_PLUGIN_DIR) / "sample_linear.so";
const fs::path kBroken = RTCOSIM_BROKEN_PLUGIN_DIR;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A scratch directory per test process: other build trees run this suite at
// the same time.
class TempDir {
 public:
  explicit TempDir(const std::string& name)
      : path_(fs::temp_directory_path() / ("rtcosim_" + name + "_" + std::to_string(::getpid()))) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::permissions(path_, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  [[nodiscard]] const fs::path& path() const noexcept { return path_; }

 private:
  fs::path path_;
};

MethodRegistry registry_with_sample() {
  auto registry = MethodRegistry::with_builtins();
  const auto found = load_plugins(registry, {RTCOSIM_PLUGIN_DIR});
  for (const auto& d : found) EXPECT_TRUE(d.ok) << d.str();
  return registry;
}

void push(Extrapolator& e, double tag, std::vector<double> values) {
  DataBlock b(values.size());
  b.tag = tag;
  for (std::size_t s = 0; s < values.size(); ++s) b.set(s, values[s], 0.0, false);
  e.push(b);
}

std::vector<double> at(const Extrapolator& e, double t) {
  std::vector<double> out(e.signal_count());
  e.evaluate(t, out);
  return out;
}

std::vector<double> mean(const Extrapolator& e, double t0, double t1) {
  std::vector<double> out(e.signal_count());
  e.evaluate_mean(t0, t1, out);
  return out;
}

TEST(Plugins, TheSampleDirectoryRegistersLinearHoldWithItsFileAsOrigin) {
  auto registry = MethodRegistry::with_builtins();
  const auto builtins = registry.ids();
  const auto found = load_plugins(registry, {RTCOSIM_PLUGIN_DIR});
  ASSERT_EQ(found.size(), 1u);
  EXPECT_TRUE(found[0].ok) << found[0].message;
  EXPECT_EQ(found[0].path, kSample.string());
  EXPECT_EQ(found[0].methods, std::vector<std::string>{"linear_hold"});
  EXPECT_EQ(found[0].str(), kSample.string() + ": registered linear_hold");

  const MethodInfo* info = registry.find("linear_hold");
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->origin, kSample.string());
  EXPECT_FALSE(info->uses_derivatives);
  ASSERT_EQ(info->params.size(), 1u);
  EXPECT_EQ(info->params[0].name, "max_horizon");
  EXPECT_EQ(registry.ids().size(), builtins.size() + 1);
  EXPECT_EQ(registry.find("zoh")->origin, "built-in");
}

TEST(Plugins, LinearHoldReproducesALineAheadAndBehindTheNewestTag) {
  const auto registry = registry_with_sample();
  auto e = registry.create("linear_hold", {}, 2);
  EXPECT_EQ(e->method_id(), "linear_hold");
  EXPECT_EQ(at(*e, 0.3), (std::vector<double>{0.0, 0.0}));  // before any block

  // y0 = 2 - 3t, y1 = 0.5 + 4t on non-uniform tags; the first block is off
  // both lines, so only a fit through the two newest passes every check.
  push(*e, 0.0, {7.0, -9.0});
  push(*e, 0.1, {2.0 - 3.0 * 0.1, 0.5 + 4.0 * 0.1});
  push(*e, 0.13, {2.0 - 3.0 * 0.13, 0.5 + 4.0 * 0.13});
  for (double t : {0.05, 0.1, 0.12, 0.13, 0.2, 1.0}) {
    const auto y = at(*e, t);
    EXPECT_NEAR(y[0], 2.0 - 3.0 * t, 1e-12) << t;
    EXPECT_NEAR(y[1], 0.5 + 4.0 * t, 1e-12) << t;
  }
  // The mean of a line over a step is its value at the step's middle.
  const auto m = mean(*e, 0.13, 0.17);
  EXPECT_NEAR(m[0], 2.0 - 3.0 * 0.15, 1e-12);
  EXPECT_NEAR(m[1], 0.5 + 4.0 * 0.15, 1e-12);

  // One block after a discontinuity: a constant.
  DataBlock step(2);
  step.tag = 0.2;
  step.discontinuity = true;
  step.set(0, 5.0, 0.0, false);
  step.set(1, -1.0, 0.0, false);
  e->push(step);
  EXPECT_EQ(at(*e, 0.15), (std::vector<double>{5.0, -1.0}));
  EXPECT_EQ(at(*e, 0.9), (std::vector<double>{5.0, -1.0}));
  EXPECT_EQ(e->newest_tag(), 0.2);
}

TEST(Plugins, LinearHoldHoldsFromMaxHorizonAfterTheNewestTag) {
  const auto registry = registry_with_sample();
  auto e = registry.create("linear_hold", {{"max_horizon", "10ms"}}, 1);
  const auto line = [](double t) { return 2.0 - 3.0 * t; };
  push(*e, 0.1, {line(0.1)});
  push(*e, 0.13, {line(0.13)});
  EXPECT_NEAR(at(*e, 0.12)[0], line(0.12), 1e-12);  // behind: the line
  EXPECT_NEAR(at(*e, 0.135)[0], line(0.135), 1e-12);
  EXPECT_NEAR(at(*e, 0.14)[0], line(0.14), 1e-12);
  EXPECT_NEAR(at(*e, 0.2)[0], line(0.14), 1e-12);  // beyond: held
  EXPECT_NEAR(at(*e, 5.0)[0], line(0.14), 1e-12);

  // Across the kink, the step mean is exact: check against a fine midpoint
  // sum of the held line, written independently of the plugin.
  const double t0 = 0.132;
  const double t1 = 0.151;
  const int n = 19000;
  double sum = 0.0;
  for (int k = 0; k < n; ++k) sum += line(std::min(t0 + (k + 0.5) * (t1 - t0) / n, 0.14));
  EXPECT_NEAR(mean(*e, t0, t1)[0], sum / n, 1e-9);
  EXPECT_NEAR(mean(*e, 0.15, 0.2)[0], line(0.14), 1e-12);
  EXPECT_NEAR(mean(*e, 0.13, 0.14)[0], line(0.135), 1e-12);

  // A new block moves the horizon with it.
  push(*e, 0.16, {line(0.16)});
  EXPECT_NEAR(at(*e, 0.165)[0], line(0.165), 1e-12);
  EXPECT_NEAR(at(*e, 0.3)[0], line(0.17), 1e-12);
}

TEST(Plugins, LinearHoldParametersAreValidatedByTheRegistryLikeABuiltIn) {
  const auto registry = registry_with_sample();
  const auto error_of = [&](const ParamSettings& settings) -> std::string {
    try {
      (void)registry.create("linear_hold", settings, 1);
    } catch (const CouplingError& err) {
      EXPECT_EQ(err.method(), "linear_hold");
      return err.what();
    }
    ADD_FAILURE() << "no error";
    return {};
  };
  EXPECT_EQ(error_of({{"max_horizon", "-1s"}}),
            "coupling method 'linear_hold': parameter 'max_horizon' = '-1s' is out of range — expected a duration "
            "from 0 s to 1 h");
  EXPECT_TRUE(contains(error_of({{"max_horizon", "soon"}}), "'max_horizon' = 'soon' is not a duration"));
  const auto unknown = error_of({{"max_horizn", "1ms"}});
  EXPECT_TRUE(contains(unknown, "unknown parameter 'max_horizn'")) << unknown;
  EXPECT_TRUE(contains(unknown, "did you mean 'max_horizon'")) << unknown;
  // The same check of a built-in, for the shape of the message.
  try {
    (void)registry.create("zoh", {{"max_horizon", "1ms"}}, 1);
    FAIL();
  } catch (const CouplingError& err) {
    EXPECT_TRUE(contains(err.what(), "coupling method 'zoh': unknown parameter 'max_horizon'")) << err.what();
  }
}

TEST(Plugins, LinearHoldAllocatesNothingOnTheRealTimePath) {
  const auto registry = registry_with_sample();
  auto e = registry.create("linear_hold", {{"max_horizon", "5ms"}}, 2);
  std::vector<DataBlock> blocks;
  for (int k = 0; k < 30; ++k) {
    DataBlock b(2);
    b.tag = 0.01 * k + 0.001 * (k % 3);
    b.discontinuity = (k == 17);
    b.set(0, std::sin(b.tag), std::cos(b.tag));
    b.set(1, b.tag * b.tag, 2.0 * b.tag);
    blocks.push_back(b);
  }
  std::vector<double> out(2);
  rtcosim::testing::AllocationScope scope;
  for (const auto& b : blocks) {
    e->push(b);
    e->evaluate(b.tag + 0.004, out);
    e->evaluate(b.tag - 0.003, out);
    e->evaluate_mean(b.tag, b.tag + 0.0087, out);
  }
  e->reset();
  e->push(blocks.front());
  EXPECT_EQ(scope.count(), 0u);
}

TEST(Plugins, ADuplicateIdIsReportedWithTheFileAndTheFirstOriginAndNothingOfThePluginIsRegistered) {
  auto registry = MethodRegistry::with_builtins();
  const auto before = registry.ids();
  const auto file = kBroken / "duplicate_zoh.so";
  const auto d = load_plugin_file(registry, file);
  EXPECT_FALSE(d.ok);
  EXPECT_EQ(d.path, file.string());
  EXPECT_TRUE(contains(d.message, "coupling method 'zoh' is already registered (by built-in)")) << d.message;
  EXPECT_TRUE(contains(d.message, "none of its methods was registered (zoh_twin neither)")) << d.message;
  EXPECT_TRUE(d.methods.empty());
  EXPECT_TRUE(contains(d.str(), file.string())) << d.str();
  // The built-in zoh stays, and the valid id it also offered is not there.
  EXPECT_EQ(registry.ids(), before);
  EXPECT_EQ(registry.find("zoh")->origin, "built-in");
  EXPECT_EQ(registry.find("zoh_twin"), nullptr);
  auto zoh = registry.create("zoh", {}, 1);
  EXPECT_EQ(zoh->method_id(), "zoh");
}

TEST(Plugins, AnIdTakenByAnotherPluginNamesThatPluginsFile) {
  const TempDir dir("plugins_twice");
  fs::copy_file(kSample, dir.path() / "copy_of_sample.so");
  auto registry = MethodRegistry::with_builtins();
  ASSERT_TRUE(load_plugin_file(registry, kSample).ok);
  const auto d = load_plugin_file(registry, dir.path() / "copy_of_sample.so");
  EXPECT_FALSE(d.ok);
  EXPECT_EQ(d.path, (dir.path() / "copy_of_sample.so").string());
  EXPECT_TRUE(contains(d.message, "'linear_hold' is already registered (by " + kSample.string() + ")")) << d.message;
  EXPECT_EQ(registry.find("linear_hold")->origin, kSample.string());
  // The same file again: the same library, refused the same way.
  const auto again = load_plugin_file(registry, kSample);
  EXPECT_FALSE(again.ok);
  EXPECT_TRUE(contains(again.message, "'linear_hold' is already registered (by " + kSample.string() + ")"))
      << again.message;
  // The first one's factory is still good (its library stayed loaded).
  EXPECT_NE(registry.create("linear_hold", {}, 1), nullptr);
}

TEST(Plugins, EveryBrokenPluginIsADiagnosticNamingItsFileAndWhy) {
  auto registry = MethodRegistry::with_builtins();
  const auto before = registry.ids();
  const auto found = load_plugins(registry, {kBroken});
  ASSERT_EQ(found.size(), 4u);
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"duplicate_zoh.so", "'zoh' is already registered (by built-in)"},
      {"no_entry_point.so", "does not export 'rtcosim_register_coupling_methods'"},
      {"refusing.so", "its entry point returned 7"},
      {"throwing.so", "its entry point threw an exception: the self-test of throwing.so failed"},
  };
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_FALSE(found[i].ok) << found[i].str();
    EXPECT_EQ(found[i].path, (kBroken / expected[i].first).string());
    EXPECT_TRUE(contains(found[i].message, expected[i].second)) << found[i].message;
    EXPECT_TRUE(found[i].methods.empty());
  }
  EXPECT_EQ(registry.ids(), before);
  EXPECT_EQ(registry.find("refused"), nullptr);
}

TEST(Plugins, AFileThatIsNotASharedLibraryIsADiagnosticNamingIt) {
  const TempDir dir("plugins_bogus");
  std::ofstream(dir.path() / "bogus.so") << "not a shared library\n";
  auto registry = MethodRegistry::with_builtins();
  const auto found = load_plugins(registry, {dir.path()});
  ASSERT_EQ(found.size(), 1u);
  EXPECT_FALSE(found[0].ok);
  EXPECT_EQ(found[0].path, (dir.path() / "bogus.so").string());
  EXPECT_TRUE(contains(found[0].message, "cannot load plugin: ")) << found[0].message;
  EXPECT_TRUE(contains(found[0].str(), (dir.path() / "bogus.so").string())) << found[0].str();
}

TEST(Plugins, MissingDirectoriesAndFilesInPlaceOfDirectoriesAreDiagnosticsNamingThem) {
  const TempDir dir("plugins_missing");
  std::ofstream(dir.path() / "a_file") << "x\n";
  auto registry = MethodRegistry::with_builtins();
  const auto found = load_plugins(registry, {dir.path() / "missing", dir.path() / "a_file", RTCOSIM_PLUGIN_DIR});
  ASSERT_EQ(found.size(), 3u);
  EXPECT_FALSE(found[0].ok);
  EXPECT_EQ(found[0].path, (dir.path() / "missing").string());
  EXPECT_EQ(found[0].str(), (dir.path() / "missing").string() + ": plugin directory does not exist");
  EXPECT_FALSE(found[1].ok);
  EXPECT_EQ(found[1].str(), (dir.path() / "a_file").string() + ": plugin directory is not a directory");
  EXPECT_TRUE(found[2].ok) << found[2].str();  // and the next directory still loads
}

// As root (CI) the loading runs in a child that has dropped to nobody, which
// may not be able to reach the build tree: the readable directory is a copy
// of the sample in a scratch directory.
TEST(Plugins, AnUnreadableDirectoryIsADiagnosticNamingIt) {
  const TempDir dir("plugins_unreadable");
  const TempDir readable("plugins_readable");
  fs::copy_file(kSample, readable.path() / "sample_linear.so");
  fs::permissions(dir.path(), fs::perms::owner_all | fs::perms::group_all | fs::perms::others_all,
                  fs::perm_options::remove);
  const std::string got = testing::run_unprivileged([&] {
    auto registry = MethodRegistry::with_builtins();
    std::string lines;
    for (const auto& d : load_plugins(registry, {dir.path(), readable.path()})) lines += d.str() + "\n";
    return lines;
  });
  EXPECT_EQ(got, dir.path().string() + ": cannot read the plugin directory: Permission denied\n" +
                     (readable.path() / "sample_linear.so").string() + ": registered linear_hold\n");
}

TEST(Plugins, LoadingGoesOnPastFailuresInSortedOrder) {
  const TempDir dir("plugins_mixed");
  std::ofstream(dir.path() / "bogus.so") << "not a shared library\n";
  std::ofstream(dir.path() / "notes.txt") << "not a plugin, not even by name\n";
  fs::create_directories(dir.path() / "a_directory.so");
  fs::copy_file(kBroken / "duplicate_zoh.so", dir.path() / "a_duplicate.so");
  fs::copy_file(kBroken / "throwing.so", dir.path() / "m_throwing.so");
  fs::copy_file(kSample, dir.path() / "z_sample.so");

  auto registry = MethodRegistry::with_builtins();
  const auto found = load_plugins(registry, {dir.path()});
  ASSERT_EQ(found.size(), 4u);
  const std::vector<std::string> names = {"a_duplicate.so", "bogus.so", "m_throwing.so", "z_sample.so"};
  for (std::size_t i = 0; i < names.size(); ++i) EXPECT_EQ(found[i].path, (dir.path() / names[i]).string());
  EXPECT_FALSE(found[0].ok);
  EXPECT_FALSE(found[1].ok);
  EXPECT_FALSE(found[2].ok);
  EXPECT_TRUE(found[3].ok) << found[3].message;
  EXPECT_EQ(registry.find("zoh")->origin, "built-in");
  ASSERT_NE(registry.find("linear_hold"), nullptr);
  EXPECT_EQ(registry.find("linear_hold")->origin, (dir.path() / "z_sample.so").string());
  EXPECT_NE(registry.create("linear_hold", {}, 1), nullptr);
}

TEST(Plugins, TheSampleRefusesAHostWithAnotherAbiVersion) {
  void* handle = dlopen(kSample.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  const auto entry = reinterpret_cast<PluginEntryPoint>(dlsym(handle, kPluginEntryPoint));
  ASSERT_NE(entry, nullptr);
  {
    PluginRegistrar other(kPluginAbiVersion + 1);
    EXPECT_EQ(other.abi_version(), kPluginAbiVersion + 1);
    EXPECT_NE(entry(&other), 0);
    EXPECT_TRUE(other.methods().empty());
  }
  {
    PluginRegistrar same;
    EXPECT_EQ(entry(&same), 0);
    ASSERT_EQ(same.methods().size(), 1u);
    EXPECT_EQ(same.methods()[0].id, "linear_hold");
  }  // the recorded factory goes before the library does
  dlclose(handle);
}

TEST(Plugins, RegistryWithPluginsAddsTheBuiltInsAndReportsEveryFile) {
  std::vector<PluginDiagnostic> found;
  const auto registry = registry_with_plugins({RTCOSIM_PLUGIN_DIR, RTCOSIM_BROKEN_PLUGIN_DIR}, &found);
  ASSERT_EQ(found.size(), 5u);
  EXPECT_TRUE(found[0].ok);
  EXPECT_NE(registry.find("linear_hold"), nullptr);
  EXPECT_EQ(registry.find("zoh")->origin, "built-in");
  EXPECT_NE(registry.find("polynomial"), nullptr);
}

TEST(Plugins, ATaskGraphNamingAnAllowedPluginByIdMayUseItsMethods) {
  const TempDir dir("plugins_graph");
  const auto file = dir.path() / "graph.yaml";
  std::ofstream(file) << "plugins: [sample_linear]\n"
                      << "tasks:\n  - {name: a, period: 10ms}\n  - {name: b, period: 1ms}\n"
                      << "blocks:\n  - {name: s, type: sine, task: a}\n  - {name: g, type: gain, task: b, params: {gain: 1}}\n"
                      << "wires:\n  - {from: s.y, to: g.u, coupling: {method: linear_hold, max_horizon: 20ms}}\n";
  config::LoadOptions options;
  options.plugins = {{RTCOSIM_PLUGIN_DIR}, true};
  const auto loaded = config::load_graph_file(file.string(), options);
  for (const auto& d : loaded.diagnostics) ADD_FAILURE() << d.str();
  EXPECT_TRUE(loaded.ok());
  EXPECT_NE(config::plugin_registry(loaded.graph, {RTCOSIM_PLUGIN_DIR}).find("linear_hold"), nullptr);
  // Not loaded (what 'rtcosim check' does by default): the plugin's method
  // is noted as unchecked, not an error.
  const auto unloaded = config::load_graph_file(file.string());
  EXPECT_TRUE(unloaded.ok());
  ASSERT_EQ(unloaded.diagnostics.size(), 1u);
  EXPECT_NE(unloaded.diagnostics[0].message.find("method 'linear_hold' is not built in; the plugins were not loaded"),
            std::string::npos);
  // Allowed directories that do not hold it: an error at the id.
  config::LoadOptions elsewhere;
  elsewhere.plugins = {{dir.path().string()}, true};
  const auto missing = config::load_graph_file(file.string(), elsewhere);
  EXPECT_FALSE(missing.ok());
  EXPECT_EQ(missing.diagnostics.front().str(), file.string() + ":1:11: error: no plugin 'sample_linear' (sample_linear.so) in the allowed plugin directories (" + dir.path().string() + ")");
  const auto without = config::load_graph_text("tasks: [{name: a, period: 10ms}, {name: b, period: 1ms}]\n"
                                               "blocks: [{name: s, type: sine, task: a}, {name: g, type: gain, task: b, params: {gain: 1}}]\n"
                                               "wires: [{from: s.y, to: g.u, coupling: {method: linear_hold}}]\n",
                                               "no_plugins.yaml");
  EXPECT_FALSE(without.ok());
}

}  // namespace
}  // namespace rtcosim::coupling
