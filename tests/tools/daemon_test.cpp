// rtcosimd as a process: systemd's notification protocol on a socket the
// test listens on, the control socket, SIGTERM while recording. Timing is
// never asserted beyond "within a few seconds".
#include "tests/tools/daemon_fixture.hpp"

namespace rtcosim::tools {
namespace {

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
  const auto broken = configs_ / "broken.yaml";
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

// The frame count of a task in a status reply.
std::uint64_t frames_of(const std::string& status, const std::string& task) {
  const auto at = status.find("\"name\":\"" + task + "\"");
  if (at == std::string::npos) return 0;
  const auto f = status.find("\"frames\":", at);
  return f == std::string::npos ? 0 : std::stoull(status.substr(f + 9));
}

// stop then start is a fresh run: counters begin again at 0 (they carried
// on before, with lost time and a frozen simulation).
TEST_F(Daemon, StartAfterStopIsAFreshRun) {
  start(write_graph("graph.yaml", "1e9"));
  ASSERT_TRUE(any(notifications(2000ms), "READY=1"));
  std::this_thread::sleep_for(1500ms);
  EXPECT_EQ(request("{\"cmd\":\"stop\"}"), "{\"ok\":true}");
  const std::uint64_t first = frames_of(request("{\"cmd\":\"status\"}"), "fast");
  EXPECT_GT(first, 100u);  // 2 ms frames for about 3 s
  EXPECT_EQ(request("{\"cmd\":\"start\"}"), "{\"ok\":true}");
  const std::uint64_t again = frames_of(request("{\"cmd\":\"status\"}"), "fast");
  EXPECT_LT(again, first) << "the new run counts on from the old one";
  kill(pid_, SIGTERM);
  EXPECT_EQ(wait_exit(), 0);
}

TEST_F(Daemon, SigtermWhileRecordingKeepsEverySampleProduced) {
  start(write_graph("graph.yaml", "1e9"));
  ASSERT_TRUE(any(notifications(1500ms), "READY=1"));
  const auto csv = recordings_ / "record.csv";
  EXPECT_EQ(request("{\"cmd\":\"record\",\"action\":\"start\",\"file\":\"" + csv.string() + "\"}"),
            "{\"ok\":true,\"file\":\"" + csv.string() + "\"}");
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

}  // namespace
}  // namespace rtcosim::tools
