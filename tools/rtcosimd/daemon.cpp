#include "tools/rtcosimd/daemon.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "base/json.hpp"
#include "coupling/plugin_loader.hpp"
#include "rt_config/loader.hpp"
#include "runtime/realtime.hpp"
#include "tools/rtcosim/recording_summary.hpp"
#include "tools/rtcosim/run_summary.hpp"
#include "tools/rtcosim/trace_session.hpp"

namespace rtcosim::daemon {

struct Daemon::TraceState {
  std::unique_ptr<tools::TraceSession> session;
  std::string directory;
};

namespace {

std::string reply_ok(const std::string& extra = {}) { return "{\"ok\":true" + (extra.empty() ? "" : "," + extra) + "}"; }
std::string reply_error(const std::string& why) { return "{\"ok\":false,\"error\":" + base::json_string(why) + "}"; }

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Client {
  int fd = -1;
  std::string in;
  std::string out;
  // After an oversized request: the rest of its input is read and thrown
  // away (closing with unread input would reset the connection and lose
  // the error reply), and the connection ends once the reply is out.
  bool discarding = false;
};

}  // namespace

Daemon::Daemon(Options options)
    : options_(std::move(options)),
      blocks_(tasks::BlockRegistry::with_builtins()),
      methods_(coupling::MethodRegistry::with_builtins()) {}

Daemon::~Daemon() { stop_graph(); }

bool Daemon::load(const std::string& file, std::string* errors) {
  const auto loaded = config::load_graph_file(file);
  std::string text;
  for (const auto& d : loaded.diagnostics) text += d.str() + "\n";
  if (!loaded.ok()) {
    *errors = text;
    return false;
  }
  if (!text.empty()) std::cerr << text;
  try {
    methods_ = coupling::registry_with_plugins(config::plugin_directories(loaded.graph), nullptr);
    auto graph = runtime::Graph::build(loaded.graph, blocks_, methods_);
    stop_graph();
    graph_ = std::move(graph);
    // Memory stays fixed for months: the rings, and the latest sample per
    // signal for the status preview.
    recorder_ = std::make_unique<runtime::Recorder>(*graph_, runtime::Recorder::Options{.keep = 1});
    if (record_file_) {
      // The same file goes on; time_s starts again at 0 after the marker.
      runtime::Recorder::write_reload_marker(*record_file_, ++reloads_recorded_);
      drain_recorder();
    }
    config_file_ = file;
    return true;
  } catch (const std::exception& e) {
    *errors = file + ": " + e.what() + "\n";
    return false;
  }
}

bool Daemon::start_graph(std::string* error) {
  if (running_) return true;
  if (!graph_) {
    *error = "no graph is loaded";
    return false;
  }
  int priority = 0;
  for (const auto& t : graph_->tasks()) priority = std::max(priority, t->spec().priority);
  report_ = runtime::prepare_process(graph_->spec().realtime, priority);
  for (const auto& w : report_.warnings) std::cerr << "warning: " << w << '\n';
  if (!report_.ok) {
    *error = "real-time set-up failed: " + (report_.errors.empty() ? std::string("?") : report_.errors.front());
    return false;
  }
  executor_ = std::make_unique<runtime::RealtimeExecutor>(*graph_, recorder_.get(), report_);
  executor_->start(0.0);  // until stopped
  running_ = true;
  last_frames_.assign(graph_->tasks().size(), 0);
  return true;
}

void Daemon::stop_graph() {
  if (!executor_) return;
  executor_->stop();
  executor_->join();
  for (const auto& e : executor_->thread_errors()) std::cerr << "warning: " << e << '\n';
  executor_.reset();
  running_ = false;
  drain_recorder();
}

void Daemon::drain_recorder() {
  if (!recorder_) return;
  recorder_->drain(record_file_.get());
  if (record_file_ && record_file_->failed()) {
    // A write error ends the recording; status and `record stop` report it.
    record_error_ = record_file_->error();
    std::cerr << "rtcosimd: " << record_error_ << '\n';
    record_file_.reset();
    record_path_.clear();
  }
}

std::string Daemon::status_json() {
  const tools::RecordingState recording{recorder_.get(), record_file_.get(), nullptr, record_error_};
  std::string summary = graph_ ? tools::summary_json(*graph_, {}, report_.fifo ? "fifo" : "other",
                                                     tools::recording_json(*graph_, recording))
                               : "null\n";
  if (!summary.empty() && summary.back() == '\n') summary.pop_back();
  return "\"running\":" + std::string(running_ ? "true" : "false") + ",\"config\":" + base::json_string(config_file_) +
         ",\"recording\":" + (record_file_ ? base::json_string(record_path_) : std::string("null")) +
         ",\"recording_error\":" + (record_error_.empty() ? std::string("null") : base::json_string(record_error_)) +
         ",\"tracing\":" + (trace_ ? base::json_string(trace_->directory) : std::string("null")) + ",\"status\":" + summary;
}

std::string Daemon::handle(const std::string& line) {
  std::string why;
  const auto request = base::parse_flat_object(line, &why);
  if (!request) return reply_error("malformed request: " + why + " — expected one JSON object per line, e.g. {\"cmd\":\"status\"}");
  const auto get = [&](const std::string& key) {
    const auto it = request->find(key);
    return it == request->end() ? std::string() : it->second;
  };
  const std::string cmd = get("cmd");
  if (cmd == "status") return reply_ok(status_json());
  if (cmd == "stop") {
    stop_graph();
    return reply_ok();
  }
  if (cmd == "start") return start_graph(&why) ? reply_ok() : reply_error(why);
  if (cmd == "reload") {
    const std::string file = get("file").empty() ? config_file_ : get("file");
    // Validate first: a bad file leaves the running graph alone.
    const auto check = config::load_graph_file(file);
    if (!check.ok()) {
      std::string errors;
      for (const auto& d : check.diagnostics) errors += d.str() + "\n";
      return reply_error("the new file has errors; the running graph keeps running:\n" + errors);
    }
    const bool was_running = running_;
    if (!load(file, &why)) return reply_error(why);
    if (was_running && !start_graph(&why)) return reply_error(why);
    return reply_ok("\"config\":" + base::json_string(file));
  }
  if (cmd == "record") {
    const std::string action = get("action");
    if (action == "start") {
      const std::string file = get("file");
      if (file.empty()) return reply_error("record start needs \"file\"");
      if (!recorder_ || recorder_->empty()) return reply_error("the graph records no signals (add a 'record:' section)");
      drain_recorder();
      const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
      if (fd < 0) return reply_error("cannot write '" + file + "': " + std::strerror(errno));
      record_file_ = runtime::RecordFile::adopt(fd, file);
      recorder_->write_header(*record_file_);
      record_path_ = file;
      record_error_.clear();
      reloads_recorded_ = 0;
      return reply_ok();
    }
    if (action == "stop") {
      drain_recorder();
      if (record_file_ && !record_file_->commit()) record_error_ = record_file_->error();
      record_file_.reset();
      record_path_.clear();
      if (!record_error_.empty()) {
        const std::string error = std::move(record_error_);
        record_error_.clear();
        return reply_error(error);
      }
      return reply_ok();
    }
    return reply_error("record needs \"action\": \"start\" or \"stop\"");
  }
  if (cmd == "trace") {
    const std::string action = get("action");
    if (action == "start") {
      if (trace_) return reply_error("already tracing to " + trace_->directory);
      const std::string dir = get("dir");
      if (dir.empty()) return reply_error("trace start needs \"dir\"");
      auto session = tools::TraceSession::start(dir, 10000.0, &why);
      if (!session) return reply_error(why);
      trace_ = std::make_unique<TraceState>();
      trace_->session = std::move(session);
      trace_->directory = dir;
      if (graph_) graph_->trace_names();
      return reply_ok();
    }
    if (action == "stop") {
      if (!trace_) return reply_error("not tracing");
      const auto discarded = trace_->session->stop();
      const std::string dir = trace_->directory;
      trace_.reset();
      return reply_ok("\"dir\":" + base::json_string(dir) + ",\"discarded_events\":" + std::to_string(discarded));
    }
    return reply_error("trace needs \"action\": \"start\" or \"stop\"");
  }
  if (cmd.empty()) return reply_error("the request has no \"cmd\" — expected one of: status, stop, start, reload, record, trace");
  return reply_error("unknown command '" + cmd + "' — expected one of: status, stop, start, reload, record, trace");
}

void Daemon::notify_status() {
  if (!graph_) return;
  std::uint64_t frames = 0, overruns = 0;
  std::int64_t worst = 0;
  bool progress = true;
  for (std::size_t i = 0; i < graph_->tasks().size(); ++i) {
    const auto& s = graph_->tasks()[i]->stats();
    const auto f = s.frames.load();
    if (running_ && f == last_frames_[i]) progress = false;
    last_frames_[i] = f;
    frames += f;
    overruns += s.overruns.load();
    worst = std::max(worst, s.wakeup_latency_ns.max());
  }
  char status[256];
  std::snprintf(status, sizeof status, "STATUS=%s: %llu frames, %llu overruns, worst wake-up latency %.1f us",
                running_ ? "running" : "stopped", static_cast<unsigned long long>(frames),
                static_cast<unsigned long long>(overruns), static_cast<double>(worst) * 1e-3);
  sd_notify(0, status);
  // The watchdog is fed only while every task makes progress: a hung task
  // stops the pings and systemd restarts the service.
  if (progress) sd_notify(0, "WATCHDOG=1");
}

int Daemon::run() {
  // Signals go to a signalfd; blocked here, before any task thread exists,
  // so every thread inherits the mask and none is interrupted.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  const int sfd = signalfd(-1, &signals, SFD_CLOEXEC | SFD_NONBLOCK);

  std::string why;
  if (!load(options_.config, &why)) {
    std::cerr << why << "rtcosimd: " << options_.config << " cannot be run\n";
    return 1;
  }

  // The control socket: created before the tasks start, mode 0660.
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(options_.socket_path).parent_path(), ec);
  ::unlink(options_.socket_path.c_str());
  const int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (options_.socket_path.size() >= sizeof addr.sun_path) {
    std::cerr << "rtcosimd: socket path too long: " << options_.socket_path << '\n';
    return 1;
  }
  std::strncpy(addr.sun_path, options_.socket_path.c_str(), sizeof addr.sun_path - 1);
  if (bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(lfd, 16) != 0) {
    std::cerr << "rtcosimd: cannot listen on " << options_.socket_path << ": " << std::strerror(errno) << '\n';
    return 1;
  }
  chmod(options_.socket_path.c_str(), 0660);

  if (!start_graph(&why)) {
    std::cerr << "rtcosimd: " << why << '\n';
    return 1;
  }
  sd_notify(0, "READY=1");
  std::cerr << "rtcosimd: running " << options_.config << " (" << graph_->tasks().size() << " tasks); control socket "
            << options_.socket_path << '\n';

  std::vector<Client> clients;
  double next_status = now_s();
  while (!quit_) {
    std::vector<pollfd> fds = {{sfd, POLLIN, 0}, {lfd, POLLIN, 0}};
    for (const auto& c : clients) fds.push_back({c.fd, static_cast<short>(POLLIN | (c.out.empty() ? 0 : POLLOUT)), 0});
    poll(fds.data(), fds.size(), 100);

    if (fds[0].revents & POLLIN) {
      signalfd_siginfo info{};
      while (read(sfd, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
        if (info.ssi_signo == SIGHUP) {
          std::cerr << "rtcosimd: SIGHUP: " << handle("{\"cmd\":\"reload\"}") << '\n';
        } else {
          quit_ = true;
        }
      }
    }
    // Only the clients that were polled; new ones join after this round.
    const std::size_t polled = fds.size() - 2;
    for (std::size_t i = 0; i < polled; ++i) {
      Client& c = clients[i];
      const short revents = fds[i + 2].revents;
      bool close_it = (revents & (POLLERR | POLLHUP)) != 0 && !(revents & POLLIN);
      if (revents & POLLIN) {
        char buf[65536];
        const ssize_t n = read(c.fd, buf, sizeof buf);
        if (n <= 0) {
          close_it = true;
        } else if (!c.discarding) {
          c.in.append(buf, static_cast<std::size_t>(n));
          for (std::size_t nl; (nl = c.in.find('\n')) != std::string::npos;) {
            const std::string line = c.in.substr(0, nl);
            c.in.erase(0, nl + 1);
            c.out += handle(line) + "\n";
          }
          if (c.in.size() > options_.max_request_bytes) {
            c.out += reply_error("request longer than " + std::to_string(options_.max_request_bytes) +
                                 " bytes — the connection is closed") + "\n";
            c.in.clear();
            c.in.shrink_to_fit();
            c.discarding = true;
          }
        }
      }
      if (!close_it && (revents & POLLOUT) && !c.out.empty()) {
        const ssize_t n = write(c.fd, c.out.data(), c.out.size());
        if (n > 0) c.out.erase(0, static_cast<std::size_t>(n));
        if (n < 0 && errno != EAGAIN) close_it = true;
        if (c.discarding && c.out.empty()) shutdown(c.fd, SHUT_WR);
      }
      if (close_it) {
        close(c.fd);
        c.fd = -1;
      }
    }
    std::erase_if(clients, [](const Client& c) { return c.fd < 0; });
    if (fds[1].revents & POLLIN) {
      for (int cfd; (cfd = accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0;) {
        clients.push_back({cfd, {}, {}, false});
      }
    }

    drain_recorder();
    if (now_s() >= next_status) {
      next_status += options_.status_interval;
      notify_status();
    }
  }

  sd_notify(0, "STOPPING=1");
  stop_graph();
  if (trace_) trace_->session->stop();
  if (record_file_ && !record_file_->commit()) std::cerr << "rtcosimd: " << record_file_->error() << '\n';
  std::cerr << "rtcosimd: stopped\n"
            << (graph_ ? tools::run_summary(*graph_) +
                             tools::recording_summary(*graph_, {recorder_.get(), nullptr, nullptr, record_error_})
                       : std::string());
  for (auto& c : clients) close(c.fd);
  close(lfd);
  ::unlink(options_.socket_path.c_str());
  return 0;
}

}  // namespace rtcosim::daemon
