#include "tools/rtcosimd/daemon.hpp"

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
#include "base/json.hpp"
#include "base/safe_path.hpp"
#include "session/report/graph_report.hpp"
#include "session/report/graph_svg.hpp"
#include "session/report/recording_summary.hpp"
#include "session/report/redaction.hpp"
#include "session/report/run_summary.hpp"
#include "session/session.hpp"
#include "session/trace_session.hpp"
#include "tools/rtcosimd/control_client.hpp"
#include "tools/rtcosimd/daemon_internal.hpp"

namespace rtcosim::daemon {

Daemon::Daemon(Options options)
    : options_(std::move(options)),
      blocks_(tasks::BlockRegistry::with_builtins()),
      graph_(blocks_,
             {.host = options_.host,
              .plugin_dirs = options_.plugin_dirs,
              .program = "rtcosimd",
              .live_view = options_.web.port != 0,
              .probes = kProbeSlots},
             options_.recording_dir, [](const std::string& line) { std::cerr << "rtcosimd: " << line << '\n'; }) {}

Daemon::~Daemon() {
  // A reload still being built reads the options and the block registry.
  if (pending_reload_) pending_reload_->result.wait();
  stop_graph();
}

void Daemon::log_warnings(const std::vector<std::string>& warnings) {
  for (const auto& w : warnings) std::cerr << "warning: " << w << '\n';
}

bool Daemon::load(const std::string& file, std::string* errors) {
  std::string text, why;
  const int fd = base::open_regular_file(file, &why);
  if (fd < 0 || !base::read_all(fd, 4u << 20, &text, &why)) {
    if (fd >= 0) ::close(fd);
    *errors = file + ": " + why + "\n";
    return false;
  }
  ::close(fd);
  return load_text(text, file, errors);
}

bool Daemon::load_text(const std::string& text_in, const std::string& label, std::string* errors) {
  return commit(prepare(config::load_graph_text(text_in, label, load_options()), text_in, label), errors);
}

Daemon::Prepared Daemon::prepare(const config::LoadResult& loaded, const std::string& text,
                                 const std::string& label) const {
  Prepared p{graph_.prepare(loaded, text, label), {}, {}};
  if (!p.graph.warnings.empty()) std::cerr << p.graph.warnings;
  // Laid out before the running graph stops (dot takes up to 5 s).
  if (p.graph.error.empty() && options_.web.port != 0) p.svg = lay_out(loaded.graph, &p.layout_why);
  return p;
}

bool Daemon::commit(Prepared&& p, std::string* errors) {
  const std::string label = p.graph.label;
  if (!p.graph.error.empty() || !p.graph.graph) {
    *errors = p.graph.error.empty() ? label + ": no graph was built\n" : p.graph.error;
    return false;
  }
  try {
    graph_svg_ = std::move(p.svg);
    if (options_.web.port != 0) feed_.set_layout(!graph_svg_.empty(), p.layout_why);
    stop_graph();
    graph_.install(std::move(p.graph));
    next_probe_slot_ = 0;
    feed_.reset();
    if (web_) web_->set_graph_svg(graph_svg_);
    return true;
  } catch (const std::exception& e) {
    *errors = label + ": " + e.what() + "\n";
    return false;
  }
}

std::string Daemon::lay_out(const config::GraphSpec& spec, std::string* why) const {
  std::string svg = options_.dot_program.empty()
                        ? std::string()
                        : session::render_svg(options_.dot_program, session::graph_dot(spec), why);
  if (options_.dot_program.empty()) *why = "rtcosimd runs with --dot none";
  // What the page inserts: the <svg> element, without XML prologue.
  if (const auto at = svg.find("<svg"); at != std::string::npos) svg.erase(0, at);
  if (!why->empty()) std::cerr << "rtcosimd: live view: the page draws the graph itself: " << *why << '\n';
  return svg;
}

bool Daemon::start_graph(std::string* error, std::uint64_t client, bool* deferred, const std::string& ok_reply) {
  if (graph_.running()) return true;
  if (pending_start_) {
    *error = "the graph is starting already (waiting for the other hosts)";
    return false;
  }
  std::vector<std::string> warnings;
  *error = graph_.set_up_start(&warnings);
  log_warnings(warnings);
  if (!error->empty()) return false;
  std::int64_t epoch_ns = 0;
  if (graph_.distributed()) {
    std::cerr << "rtcosimd: host " << graph_.graph()->host() << ": waiting for the other hosts (at most "
              << base::format_duration(graph_.graph()->spec().dds.discovery_timeout) << ")\n";
    lost_hosts_.clear();
    try {
      graph_.open_bridge();
    } catch (const std::exception& e) {
      *error = e.what();
      return false;
    }
    if (deferred) {
      // Beside the loop: signals, the watchdog and every client are
      // served while the hosts agree (up to discovery_timeout).
      auto pending = std::make_unique<PendingStart>();
      pending->client = client;
      pending->ok_reply = ok_reply.empty() ? reply_ok() : ok_reply;
      session::RealtimeRun* run = &graph_.run();
      pending->epoch = std::async(std::launch::async, [run] { return run->coordinate(); });
      pending_start_ = std::move(pending);
      *deferred = true;
      return true;
    }
    try {
      epoch_ns = graph_.run().coordinate();
    } catch (const std::exception& e) {
      // The hosts did not agree, or no worker could be started: nothing ran.
      graph_.abandon_start();
      *error = e.what();
      return false;
    }
  }
  return launch(epoch_ns, error);
}

bool Daemon::launch(std::int64_t epoch_ns, std::string* error) {
  std::vector<std::string> warnings;
  *error = graph_.launch(epoch_ns, &warnings);
  log_warnings(warnings);
  if (!error->empty()) return false;
  // Simulation time starts again at 0: so does the live view's (the
  // previous run's samples were drained at its stop).
  feed_.reset();
  return true;
}

std::optional<std::pair<std::uint64_t, std::string>> Daemon::finish_start() {
  if (!pending_start_ || pending_start_->epoch.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
    return std::nullopt;
  }
  auto pending = std::move(pending_start_);
  std::string error;
  bool ok = false;
  try {
    ok = launch(pending->epoch.get(), &error);
  } catch (const std::exception& e) {
    graph_.abandon_start();
    error = e.what();
  }
  if (!ok) {
    std::cerr << "rtcosimd: the graph did not start: " << error << '\n';
    if (pending->at_launch) startup_failed_ = true;
    return std::make_pair(pending->client, reply_error("the graph did not start: " + error));
  }
  std::cerr << "rtcosimd: hosts agree; the graph runs\n";
  return std::make_pair(pending->client, pending->ok_reply);
}

void Daemon::stop_graph() {
  if (pending_start_) {
    // A start still waiting for the other hosts gives up within a round.
    graph_.run().cancel_coordination();
    pending_start_->epoch.wait();
    late_replies_.emplace_back(pending_start_->client, reply_error("the start was cancelled by stop"));
    pending_start_.reset();
    graph_.abandon_start();
    return;
  }
  graph_.stop();
}

std::string Daemon::status_json() {
  runtime::Graph* graph = graph_.graph();
  session::ServiceRecording& recording = graph_.recording();
  const session::RecordingState state{graph_.recorder(), recording.target(), nullptr, recording.error()};
  std::string summary = graph ? session::summary_json(*graph, {}, graph_.fifo() ? "fifo" : "other",
                                                      session::recording_json(*graph, state), graph_.remote())
                              : "null\n";
  if (!summary.empty() && summary.back() == '\n') summary.pop_back();
  // A task that stopped on a failure (an FMU, a state no longer a number, a
  // divergence, docs/stalls.md) fails the graph: the others run on and the
  // recording is kept, but nobody should read the run as good.
  return "\"running\":" + std::string(graph_.running() ? "true" : "false") +
         ",\"config\":" + base::json_string(graph_.file()) +
         ",\"starting\":" + std::string(pending_start_ ? "true" : "false") +
         ",\"recording\":" + (recording.target() ? base::json_string(recording.path()) : std::string("null")) +
         ",\"recording_error\":" +
         (recording.error().empty() ? std::string("null") : base::json_string(recording.error())) + ",\"replay_log\":" +
         (recording.logging() ? base::json_string(recording.replay_log_path()) : std::string("null")) +
         ",\"replay_log_error\":" +
         (recording.replay_log_error().empty() ? std::string("null")
                                               : base::json_string(recording.replay_log_error())) +
         ",\"tracing\":" + (trace_ ? base::json_string(trace_->directory) : std::string("null")) + host_json() +
         ",\"sync\":" + (graph_.live_sync() ? graph_.live_sync()->status_json() : std::string("null")) +
         ",\"failed\":[" + graph_.failed_json() + "],\"status\":" + summary;
}

std::string Daemon::live_json() {
  std::string out = "{\"ok\":true," + status_json() + ",\"live\":{\"t\":" + base::json_number(now_s() - web_started_) +
                    "," + feed_.json(graph_.graph(), graph_.recorder());
  if (web_) {
    const auto& c = web_->counters();
    out += ",\"web\":{\"clients\":" + std::to_string(web_->clients()) +
           ",\"connections\":" + std::to_string(c.connections.load()) +
           ",\"refused\":" + std::to_string(c.refused.load()) +
           ",\"bad_requests\":" + std::to_string(c.bad_requests.load()) +
           ",\"slow_dropped\":" + std::to_string(c.slow_dropped.load()) +
           ",\"snapshots\":" + std::to_string(c.snapshots.load()) + ",\"actions\":" + std::to_string(c.actions.load()) +
           ",\"forbidden\":" + std::to_string(c.forbidden.load()) + ",\"granted\":" + std::to_string(c.granted.load()) +
           ",\"cross_site\":" + std::to_string(c.cross_site.load()) +
           ",\"throttled\":" + std::to_string(c.throttled.load()) + "}";
  }
  return out + "}}";
}

// With --host: which host this is and the hosts that fell silent; nothing
// otherwise.
std::string Daemon::host_json() const {
  if (options_.host.empty()) return {};
  std::string lost;
  for (const auto& h : lost_hosts_) lost += (lost.empty() ? "" : ",") + base::json_string(h);
  return ",\"host\":" + base::json_string(options_.host) + ",\"lost_hosts\":[" + lost + "]";
}

config::LoadOptions Daemon::load_options() const {
  config::LoadOptions options;
  options.plugins = {options_.plugin_dirs, true};
  std::vector<std::string> roots = {options_.config_dir};
  roots.insert(roots.end(), options_.fmu_dirs.begin(), options_.fmu_dirs.end());
  options.file_roots = std::move(roots);
  options.file_roots_hint = "put the file there, or allow its directory with rtcosimd --fmu-dir DIR";
  return options;
}

std::string Daemon::read_reload_file(const std::string& file, std::string* text, std::string* label) const {
  // The daemon's own file is trusted; a file a client names is read only
  // from the configuration directory, without following links, and its
  // diagnostics reach the client redacted.
  std::string why;
  *label = graph_.file();
  const bool named = !file.empty();
  const int fd = named ? base::open_beneath(options_.config_dir, file, O_RDONLY, 0, &why)
                       : base::open_regular_file(graph_.file(), &why);
  if (fd < 0) return reply_error("reload: " + why);
  const bool read = base::read_all(fd, 4u << 20, text, &why);
  ::close(fd);
  if (named) *label = std::filesystem::path(file).is_absolute() ? file : options_.config_dir + "/" + file;
  if (!read) return reply_error("reload: " + *label + ": " + why);
  return {};
}

Daemon::Prepared Daemon::prepare_reload(const std::string& text, const std::string& label, bool named) const {
  // Loaded once: the loader's check and the build share it (and its FMUs' unpacking).
  const auto check = config::load_graph_text(text, label, load_options());
  if (!check.ok()) {
    std::string errors, full;
    if (named) {
      for (const auto& line : redacted(check.diagnostics, text)) errors += line + "\n";
    }
    for (const auto& d : check.diagnostics) {
      if (!named) errors += d.str() + "\n";
      full += d.str() + "\n";
    }
    std::cerr << "rtcosimd: reload refused:\n" << full;
    Prepared p;
    p.graph.label = label;
    p.graph.error = "the new file has errors; the running graph keeps running:\n" + errors;
    return p;
  }
  return prepare(check, text, label);
}

std::string Daemon::apply_reload(Prepared&& prepared, std::uint64_t client, bool* deferred) {
  // A file that loads but cannot start (real time refused, ...) gives the
  // previous graph back, running as it was (from the text it was built
  // from: the file may have changed since).
  const std::string label = prepared.graph.label;
  const std::string previous_file = graph_.file();
  const std::string previous_text = graph_.text();
  const bool was_running = graph_.running();
  std::string why, error;
  if (!commit(std::move(prepared), &why)) return reply_error(why);
  const std::string ok = reply_ok("\"config\":" + base::json_string(label));
  if (was_running && !start_graph(&error, client, deferred, ok)) {
    // The previous graph back, beside the loop too when it spans hosts.
    std::string restore_error;
    const std::string restored = reply_error(label + " cannot start: " + error + " — the previous graph (" +
                                             previous_file + ") was restored and runs");
    if (load_text(previous_text, previous_file, &restore_error) &&
        start_graph(&restore_error, client, deferred, restored)) {
      return deferred && *deferred ? std::string() : restored;
    }
    return reply_error(label + " cannot start: " + error + "; restoring " + previous_file +
                       " failed too: " + restore_error);
  }
  // A graph across hosts agrees on its start beside the loop; the client
  // is answered then (finish_start).
  if (deferred && *deferred) return {};
  return ok;
}

std::string Daemon::reload(const std::string& file) {
  std::string text, label;
  if (std::string refused = read_reload_file(file, &text, &label); !refused.empty()) return refused;
  return apply_reload(prepare_reload(text, label, !file.empty()));
}

std::string Daemon::begin_reload(const std::string& file, std::uint64_t client) {
  if (pending_reload_) return reply_error("a reload is being prepared — send this one once it is answered");
  std::string text, label;
  if (std::string refused = read_reload_file(file, &text, &label); !refused.empty()) return refused;
  // The build (FMUs unpacked, plugins loaded, the layout by dot) runs beside
  // the loop, which goes on serving signals, the watchdog and every client;
  // only the swap of the graphs, when it is done, is the loop's.
  auto pending = std::make_unique<PendingReload>();
  pending->client = client;
  try {
    pending->result =
        std::async(std::launch::async, [this, text = std::move(text), label = std::move(label), named = !file.empty()] {
          return prepare_reload(text, label, named);
        });
  } catch (const std::system_error& e) {
    return reply_error(std::string("reload: cannot start the worker that builds the graph: ") + e.what());
  }
  pending_reload_ = std::move(pending);
  return {};
}

std::optional<std::pair<std::uint64_t, std::string>> Daemon::finish_reload() {
  if (!pending_reload_ || pending_reload_->result.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
    return std::nullopt;
  }
  Prepared prepared = pending_reload_->result.get();
  const std::uint64_t client = pending_reload_->client;
  pending_reload_.reset();
  bool deferred = false;
  std::string reply = apply_reload(std::move(prepared), client, &deferred);
  return std::make_pair(client, std::move(reply));  // "" when deferred
}

}  // namespace rtcosim::daemon
