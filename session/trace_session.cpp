#include "session/trace_session.hpp"

#include <cctype>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/graph.hpp"
#include "runtime/trace.hpp"

extern char** environ;

namespace rtcosim::session {

bool tracing_built() noexcept { return runtime::trace::available(); }

double trace_event_rate(runtime::Graph& graph) {
  double rate = 0.0;
  for (const auto& t : graph.tasks()) {
    std::size_t wires = 0;
    for (const auto& o : t->outputs()) wires += o.refs.size();
    rate += (2.0 + 2.0 * static_cast<double>(wires)) / t->spec().period;
  }
  return rate;
}

int run_command(const std::vector<std::string>& argv, std::string* output) {
  if (output) output->clear();
  // Close-on-exec: rtcosimd runs this on a worker while its loop may spawn
  // dot; a write end inherited by that child would hold this read open until
  // it exits (or forever, for a daemon it starts). dup2 in the child clears
  // the flag on stdout and stderr.
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    if (output) *output = "cannot run '" + argv.at(0) + "': pipe: " + std::strerror(errno);
    return -1;
  }
  // A file action that could not be recorded (ENOMEM) would leave the
  // child's output on ours, and this read without an end.
  posix_spawn_file_actions_t actions;
  int setup = posix_spawn_file_actions_init(&actions);
  if (setup != 0) {
    if (output) *output = "cannot run '" + argv.at(0) + "': " + std::strerror(setup);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    return -1;
  }
  setup = posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  if (setup == 0) setup = posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDERR_FILENO);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // The child starts with no signal blocked and SIGPIPE at its default:
  // rtcosimd blocks SIGTERM (it reads it from a signalfd) and ignores
  // SIGPIPE, and both would otherwise pass through exec to lttng-sessiond,
  // which then could not be stopped with SIGTERM.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int sig : {SIGPIPE, SIGTERM, SIGINT, SIGHUP}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = 0;
  const int rc = setup != 0 ? setup : posix_spawnp(&pid, args[0], &actions, &attr, args.data(), environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_fds[1]);
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = read(pipe_fds[0], buf, sizeof buf);
    if (n > 0) {
      out.append(buf, static_cast<std::size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  close(pipe_fds[0]);
  if (output) *output = out;
  if (rc != 0) {
    // The callers pass the output on: it says why nothing ran.
    if (output) *output = "cannot run '" + argv[0] + "': " + std::strerror(rc);
    return -1;
  }
  // A status never read is not a success: -1 unless the child's exit is known.
  int status = 0;
  pid_t waited = 0;
  while ((waited = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  if (waited != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

namespace {

// The session daemon this process started, when it started one as a
// non-root user (its PID, from the daemon's own PID file).
pid_t g_started_sessiond = -1;

std::string sessiond_pid_file() {
  const char* home = std::getenv("LTTNG_HOME");
  if (home == nullptr || *home == '\0') home = std::getenv("HOME");
  return home ? std::string(home) + "/.lttng/lttng-sessiond.pid" : std::string();
}

// A live lttng-sessiond (not a zombie nobody reaped yet).
bool is_sessiond(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  std::getline(stat, text);
  const auto close = text.rfind(')');
  return close != std::string::npos && text.find("(lttng-sessiond)") != std::string::npos && close + 2 < text.size() &&
         text[close + 2] != 'Z';
}

bool sessiond_running() {
  std::string out;
  return run_command({"lttng", "list"}, &out) == 0;
}

// Sums the N of every "N event(s) were/was discarded" lttng printed.
std::uint64_t discarded_in(const std::string& text) {
  std::uint64_t total = 0;
  for (std::size_t at = text.find(" discarded"); at != std::string::npos; at = text.find(" discarded", at + 1)) {
    std::size_t p = text.rfind(" event", at);
    if (p == std::string::npos || at - p > 16) continue;
    std::size_t end = p;
    while (p > 0 && std::isdigit(static_cast<unsigned char>(text[p - 1]))) --p;
    if (p < end) total += std::stoull(text.substr(p, end - p));
  }
  return total;
}

// Starts a session daemon when none answers; false with *error when none
// answers after that either. `out` is the caller's scratch for the commands' output.
bool ensure_sessiond(std::string& out, std::string* error) {
  if (!sessiond_running()) {
    // Two runs started together both find no daemon and both start one; the
    // second daemon then fails on the first one's lock file. That is not a
    // failure as long as some daemon answers within the wait below.
    const bool started = run_command({"lttng-sessiond", "--daemonize"}, &out) == 0;
    for (int i = 0; i < 150 && !sessiond_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (!started && !sessiond_running()) {
      *error = "no LTTng session daemon runs and starting one failed: " + out +
               " — start it with 'lttng-sessiond --daemonize' (as root, or as the user who runs rtcosim)";
      return false;
    }
    if (started && geteuid() != 0) {
      std::ifstream pid_file(sessiond_pid_file());
      long pid = 0;
      if (pid_file >> pid && pid > 0 && is_sessiond(static_cast<pid_t>(pid)))
        g_started_sessiond = static_cast<pid_t>(pid);
    }
  }
  return true;
}

// lttng-ust registers this process from a listener thread. When no daemon
// ran at process start, that thread sleeps on a shared-memory futex the
// daemon wakes; where the shared memory cannot be created (a read-only or
// missing /dev/shm, as in some containers) or the daemon woke it before
// listening, it retries only every 5 s. A session started before the
// registration still reaches the process when it registers, but a short
// run would be over by then, so wait for this PID (not for any process with
// rtcosim events: parallel test processes register too).
bool wait_registered(std::string& out, std::string* error) {
  const std::string me = "PID: " + std::to_string(getpid()) + " ";
  constexpr auto kRegisterTimeout = std::chrono::seconds(12);
  const auto deadline = std::chrono::steady_clock::now() + kRegisterTimeout;
  bool registered = false;
  for (;;) {
    registered = run_command({"lttng", "list", "-u"}, &out) == 0 && out.find(me) != std::string::npos;
    if (registered || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (!registered) {
    *error = "this process did not register with the LTTng session daemon within " +
             std::to_string(kRegisterTimeout.count()) +
             " s — check that /dev/shm is writable and that no LTTNG_UST_* variable disables the tracer; "
             "LTTNG_UST_DEBUG=1 shows what lttng-ust does";
    return false;
  }
  return true;
}

// The lttng commands that set up and start the session, in the order they
// must run: each depends on the one before.
std::vector<std::vector<std::string>> session_commands(const std::string& name, const std::string& directory,
                                                       std::uint64_t bytes, int read_timer_us) {
  return {
      {"lttng", "create", name, "--output=" + directory},
      {"lttng", "enable-channel", "--userspace", "--session=" + name, "--buffers-uid", "--discard",
       "--subbuf-size=" + std::to_string(bytes), "--num-subbuf=4", "--read-timer=" + std::to_string(read_timer_us),
       "rtcosim"},
      // Only this process: other rtcosim processes of the same user write to
      // the same per-UID buffers, and their events must not mix with ours.
      {"lttng", "enable-event", "--userspace", "--session=" + name, "--channel=rtcosim",
       "--filter=$ctx.vpid == " + std::to_string(getpid()), "rtcosim:*"},
      {"lttng", "start", name},
  };
}

}  // namespace

std::unique_ptr<TraceSession> TraceSession::start(const std::string& directory, double events_per_second,
                                                  std::string* error) {
  std::string out;
  if (run_command({"lttng", "--version"}, &out) != 0) {
    *error = "lttng-tools is missing ('lttng' is not in PATH) — install it with 'apt-get install lttng-tools'";
    return nullptr;
  }
  if (!ensure_sessiond(out, error)) return nullptr;
  if (!wait_registered(out, error)) return nullptr;

  std::unique_ptr<TraceSession> s(new TraceSession);
  s->name_ = "rtcosim-" + std::to_string(getpid());
  // Sub-buffers hold ~50 ms of events at the expected rate (about 48 bytes
  // an event with its header), as a power of two from 16 KiB to 4 MiB; four
  // of them per CPU leave the consumer daemon time to flush.
  std::uint64_t bytes = 16 * 1024;
  while (bytes < static_cast<std::uint64_t>(events_per_second * 48.0 * 0.05) && bytes < (4u << 20)) bytes *= 2;
  s->subbuffer_bytes_ = bytes;
  // A read timer makes lttng-ust pick its "-rt" ring-buffer client, whose
  // writer never wakes the consumer: without one, the task thread that
  // fills a sub-buffer calls rt_sigpending, rt_sigprocmask twice and
  // write() on the consumer's wake-up pipe inside its frame. With it the
  // consumer daemon polls every kReadTimerUs instead, well within the fill
  // time of one sub-buffer (>= 50 ms), so nothing is discarded for it.
  constexpr int kReadTimerUs = 20'000;
  s->read_timer_us_ = kReadTimerUs;
  for (const auto& step : session_commands(s->name_, directory, bytes, kReadTimerUs)) {
    if (run_command(step, &out) != 0) {
      std::string command;
      for (const auto& a : step) command += (command.empty() ? "" : " ") + a;
      *error = "'" + command + "' failed: " + out;
      run_command({"lttng", "destroy", s->name_}, &out);
      return nullptr;
    }
    if (step[1] == "create") s->running_ = true;
  }
  return s;
}

std::uint64_t TraceSession::stop() {
  if (!running_) return 0;
  running_ = false;
  std::string out, all;
  // A stop that failed may have left the last sub-buffers unflushed: the
  // trace is then short of its end, which the caller is told.
  if (const int rc = run_command({"lttng", "stop", name_}, &out); rc != 0) {
    stop_error_ = "'lttng stop " + name_ + "' failed (" + (rc < 0 ? "not run" : "exit status " + std::to_string(rc)) +
                  "): " + out + " — the trace may lack its last events";
  }
  all += out;
  if (const int rc = run_command({"lttng", "destroy", name_}, &out); rc != 0 && stop_error_.empty()) {
    stop_error_ = "'lttng destroy " + name_ + "' failed (" +
                  (rc < 0 ? "not run" : "exit status " + std::to_string(rc)) + "): " + out +
                  " — the session is left in lttng-sessiond (lttng destroy " + name_ + ")";
  }
  all += out;
  return discarded_in(all);
}

TraceSession::~TraceSession() { stop(); }

bool stop_sessiond_started_here(double wait_s) {
  if (g_started_sessiond <= 0) return true;
  const pid_t pid = std::exchange(g_started_sessiond, -1);
  // The PID may have been reused since: only a session daemon is signalled.
  if (!is_sessiond(pid)) return true;
  ::kill(pid, SIGTERM);
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_s);
  while (std::chrono::steady_clock::now() < until) {
    if (!is_sessiond(pid)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

}  // namespace rtcosim::session
