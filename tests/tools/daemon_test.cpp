// rtcosimd as a process: systemd's notification protocol on a socket the
// test listens on, the control socket, SIGTERM while recording. Timing is
// never asserted beyond "within a few seconds".
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "tools/rtcosim/ctl_command.hpp"

extern char** environ;

namespace rtcosim::tools {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr const char* kGraph = R"(
realtime: off
tasks:
  - {name: slow, period: 20ms, integrator: rk4}
  - {name: fast, period: 2ms, integrator: rk4}
blocks:
  - {name: wave, type: sine, task: slow, params: {frequency: 1}}
  - {name: follow, type: first_order_lag, task: fast, params: {time_constant: 0.05}}
  - {name: load, type: cpu_load, task: fast, params: {time: 1000, start: HANG}}
wires:
  - {from: wave.y, to: follow.u, coupling: {method: predictor}}
record: {signals: [follow.y, wave.y], file: unused.csv}
)";

class Daemon : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("rtcosimd_test_" + std::to_string(getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    notify_path_ = (dir_ / "notify").string();
    socket_path_ = (dir_ / "control.sock").string();
    notify_fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, notify_path_.c_str(), sizeof addr.sun_path - 1);
    ASSERT_EQ(bind(notify_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    timeval tv{0, 100000};
    setsockopt(notify_fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  void TearDown() override {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    close(notify_fd_);
    fs::remove_all(dir_);
  }

  std::string write_graph(const std::string& name, const std::string& hang_at) {
    std::string text = kGraph;
    text.replace(text.find("HANG"), 4, hang_at);
    const auto path = dir_ / name;
    std::ofstream(path) << text;
    return path.string();
  }

  void start(const std::string& config) {
    const std::string notify = "NOTIFY_SOCKET=" + notify_path_;
    std::vector<std::string> env_strings = {notify};
    for (char** e = environ; *e; ++e) {
      if (std::string(*e).rfind("NOTIFY_SOCKET=", 0) != 0) env_strings.emplace_back(*e);
    }
    std::vector<char*> env;
    for (auto& s : env_strings) env.push_back(s.data());
    env.push_back(nullptr);
    std::vector<std::string> argv_strings = {RTCOSIMD_PATH, "--config", config, "--socket", socket_path_};
    std::vector<char*> argv;
    for (auto& s : argv_strings) argv.push_back(s.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    stderr_path_ = (dir_ / "stderr.txt").string();
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, stderr_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_EQ(posix_spawn(&pid_, RTCOSIMD_PATH, &actions, nullptr, argv.data(), env.data()), 0);
    posix_spawn_file_actions_destroy(&actions);
  }

  // Notification messages received within `window`.
  std::vector<std::string> notifications(std::chrono::milliseconds window) {
    std::vector<std::string> out;
    const auto until = std::chrono::steady_clock::now() + window;
    char buf[4096];
    while (std::chrono::steady_clock::now() < until) {
      const ssize_t n = recv(notify_fd_, buf, sizeof buf, 0);
      if (n > 0) out.emplace_back(buf, static_cast<std::size_t>(n));
    }
    return out;
  }

  static bool any(const std::vector<std::string>& messages, const std::string& prefix) {
    for (const auto& m : messages) {
      if (m.find(prefix) != std::string::npos) return true;
    }
    return false;
  }

  std::string request(const std::string& line) {
    std::string error;
    const auto reply = control_request(socket_path_, line, &error, 5000);
    EXPECT_FALSE(reply.empty()) << error;
    return reply;
  }

  int wait_exit() {
    int status = 0;
    for (int i = 0; i < 100; ++i) {
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      std::this_thread::sleep_for(100ms);
    }
    return -2;
  }

  fs::path dir_;
  std::string notify_path_, socket_path_, stderr_path_;
  int notify_fd_ = -1;
  pid_t pid_ = -1;
};

TEST_F(Daemon, NotifiesReadyStatusAndWatchdogAndStopsOnSigterm) {
  start(write_graph("graph.yaml", "1e9"));
  const auto messages = notifications(2500ms);
  EXPECT_TRUE(any(messages, "READY=1"));
  EXPECT_TRUE(any(messages, "STATUS=running:"));
  EXPECT_TRUE(any(messages, "WATCHDOG=1"));
  kill(pid_, SIGTERM);
  EXPECT_EQ(wait_exit(), 0);
  EXPECT_TRUE(any(notifications(200ms), "STOPPING=1"));
}

TEST_F(Daemon, WatchdogPingsStopWhenATaskHangs) {
  start(write_graph("graph.yaml", "0.5"));  // the fast task burns 1000 s from t = 0.5 s
  auto early = notifications(2000ms);
  EXPECT_TRUE(any(early, "READY=1"));
  // Give the hang time to happen, then listen: STATUS goes on, WATCHDOG not.
  const auto late = notifications(2500ms);
  EXPECT_TRUE(any(late, "STATUS="));
  EXPECT_FALSE(any(late, "WATCHDOG=1"));
}

TEST_F(Daemon, ControlSocketRejectsBadRequestsAndServesOthers) {
  start(write_graph("graph.yaml", "1e9"));
  ASSERT_TRUE(any(notifications(2000ms), "READY=1"));

  EXPECT_EQ(request("{\"cmd\":\"status\"").rfind("{\"ok\":false,\"error\":\"malformed request", 0), 0u);
  EXPECT_EQ(request("not json at all").rfind("{\"ok\":false", 0), 0u);
  EXPECT_NE(request("{\"cmd\":\"launch\"}").find("unknown command 'launch'"), std::string::npos);
  EXPECT_NE(request("{\"action\":\"start\"}").find("has no \\\"cmd\\\""), std::string::npos);

  // A silent client does not block another one.
  const int silent = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket_path_.c_str(), sizeof addr.sun_path - 1);
  ASSERT_EQ(connect(silent, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  EXPECT_EQ(request("{\"cmd\":\"status\"}").rfind("{\"ok\":true,\"running\":true", 0), 0u);

  // 1 MiB without a newline: an error reply, the connection closed, the daemon fine.
  const int big = socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_EQ(connect(big, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  const std::string junk((1u << 20) + 4096, 'x');
  std::size_t sent = 0;
  while (sent < junk.size()) {
    const ssize_t n = send(big, junk.data() + sent, junk.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<std::size_t>(n);
  }
  std::string reply;
  char buf[4096];
  for (ssize_t n; (n = recv(big, buf, sizeof buf, 0)) > 0;) reply.append(buf, static_cast<std::size_t>(n));
  EXPECT_NE(reply.find("request longer than"), std::string::npos) << reply.substr(0, 200);
  close(big);
  close(silent);

  // A reload with a broken file is refused; the graph keeps running.
  const auto broken = dir_ / "broken.yaml";
  std::ofstream(broken) << "tasks: [{name: x, period: 5}]\nblocks: []\nwires: []\n";
  const auto refused = request("{\"cmd\":\"reload\",\"file\":\"" + broken.string() + "\"}");
  EXPECT_NE(refused.find("the running graph keeps running"), std::string::npos) << refused;
  EXPECT_NE(refused.find("has no unit"), std::string::npos) << refused;
  const auto status = request("{\"cmd\":\"status\"}");
  EXPECT_EQ(status.rfind("{\"ok\":true,\"running\":true", 0), 0u) << status;

  // A good reload switches, stop and start work.
  EXPECT_EQ(request("{\"cmd\":\"reload\"}").rfind("{\"ok\":true", 0), 0u);
  EXPECT_EQ(request("{\"cmd\":\"stop\"}"), "{\"ok\":true}");
  EXPECT_NE(request("{\"cmd\":\"status\"}").find("\"running\":false"), std::string::npos);
  EXPECT_EQ(request("{\"cmd\":\"start\"}"), "{\"ok\":true}");
  kill(pid_, SIGTERM);
  EXPECT_EQ(wait_exit(), 0);
}

TEST_F(Daemon, SigtermWhileRecordingKeepsEverySampleProduced) {
  start(write_graph("graph.yaml", "1e9"));
  ASSERT_TRUE(any(notifications(1500ms), "READY=1"));
  const auto csv = dir_ / "record.csv";
  EXPECT_EQ(request("{\"cmd\":\"record\",\"action\":\"start\",\"file\":\"" + csv.string() + "\"}"), "{\"ok\":true}");
  std::this_thread::sleep_for(700ms);
  kill(pid_, SIGTERM);
  ASSERT_EQ(wait_exit(), 0);

  // The final summary (stderr) has each task's frame count in the first
  // table, the one that follows "tasks:".
  std::ifstream err(stderr_path_);
  std::string line;
  std::uint64_t fast_frames = 0;
  bool in_tasks = false;
  while (std::getline(err, line)) {
    if (line == "tasks:") in_tasks = true;
    if (!line.empty() && line[0] != ' ' && line != "tasks:") in_tasks = false;
    std::istringstream in(line);
    std::string name;
    std::uint64_t frames = 0;
    if (in_tasks && in >> name >> frames && name == "fast") fast_frames = frames;
  }
  ASSERT_GT(fast_frames, 0u);
  // Recording started after some frames: the file holds a contiguous run of
  // fast-task samples ending with the last frame, with no gap.
  std::ifstream in(csv);
  std::getline(in, line);
  EXPECT_EQ(line, "time_s,task,signal,value");
  std::vector<double> times;
  while (std::getline(in, line)) {
    if (line.find(",fast,follow.y,") == std::string::npos) continue;
    times.push_back(std::stod(line.substr(0, line.find(','))));
  }
  ASSERT_GT(times.size(), 10u);
  for (std::size_t k = 1; k < times.size(); ++k) EXPECT_NEAR(times[k] - times[k - 1], 0.002, 1e-9) << k;
  EXPECT_NEAR(times.back(), 0.002 * static_cast<double>(fast_frames), 1e-9);
}

// /dev/full fails every write with ENOSPC: the recording ends, the status
// says why (file, time reached, samples lost), and `record stop` is an error
// instead of "ok"; the tasks go on.
TEST_F(Daemon, AWriteErrorEndsTheRecordingAndStatusAndStopReportIt) {
  start(write_graph("graph.yaml", "1e9"));
  ASSERT_TRUE(any(notifications(1500ms), "READY=1"));
  EXPECT_EQ(request("{\"cmd\":\"record\",\"action\":\"start\",\"file\":\"/dev/full\"}"), "{\"ok\":true}");
  std::this_thread::sleep_for(500ms);
  const auto status = request("{\"cmd\":\"status\"}");
  EXPECT_NE(status.find("\"running\":true"), std::string::npos) << status;
  EXPECT_NE(status.find("\"recording\":null,\"recording_error\":\"recording to '/dev/full' failed at t = 0 s: write "
                        "failed: No space left on device; "),
            std::string::npos)
      << status;
  const auto stop = request("{\"cmd\":\"record\",\"action\":\"stop\"}");
  EXPECT_EQ(stop.rfind("{\"ok\":false,\"error\":\"recording to '/dev/full' failed", 0), 0u) << stop;
  EXPECT_NE(request("{\"cmd\":\"status\"}").find("\"recording_error\":null"), std::string::npos);
}

// A reload while recording goes on in the same file after a "#reload" marker
// row (time_s starts again at 0); the status counts samples and drops per
// task and previews each signal's latest sample; a SIGKILL leaves whole rows.
TEST_F(Daemon, AReloadWhileRecordingWritesAMarkerAndStatusCountsPerTask) {
  const auto config = write_graph("graph.yaml", "1e9");
  start(config);
  ASSERT_TRUE(any(notifications(1500ms), "READY=1"));
  const auto csv = dir_ / "record.csv";
  EXPECT_EQ(request("{\"cmd\":\"record\",\"action\":\"start\",\"file\":\"" + csv.string() + "\"}"),
            "{\"ok\":true}");
  std::this_thread::sleep_for(400ms);
  EXPECT_EQ(request("{\"cmd\":\"reload\"}").rfind("{\"ok\":true", 0), 0u);
  std::this_thread::sleep_for(400ms);
  const auto status = request("{\"cmd\":\"status\"}");
  EXPECT_NE(status.find(",\"recording\":{\"file\":\"" + csv.string() + "\",\"error\":null,"), std::string::npos)
      << status;
  EXPECT_NE(status.find("\"tasks\":[{\"name\":\"slow\",\"samples\":"), std::string::npos) << status;
  EXPECT_NE(status.find("\"dropped\":0,\"frame_log_dropped\":null}"), std::string::npos) << status;
  EXPECT_NE(status.find("\"latest\":[{\"signal\":\"follow.y\",\"task\":\"fast\",\"time_s\":"), std::string::npos)
      << status;
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;

  const std::string text = [&] {
    std::ifstream in(csv);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }();
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "time_s,task,signal,value");
  std::vector<double> before, after;
  bool reloaded = false;
  while (std::getline(in, line)) {
    EXPECT_EQ(std::count(line.begin(), line.end(), ','), 3) << line;
    if (line == "0,,#reload,1") {
      EXPECT_FALSE(reloaded);
      reloaded = true;
      continue;
    }
    if (line.find(",fast,follow.y,") == std::string::npos) continue;
    (reloaded ? after : before).push_back(std::stod(line.substr(0, line.find(','))));
  }
  EXPECT_TRUE(reloaded);
  ASSERT_GT(before.size(), 10u);
  ASSERT_GT(after.size(), 10u);
  EXPECT_NEAR(after.front(), 0.002, 1e-9);  // the new graph's first fast frame
  for (std::size_t k = 1; k < after.size(); ++k) EXPECT_NEAR(after[k] - after[k - 1], 0.002, 1e-9) << k;
}

}  // namespace
}  // namespace rtcosim::tools
