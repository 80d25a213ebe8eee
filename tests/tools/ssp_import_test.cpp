// `rtcosim import ssp` (rt_config/ssp_import.hpp, docs/ssp.md): the SSP of
// a PI controller and a mass-spring-damper in a loop (tests/fmus/ssp_loop,
// zipped at build time) imports to a graph that runs bit for bit like the
// hand-written graph of the same system; malformed SSDs give file:line;
// hostile archives are refused.
#include "rt_config/ssp_import.hpp"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <list>
#include <random>
#include <set>
#include <sstream>

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>
#include <zip.h>

#include "rt_config/loader.hpp"
#include "session/report/graph_report.hpp"
#include "tests/support/cli_process.hpp"
#include "tests/support/files.hpp"
#include "tools/rtcosim/check_command.hpp"
#include "tools/rtcosim/import_command.hpp"
#include "tools/rtcosim/run_command.hpp"

namespace rtcosim::tools {
namespace {

namespace fs = std::filesystem;
const std::string kFmus = RTCOSIM_FMU_DIR;
const std::string kLoopSsp = kFmus + "/pi_msd_loop.ssp";

using rtcosim::testing::slurp;
using rtcosim::testing::spit;

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() / ("rtcosim_ssp_" + name + "_" + std::to_string(getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

// Runs a graph on the virtual clock and returns its recording.
std::string run_virtual(const fs::path& graph, const fs::path& csv, const std::string& duration = "2s") {
  std::ostringstream sink;
  auto* old = std::cout.rdbuf(sink.rdbuf());
  const int rc = run_run_command({"--virtual", "--duration", duration, "--record", csv.string(), graph.string()});
  std::cout.rdbuf(old);
  EXPECT_EQ(rc, 0) << sink.str();
  return slurp(csv);
}

// The same system written by hand: the blocks, tasks, wires and start
// values the SSP describes (the plant's c from the system-level set, which
// takes precedence over the component's own 99).
std::string hand_written(bool one_task) {
  const std::string task_c = one_task ? "system" : "controller", task_p = one_task ? "system" : "plant";
  std::string tasks = one_task ? "  - {name: system, period: 1ms, integrator: rk4, step: fixed}\n"
                               : "  - {name: controller, period: 1ms, integrator: rk4, step: fixed}\n"
                                 "  - {name: plant, period: 1ms, integrator: rk4, step: fixed}\n";
  return "name: pi_msd_loop\nduration: 4s\ntasks:\n" + tasks +
         "blocks:\n"
         "  - {name: controller, type: fmu, task: " +
         task_c + ", params: {file: " + kFmus +
         "/pi2.fmu, interface: co_simulation, start: {kp: 20, ki: 8, r: 0.5}}}\n"
         "  - {name: plant, type: fmu, task: " +
         task_p + ", params: {file: " + kFmus +
         "/msd2.fmu, interface: model_exchange, start: {m: 2, x0: 0, c: 0.8, k: 4}}}\n"
         "wires:\n"
         "  - {from: controller.u, to: plant.F}\n"
         "  - {from: plant.x, to: controller.y}\n"
         "record: {file: hand.csv, signals: [controller.u, plant.x, plant.v]}\n";
}

TEST(SspImport, TheImportedLoopRunsBitForBitLikeTheHandWrittenGraph) {
  for (const bool one_task : {false, true}) {
    SCOPED_TRACE(one_task ? "--tasks one" : "--tasks per-component");
    TempDir dir(one_task ? "one" : "per");
    config::SspImportOptions options;
    options.graph_dir = dir.path.string();
    options.fmu_dir = (dir.path / "fmus").string();
    options.tasks = one_task ? config::SspTaskLayout::kOne : config::SspTaskLayout::kPerComponent;
    const auto imported = config::import_ssp(kLoopSsp, options);
    EXPECT_TRUE(imported.warnings.empty());
    ASSERT_EQ(imported.fmus.size(), 2u);
    EXPECT_EQ(slurp(imported.fmus[0]), slurp(kFmus + "/pi2.fmu"));
    // Relative to the graph's directory, so the folder can be moved whole.
    EXPECT_NE(imported.yaml.find("file: \"fmus/msd2.fmu\""), std::string::npos) << imported.yaml;
    EXPECT_NE(imported.yaml.find("\"c\": 0.8"), std::string::npos) << imported.yaml;  // the system's set wins
    EXPECT_NE(imported.yaml.find("duration: 4s"), std::string::npos);
    spit(dir.path / "imported.yaml", imported.yaml);
    const auto loaded = config::load_graph_file((dir.path / "imported.yaml").string());
    for (const auto& d : loaded.diagnostics) ADD_FAILURE() << d.str();
    ASSERT_TRUE(loaded.ok());
    EXPECT_EQ(loaded.graph.tasks.size(), one_task ? 1u : 2u);
    EXPECT_EQ(loaded.graph.wires.size(), 2u);

    spit(dir.path / "hand.yaml", hand_written(one_task));
    const std::string a = run_virtual(dir.path / "imported.yaml", dir.path / "imported.csv");
    const std::string b = run_virtual(dir.path / "hand.yaml", dir.path / "hand.csv");
    ASSERT_GT(a.size(), 1000u);
    EXPECT_EQ(a, b);  // the same structure: the same bits
    // The loop does something: x moves from 0 towards r = 0.5.
    EXPECT_NE(a.find("plant.x"), std::string::npos);
  }
}

TEST(SspImport, TheCommandWritesAGraphThatCheckAccepts) {
  TempDir dir("cli");
  const auto graph = dir.path / "loop.yaml";
  ASSERT_EQ(run_import_command({"ssp", kLoopSsp, "-o", graph.string(), "--period", "2ms"}), 0);
  EXPECT_TRUE(fs::exists(dir.path / "pi_msd_loop_fmus" / "msd2.fmu"));
  EXPECT_NE(slurp(graph).find("period: 2ms"), std::string::npos);
  std::ostringstream sink;
  auto* old = std::cout.rdbuf(sink.rdbuf());
  const int rc = run_check_command({graph.string()});
  std::cout.rdbuf(old);
  EXPECT_EQ(rc, 0) << sink.str();
  EXPECT_EQ(run_import_command({"ssp", kLoopSsp, "--tasks", "two"}), 2);
  EXPECT_EQ(run_import_command({"ssp", kLoopSsp, "--period", "fast"}), 2);
  EXPECT_EQ(run_import_command({"fmi", kLoopSsp}), 2);
  EXPECT_EQ(run_import_command({"--help"}), 0);
  EXPECT_EQ(run_import_command({"ssp", (dir.path / "missing.ssp").string()}), 1);
}

// A zip built entry by entry (names as given: hostile ones too).
class ZipWriter {
 public:
  explicit ZipWriter(const std::string& path) {
    int err = 0;
    z_ = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
  }
  ~ZipWriter() {
    if (z_) zip_close(z_);
  }
  void add(const std::string& name, const std::string& data, bool symlink = false) {
    keep_.push_back(data);
    zip_source_t* s = zip_source_buffer(z_, keep_.back().data(), keep_.back().size(), 0);
    const zip_int64_t i = zip_file_add(z_, name.c_str(), s, ZIP_FL_ENC_UTF_8);
    ASSERT_GE(i, 0) << zip_strerror(z_);
    if (symlink) {
      zip_file_set_external_attributes(z_, static_cast<zip_uint64_t>(i), 0, ZIP_OPSYS_UNIX,
                                       static_cast<zip_uint32_t>(S_IFLNK | 0777) << 16);
    }
  }
  void close() {
    zip_close(z_);
    z_ = nullptr;
  }

 private:
  zip_t* z_ = nullptr;
  std::list<std::string> keep_;
};

struct SsdParts {
  std::string controller_connectors =
      R"(<ssd:Connector name="y" kind="input"><ssc:Real unit="m"/></ssd:Connector>
          <ssd:Connector name="u" kind="output"><ssc:Real unit="N"/></ssd:Connector>)";
  std::string plant_connectors =
      R"(<ssd:Connector name="F" kind="input"><ssc:Real unit="N"/></ssd:Connector>
          <ssd:Connector name="x" kind="output"><ssc:Real unit="m"/></ssd:Connector>)";
  std::string connections =
      R"(<ssd:Connection startElement="controller" startConnector="u" endElement="plant" endConnector="F"/>
      <ssd:Connection startElement="plant" startConnector="x" endElement="controller" endConnector="y"/>)";
  std::string system_extra;    // inside <ssd:System>, before <ssd:Elements>
  std::string elements_extra;  // inside <ssd:Elements>
  std::string controller_source = "resources/pi2.fmu";
  std::string connection_extra;  // inside the first connection
};

// Lines: 1 xml, 2 root, 3-4 xmlns, 5 System, 6 system_extra, 7 Elements, 8 controller, 9 Connectors,
// 10-11 controller connectors, ...
std::string ssd(const SsdParts& p) {
  return R"(<?xml version="1.0"?>
<ssd:SystemStructureDescription version="1.0" name="t" xmlns:ssd="http://ssp-standard.org/SSP1/SystemStructureDescription"
    xmlns:ssc="http://ssp-standard.org/SSP1/SystemStructureCommon"
    xmlns:ssv="http://ssp-standard.org/SSP1/SystemStructureParameterValues">
  <ssd:System name="s">
    )" + p.system_extra +
         R"(
    <ssd:Elements>
      <ssd:Component name="controller" source=")" +
         p.controller_source + R"(">
        <ssd:Connectors>
          )" +
         p.controller_connectors + R"(
        </ssd:Connectors>
      </ssd:Component>
      <ssd:Component name="plant" source="resources/msd2.fmu">
        <ssd:Connectors>
          )" +
         p.plant_connectors + R"(
        </ssd:Connectors>
      </ssd:Component>
      )" +
         p.elements_extra + R"(
    </ssd:Elements>
    <ssd:Connections>
      )" +
         p.connections + R"(
    </ssd:Connections>
  </ssd:System>
</ssd:SystemStructureDescription>
)";
}

class SspErrors : public ::testing::Test {
 protected:
  TempDir dir{"errors"};
  std::string last_;  // the SSD of the last error_of

  // The error of importing an SSP with this SSD (and extra entries), or "".
  std::string error_of(const std::string& ssd_text, const std::vector<std::pair<std::string, std::string>>& extra = {},
                       const config::SspLimits& limits = {}) {
    const std::string ssp = (dir.path / "t.ssp").string();
    last_ = ssd_text;
    {
      ZipWriter z(ssp);
      z.add("SystemStructure.ssd", ssd_text);
      z.add("resources/pi2.fmu", slurp(kFmus + "/pi2.fmu"));
      z.add("resources/msd2.fmu", slurp(kFmus + "/msd2.fmu"));
      for (const auto& [name, data] : extra) z.add(name, data);
      z.close();
    }
    return import_error(ssp, limits);
  }

  std::string import_error(const std::string& ssp, const config::SspLimits& limits = {}) {
    config::SspImportOptions options;
    options.graph_dir = dir.path.string();
    options.fmu_dir = (dir.path / "fmus").string();
    options.limits = limits;
    try {
      config::import_ssp(ssp, options);
    } catch (const config::SspError& e) {
      return e.what();
    }
    return "";
  }

  std::string at(int line) const {
    return (dir.path / "t.ssp").string() + "/SystemStructure.ssd:" + std::to_string(line) + ": ";
  }
};

// The line of the first occurrence of `needle` in `text`.
int line_of(const std::string& text, const std::string& needle) {
  const auto pos = text.find(needle);
  EXPECT_NE(pos, std::string::npos) << needle;
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(pos), '\n'));
}

#define EXPECT_STARTS(text, prefix) EXPECT_EQ((text).rfind(prefix, 0), 0u) << (text)
#define EXPECT_HAS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

// Issue 40: an SSD that leaves inputs unconnected (as the Reference FMU
// Feedthrough's systems do) and whose connectors have structured names
// imports, checks with a warning per open input, and runs on the inputs'
// start values: dotted2 (count2 under structured names: 'body.x',
// 'c[1].count', 'in.inc', "'en able'") with in.inc (start 1) and
// 'en able' (start true) open counts floor(t), so body.x = 1 at t = 2 s; its
// body.x drives msd2's F through a connection between dotted names.
TEST(SspImport, UnconnectedInputsAndStructuredNamesRunOnTheirStartValues) {
  TempDir dir("open");
  const std::string ssd_text = R"(<?xml version="1.0"?>
<ssd:SystemStructureDescription version="1.0" name="open" xmlns:ssd="http://ssp-standard.org/SSP1/SystemStructureDescription"
    xmlns:ssc="http://ssp-standard.org/SSP1/SystemStructureCommon">
  <ssd:System name="s">
    <ssd:Elements>
      <ssd:Component name="counter" source="resources/dotted2.fmu">
        <ssd:Connectors>
          <ssd:Connector name="body.x" kind="output"><ssc:Real/></ssd:Connector>
          <ssd:Connector name="in.inc" kind="input"><ssc:Integer/></ssd:Connector>
          <ssd:Connector name="'en able'" kind="input"><ssc:Boolean/></ssd:Connector>
        </ssd:Connectors>
      </ssd:Component>
      <ssd:Component name="plant" source="resources/msd2.fmu">
        <ssd:Connectors>
          <ssd:Connector name="F" kind="input"><ssc:Real/></ssd:Connector>
          <ssd:Connector name="x" kind="output"><ssc:Real/></ssd:Connector>
        </ssd:Connectors>
      </ssd:Component>
    </ssd:Elements>
    <ssd:Connections>
      <ssd:Connection startElement="counter" startConnector="body.x" endElement="plant" endConnector="F"/>
    </ssd:Connections>
  </ssd:System>
</ssd:SystemStructureDescription>
)";
  const std::string ssp = (dir.path / "open.ssp").string();
  {
    ZipWriter z(ssp);
    z.add("SystemStructure.ssd", ssd_text);
    z.add("resources/dotted2.fmu", slurp(kFmus + "/dotted2.fmu"));
    z.add("resources/msd2.fmu", slurp(kFmus + "/msd2.fmu"));
    z.close();
  }
  config::SspImportOptions options;
  options.graph_dir = dir.path.string();
  options.fmu_dir = (dir.path / "fmus").string();
  const auto imported = config::import_ssp(ssp, options);
  EXPECT_NE(imported.yaml.find("{from: \"counter.body.x\", to: \"plant.F\"}"), std::string::npos) << imported.yaml;
  spit(dir.path / "open.yaml", imported.yaml);
  const auto loaded = config::load_graph_file((dir.path / "open.yaml").string());
  ASSERT_TRUE(loaded.ok()) << (loaded.diagnostics.empty() ? "" : loaded.diagnostics.front().str());
  std::vector<std::string> warnings;
  for (const auto& d : loaded.diagnostics) warnings.push_back(d.message);
  EXPECT_EQ(warnings,
            (std::vector<std::string>{
                "input 'counter.in.inc' of block 'counter' (fmu) is not connected: it keeps its start value 1",
                "input 'counter.'en able'' of block 'counter' (fmu) is not connected: it keeps its start "
                "value 1"}));
  // rtcosim check lists them and accepts the file.
  std::ostringstream out, err;
  auto* old_out = std::cout.rdbuf(out.rdbuf());
  auto* old_err = std::cerr.rdbuf(err.rdbuf());
  const int rc = run_check_command({(dir.path / "open.yaml").string()});
  std::cout.rdbuf(old_out);
  std::cerr.rdbuf(old_err);
  EXPECT_EQ(rc, 0) << out.str() << err.str();
  EXPECT_NE((out.str() + err.str()).find("warning: input 'counter.in.inc' of block 'counter' (fmu) is not connected"),
            std::string::npos)
      << out.str() << err.str();
  const std::string csv = run_virtual(dir.path / "open.yaml", dir.path / "open.csv", "2s");
  // The FMU sums x in 1 ms pieces: 1 to a few ulps.
  const std::string row = "\n2,counter,counter.body.x,";
  const auto at_two = csv.find(row);
  ASSERT_NE(at_two, std::string::npos) << csv.substr(0, 400);
  EXPECT_NEAR(std::stod(csv.substr(at_two + row.size())), 1.0, 1e-12);
  EXPECT_NE(csv.find("\n0,counter,counter.body.x,0\n"), std::string::npos) << csv.substr(0, 400);
}

TEST_F(SspErrors, TheBaseSsdImports) { EXPECT_EQ(error_of(ssd({})), ""); }

TEST_F(SspErrors, MalformedXmlGivesItsLine) {
  const auto e = error_of("<?xml version=\"1.0\"?>\n<ssd:SystemStructureDescription version=\"1.0\">\n  <ssd:System\n");
  EXPECT_STARTS(e, at(3));  // the start tag that is never closed
  EXPECT_HAS(e, "expected well-formed XML");
}

TEST_F(SspErrors, ConnectionsAreCheckedForUnitTypeAndDirectionAtTheirLine) {
  SsdParts p;
  // Line 23 is the first connection.
  p.connections =
      R"(<ssd:Connection startElement="controller" startConnector="u" endElement="plant" endConnector="x"/>)";
  auto e = error_of(ssd(p));
  EXPECT_STARTS(e, at(line_of(last_, "endConnector=\"x\"")));
  EXPECT_HAS(e, "joins controller.u (output) and plant.x (output) — a connection goes from an output to an input");

  p = {};
  p.plant_connectors = R"(<ssd:Connector name="F" kind="input"><ssc:Real unit="kN"/></ssd:Connector>)";
  e = error_of(ssd(p));
  EXPECT_STARTS(e, at(line_of(last_, "unit=\"kN\"")));  // the connector against the FMU's own unit
  EXPECT_HAS(e, "connector 'F' of component 'plant' has unit 'kN', but resources/msd2.fmu gives 'F' unit 'N'");

  p = {};
  p.controller_connectors = R"(<ssd:Connector name="u" kind="output"/>)";
  p.plant_connectors = R"(<ssd:Connector name="F" kind="input"/><ssd:Connector name="x" kind="output"/>)";
  p.connections = R"(<ssd:Connection startElement="plant" startConnector="x" endElement="plant" endConnector="F"/>)";
  e = error_of(ssd(p));
  EXPECT_STARTS(e, at(line_of(last_, "startConnector=\"x\" endElement=\"plant\"")));
  EXPECT_HAS(e, "the connection from plant.x (unit 'm') to plant.F (unit 'N') joins different units");

  p = {};
  p.plant_connectors = R"(<ssd:Connector name="F" kind="input"><ssc:Integer/></ssd:Connector>)";
  e = error_of(ssd(p));
  EXPECT_STARTS(e, at(line_of(last_, "<ssc:Integer/>")));
  EXPECT_HAS(e, "is declared Integer, but resources/msd2.fmu declares 'F' as Real");

  p = {};
  p.plant_connectors = R"(<ssd:Connector name="F" kind="output"/>)";
  e = error_of(ssd(p));
  EXPECT_STARTS(e, at(line_of(last_, "name=\"F\" kind=\"output\"")));
  EXPECT_HAS(e, "connector 'F' of component 'plant' is declared output, but resources/msd2.fmu declares 'F' as input");

  p = {};
  p.connections =
      R"(<ssd:Connection startElement="plnat" startConnector="x" endElement="controller" endConnector="y"/>)";
  e = error_of(ssd(p));
  EXPECT_STARTS(e, at(line_of(last_, "plnat")));
  EXPECT_HAS(e, "element 'plnat', which the system does not contain (did you mean 'plant'?)");

  p = {};
  p.connections += R"(
      <ssd:Connection endElement="controller" endConnector="y" startElement="plant" startConnector="x"/>)";
  e = error_of(ssd(p));
  EXPECT_STARTS(e, at(line_of(last_, "endElement=\"controller\" endConnector=\"y\" start")));
  EXPECT_HAS(e, "controller.y is driven by a second connection (the first is at line " +
                    std::to_string(line_of(last_, "startConnector=\"x\" endElement=\"controller\"")) + ")");

  p = {};
  p.connections =
      R"(<ssd:Connection startElement="controller" startConnector="u" endElement="plant" endConnector="F"><ssc:LinearTransformation factor="2"/></ssd:Connection>)";
  e = error_of(ssd(p));
  EXPECT_STARTS(e, at(line_of(last_, "LinearTransformation")));
  EXPECT_HAS(e, "connection transformations (<ssc:LinearTransformation>) are not supported");
}

TEST_F(SspErrors, UnsupportedStructureIsRefusedByName) {
  SsdParts p;
  p.elements_extra = R"(<ssd:System name="inner"/>)";
  auto e = error_of(ssd(p));
  EXPECT_STARTS(e, at(line_of(last_, "name=\"inner\"")));
  EXPECT_HAS(e, "nested system 'inner'");

  p = {};
  p.elements_extra = R"(<ssd:SignalDictionaryReference name="bus" dictionary="d"/>)";
  e = error_of(ssd(p));
  EXPECT_STARTS(e, at(line_of(last_, "SignalDictionaryReference")));
  EXPECT_HAS(e, "signal dictionaries are not supported");

  p = {};
  p.system_extra =
      R"(<ssd:Connectors><ssd:Connector name="cmd" kind="input"><ssc:Real unit="N"/></ssd:Connector></ssd:Connectors>)";
  p.connections = R"(<ssd:Connection startConnector="cmd" endElement="plant" endConnector="F"/>)";
  e = error_of(ssd(p));
  EXPECT_STARTS(e, at(line_of(last_, "startConnector=\"cmd\"")));
  EXPECT_HAS(e, "driven by the system's input connector 'cmd' — rtcosim imports a closed system");

  p = {};
  p.system_extra =
      R"(<ssd:ParameterBindings><ssd:ParameterBinding source="resources/p.ssv"><ssd:ParameterMapping source="resources/m.ssm"/></ssd:ParameterBinding></ssd:ParameterBindings>)";
  e = error_of(ssd(p), {{"resources/p.ssv", "<ssv:ParameterSet/>"}});
  EXPECT_STARTS(e, at(line_of(last_, "ParameterMapping")));
  EXPECT_HAS(e, "parameter mappings (<ssd:ParameterMapping>, .ssm) are not supported");

  p = {};
  p.controller_source = "resources/pi2.ssp";
  e = error_of(ssd(p).replace(ssd(p).find("source=\"resources/pi2.ssp\""), 0, "type=\"application/x-ssp-package\" "));
  EXPECT_STARTS(e, at(line_of(last_, "pi2.ssp")));
  EXPECT_HAS(e, "only FMUs (application/x-fmu-sharedlibrary) are supported");

  e = error_of(std::string(ssd({})).replace(ssd({}).find("version=\"1.0\" name"), 13, "version=\"2.0\""));
  EXPECT_STARTS(e, at(line_of(last_, "version=\"2.0\"")));
  EXPECT_HAS(e, "SSP version '2.0' is not supported");
}

TEST_F(SspErrors, ParameterSetsGiveTheirOwnFileAndLine) {
  SsdParts p;
  p.system_extra = R"(<ssd:ParameterBindings><ssd:ParameterBinding source="resources/p.ssv"/></ssd:ParameterBindings>)";
  const std::string head = R"(<?xml version="1.0"?>
<ssv:ParameterSet version="1.0" name="p" xmlns:ssv="http://ssp-standard.org/SSP1/SystemStructureParameterValues">
  <ssv:Parameters>
)";
  const std::string ssv_at = (dir.path / "t.ssp").string() + "/resources/p.ssv:";
  auto e = error_of(
      ssd(p),
      {{"resources/p.ssv", head + R"(    <ssv:Parameter name="plant.k"><ssv:Real value="4" unit="N/mm"/></ssv:Parameter>
  </ssv:Parameters></ssv:ParameterSet>)"}});
  EXPECT_STARTS(e, ssv_at + "4: ");
  EXPECT_HAS(e, "parameter 'plant.k' has unit 'N/mm', but resources/msd2.fmu gives 'k' unit 'N/m'");

  e = error_of(ssd(p),
               {{"resources/p.ssv", head + R"(    <ssv:Parameter name="plant.k"><ssv:Real value="4"/></ssv:Parameter>
    <ssv:Parameter name="controller.name"><ssv:String value="pi"/></ssv:Parameter>
  </ssv:Parameters></ssv:ParameterSet>)"}});
  EXPECT_STARTS(e, ssv_at + "5: ");
  EXPECT_HAS(e, "parameter 'controller.name' is String — rtcosim's start values are numbers");

  e = error_of(ssd(p),
               {{"resources/p.ssv", head + R"(    <ssv:Parameter name="plant.x"><ssv:Real value="4"/></ssv:Parameter>
  </ssv:Parameters></ssv:ParameterSet>)"}});
  EXPECT_STARTS(e, ssv_at + "4: ");
  EXPECT_HAS(e, "sets 'x' of component 'plant', a continuous output that takes no start value");

  e = error_of(
      ssd(p), {{"resources/p.ssv", head + R"(    <ssv:Parameter name="plant.k"><ssv:Real value="1e999"/></ssv:Parameter>
  </ssv:Parameters></ssv:ParameterSet>)"}});
  EXPECT_STARTS(e, ssv_at + "4: ");
  EXPECT_HAS(e, "has value '1e999' — expected a finite number");

  e = error_of(ssd(p), {{"resources/p.ssv", head + "<ssv:Parameter"}});
  EXPECT_STARTS(e, ssv_at + "4: ");
  EXPECT_HAS(e, "expected well-formed XML");
}

TEST_F(SspErrors, HostileArchivesAreRefused) {
  // Entries outside the archive's directory, and a symbolic link.
  for (const std::string name : {"../escape.txt", "/tmp/rtcosim_ssp_abs.txt", "resources/..\\..\\x"}) {
    const std::string ssp = (dir.path / "h.ssp").string();
    {
      ZipWriter z(ssp);
      z.add("SystemStructure.ssd", ssd({}));
      z.add(name, "owned");
      z.close();
    }
    const auto e = import_error(ssp);
    EXPECT_HAS(e, "would be written outside the SSP's directory — refused");
  }
  EXPECT_FALSE(fs::exists(fs::temp_directory_path() / "rtcosim_ssp_abs.txt"));
  {
    const std::string ssp = (dir.path / "l.ssp").string();
    ZipWriter z(ssp);
    z.add("SystemStructure.ssd", ssd({}));
    z.add("resources/pi2.fmu", "/etc/passwd", true);
    z.close();
    EXPECT_HAS(import_error(ssp), "entry 'resources/pi2.fmu' is a symbolic link — refused");
  }
  // Sources that leave the archive.
  for (const std::string source :
       {"../pi2.fmu", "/etc/passwd", "file:///etc/passwd", "resources/%2e%2e/%2e%2e/x.fmu", "other.ssp#inner"}) {
    SsdParts p;
    p.controller_source = source;
    const auto e = error_of(ssd(p));
    EXPECT_STARTS(e, at(line_of(last_, "<ssd:Component name=\"controller\"")));
    EXPECT_HAS(e, "component 'controller': source '" + source + "'");
  }
  // Not a zip; no SSD; the bounds.
  spit(dir.path / "junk.ssp", "not a zip");
  EXPECT_HAS(import_error((dir.path / "junk.ssp").string()), "cannot open as an SSP (a zip archive)");
  {
    const std::string ssp = (dir.path / "n.ssp").string();
    ZipWriter z(ssp);
    z.add("resources/pi2.fmu", "x");
    z.close();
    EXPECT_HAS(import_error(ssp), "the archive has no SystemStructure.ssd at its root — not an SSP");
  }
  config::SspLimits small;
  small.max_components = 1;
  EXPECT_HAS(error_of(ssd({}), {}, small), "more than 1 components — refused");
  small = {};
  small.max_xml_bytes = 100;
  EXPECT_HAS(error_of(ssd({}), {}, small), "more than the 100 an XML file of an SSP may have");
  small = {};
  small.max_xml_nodes = 10;
  EXPECT_HAS(error_of(ssd({}), {}, small), "more than 10 XML elements and attributes — refused");
  // A component's source that is not an FMU.
  SsdParts p;
  p.controller_source = "resources/pi2.ssv";
  EXPECT_HAS(error_of(ssd(p), {{"resources/pi2.ssv", "plain text"}}), "cannot open as an FMU (a zip archive)");
}

// Text for an XML attribute: what XML would normalise (line breaks, tabs)
// or what would end the attribute is written as a reference.
std::string xml_attr(const std::string& s) {
  std::string out;
  for (const char c : s) {
    switch (c) {
      case '\n':
        out += "&#10;";
        break;
      case '\r':
        out += "&#13;";
        break;
      case '\t':
        out += "&#9;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// The string a YAML double-quoted scalar starting at `pos` of `line` stands
// for, read by yaml-cpp.
std::string quoted_at(const std::string& line, std::size_t pos) {
  EXPECT_LT(pos, line.size());
  if (pos >= line.size() || line[pos] != '"') return "<no quote at " + std::to_string(pos) + " in " + line + ">";
  std::size_t end = pos + 1;
  while (end < line.size() && line[end] != '"') end += line[end] == '\\' ? 2 : 1;
  return YAML::Load(line.substr(pos, end + 1 - pos)).as<std::string>();
}

std::set<std::string> keys_of(const YAML::Node& map) {
  std::set<std::string> out;
  for (const auto& kv : map) out.insert(kv.first.as<std::string>());
  return out;
}

// Issue 44, point 5: names from the SSP went into `#` comment lines as they
// were, so a name holding "&#10;" ended the comment and wrote keys of its
// own (`realtime: required` appeared in the graph; the loader refuses
// duplicates, so any key the import does not write took effect). Every
// string from the SSP is now written as a double-quoted YAML scalar, in
// comments and values alike, with line breaks (CR, LF, NEL, U+2028,
// U+2029) and other control characters escaped: the graph yaml-cpp reads
// back has exactly the keys the import writes, and every name reads back
// as it was.
TEST(SspImport, NamesThatHoldLineBreaksQuotesOrColonsStayInTheirPlace) {
  TempDir dir("hostile_names");
  const std::vector<std::string> hostile = {"\n", "\r", "\xc2\x85", "\xe2\x80\xa8", "\xe2\x80\xa9", "#",
                                            ": ", "\"", "'",        "\t",           "\\",           "\r\n"};
  std::vector<std::string> outs, ins, params, system_outs;
  for (std::size_t i = 0; i < hostile.size(); ++i) {
    const std::string n = std::to_string(i);
    outs.push_back("o" + n + hostile[i] + "realtime: required");
    ins.push_back("i" + n + hostile[i] + "coupling: {}");
    params.push_back("p" + n + hostile[i] + "trace: on");
    system_outs.push_back("s" + n + hostile[i] + "sync: {}");
  }
  const std::string ssd_name = "sys\nrealtime: required\n# \"x\": 'y'";
  const std::string comp_a = "ctl\nrealtime: required\r\xc2\x85\xe2\x80\xa8\xe2\x80\xa9#x: \"'\\";
  const std::string comp_b = "plant\r\nsync: {}";
  // (No backslash: the archive refuses it in an entry's name.)
  const std::string source_a = "resources/h\n\r\xc2\x85\xe2\x80\xa8\xe2\x80\xa9 x: y'\".fmu";

  // An FMU (its description only: the import loads no binary) whose
  // variables carry those names.
  std::string md = R"(<?xml version="1.0" encoding="UTF-8"?>
<fmiModelDescription fmiVersion="2.0" modelName="h" guid="{h}">
  <CoSimulation modelIdentifier="h"/>
  <ModelVariables>
)";
  int vr = 0;
  for (const auto& o : outs)
    md += "    <ScalarVariable name=\"" + xml_attr(o) + "\" valueReference=\"" + std::to_string(vr++) +
          "\" causality=\"output\" variability=\"continuous\"><Real/></ScalarVariable>\n";
  for (const auto& in : ins)
    md += "    <ScalarVariable name=\"" + xml_attr(in) + "\" valueReference=\"" + std::to_string(vr++) +
          "\" causality=\"input\" variability=\"continuous\"><Real start=\"0\"/></ScalarVariable>\n";
  for (const auto& p : params)
    md += "    <ScalarVariable name=\"" + xml_attr(p) + "\" valueReference=\"" + std::to_string(vr++) +
          "\" causality=\"parameter\" variability=\"fixed\"><Real start=\"1\"/></ScalarVariable>\n";
  md += "  </ModelVariables>\n</fmiModelDescription>\n";
  const fs::path fmu_file = dir.path / "h.fmu";
  {
    ZipWriter z(fmu_file.string());
    z.add("modelDescription.xml", md);
    z.close();
  }

  std::string ssd_text = R"(<?xml version="1.0"?>
<ssd:SystemStructureDescription version="1.0" name=")" +
                         xml_attr(ssd_name) + R"(" xmlns:ssd="http://ssp-standard.org/SSP1/SystemStructureDescription"
    xmlns:ssc="http://ssp-standard.org/SSP1/SystemStructureCommon"
    xmlns:ssv="http://ssp-standard.org/SSP1/SystemStructureParameterValues">
  <ssd:System name="s">
    <ssd:Connectors>
)";
  for (const auto& s : system_outs)
    ssd_text += "      <ssd:Connector name=\"" + xml_attr(s) + "\" kind=\"output\"><ssc:Real/></ssd:Connector>\n";
  ssd_text += "    </ssd:Connectors>\n    <ssd:Elements>\n      <ssd:Component name=\"" + xml_attr(comp_a) +
              "\" source=\"" + xml_attr(source_a) + "\">\n        <ssd:Connectors>\n";
  for (const auto& o : outs)
    ssd_text += "          <ssd:Connector name=\"" + xml_attr(o) + "\" kind=\"output\"><ssc:Real/></ssd:Connector>\n";
  ssd_text += "        </ssd:Connectors>\n      </ssd:Component>\n      <ssd:Component name=\"" + xml_attr(comp_b) +
              "\" source=\"resources/h.fmu\">\n        <ssd:Connectors>\n";
  for (const auto& in : ins)
    ssd_text += "          <ssd:Connector name=\"" + xml_attr(in) + "\" kind=\"input\"><ssc:Real/></ssd:Connector>\n";
  ssd_text +=
      "        </ssd:Connectors>\n        <ssd:ParameterBindings><ssd:ParameterBinding><ssd:ParameterValues>"
      "<ssv:ParameterSet version=\"1.0\" name=\"p\"><ssv:Parameters>\n";
  for (std::size_t i = 0; i < params.size(); ++i)
    ssd_text += "          <ssv:Parameter name=\"" + xml_attr(params[i]) + "\"><ssv:Real value=\"" + std::to_string(i) +
                ".5\"/></ssv:Parameter>\n";
  ssd_text +=
      "        </ssv:Parameters></ssv:ParameterSet></ssd:ParameterValues></ssd:ParameterBinding>"
      "</ssd:ParameterBindings>\n      </ssd:Component>\n    </ssd:Elements>\n    <ssd:Connections>\n";
  for (std::size_t i = 0; i < outs.size(); ++i) {
    ssd_text += "      <ssd:Connection startElement=\"" + xml_attr(comp_a) + "\" startConnector=\"" +
                xml_attr(outs[i]) + "\" endElement=\"" + xml_attr(comp_b) + "\" endConnector=\"" + xml_attr(ins[i]) +
                "\"/>\n";
    ssd_text += "      <ssd:Connection startElement=\"" + xml_attr(comp_a) + "\" startConnector=\"" +
                xml_attr(outs[i]) + "\" endConnector=\"" + xml_attr(system_outs[i]) + "\"/>\n";
  }
  ssd_text += "    </ssd:Connections>\n  </ssd:System>\n</ssd:SystemStructureDescription>\n";

  const std::string ssp = (dir.path / "hostile.ssp").string();
  {
    ZipWriter z(ssp);
    z.add("SystemStructure.ssd", ssd_text);
    z.add(source_a, slurp(fmu_file));
    z.add("resources/h.fmu", slurp(fmu_file));
    z.close();
  }
  config::SspImportOptions options;
  options.graph_dir = dir.path.string();
  options.fmu_dir = (dir.path / "fmus").string();
  const auto imported = config::import_ssp(ssp, options);
  const std::string& y = imported.yaml;
  // No line break or control character of a name is in the text as it is.
  for (const std::string raw : {"\r", "\t", "\xc2\x85", "\xe2\x80\xa8", "\xe2\x80\xa9"})
    EXPECT_EQ(y.find(raw), std::string::npos) << y;

  YAML::Node g;
  ASSERT_NO_THROW(g = YAML::Load(y)) << y;
  EXPECT_EQ(keys_of(g), (std::set<std::string>{"name", "tasks", "blocks", "wires", "record"})) << y;
  EXPECT_EQ(g["name"].as<std::string>(), ssd_name);
  ASSERT_EQ(g["blocks"].size(), 2u) << y;
  const std::string block_a = g["blocks"][0]["name"].as<std::string>();
  const std::string block_b = g["blocks"][1]["name"].as<std::string>();
  ASSERT_EQ(g["tasks"].size(), 2u);
  for (std::size_t t = 0; t < 2; ++t) {
    EXPECT_EQ(keys_of(g["tasks"][t]), (std::set<std::string>{"name", "period", "integrator", "step"}));
    EXPECT_EQ(g["tasks"][t]["name"].as<std::string>(), t == 0 ? block_a : block_b);
    EXPECT_EQ(keys_of(g["blocks"][t]), (std::set<std::string>{"name", "type", "task", "params"}));
  }
  EXPECT_EQ(keys_of(g["blocks"][0]["params"]), (std::set<std::string>{"file"}));
  EXPECT_EQ(keys_of(g["blocks"][1]["params"]), (std::set<std::string>{"file", "start"}));
  ASSERT_EQ(imported.fmus.size(), 2u);
  EXPECT_EQ(fs::path(imported.fmus[0]).filename(), fs::path(source_a).filename());
  EXPECT_EQ(g["blocks"][0]["params"]["file"].as<std::string>(),
            fs::path(imported.fmus[0]).lexically_proximate(dir.path).string());
  const YAML::Node start = g["blocks"][1]["params"]["start"];
  EXPECT_EQ(start.size(), params.size());
  for (std::size_t i = 0; i < params.size(); ++i) {
    ASSERT_TRUE(start[params[i]]) << "start value of parameter " << i << " missing:\n" << y;
    EXPECT_EQ(start[params[i]].as<double>(), static_cast<double>(i) + 0.5);
  }
  ASSERT_EQ(g["wires"].size(), outs.size()) << y;
  for (std::size_t i = 0; i < outs.size(); ++i) {
    EXPECT_EQ(keys_of(g["wires"][i]), (std::set<std::string>{"from", "to"}));
    EXPECT_EQ(g["wires"][i]["from"].as<std::string>(), block_a + "." + outs[i]);
    EXPECT_EQ(g["wires"][i]["to"].as<std::string>(), block_b + "." + ins[i]);
  }
  EXPECT_EQ(keys_of(g["record"]), (std::set<std::string>{"file", "signals"}));
  ASSERT_EQ(g["record"]["signals"].size(), outs.size());
  for (std::size_t i = 0; i < outs.size(); ++i)
    EXPECT_EQ(g["record"]["signals"][i].as<std::string>(), block_a + "." + outs[i]);

  // The comments: one line each, the names in them read back.
  std::vector<std::string> comments;
  std::istringstream lines(y);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind('#', 0) == 0) comments.push_back(line);
  ASSERT_EQ(comments.size(), 2 + 2 + system_outs.size()) << y;
  const std::string component_tag = "#   component ";
  ASSERT_EQ(comments[2].rfind(component_tag, 0), 0u) << comments[2];
  EXPECT_EQ(quoted_at(comments[2], component_tag.size()), comp_a);
  const auto source_at = comments[2].find("(source \"");
  ASSERT_NE(source_at, std::string::npos) << comments[2];
  EXPECT_EQ(quoted_at(comments[2], source_at + 8), "resources/" + fs::path(source_a).filename().string());
  EXPECT_EQ(quoted_at(comments[3], component_tag.size()), comp_b);
  const std::string output_tag = "# system output ";
  for (std::size_t i = 0; i < system_outs.size(); ++i) {
    const std::string& c = comments[4 + i];
    ASSERT_EQ(c.rfind(output_tag, 0), 0u) << c;
    EXPECT_EQ(quoted_at(c, output_tag.size()), system_outs[i]);
  }
}

// Names that are not UTF-8 cannot be written as YAML text that reads back
// the same: refused, by name, at their line.
TEST_F(SspErrors, NamesThatAreNotUtf8AreRefused) {
  SsdParts p;
  p.elements_extra = "<ssd:Component name=\"bad\xff\" source=\"resources/msd2.fmu\"/>";
  auto e = error_of(ssd(p));
  EXPECT_STARTS(e, at(line_of(last_, "name=\"bad")));
  EXPECT_HAS(e, "a component name is not valid UTF-8 (byte 4) — refused");
  p = {};
  p.plant_connectors = "<ssd:Connector name=\"F\xe2\x80\" kind=\"input\"/>";
  e = error_of(ssd(p));
  EXPECT_STARTS(e, at(line_of(last_, "kind=\"input\"/>")));
  EXPECT_HAS(e, "a connector of component 'plant' name is not valid UTF-8 (byte 2) — refused");
  // A surrogate (&#xD800;) is no character UTF-8 may encode.
  e = error_of(std::string(ssd({})).replace(ssd({}).find("name=\"t\""), 8, "name=\"t&#xD800;\""));
  EXPECT_STARTS(e, at(2));
  EXPECT_HAS(e, "the SSD name is not valid UTF-8 (byte 2) — refused");
}

// Issue 44, point 6: a node's line was counted from the file's start, so
// an SSD of 66 000 connectors took 114 s to import. The lines come from a
// table of line starts (a binary search per node); it gives what the
// count gave, on random text and at the ends.
TEST(SspLineIndex, GivesTheLinesANaiveCountGives) {
  auto naive = [](const std::string& text, std::ptrdiff_t offset) {
    const auto end = static_cast<std::ptrdiff_t>(text.size());
    return static_cast<std::size_t>(
        1 + std::count(text.begin(), text.begin() + std::clamp<std::ptrdiff_t>(offset, 0, end), '\n'));
  };
  std::mt19937 rng(44);
  const std::string alphabet = "ab <>\n\r\n\n";
  for (int round = 0; round < 200; ++round) {
    std::string text(rng() % 600, ' ');
    for (auto& c : text) c = alphabet[rng() % alphabet.size()];
    if (round % 3 == 0) text += '\n';
    const config::LineIndex index(text);
    const auto size = static_cast<std::ptrdiff_t>(text.size());
    for (std::ptrdiff_t offset = -3; offset <= size + 3; ++offset)
      ASSERT_EQ(index.line_at(offset), naive(text, offset)) << "round " << round << " offset " << offset;
  }
  const config::LineIndex empty("");
  EXPECT_EQ(empty.line_at(0), 1u);
  EXPECT_EQ(empty.line_at(5), 1u);
  const config::LineIndex breaks("\n\n\n");
  EXPECT_EQ(breaks.line_at(3), 4u);
  EXPECT_EQ(breaks.line_at(2), 3u);
}

// The review's SSD: 66 000 system connectors (3 XML nodes each, under the
// 200 000 the SSD may have) import; one of another kind at its end is
// named at its line. And 28 000 system outputs, each driven by a
// connection: the connectors are found by name, not by a search each.
TEST_F(SspErrors, An66000ConnectorSsdImportsAndNamesItsLastConnectorsLine) {
  auto connectors = [](int n, const std::string& last_kind) {
    std::string out = "<ssd:Connectors>\n";
    for (int i = 0; i < n; ++i)
      out += "      <ssd:Connector name=\"o" + std::to_string(i) + "\" kind=\"" +
             (i + 1 == n ? last_kind : std::string("output")) + "\"/>\n";
    return out + "    </ssd:Connectors>";
  };
  SsdParts p;
  p.system_extra = connectors(66000, "output");
  EXPECT_EQ(error_of(ssd(p)), "");
  p.system_extra = connectors(66000, "sideways");
  const auto e = error_of(ssd(p));
  EXPECT_STARTS(e, at(line_of(last_, "kind=\"sideways\"")));
  EXPECT_HAS(e, "connector 'o65999' of the system has kind 'sideways'");
  EXPECT_GT(line_of(last_, "kind=\"sideways\""), 66000);

  p.system_extra = connectors(28000, "output");
  for (int i = 0; i < 28000; ++i)
    p.connections += "\n      <ssd:Connection startElement=\"plant\" startConnector=\"x\" endConnector=\"o" +
                     std::to_string(i) + "\"/>";
  EXPECT_EQ(error_of(ssd(p)), "");
}

// Issue 44, point 6: an import killed by SIGTERM (or SIGINT) left its
// unpacked archive in /tmp. The signal now stops the import at its next
// step, the unpacked archive is removed, and the process still ends by the
// signal. The CLI imports an SSP that takes a while to unpack (64 MiB of
// padding) under a $TMPDIR of its own; the signal goes once its temporary
// directory exists.
TEST(SspImport, ASignalledImportRemovesItsUnpackedArchive) {
  TempDir dir("signal");
  const std::string ssp = (dir.path / "slow.ssp").string();
  {
    SsdParts p;
    p.system_extra = "<ssd:Connectors>\n";
    for (int i = 0; i < 60000; ++i)
      p.system_extra += "      <ssd:Connector name=\"o" + std::to_string(i) + "\" kind=\"output\"/>\n";
    p.system_extra += "    </ssd:Connectors>";
    ZipWriter z(ssp);
    z.add("SystemStructure.ssd", ssd(p));
    z.add("resources/pi2.fmu", slurp(kFmus + "/pi2.fmu"));
    z.add("resources/msd2.fmu", slurp(kFmus + "/msd2.fmu"));
    z.add("extra/padding.bin", std::string(64u << 20, '\0'));
    z.close();
  }
  for (const int sig : {SIGTERM, SIGINT}) {
    SCOPED_TRACE(strsignal(sig));
    const fs::path tmp = dir.path / ("tmp" + std::to_string(sig));
    fs::create_directories(tmp);
    // The child starts with both signals at their default action and
    // unblocked, whatever this process was given (run_rtcosim).
    const rtcosim::testing::CliResult r =
        rtcosim::testing::run_rtcosim({"import", "ssp", ssp, "-o", (dir.path / "slow.yaml").string()}, dir.path,
                                      {.limit = std::chrono::seconds(60),
                                       .signal = sig,
                                       .when = [&] { return !fs::is_empty(tmp); },
                                       .environment = {"TMPDIR=" + tmp.string()},
                                       .poll = std::chrono::microseconds(500)});
    ASSERT_TRUE(r.signalled) << "the import ended before its temporary directory was seen: "
                             << rtcosim::testing::said(r);
    EXPECT_EQ(r.code, -sig) << rtcosim::testing::said(r);  // ended by the signal, as without the clean-up
    std::vector<std::string> left;
    for (const auto& e : fs::directory_iterator(tmp)) left.push_back(e.path().filename().string());
    EXPECT_EQ(left, std::vector<std::string>{}) << "left in $TMPDIR";
  }
}

}  // namespace
}  // namespace rtcosim::tools
