// `rtcosim replay` through the binary, on the work a log may cost
// (docs/replay.md, "What a log may claim"): a small log that claims days is
// refused before the replay, naming the file, the claim, the frames and the
// bound; the reference integration `--plot` asks for stops on SIGINT with
// what it integrated drawn, a message and exit code 130.
#include <chrono>
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/sha256.hpp"
#include "runtime/replay_log.hpp"
#include "tests/support/graphs.hpp"
#include "tests/support/scratch.hpp"

namespace rtcosim::tools {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSolo = R"(
name: solo
tasks:
  - {name: solo, period: 10ms, integrator: rk4}
blocks:
  - {name: wave, type: sine, task: solo, params: {frequency: 1}}
record: {signals: [wave.y], file: solo.csv}
)";

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

fs::path rtcosim_binary() { return fs::read_symlink("/proc/self/exe").parent_path() / "rtcosim"; }

struct Result {
  int code = -1;
  bool signalled = false;  // when asked: the signal was sent
  std::string out, err;
};

// Runs `rtcosim ARGS` in `dir`; sends `signal` once its stdout holds
// `when` (if given); kills it (and fails) after `limit`.
Result rtcosim(const std::vector<std::string>& args, const fs::path& dir, std::chrono::seconds limit,
               const std::string& when = "", int signal = 0) {
  const fs::path binary = rtcosim_binary();
  EXPECT_TRUE(fs::exists(binary)) << binary << " is not built (ninja rtcosim)";
  const fs::path out = dir / "stdout.txt", err = dir / "stderr.txt";
  std::vector<std::string> argv_text{binary.string()};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    if (chdir(dir.c_str()) != 0) _exit(126);
    if (!freopen(out.c_str(), "w", stdout) || !freopen(err.c_str(), "w", stderr)) _exit(126);
    execv(argv[0], argv.data());
    _exit(127);
  }
  Result r;
  EXPECT_GT(pid, 0);
  if (pid <= 0) return r;
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (!when.empty() && !r.signalled && slurp(out).find(when) != std::string::npos) {
      kill(pid, signal);
      r.signalled = true;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      ADD_FAILURE() << "rtcosim " << args.front() << " did not end within " << limit.count() << " s";
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? -WTERMSIG(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

std::string said(const Result& r) {
  return "exit " + std::to_string(r.code) + "\nstdout:\n" + r.out + "stderr:\n" + r.err;
}

// 80 kB of log of the solo graph: 2 500 frames whose cycles lie 40 s apart
// (10 s per reading, which the reading check lets through), 27 hours
// claimed. Before the bound, `--plot` integrated the reference over those
// 27 hours (2·10^8 RK4 steps, gigabytes).
TEST(ReplayInterrupt, ASmallLogClaimingDaysIsRefusedBeforeTheReplay) {
  const auto dir = rtcosim::testing::test_scratch_dir("rtcosim_replay_interrupt");
  const fs::path graph_path = dir / "solo.yaml";
  std::ofstream(graph_path) << kSolo;
  auto graph =
      rtcosim::testing::build_graph(rtcosim::testing::checked(config::load_graph_text(kSolo, graph_path.string())));
  const fs::path log_path = dir / "days.rpl";
  {
    runtime::ReplayLog log(
        *graph, log_path.string(),
        runtime::ReplayLog::Header{graph_path.string(), base::sha256_hex(slurp(graph_path)), 0, "real time", "", {}});
    std::string why;
    ASSERT_TRUE(log.open(&why)) << why;
    log.put(0, runtime::replay_word::time(0));
    for (std::int64_t k = 1; k <= 2500; ++k) {
      for (std::int64_t i = 0; i < 4; ++i) log.put(0, runtime::replay_word::time(k * 40'000'000'000 + i * 1000));
    }
    ASSERT_TRUE(log.finish(&why)) << why;
  }
  EXPECT_LT(fs::file_size(log_path), 90'000u);
  const Result r =
      rtcosim({"replay", log_path.string(), graph_path.string(), "--plot", "days.svg"}, dir, std::chrono::seconds(20));
  EXPECT_EQ(r.code, 1) << said(r);
  EXPECT_NE(r.err.find(log_path.string()), std::string::npos) << said(r);
  EXPECT_NE(r.err.find("claim a run of 100000.0 s"), std::string::npos) << said(r);
  EXPECT_NE(r.err.find("2500 frames"), std::string::npos) << said(r);
  EXPECT_NE(r.err.find("at most 250.0 s"), std::string::npos) << said(r);
  EXPECT_FALSE(fs::exists(dir / "days.svg"));
  fs::remove_all(dir);
}

// A real-time run of 0.3 s, logged, replayed with --plot and a reference
// step of 10 ns (3·10^7 steps: long enough to be interrupted). SIGINT once
// the integration has begun stops it: the plot is written with the
// reference as far as it got, the message says where it stopped, and the
// exit code is 128 + SIGINT.
TEST(ReplayInterrupt, SigintStopsTheReferenceAndKeepsThePlot) {
  const auto dir = rtcosim::testing::test_scratch_dir("rtcosim_replay_interrupt");
  std::ofstream(dir / "solo.yaml") << kSolo;
  const Result run =
      rtcosim({"run", "--duration", "0.3s", "--replay-log", "solo.rpl", "solo.yaml"}, dir, std::chrono::seconds(30));
  ASSERT_EQ(run.code, 0) << said(run);
  const Result r = rtcosim({"replay", "solo.rpl", "solo.yaml", "--plot", "solo.svg", "--reference-step", "10ns"}, dir,
                           std::chrono::seconds(20), "integrating the reference", SIGINT);
  EXPECT_TRUE(r.signalled) << said(r);
  EXPECT_EQ(r.code, 128 + SIGINT) << said(r);
  EXPECT_NE(r.err.find("the reference integration stopped (SIGINT) at t = "), std::string::npos) << said(r);
  EXPECT_NE(r.out.find("plot written to solo.svg"), std::string::npos) << said(r);
  const std::string svg = slurp(dir / "solo.svg");
  EXPECT_NE(svg.find("reference (RK4)"), std::string::npos);
  EXPECT_NE(svg.find("wave.y"), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace rtcosim::tools
