// Values an SSP gives the graph (issue 45, item 6; docs/ssp.md): a Boolean
// parameter written "1" or "0" (xs:boolean allows them beside "true" and
// "false") is the start value 1 or 0, and the FMU runs with it; an SSD
// whose DefaultExperiment starts at t != 0 gives the graph the duration
// stopTime - startTime. And the limits of the other start values: a 32-bit
// Integer's extremes are taken, one beyond is refused; Boolean spellings
// xs:boolean does not have are refused.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <list>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>

#include "rt_config/loader.hpp"
#include "rt_config/ssp_import.hpp"
#include "tools/rtcosim/run_command.hpp"

namespace rtcosim::tools {
namespace {

namespace fs = std::filesystem;
const std::string kFmus = RTCOSIM_FMU_DIR;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void spit(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
}

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() / ("rtcosim_ssp_values_" + name + "_" + std::to_string(getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

class ZipWriter {
 public:
  explicit ZipWriter(const std::string& path) {
    int err = 0;
    z_ = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
  }
  ~ZipWriter() {
    if (z_) zip_close(z_);
  }
  void add(const std::string& name, const std::string& data) {
    keep_.push_back(data);
    zip_source_t* s = zip_source_buffer(z_, keep_.back().data(), keep_.back().size(), 0);
    ASSERT_GE(zip_file_add(z_, name.c_str(), s, ZIP_FL_ENC_UTF_8), 0) << zip_strerror(z_);
  }
  void close() {
    zip_close(z_);
    z_ = nullptr;
  }

 private:
  zip_t* z_ = nullptr;
  std::list<std::string> keep_;
};

// count2 (tests/fmus/counter_model.h: counter += inc at t = 1, 2, ... s
// while enable is true; x' = counter) as component "counter", its x driving
// msd2's F. `experiment` goes before the system, `parameters` is the
// system's parameter set (none when empty).
std::string ssd(const std::string& experiment, bool with_parameters) {
  return R"(<?xml version="1.0"?>
<ssd:SystemStructureDescription version="1.0" name="values" xmlns:ssd="http://ssp-standard.org/SSP1/SystemStructureDescription"
    xmlns:ssc="http://ssp-standard.org/SSP1/SystemStructureCommon">
  <ssd:System name="s">)" +
         std::string(with_parameters ? R"(
    <ssd:ParameterBindings><ssd:ParameterBinding source="resources/p.ssv"/></ssd:ParameterBindings>)"
                                     : "") +
         R"(
    <ssd:Elements>
      <ssd:Component name="counter" source="resources/count2.fmu">
        <ssd:Connectors>
          <ssd:Connector name="x" kind="output"><ssc:Real/></ssd:Connector>
        </ssd:Connectors>
      </ssd:Component>
      <ssd:Component name="plant" source="resources/msd2.fmu">
        <ssd:Connectors>
          <ssd:Connector name="F" kind="input"><ssc:Real/></ssd:Connector>
        </ssd:Connectors>
      </ssd:Component>
    </ssd:Elements>
    <ssd:Connections>
      <ssd:Connection startElement="counter" startConnector="x" endElement="plant" endConnector="F"/>
    </ssd:Connections>
  </ssd:System>
  )" + experiment +
         R"(
</ssd:SystemStructureDescription>
)";
}

std::string ssv(const std::string& parameters) {
  return R"(<?xml version="1.0"?>
<ssv:ParameterSet version="1.0" name="p" xmlns:ssv="http://ssp-standard.org/SSP1/SystemStructureParameterValues">
  <ssv:Parameters>
    )" + parameters +
         R"(
  </ssv:Parameters>
</ssv:ParameterSet>
)";
}

// Imports an SSP of `ssd_text` (and the parameter set, if any) into
// `dir`/graph.yaml; the import's error, or "".
std::string import_into(const fs::path& dir, const std::string& ssd_text, const std::string& ssv_text,
                        config::SspImport* out = nullptr) {
  const std::string ssp = (dir / "v.ssp").string();
  {
    ZipWriter z(ssp);
    z.add("SystemStructure.ssd", ssd_text);
    z.add("resources/count2.fmu", slurp(kFmus + "/count2.fmu"));
    z.add("resources/msd2.fmu", slurp(kFmus + "/msd2.fmu"));
    if (!ssv_text.empty()) z.add("resources/p.ssv", ssv_text);
    z.close();
  }
  config::SspImportOptions options;
  options.graph_dir = dir.string();
  options.fmu_dir = (dir / "fmus").string();
  try {
    auto imported = config::import_ssp(ssp, options);
    spit(dir / "graph.yaml", imported.yaml);
    if (out) *out = std::move(imported);
  } catch (const config::SspError& e) {
    return e.what();
  }
  return "";
}

config::GraphSpec load(const fs::path& graph) {
  const auto loaded = config::load_graph_file(graph.string());
  for (const auto& d : loaded.diagnostics) {
    if (d.severity == config::Diagnostic::Severity::kError) ADD_FAILURE() << d.str();
  }
  return loaded.graph;
}

// The start value the graph gives `block`'s variable `var`.
double start_of(const config::GraphSpec& g, const std::string& block, const std::string& var) {
  for (const auto& b : g.diagram.blocks) {
    if (b.name != block) continue;
    const auto& all = b.params.all();
    const auto it = all.find("start." + var);
    if (it == all.end()) break;
    if (const double* v = std::get_if<double>(&it->second)) return *v;
    if (const bool* v = std::get_if<bool>(&it->second)) return *v ? 1.0 : 0.0;
    ADD_FAILURE() << block << ".start." << var << " is not a number";
    return -1.0;
  }
  ADD_FAILURE() << "no start value for " << block << "." << var;
  return -1.0;
}

// counter.x at t = 2 s of a virtual run of the graph: the counter's
// integral, 1 when it counted (0 to 1 at t = 1 s, 1 to 2 at t = 2 s), 0
// when it never did.
double x_at_two_seconds(const fs::path& dir) {
  std::ostringstream sink;
  auto* old = std::cout.rdbuf(sink.rdbuf());
  const int rc = run_run_command(
      {"--virtual", "--duration", "2s", "--record", (dir / "run.csv").string(), (dir / "graph.yaml").string()});
  std::cout.rdbuf(old);
  EXPECT_EQ(rc, 0) << sink.str();
  const std::string csv = slurp(dir / "run.csv");
  const std::string row = "\n2,counter,counter.x,";
  const auto at = csv.find(row);
  if (at == std::string::npos) {
    ADD_FAILURE() << "no row at t = 2 for counter.x in\n" << csv.substr(0, 400);
    return -1.0;
  }
  return std::stod(csv.substr(at + row.size()));
}

TEST(SspValues, ABooleanParameterOfOneOrZeroIsTheStartValueOneOrZero) {
  const struct {
    const char* text;
    double value;
  } cases[] = {{"1", 1.0}, {"0", 0.0}, {"true", 1.0}, {"false", 0.0}};
  for (const auto& c : cases) {
    TempDir dir(std::string("bool_") + c.text);
    const std::string e = import_into(dir.path, ssd("", true),
                                      ssv(std::string(R"(<ssv:Parameter name="counter.enable"><ssv:Boolean value=")") +
                                          c.text + R"("/></ssv:Parameter>)"));
    ASSERT_EQ(e, "") << c.text;
    const auto graph = load(dir.path / "graph.yaml");
    EXPECT_EQ(start_of(graph, "counter", "enable"), c.value) << "value=\"" << c.text << "\"";
    // The FMU runs with it: enabled, the counter counts (x(2) = 1);
    // disabled, it never does.
    EXPECT_NEAR(x_at_two_seconds(dir.path), c.value, 1e-9) << "value=\"" << c.text << "\"";
  }
}

TEST(SspValues, BooleanSpellingsXsBooleanDoesNotHaveAreRefused) {
  for (const char* text : {"2", "TRUE", "yes", "", " 1", "1.0", "-0"}) {
    TempDir dir("bool_bad");
    const std::string e = import_into(dir.path, ssd("", true),
                                      ssv(std::string(R"(<ssv:Parameter name="counter.enable"><ssv:Boolean value=")") +
                                          text + R"("/></ssv:Parameter>)"));
    EXPECT_NE(e.find("parameter 'counter.enable' has value '" + std::string(text) + "' — expected true or false"),
              std::string::npos)
        << "'" << text << "': " << e;
  }
}

// The 32-bit Integer at its limits: INT32_MIN and INT32_MAX are taken
// exactly, one beyond either is refused.
TEST(SspValues, AnIntegerParameterIsTakenUpToTheInt32LimitsAndRefusedBeyond) {
  const struct {
    const char* text;
    bool ok;
    double value;
  } cases[] = {{"2147483647", true, 2147483647.0},
               {"-2147483648", true, -2147483648.0},
               {"2147483648", false, 0.0},
               {"-2147483649", false, 0.0},
               {"7", true, 7.0},
               {"1.5", false, 0.0}};
  for (const auto& c : cases) {
    TempDir dir("int");
    const std::string e = import_into(dir.path, ssd("", true),
                                      ssv(std::string(R"(<ssv:Parameter name="counter.inc"><ssv:Integer value=")") +
                                          c.text + R"("/></ssv:Parameter>)"));
    if (!c.ok) {
      EXPECT_NE(e.find("has value '" + std::string(c.text) + "' — expected a 32-bit integer"), std::string::npos)
          << c.text << ": " << e;
      continue;
    }
    ASSERT_EQ(e, "") << c.text;
    EXPECT_EQ(start_of(load(dir.path / "graph.yaml"), "counter", "inc"), c.value) << c.text;
  }
}

// DefaultExperiment from startTime to stopTime: the graph runs for
// stopTime - startTime (rtcosim's time starts at 0), with a warning that
// the start was moved; a start of 0 gives no warning.
TEST(SspValues, ADefaultExperimentNotStartingAtZeroLastsStopMinusStart) {
  const struct {
    const char* start;
    const char* stop;
    double duration;
  } cases[] = {{"2", "5", 3.0},       {"0.5", "1.25", 0.75}, {"-1", "2", 3.0},
               {"100", "100.5", 0.5}, {"0", "4", 4.0},       {"3.25", "3.5", 0.25}};
  for (const auto& c : cases) {
    TempDir dir("experiment");
    config::SspImport imported;
    const std::string e = import_into(
        dir.path,
        ssd(std::string(R"(<ssd:DefaultExperiment startTime=")") + c.start + R"(" stopTime=")" + c.stop + R"("/>)",
            false),
        "", &imported);
    ASSERT_EQ(e, "") << c.start << " .. " << c.stop;
    EXPECT_EQ(load(dir.path / "graph.yaml").duration, c.duration) << c.start << " .. " << c.stop;
    const bool moved = std::string(c.start) != "0";
    ASSERT_EQ(imported.warnings.size(), moved ? 1u : 0u) << c.start;
    if (moved) {
      EXPECT_NE(imported.warnings[0].find("DefaultExperiment startTime " + std::string(c.start) + " s ignored"),
                std::string::npos)
          << imported.warnings[0];
    }
  }
  // Only a start: no duration (the graph runs until stopped).
  TempDir dir("start_only");
  ASSERT_EQ(import_into(dir.path, ssd(R"(<ssd:DefaultExperiment startTime="2"/>)", false), ""), "");
  EXPECT_EQ(load(dir.path / "graph.yaml").duration, 0.0);
}

}  // namespace
}  // namespace rtcosim::tools
