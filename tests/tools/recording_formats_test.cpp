// Recordings in HDF5 and MAT files, read back by independent readers
// (h5py, scipy.io.loadmat: tests/tools/check_recording.py) and compared bit
// for bit with the CSV of the same virtual run; a run killed with SIGKILL
// leaves an HDF5 file that opens; a full disk ends the recording with an
// error naming the file.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/record_formats.hpp"
#include "runtime/column_file.hpp"
#include "runtime/record_target.hpp"
#include "runtime/recorder.hpp"
#include "runtime/virtual_executor.hpp"
#include "tests/support/graphs.hpp"
#include "tests/support/scratch.hpp"
#include "tools/rtcosim/ctl_command.hpp"
#include "tools/rtcosim/run_command.hpp"

namespace rtcosim::tools {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

const std::string kExamples = RTCOSIM_EXAMPLES_DIR;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

fs::path scratch() { return rtcosim::testing::test_scratch_dir("rtcosim_formats"); }

// The checker's exit status (0: every value matches).
int check(const std::string& args) {
  const std::string command = std::string(RTCOSIM_PYTHON) + " " + RTCOSIM_CHECK_RECORDING + " " + args;
  const int rc = std::system(command.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

int run_quietly(const std::vector<std::string>& args, std::string* err = nullptr) {
  std::stringstream out, errors;
  auto* old_out = std::cout.rdbuf(out.rdbuf());
  auto* old_err = std::cerr.rdbuf(errors.rdbuf());
  const int rc = run_run_command(args);
  std::cout.rdbuf(old_out);
  std::cerr.rdbuf(old_err);
  if (err) *err = errors.str();
  return rc;
}

// overrun_virtual.yaml: two tasks at 2.25 and 18 ms, measured steps, the
// airframe's 28 ms cycle making its times irregular (18, 46, 64 ms, ...).
// The same virtual run as CSV and as each format: every value equal, bit
// for bit; times as the CSV prints them; the frames equal to the --frames
// CSV of the same run; the graph's text and SHA-256; the summary's counts.
TEST(RecordingFormats, EveryFormatHoldsTheRunsValuesBitForBit) {
  const auto dir = scratch();
  const std::string graph = kExamples + "/overrun_virtual.yaml";
  const auto csv = dir / "signals.csv";
  ASSERT_EQ(run_quietly({"--virtual", "--duration", "3s", "--record", csv.string(), graph}), 0);
  // The same graph with units; mat5 through the file's `format:` (a .mat
  // file is v7.3 otherwise).
  std::string text = slurp(graph);
  text.replace(text.find("file: overrun_virtual.csv"), 25, "units: {airframe_pitch.y: rad}\n  file: FILE");
  const auto units_graph = (dir / "units.yaml").string(), mat5_graph = (dir / "mat5.yaml").string();
  std::ofstream(units_graph) << text;
  text.replace(text.find("file: FILE"), 10, "file: " + (dir / "v5.mat").string() + "\n  format: mat5");
  std::ofstream(mat5_graph) << text;

  struct Case {
    std::string format, file, graph;
    std::vector<std::string> record;
  };
  const std::vector<Case> cases = {{"hdf5", "run.h5", units_graph, {"--record", (dir / "run.h5").string()}},
                                   {"mat73", "run.mat", units_graph, {"--record", (dir / "run.mat").string()}},
                                   {"mat5", "v5.mat", mat5_graph, {}}};
  for (const auto& c : cases) {
    const auto frames = dir / ("frames_" + c.format + ".csv");
    std::vector<std::string> args = {"--virtual", "--duration", "3s", "--frames", frames.string()};
    args.insert(args.end(), c.record.begin(), c.record.end());
    args.push_back(c.graph);
    std::string err;
    ASSERT_EQ(run_quietly(args, &err), 0) << c.format << ": " << err;
    const std::string common = c.format + " " + (dir / c.file).string() + " ";
    EXPECT_EQ(check(common + csv.string() + " " + frames.string() + " " + c.graph +
                    " --irregular airframe --summary --unit airframe airframe_pitch.y rad"),
              0)
        << c.format;
    // The checker finds a value one unit in the last place off.
    std::string tampered = slurp(csv);
    const auto row = tampered.find(",airframe,airframe_pitch.y,", tampered.size() / 2);
    ASSERT_NE(row, std::string::npos);
    const auto last = tampered.find('\n', row) - 1;
    tampered[last] = tampered[last] == '1' ? '2' : '1';
    const auto bad = dir / "tampered.csv";
    std::ofstream(bad) << tampered;
    EXPECT_EQ(check(common + bad.string() + " " + frames.string() + " " + c.graph + " 2>/dev/null"), 1) << c.format;
  }
  fs::remove_all(dir);
}

TEST(RecordingFormats, AFormatThatContradictsTheFileIsRefusedBeforeTheRun) {
  const auto dir = scratch();
  std::string text = slurp(kExamples + "/two_task_sine.yaml");
  text.replace(text.find("file: two_task_sine.csv"), 23, "file: out.csv\n  format: hdf5");
  std::ofstream(dir / "g.yaml") << text;
  std::string err;
  EXPECT_EQ(run_quietly({"--virtual", "--duration", "0.1s", (dir / "g.yaml").string()}, &err), 2);
  EXPECT_NE(err.find("format 'hdf5' does not fit the file 'out.csv' (.csv is csv)"), std::string::npos) << err;
  // --record names the file and its format; the file's `format:` then no
  // longer applies.
  EXPECT_EQ(
      run_quietly({"--virtual", "--duration", "0.1s", "--record", (dir / "x.mat").string(), (dir / "g.yaml").string()}),
      0);
  EXPECT_EQ(slurp(dir / "x.mat").substr(0, 17), "rtcosim recording");
  text.replace(text.find("format: hdf5"), 12, "format: netcdf");
  std::ofstream(dir / "g.yaml") << text;
  EXPECT_EQ(run_quietly({"--virtual", "--duration", "0.1s", (dir / "g.yaml").string()}, &err), 1);
  EXPECT_NE(err.find("'format' = 'netcdf' is not allowed — expected one of: csv, hdf5, mat73, mat5"), std::string::npos)
      << err;
  fs::remove_all(dir);
}

// Samples dropped into a column file, read back by the independent readers.
// Task a (1 ms) has a ring of 4 samples drained every 6 of its frames:
// frames 5-6, 11-12 and 17-18 find it full (as the CSV test of
// tests/runtime/recorder_test.cpp), so its gap columns hold after
// 0.004, 0.010, 0.016 s, 2 each. Task b (5 ms, 4 samples) never fills it:
// its gap columns are empty and must still be in the file (a MAT v7.3
// column written only at the close).
TEST(RecordingFormats, DroppedSamplesAreReadBackFromEachFormatAndEmptyColumnsStay) {
  const auto dir = scratch();
  const std::string yaml =
      "name: rec\nrealtime: off\ntasks:\n"
      "  - {name: a, period: 1ms, step: fixed, integrator: rk4}\n"
      "  - {name: b, period: 5ms, step: fixed, integrator: rk4}\n"
      "blocks:\n  - {name: wa, type: sine, task: a, params: {frequency: 1}}\n"
      "  - {name: wb, type: sine, task: b, params: {frequency: 1}}\n"
      "wires: []\nrecord: {signals: [wa.y, wb.y], file: unused.h5}\n";
  const std::string text = yaml;
  for (const auto format :
       {runtime::RecordFormat::kHdf5, runtime::RecordFormat::kMat73, runtime::RecordFormat::kMat5}) {
    const std::string name = runtime::to_string(format);
    auto graph = rtcosim::testing::build_graph(rtcosim::testing::checked(config::load_graph_text(yaml, "rec.yaml")));
    runtime::Recorder recorder(*graph, {.samples_per_task = 4});
    const auto path = (dir / ("rec_" + name + (format == runtime::RecordFormat::kHdf5 ? ".h5" : ".mat"))).string();
    std::string why;
    auto file = runtime::ColumnFile::create(format, path, runtime::record_layout(*graph, recorder, text, false), &why);
    ASSERT_TRUE(file) << why;
    runtime::VirtualExecutor executor(*graph);
    std::uint64_t frames_of_a = 0;
    executor.run(0.02, [&](runtime::TaskRuntime& t, const runtime::FrameRecord&) {
      recorder.sample(t);
      if (t.spec().name == "a" && ++frames_of_a % 6 == 0) recorder.drain(*file);
    });
    recorder.finish(*file);
    ASSERT_TRUE(file->commit()) << file->error();
    ASSERT_EQ(frames_of_a, 20u);
    ASSERT_EQ(recorder.counts().at(0).dropped, 6u);
    ASSERT_EQ(recorder.counts().at(1).dropped, 0u);
    const std::string command =
        std::string(RTCOSIM_PYTHON) + " " + RTCOSIM_CHECK_RECORDING + " dropped " + name + " " + path + " a b";
    FILE* pipe = ::popen(command.c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    std::string out;
    char buf[256];
    while (std::fgets(buf, sizeof buf, pipe)) out += buf;
    EXPECT_EQ(::pclose(pipe), 0) << name;
    EXPECT_EQ(out, "a 0.0040000000000000001,0.01,0.016 2,2,2\nb - -\n") << name;
  }
  fs::remove_all(dir);
}

// One task every 100 us with a measured step (10^4 samples/s) recording a
// ramp of slope 1, whose value is its time.
std::string ramp_graph(const fs::path& dir) {
  const auto path = dir / "ramp.yaml";
  std::ofstream(path) << "name: ramp\nrealtime: off\ntasks:\n"
                         "  - {name: fast, period: 100us, step: measured, integrator: euler}\n"
                         "blocks:\n  - {name: clock, type: ramp, task: fast, params: {slope: 1}}\n"
                         "wires: []\nrecord: {signals: [clock.y], file: unused.h5}\n";
  return path.string();
}

pid_t start_run(const std::vector<std::string>& args) {
  const pid_t child = fork();
  if (child == 0) {
    std::cout.setstate(std::ios::badbit);
    std::cerr.setstate(std::ios::badbit);
    _exit(run_run_command(args));
  }
  return child;
}

// SIGKILL in the middle of a real-time HDF5 recording at 10^4 samples/s:
// the temporary file opens (SWMR writes keep it valid on disk) and holds
// every sample up to the last flush (one per second): after 3.5 s at least
// one second's worth, each value equal to its time.
TEST(RecordingFormats, AnHdf5RecordingKilledWithSigkillOpensWithTheSamplesUpToTheLastFlush) {
  const auto dir = scratch();
  const auto target = dir / "out.h5";
  const pid_t child = start_run({"--duration", "100s", "--record", target.string(), ramp_graph(dir)});
  ASSERT_GT(child, 0);
  fs::path part;
  for (int i = 0; i < 500 && part.empty(); ++i) {
    std::this_thread::sleep_for(10ms);
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.path().extension() == ".part") part = e.path();
    }
  }
  ASSERT_FALSE(part.empty());
  std::this_thread::sleep_for(3500ms);
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_FALSE(fs::exists(target));
  EXPECT_EQ(check("killed " + part.string() + " --ramp fast clock.y --at-least 10000"), 0);
  fs::remove_all(dir);
}

// SIGTERM (and SIGINT, the same handler): the tasks stop at a frame, the
// file is completed under its name with the summary, every sample in it.
TEST(RecordingFormats, SigtermCompletesTheHdf5File) {
  const auto dir = scratch();
  const auto target = dir / "out.h5", json = dir / "s.json";
  const pid_t child =
      start_run({"--duration", "100s", "--record", target.string(), "--json", json.string(), ramp_graph(dir)});
  ASSERT_GT(child, 0);
  std::this_thread::sleep_for(1500ms);
  kill(child, SIGTERM);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  const std::string summary = slurp(json);
  const auto at = summary.find("\"samples_written\":");
  ASSERT_NE(at, std::string::npos) << summary;
  const long written = std::stol(summary.substr(at + 18));
  EXPECT_GT(written, 1000);
  EXPECT_EQ(check("killed " + target.string() + " --ramp fast clock.y --at-least " + std::to_string(written)), 0);
  const std::string script = std::string(RTCOSIM_PYTHON) + " -c \"import h5py,json,sys; f=h5py.File('" +
                             target.string() + "','r'); n=len(f['signals/fast/time']); s=json.loads(f['summary']." +
                             "asstr()[()]); sys.exit(0 if n == " + std::to_string(written) +
                             " and s['recording']['samples_written'] == n else 1)\"";
  EXPECT_EQ(std::system(script.c_str()), 0);
  fs::remove_all(dir);
}

// A disk that fills (a 64 kB tmpfs): the run exits 1 naming the file, the
// time reached and what was lost; written + lost is every sample; the old
// file is as it was.
TEST(RecordingFormats, ADiskThatFillsEndsEachFormatWithAnErrorNamingTheFile) {
  const auto dir = scratch();
  const auto small = dir / "small";
  fs::create_directories(small);
  if (std::system(("mount -t tmpfs -o size=64k tmpfs " + small.string() + " 2>/dev/null").c_str()) != 0) {
    fs::remove_all(dir);
    GTEST_SKIP() << "cannot mount a small tmpfs here (needs root and CAP_SYS_ADMIN)";
  }
  for (const std::string name : {"out.h5", "out.mat", "v5.mat"}) {
    const auto target = small / name;
    std::ofstream(target) << "old\n";
    std::string text = slurp(kExamples + "/two_task_sine.yaml");
    text.replace(text.find("file: two_task_sine.csv"), 23,
                 "file: " + target.string() + (name == "v5.mat" ? "\n  format: mat5" : ""));
    std::ofstream(dir / "g.yaml") << text;
    const auto json = dir / "s.json";
    std::string err;
    const int rc =
        run_quietly({"--virtual", "--duration", "20s", "--json", json.string(), (dir / "g.yaml").string()}, &err);
    const std::string summary = slurp(json);
    EXPECT_EQ(rc, 1) << name << ": " << err;
    EXPECT_NE(err.find("rtcosim run: recording to '" + target.string() + "' failed at t = "), std::string::npos) << err;
    EXPECT_NE(err.find("No space left on device"), std::string::npos) << err;
    EXPECT_EQ(slurp(target), "old\n");
    const auto number_after = [&](const std::string& key) {
      const auto at = summary.find("\"" + key + "\":");
      return at == std::string::npos ? -1.0 : std::stod(summary.substr(at + key.size() + 3));
    };
    EXPECT_EQ(number_after("samples_written") + number_after("samples_lost"), 20001.0) << name << summary;
    // The fast task ran every frame regardless (virtual time: 20000 of 1 ms,
    // and the sample at t = 0).
    EXPECT_NE(summary.find("\"name\":\"fast\",\"samples\":20001,\"dropped\":0"), std::string::npos) << summary;
    for (const auto& e : fs::directory_iterator(small)) {
      if (e.path().extension() == ".part") fs::remove(e.path());
    }
  }
  (void)std::system(("umount " + small.string()).c_str());
  fs::remove_all(dir);
}

std::string help_of(int (*command)(const std::vector<std::string>&), const std::string& verb) {
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(command({"--help"}), 0) << verb;
  return ::testing::internal::GetCapturedStdout();
}

// The lists of formats written by hand (the JSON schema, the help texts)
// name exactly the formats of base/record_formats.hpp: a format added to
// the table and forgotten there fails here.
TEST(RecordingFormats, EveryListOfFormatsNamesTheTable) {
  std::vector<std::string> names;
  for (const auto& row : base::kRecordFormats) names.emplace_back(row.name);
  EXPECT_EQ(runtime::record_format_list(), names);

  std::ifstream in(std::string(RTCOSIM_EXAMPLES_DIR) + "/../docs/task-graph.schema.json");
  std::stringstream schema;
  schema << in.rdbuf();
  const std::string text = schema.str();
  const auto at = text.find("\"format\": {\"enum\": [");
  ASSERT_NE(at, std::string::npos) << "record.format's enum in docs/task-graph.schema.json";
  const auto begin = text.find('[', at) + 1;
  std::vector<std::string> in_schema;
  for (std::size_t q = text.find('"', begin); q < text.find(']', begin); q = text.find('"', q + 1)) {
    const auto end = text.find('"', q + 1);
    in_schema.push_back(text.substr(q + 1, end - q - 1));
    q = end;
  }
  EXPECT_EQ(in_schema, names);

  const std::string run = help_of(run_run_command, "run"), replay = help_of(run_replay_command, "replay");
  const std::string ctl = help_of(run_ctl_command, "ctl");
  for (const auto& row : base::kRecordFormats) {
    EXPECT_NE(ctl.find(std::string(row.name)), std::string::npos) << "rtcosim ctl --help: " << row.name;
    for (const auto ext : row.extensions) {
      if (ext.empty()) continue;
      // .hdf5 is the long spelling of .h5: the help shows the short one.
      if (ext == ".hdf5") continue;
      EXPECT_NE(run.find(std::string(ext)), std::string::npos) << "rtcosim run --help: " << ext;
      EXPECT_NE(replay.find(std::string(ext)), std::string::npos) << "rtcosim replay --help: " << ext;
    }
  }
}

}  // namespace
}  // namespace rtcosim::tools
