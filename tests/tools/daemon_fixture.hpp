#pragma once
// rtcosimd as a child process for tests: a notification socket the test
// listens on, a control socket, the directories a client may name.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "session/control_request.hpp"
#include "tools/rtcosim/ctl_command.hpp"

extern char** environ;

namespace rtcosim::tools {

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

// A file's bytes ("" when it cannot be read).
inline std::string slurp_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// The frame count of a task in a status reply (0 when it is not there).
inline std::uint64_t frames_of(const std::string& status, const std::string& task) {
  const auto at = status.find("\"name\":\"" + task + "\"");
  if (at == std::string::npos) return 0;
  const auto f = status.find("\"frames\":", at);
  return f == std::string::npos ? 0 : std::stoull(status.substr(f + 9));
}

class Daemon : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("rtcosimd_test_" + std::to_string(getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    configs_ = dir_ / "etc";
    recordings_ = dir_ / "recordings";
    fs::create_directories(configs_);
    fs::create_directories(recordings_);
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
    const auto path = configs_ / name;
    std::ofstream(path) << text;
    return path.string();
  }

  void start(const std::string& config, const std::vector<std::string>& extra = {}) {
    const std::string notify = "NOTIFY_SOCKET=" + notify_path_;
    std::vector<std::string> env_strings = {notify};
    for (char** e = environ; *e; ++e) {
      if (std::string(*e).rfind("NOTIFY_SOCKET=", 0) != 0) env_strings.emplace_back(*e);
    }
    std::vector<char*> env;
    for (auto& s : env_strings) env.push_back(s.data());
    env.push_back(nullptr);
    // RTCOSIMD_UNDER_TEST runs another build (e.g. the code before a fix).
    const char* binary = std::getenv("RTCOSIMD_UNDER_TEST") ? std::getenv("RTCOSIMD_UNDER_TEST") : RTCOSIMD_PATH;
    std::vector<std::string> argv_strings = {binary,
                                             "--config",
                                             config,
                                             "--socket",
                                             socket_path_,
                                             "--config-dir",
                                             configs_.string(),
                                             "--recording-dir",
                                             recordings_.string()};
    argv_strings.insert(argv_strings.end(), extra.begin(), extra.end());
    argv_strings.insert(argv_strings.begin(), wrapper_.begin(), wrapper_.end());
    std::vector<char*> argv;
    for (auto& s : argv_strings) argv.push_back(s.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    stderr_path_ = (dir_ / "stderr.txt").string();
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, stderr_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_EQ(posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), env.data()), 0);
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
    const auto reply = session::control_request(socket_path_, line, &error, 5000);
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

  // A connected, blocking client socket (-1 when connect fails).
  int connect_client(bool nonblocking = false) const {
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | (nonblocking ? SOCK_NONBLOCK : 0), 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, socket_path_.c_str(), sizeof addr.sun_path - 1);
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      close(fd);
      return -1;
    }
    return fd;
  }

  // Everything `fd` receives until EOF or `timeout` passes.
  static std::string read_all(int fd, std::chrono::milliseconds timeout) {
    timeval tv{static_cast<time_t>(timeout.count() / 1000), static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    std::string out;
    char buf[4096];
    for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;) out.append(buf, static_cast<std::size_t>(n));
    return out;
  }

  bool alive() {
    if (pid_ <= 0) return false;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return false;
    }
    return true;
  }

  // A field of /proc/PID/status in kB (VmRSS, VmLck, ...).
  long proc_status_kb(const std::string& field) const {
    std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind(field + ":", 0) == 0) return std::stol(line.substr(field.size() + 1));
    }
    return -1;
  }

  // CPU time (user + system, clock ticks) of the daemon's main thread alone:
  // the task threads burn CPU by design.
  long main_thread_ticks() const {
    std::ifstream in("/proc/" + std::to_string(pid_) + "/task/" + std::to_string(pid_) + "/stat");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::istringstream fields(text.substr(text.rfind(')') + 2));
    std::string f;
    long utime = 0, stime = 0;
    for (int i = 3; fields >> f; ++i) {
      if (i == 14) utime = std::stol(f);
      if (i == 15) {
        stime = std::stol(f);
        break;
      }
    }
    return utime + stime;
  }

  // Runs the daemon as an unprivileged user when the test runs as root
  // (setpriv), for behaviour that depends on lacking privileges; the test's
  // directories and notification socket are opened up for it.
  bool run_unprivileged() {
    if (getuid() != 0) return true;
    if (access("/usr/bin/setpriv", X_OK) != 0) return false;
    wrapper_ = {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all"};
    for (const auto& p : {dir_, configs_, recordings_, fs::path(notify_path_)}) {
      fs::permissions(p, fs::perms::all, fs::perm_options::add);
    }
    return true;
  }

  std::vector<std::string> wrapper_;
  fs::path dir_, configs_, recordings_;
  std::string notify_path_, socket_path_, stderr_path_;
  int notify_fd_ = -1;
  pid_t pid_ = -1;
};

}  // namespace rtcosim::tools
