#include <algorithm>
#include <array>
#include <bitset>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <system_error>
#include <unordered_set>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/duration.hpp"
#include "base/fd_ostream.hpp"
#include "base/json.hpp"
#include "base/safe_path.hpp"
#include "base/sha256.hpp"
#include "session/record_files.hpp"
#include "session/report/graph_report.hpp"
#include "session/report/graph_svg.hpp"
#include "session/report/recording_summary.hpp"
#include "session/report/redaction.hpp"
#include "session/report/run_summary.hpp"
#include "session/session.hpp"
#include "session/sync/sync_live.hpp"
#include "session/trace_session.hpp"
#include "tools/rtcosimd/control_client.hpp"
#include "tools/rtcosimd/daemon.hpp"
#include "tools/rtcosimd/daemon_internal.hpp"

namespace rtcosim::daemon {

void Daemon::notify_status() {
  if (!graph_.graph()) return;
  if (!pending_start_) {
    const auto events = graph_.take_events();
    for (const auto& h : events.lost_hosts) {
      std::cerr << "rtcosimd: error: host '" << h << "' fell silent (no announce for "
                << session::RealtimeRun::host_silence()
                << " s); the tasks here keep running, their inputs from it held at the horizon\n";
      lost_hosts_.push_back(h);
    }
    for (const auto& w : events.clock_warnings) std::cerr << "rtcosimd: warning: " << w << '\n';
  }
  const session::ServiceProgress p = graph_.progress();
  const std::string& failed = p.failed;
  const std::string& ended = p.ended;
  char status[320];
  const std::string failed_state = "failed (task '" + failed.substr(0, 64) + "' stopped, see status)";
  const std::string ended_state = "ended (the model of task '" + ended.substr(0, 64) + "' ended the run, see status)";
  std::snprintf(status, sizeof status, "STATUS=%s: %llu frames, %llu overruns, worst wake-up latency %.1f us",
                !failed.empty()    ? failed_state.c_str()
                : !ended.empty()   ? ended_state.c_str()
                : graph_.running() ? "running"
                : pending_start_   ? "starting (waiting for the other hosts)"
                                   : "stopped",
                static_cast<unsigned long long>(p.frames), static_cast<unsigned long long>(p.overruns),
                static_cast<double>(p.worst_wakeup_ns) * 1e-3);
  notify(status);
  // The watchdog is fed only while every task makes progress: a hung task
  // stops the pings and systemd restarts the service.
  if (p.advancing) notify("WATCHDOG=1");
}

void Daemon::notify(const char* message) {
  if (!notifier_.active()) return;
  if (notifier_.send(message)) {
    notify_failing_ = false;
    return;
  }
  if (notify_failing_) return;
  notify_failing_ = true;
  const std::string_view text(message);
  std::cerr << "rtcosimd: cannot notify systemd (" << text.substr(0, text.find('='))
            << "): " << std::strerror(notifier_.last_errno())
            << " — systemd may stop the service for a missed READY=1 or WATCHDOG=1; logged once until a "
               "notification gets through again\n";
}

namespace {

// Signals go to a signalfd (-1 when it cannot be made); blocked first, before
// any task thread exists, so every thread inherits the mask and none is
// interrupted.
int signals_to_fd() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signalfd(-1, &signals, SFD_CLOEXEC | SFD_NONBLOCK);
}

// STATUS= and WATCHDOG=1 go out every `interval`, or a quarter of systemd's
// watchdog time (WATCHDOG_USEC, when it is meant for this process) if that
// is shorter: one late pass then never costs a restart.
double status_interval(double interval) {
  if (const char* usec = std::getenv("WATCHDOG_USEC")) {
    const char* pid = std::getenv("WATCHDOG_PID");
    const double watchdog_s = std::strtod(usec, nullptr) * 1e-6;
    if ((!pid || std::strtol(pid, nullptr, 10) == getpid()) && watchdog_s > 0.0)
      interval = std::min(interval, watchdog_s / 4.0);
  }
  return interval;
}

}  // namespace

int Daemon::open_control_socket(std::string* why) {
  // Neither failure stops us here, but each is the real cause when bind
  // then fails (no directory, a socket left by a daemon of another user).
  std::error_code ec;
  const auto dir = std::filesystem::path(options_.socket_path).parent_path();
  std::string before;
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  if (ec) before = "; creating " + dir.string() + " failed: " + ec.message();
  if (::unlink(options_.socket_path.c_str()) != 0 && errno != ENOENT) {
    before += "; removing the old " + options_.socket_path + " failed: " + std::strerror(errno);
  }
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (options_.socket_path.size() >= sizeof addr.sun_path) {
    *why = "socket path too long: " + options_.socket_path;
    return -1;
  }
  const int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (lfd < 0) {
    *why = std::string("cannot make the control socket: ") + std::strerror(errno);
    return -1;
  }
  std::strncpy(addr.sun_path, options_.socket_path.c_str(), sizeof addr.sun_path - 1);
  if (bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(lfd, 16) != 0) {
    *why = "cannot listen on " + options_.socket_path + ": " + std::strerror(errno) + before;
    close(lfd);
    return -1;
  }
  // Group access only: a socket left at the umask's mode could admit others.
  if (chmod(options_.socket_path.c_str(), 0660) != 0) {
    *why = "cannot set mode 0660 on " + options_.socket_path + ": " + std::strerror(errno);
    close(lfd);
    ::unlink(options_.socket_path.c_str());
    return -1;
  }
  struct stat socket_stat {};
  socket_gid_ = ::stat(options_.socket_path.c_str(), &socket_stat) == 0 ? socket_stat.st_gid : getegid();
  return lfd;
}

bool Daemon::start_web(std::string* why) {
  web_ = std::make_unique<WebServer>(options_.web, options_.socket_path);
  web_->set_graph_svg(graph_svg_);
  web_started_ = now_s();
  web_->publish(live_json());
  if (!web_->start(why)) {
    web_.reset();
    return false;
  }
  std::cerr << "rtcosimd: live view on http://" << options_.web.address << ':' << web_->port() << "/\n";
  return true;
}

void Daemon::take_signals(int sfd) {
  signalfd_siginfo info{};
  while (read(sfd, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
    if (info.ssi_signo == SIGHUP) {
      // Built beside the loop like a client's reload; answered in the
      // log. One that arrives while a reload is built runs after it
      // (the file may have changed again since that one read it).
      if (pending_reload_) {
        sighup_pending_ = true;
      } else if (const std::string now = begin_reload("", 0); !now.empty()) {
        std::cerr << "rtcosimd: SIGHUP: " << now << '\n';
      }
    } else {
      quit_ = true;
    }
  }
}

void Daemon::answer_finished_work(std::vector<ControlClient>& clients) {
  const auto reply_to = [&](std::uint64_t client, const std::string& reply) {
    for (auto& c : clients) {
      if (c.id() == client) c.reply(reply);
    }
  };
  if (auto done = finish_trace_start()) reply_to(done->first, done->second);
  if (auto done = finish_start()) late_replies_.push_back(std::move(*done));
  if (startup_failed_) quit_ = true;
  for (auto& [client, reply] : late_replies_) {
    if (client != 0) reply_to(client, reply);  // 0: the log has it
  }
  late_replies_.clear();
  if (auto done = quit_ ? std::nullopt : finish_reload()) {
    if (done->first == 0 && !done->second.empty()) std::cerr << "rtcosimd: SIGHUP: " << done->second << '\n';
    if (!done->second.empty()) reply_to(done->first, done->second);
    if (sighup_pending_ && !pending_reload_) {
      sighup_pending_ = false;
      if (const std::string now = begin_reload("", 0); !now.empty()) std::cerr << "rtcosimd: SIGHUP: " << now << '\n';
    }
  }
}

void Daemon::serve_requests(std::vector<ControlClient>& clients) {
  // At most kRequestsPerPass of one client per pass: 32 clients sending
  // empty lines as fast as they can must not keep the loop (signals, the
  // watchdog, every other client) from coming round.
  for (auto& c : clients) {
    for (int served = 0; served < kRequestsPerPass; ++served) {
      auto line = c.next_request();
      if (!line) break;
      bool deferred = false;
      const std::string reply = respond(*line, c.id(), &deferred, c.in_group());
      if (deferred) {
        c.set_busy();  // answered when the worker is done
        break;
      }
      c.reply(reply);
    }
  }
  std::erase_if(clients, [](const ControlClient& c) { return c.finished(); });
}

void Daemon::accept_clients(int lfd, std::vector<ControlClient>& clients, double* accept_again) {
  const ClientLimits limits{options_.max_request_bytes, options_.max_pending_output};
  for (;;) {
    const int cfd = accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (cfd < 0) {
      // Out of descriptors or memory: the listening socket is left alone
      // for a while instead of being polled (it stays readable, so polling
      // it would spin).
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        *accept_again = now_s() + 0.25;
        std::cerr << "rtcosimd: cannot accept a client (" << std::strerror(errno) << "); retrying in 0.25 s\n";
      }
      return;
    }
    if (clients.size() >= options_.max_clients) {
      const std::string refusal =
          reply_error("too many clients (" + std::to_string(options_.max_clients) + ") — try again later") + "\n";
      (void)!send(cfd, refusal.data(), refusal.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      close(cfd);
      continue;
    }
    clients.emplace_back(cfd, next_client_id_++, limits);
    clients.back().set_in_group(peer_in_group(cfd, socket_gid_));
  }
}

void Daemon::shut_down() {
  notify("STOPPING=1");
  stop_graph();
  if (pending_trace_) pending_trace_->result.wait();
  (void)finish_trace_start();
  if (pending_reload_) pending_reload_->result.wait();  // its graph goes with it, never started
  if (trace_) trace_->session->stop();
  trace_.reset();
  // A per-user session daemon that `trace start` started goes with us.
  if (!session::stop_sessiond_started_here())
    std::cerr << "rtcosimd: the LTTng session daemon it started did not stop\n";
  if (const std::string error = graph_.end_recording(); !error.empty()) std::cerr << "rtcosimd: " << error << '\n';
  runtime::Graph* graph = graph_.graph();
  std::cerr << "rtcosimd: stopped\n"
            << (graph ? session::run_summary(*graph, graph_.remote()) +
                            session::recording_summary(
                                *graph, {graph_.recorder(), nullptr, nullptr, graph_.recording().error()})
                      : std::string());
}

// Everything before READY=1: a failure here ends the daemon with status 1
// and leaves no socket behind. *sfd and *lfd are the signalfd and listener.
bool Daemon::set_up(int* sfd, int* lfd) {
  // A client that closes before its replies are out must cost the daemon
  // nothing: writes use MSG_NOSIGNAL, and nothing else should raise SIGPIPE
  // either (a recording on a pipe-like file, a library's write).
  signal(SIGPIPE, SIG_IGN);
  if (!notifier_.problem().empty()) {
    std::cerr << "rtcosimd: " << notifier_.problem() << " — systemd will not hear READY=1 or WATCHDOG=1\n";
  }
  *sfd = signals_to_fd();
  if (*sfd < 0) {
    std::cerr << "rtcosimd: cannot take signals through a signalfd: " << std::strerror(errno) << '\n';
    return false;
  }
  std::string why;
  if (!load(options_.config, &why)) {
    std::cerr << why << "rtcosimd: " << options_.config << " cannot be run\n";
    close(*sfd);
    return false;
  }
  // The control socket: created before the tasks start, mode 0660.
  *lfd = open_control_socket(&why);
  if (*lfd < 0) {
    std::cerr << "rtcosimd: " << why << '\n';
    close(*sfd);
    return false;
  }
  bool start_deferred = false;
  if (!start_graph(&why, 0, &start_deferred)) {
    std::cerr << "rtcosimd: " << why << '\n';
    close_sockets(*sfd, *lfd);
    return false;
  }
  // A graph across hosts agrees on its epoch beside the loop; if that
  // fails, the daemon ends with status 1 as it would have before READY.
  if (start_deferred) pending_start_->at_launch = true;
  if (options_.web.port != 0 && !start_web(&why)) {
    std::cerr << "rtcosimd: " << why << '\n';
    stop_graph();
    close_sockets(*sfd, *lfd);
    return false;
  }
  notify("READY=1");
  std::cerr << "rtcosimd: running " << options_.config << " (" << graph_.graph()->tasks().size()
            << " tasks); control socket " << options_.socket_path << '\n';
  return true;
}

// The socket file goes with the descriptors: a stale one would make the
// next daemon's clients connect to nothing.
void Daemon::close_sockets(int sfd, int lfd) {
  close(lfd);
  close(sfd);
  ::unlink(options_.socket_path.c_str());
}

// The loop until a signal or a client asks to quit: one poll over the
// signalfd, the listener and the clients, then the periodic work.
void Daemon::serve(int sfd, int lfd, std::vector<ControlClient>& clients) {
  const double interval = status_interval(options_.status_interval);
  double next_status = now_s();
  double next_web = 0.0;
  double accept_again = 0.0;  // accept_clients backs off after running out of descriptors
  while (!quit_) {
    const bool accepting = now_s() >= accept_again;
    std::vector<pollfd> fds = {{sfd, POLLIN, 0}, {accepting ? lfd : -1, POLLIN, 0}};
    for (const auto& c : clients) fds.push_back({c.fd(), c.events(), 0});
    // With a state synchronisation the measurement is read every 5 ms, so
    // that u reaches the tasks a few macro steps after its data.
    const bool more =
        std::any_of(clients.begin(), clients.end(), [](const ControlClient& c) { return c.has_request(); });
    if (poll(fds.data(), fds.size(), more ? 0 : graph_.live_sync() && graph_.running() ? 5 : 100) < 0) {
      // EINTR is a signal the signalfd reports next round; anything else
      // (ENOMEM) leaves revents unset: nothing is served this round, and
      // the loop waits instead of spinning.
      if (errno != EINTR) {
        std::cerr << "rtcosimd: poll: " << std::strerror(errno) << '\n';
        ::usleep(100'000);
      }
      for (auto& p : fds) p.revents = 0;
    }

    if (fds[0].revents & POLLIN) take_signals(sfd);
    // Only the clients that were polled; new ones join after this round.
    for (std::size_t i = 0; i + 2 < fds.size(); ++i) clients[i].serve(fds[i + 2].revents);
    answer_finished_work(clients);
    serve_requests(clients);
    if (accepting && (fds[1].revents & POLLIN)) accept_clients(lfd, clients, &accept_again);

    graph_.drain();
    if (graph_.live_sync() && graph_.running()) graph_.live_sync()->poll();
    graph_.recording().rotate_if_due(graph_.recorded());
    if (web_ && now_s() >= next_web) {
      next_web = now_s() + 1.0 / std::max(options_.web.push_rate, 0.1);
      web_->publish(live_json());
    }
    if (now_s() >= next_status) {
      // The next one an interval on, never a burst to catch up after a long pass.
      next_status = std::max(next_status + interval, now_s() + interval);
      notify_status();
    }
  }
}

int Daemon::run() {
  int sfd = -1, lfd = -1;
  if (!set_up(&sfd, &lfd)) return 1;
  // The clients outlive shut_down(), as they did when the loop was inline.
  std::vector<ControlClient> clients;
  serve(sfd, lfd, clients);
  shut_down();
  clients.clear();
  close_sockets(sfd, lfd);
  return startup_failed_ ? 1 : 0;
}

}  // namespace rtcosim::daemon
