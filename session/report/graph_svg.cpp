#include "session/report/graph_svg.hpp"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <utility>

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace rtcosim::session {

namespace {

// A program that exits before reading all of its input (`false`, a crash)
// makes the write raise SIGPIPE. rtcosimd ignores SIGPIPE, but this function
// is also called from processes that do not (the tests, a tool): block the
// signal for this thread around the write and take back the one the write
// raised, so EPIPE is the only outcome and the exit status tells the rest.
ssize_t write_no_sigpipe(int fd, const char* data, std::size_t size) {
  sigset_t pipe_only, old, pending;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  sigpending(&pending);
  const bool was_pending = sigismember(&pending, SIGPIPE) == 1;
  pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
  const ssize_t n = write(fd, data, size);
  const int saved = errno;
  if (n < 0 && saved == EPIPE && !was_pending) {
    const timespec now{0, 0};
    while (sigtimedwait(&pipe_only, nullptr, &now) < 0 && errno == EINTR) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  errno = saved;
  return n;
}

// Both pipes or none: a half-open pair would leak into the next call.
bool open_pipes(int in[2], int out[2], std::string* why) {
  if (pipe2(in, O_CLOEXEC) != 0) {
    *why = std::string("pipe: ") + std::strerror(errno);
    return false;
  }
  if (pipe2(out, O_CLOEXEC) != 0) {
    *why = std::string("pipe: ") + std::strerror(errno);
    close(in[0]);
    close(in[1]);
    return false;
  }
  return true;
}

// Starts the program on the pipes' far ends, which are closed here whatever
// happens; on failure our ends are closed too, so the caller has nothing to undo.
bool spawn_program(const std::string& program, int in[2], int out[2], pid_t* pid, std::string* why) {
  // A file action that could not be recorded (ENOMEM) would start the
  // program on the daemon's own standard input and output.
  posix_spawn_file_actions_t actions;
  int spawn_setup = posix_spawn_file_actions_init(&actions);
  if (spawn_setup != 0) {
    *why = std::string("cannot prepare to run '") + program + "': " + std::strerror(spawn_setup);
    for (int fd : {in[0], in[1], out[0], out[1]}) close(fd);
    return false;
  }
  spawn_setup = posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  if (spawn_setup == 0) spawn_setup = posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  if (spawn_setup == 0) spawn_setup = posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  // The daemon blocks its signals (they go to a signalfd) and ignores
  // SIGPIPE; the child gets the defaults, so SIGKILL aside it ends normally.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::string arg0 = program, arg1 = "-Tsvg";
  char* argv[] = {arg0.data(), arg1.data(), nullptr};
  const int spawned =
      spawn_setup != 0 ? spawn_setup : posix_spawnp(pid, program.c_str(), &actions, &attr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(in[0]);
  close(out[1]);
  if (spawn_setup != 0) {
    *why = std::string("cannot prepare to run '") + program + "': " + std::strerror(spawn_setup);
    close(in[1]);
    close(out[0]);
    return false;
  }
  if (spawned != 0) {
    *why = "cannot run '" + program + "': " + std::strerror(spawned) + " (Debian: apt-get install graphviz)";
    close(in[1]);
    close(out[0]);
    return false;
  }
  return true;
}

// What the exchange with the program left: the verdict needs all of it.
struct Exchange {
  std::string svg;
  bool eof = false, too_large = false, timed_out = false;
  std::string io_error;  // a failed poll or read: the SVG cannot be trusted whatever the exit status
};

// Writes the DOT and reads the SVG at once, bounded in time and size, so
// that a program blocked on a full pipe either way cannot hold the caller.
// Closes both of our ends.
Exchange exchange(int to, int from, const std::string& dot, const SvgLimits& limits) {
  using Clock = std::chrono::steady_clock;
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limits.timeout_s));
  Exchange x;
  std::size_t written = 0;
  if (dot.empty()) {
    close(to);
    to = -1;
  }
  while (!x.eof && !x.too_large) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      x.timed_out = true;
      break;
    }
    pollfd fds[2] = {{from, POLLIN, 0}, {to, POLLOUT, 0}};
    if (const int rc = poll(fds, to >= 0 ? 2 : 1, static_cast<int>(left)); rc < 0) {
      if (errno == EINTR) continue;
      x.io_error = std::string("poll: ") + std::strerror(errno);
      break;
    }
    if (to >= 0 && (fds[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
      const ssize_t n = write_no_sigpipe(to, dot.data() + written, dot.size() - written);
      if (n > 0) written += static_cast<std::size_t>(n);
      // Any other error: it stopped reading, and its exit status tells. Not
      // EINTR: nothing was written, and closing now would hand the program
      // a cut graph that it lays out without complaint.
      if (n < 0 && errno != EAGAIN && errno != EINTR) written = dot.size();
      if (written == dot.size()) {
        close(to);
        to = -1;
      }
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      char buf[65536];
      const ssize_t n = read(from, buf, sizeof buf);
      if (n > 0) {
        x.svg.append(buf, static_cast<std::size_t>(n));
        x.too_large = x.svg.size() > limits.max_output;
      } else if (n == 0) {
        x.eof = true;
      } else if (errno != EAGAIN && errno != EINTR) {
        x.io_error = std::string("reading its output: ") + std::strerror(errno);
        break;
      }
    }
  }
  if (to >= 0) close(to);
  close(from);
  return x;
}

// The SVG only when everything went right; otherwise *why names the first
// thing that went wrong, in the order that makes the message most useful.
std::string verdict(const std::string& program, Exchange& x, int status, const SvgLimits& limits, std::string* why) {
  if (!x.io_error.empty()) {
    *why = "'" + program + "': " + x.io_error;
  } else if (x.timed_out) {
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%g", limits.timeout_s);
    *why = "'" + program + "' did not finish within " + seconds + " s";
  } else if (x.too_large) {
    *why = "'" + program + "' wrote more than " + std::to_string(limits.max_output) + " bytes of SVG";
  } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    *why = "'" + program + "' failed (" +
           (WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                              : "signal " + std::to_string(WTERMSIG(status))) +
           ")" + (WIFEXITED(status) && WEXITSTATUS(status) == 127 ? " — is Graphviz installed?" : "");
  } else if (x.svg.find("<svg") == std::string::npos) {
    *why = "'" + program + "' wrote no SVG";
  } else {
    return std::move(x.svg);
  }
  return {};
}

}  // namespace

std::string render_svg(const std::string& program, const std::string& dot, std::string* why, const SvgLimits& limits) {
  if (dot.size() > limits.max_input) {
    *why = "the graph's DOT has " + std::to_string(dot.size()) + " bytes, more than " +
           std::to_string(limits.max_input) + " are not laid out";
    return {};
  }
  int in[2], out[2];
  if (!open_pipes(in, out, why)) return {};
  pid_t pid = 0;
  if (!spawn_program(program, in, out, &pid, why)) return {};
  // Non-blocking on our ends only (dot's stay blocking): a dot that stops
  // reading or writing must never hold the daemon's loop past the deadline.
  if (fcntl(in[1], F_SETFL, O_NONBLOCK) < 0 || fcntl(out[0], F_SETFL, O_NONBLOCK) < 0) {
    *why = std::string("cannot make the pipes to '") + program + "' non-blocking: " + std::strerror(errno);
    close(in[1]);
    close(out[0]);
    kill(pid, SIGKILL);
    while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    return {};
  }
  Exchange x = exchange(in[1], out[0], dot, limits);
  if (!x.eof) kill(pid, SIGKILL);
  int status = 0;
  pid_t waited = 0;
  while ((waited = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  if (waited != pid) {
    // No exit status (SIGCHLD ignored somewhere in the process reaps the
    // child first): a program that failed after writing must not pass.
    *why = "cannot learn how '" + program + "' ended (waitpid: " + std::strerror(errno) + ")";
    return {};
  }
  return verdict(program, x, status, limits, why);
}

}  // namespace rtcosim::session
