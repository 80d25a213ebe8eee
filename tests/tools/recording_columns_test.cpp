// Columnar recordings (HDF5, MAT v7.3, MAT v5) of tasks that record several
// signals each, a vector among them (issue 45: the format tests record one
// signal per task, so a file that wrote one task's first signal into every
// column of the task passed them): every column read back by the
// independent readers (tests/tools/check_recording.py: h5py,
// scipy.io.loadmat) equal to the CSV of the same virtual run, bit for bit;
// and the frame table's sim_s and step_s columns equal to the --frames CSV
// (tests/tools/check_frame_columns.py), which check_recording.py does not
// look at.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <sys/wait.h>

#include "tests/support/scratch.hpp"
#include "tools/rtcosim/run_command.hpp"

namespace rtcosim::tools {
namespace {

namespace fs = std::filesystem;

// The checkers beside this file.
const fs::path kHere = fs::path(__FILE__).parent_path();

// The system's Python, where h5py, scipy and numpy are installed (as
// tests/CMakeLists.txt finds it for the format tests); a python3 earlier
// in PATH may lack them.
int python(const std::string& script, const std::string& args) {
  const std::string interpreter = fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  const std::string command = interpreter + " " + (kHere / script).string() + " " + args;
  const int rc = std::system(command.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

int run_quietly(const std::vector<std::string>& args, std::string* err) {
  std::stringstream out, errors;
  auto* old_out = std::cout.rdbuf(out.rdbuf());
  auto* old_err = std::cerr.rdbuf(errors.rdbuf());
  const int rc = run_run_command(args);
  std::cout.rdbuf(old_out);
  std::cerr.rdbuf(old_err);
  *err = errors.str();
  return rc;
}

// Two tasks: `slow` (4 ms, rk4) records three sines and a two-element
// constant; `fast` (1 ms, ab2, measured steps) records two lags and an
// integrator of them. Every column of a task holds other values.
constexpr const char* kGraph = R"(name: columns
realtime: off
tasks:
  - {name: slow, period: 4ms, integrator: rk4, step: fixed}
  - {name: fast, period: 1ms, integrator: ab2}
blocks:
  - {name: a, type: sine, task: slow, params: {frequency: 1}}
  - {name: b, type: sine, task: slow, params: {frequency: 3, phase: 1, amplitude: 2}}
  - {name: c, type: sine, task: slow, params: {frequency: 7, bias: 0.5}}
  - {name: v, type: constant, task: slow, params: {value: [1.5, -2.5]}}
  - {name: la, type: first_order_lag, task: fast, params: {time_constant: 0.01}}
  - {name: lb, type: first_order_lag, task: fast, params: {time_constant: 0.02, gain: 2}}
  - {name: i, type: integrator, task: fast}
wires:
  - {from: a.y, to: la.u}
  - {from: b.y, to: lb.u}
  - {from: c.y, to: i.u}
record: {signals: [a.y, b.y, c.y, v.y, la.y, lb.y, i.y], file: columns.csv}
)";

TEST(RecordingColumns, EveryColumnOfATaskWithSeveralSignalsHoldsItsOwnValues) {
  ASSERT_TRUE(fs::exists(kHere / "check_recording.py")) << kHere;
  const auto dir = rtcosim::testing::test_scratch_dir("rtcosim_columns");
  const auto graph = dir / "columns.yaml";
  std::ofstream(graph) << kGraph;
  const auto csv = dir / "signals.csv";
  std::string err;
  ASSERT_EQ(run_quietly({"--virtual", "--duration", "0.5s", "--record", csv.string(), graph.string()}, &err), 0) << err;
  for (const char* format : {"hdf5", "mat73", "mat5"}) {
    const std::string name = std::string(format) + (std::string(format) == "hdf5" ? ".h5" : ".mat");
    const auto file = dir / name, frames = dir / (std::string(format) + "_frames.csv");
    // mat5 through the file name: a .mat file is v7.3 unless the graph says mat5.
    std::string g = kGraph;
    const auto graph_of_format = dir / (std::string(format) + ".yaml");
    if (std::string(format) == "mat5") {
      g.replace(g.find("file: columns.csv"), 17, "file: " + file.string() + ", format: mat5");
    }
    std::ofstream(graph_of_format) << g;
    std::vector<std::string> args = {"--virtual", "--duration", "0.5s", "--frames", frames.string()};
    if (std::string(format) != "mat5") {
      args.push_back("--record");
      args.push_back(file.string());
    }
    args.push_back(graph_of_format.string());
    ASSERT_EQ(run_quietly(args, &err), 0) << format << ": " << err;
    EXPECT_EQ(python("check_recording.py", std::string(format) + " " + file.string() + " " + csv.string() + " " +
                                               frames.string() + " " + graph_of_format.string() + " --summary"),
              0)
        << format;
    EXPECT_EQ(python("check_frame_columns.py", std::string(format) + " " + file.string() + " " + frames.string()), 0)
        << format;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace rtcosim::tools
