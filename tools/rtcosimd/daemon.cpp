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
#include "base/fd_ostream.hpp"
#include "base/json.hpp"
#include "base/safe_path.hpp"
#include "base/sha256.hpp"
#include "rt_config/loader.hpp"
#include "runtime/realtime.hpp"
#include "session/report/graph_report.hpp"
#include "session/report/recording_summary.hpp"
#include "session/report/run_summary.hpp"
#include "session/sync/sync_live.hpp"
#include "session/trace_session.hpp"
#include "tools/rtcosimd/control_client.hpp"
#include "tools/rtcosimd/graph_svg.hpp"

namespace rtcosim::daemon {

struct Daemon::TraceState {
  std::unique_ptr<session::TraceSession> session;
  std::string directory;
};

struct Daemon::PendingTrace {
  std::uint64_t client = 0;
  std::string directory;
  std::future<std::pair<std::unique_ptr<session::TraceSession>, std::string>> result;
};

// A reload whose graph is being built on a worker (docs/daemon.md): the
// client (0: SIGHUP) is answered when it is done.
struct Daemon::PendingReload {
  std::uint64_t client = 0;
  std::future<Prepared> result;
};

// A start waiting for the other hosts' agreement on a worker.
struct Daemon::PendingStart {
  std::uint64_t client = 0;  // 0: answered in the log
  bool at_launch = false;    // the daemon's own start: failing ends it (exit 1)
  std::string ok_reply;
  std::future<std::int64_t> epoch;  // CLOCK_MONOTONIC ns
};

namespace {

std::string reply_ok(const std::string& extra = {}) {
  return "{\"ok\":true" + (extra.empty() ? "" : "," + extra) + "}";
}
std::string reply_error(const std::string& why) { return "{\"ok\":false,\"error\":" + base::json_string(why) + "}"; }

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Requests of one client served per pass of the loop (docs/daemon.md).
constexpr int kRequestsPerPass = 16;

}  // namespace

Daemon::Daemon(Options options)
    : options_(std::move(options)),
      blocks_(tasks::BlockRegistry::with_builtins()),
      methods_(coupling::MethodRegistry::with_builtins()) {}

Daemon::~Daemon() {
  // A reload still being built reads the options and the block registry.
  if (pending_reload_) pending_reload_->result.wait();
  stop_graph();
}

namespace {

// A diagnostic as a client of the socket sees it: where, and the message
// with every quoted part replaced by '…' unless it is a plain word (letters,
// digits, '_', '.', '-', at most 64) of which the file holds no piece of 8
// characters (nor the whole), i.e. one of the loader's own words
// ('wires', a block type, a parameter the file lacks). So a reload of a
// file that is not a task graph never hands its content out through the
// socket, not even a key-like line (a web token file's token was echoed
// whole, being a plain word). The full text goes to the daemon's log. An
// apostrophe between two letters ("binary's" in an FMU's message) is not a
// quote.
std::size_t find_quote(const std::string& s, std::size_t from) {
  const auto letter = [](char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; };
  for (std::size_t q = s.find('\'', from); q != std::string::npos; q = s.find('\'', q + 1)) {
    if (!(q > 0 && q + 1 < s.size() && letter(s[q - 1]) && letter(s[q + 1]))) return q;
  }
  return std::string::npos;
}

// A message cut into quoted parts, tokens (runs without blanks, quotes or
// brackets) and what lies between them.
struct Segment {
  enum Kind { kBetween, kQuoted, kToken } kind;
  std::string text;
  bool blank = false;
};

std::vector<Segment> segments_of(const std::string& message) {
  std::vector<Segment> out;
  const auto unquoted = [&](const std::string& text) {
    const auto separator = [](char c) {
      return std::isspace(static_cast<unsigned char>(c)) != 0 || std::strchr("\"(),;[]{}<>", c) != nullptr;
    };
    for (std::size_t i = 0; i < text.size();) {
      std::size_t j = i;
      const bool sep = separator(text[i]);
      while (j < text.size() && separator(text[j]) == sep) ++j;
      out.push_back({sep ? Segment::kBetween : Segment::kToken, text.substr(i, j - i)});
      i = j;
    }
  };
  for (std::size_t i = 0; i < message.size();) {
    const std::size_t open = find_quote(message, i);
    const std::size_t close = open == std::string::npos ? open : find_quote(message, open + 1);
    if (close == std::string::npos) {
      unquoted(message.substr(i));
      break;
    }
    unquoted(message.substr(i, open - i));
    out.push_back({Segment::kQuoted, message.substr(open + 1, close - open - 1)});
    i = close + 1;
  }
  return out;
}

// Pieces of kPiece characters: what of a message the file holds anywhere,
// however the message shows it. A value cut short ("abc...") or joined to
// a unit (e.g. "7391846205ms") is never found whole in the file (issue 44:
// a 48-character token came back as its first 37, the redaction looking
// for it whole). The file is read once, each of its windows looked up
// among the messages' few thousand, so a 4 MiB file costs one pass on the
// reload's worker.
constexpr std::size_t kPiece = 8;

std::uint64_t piece_at(const std::string& s, std::size_t i) {
  std::uint64_t w = 0;
  std::memcpy(&w, s.data() + i, kPiece);
  return w;
}

// Unquoted, the loader writes its own words, paths it resolved, and values
// only as numbers (a duration without a unit: "= 7391846205 has no unit");
// a token is looked for in the file when it could be data (a digit, a
// capital), not when it is a lower-case word ('co_simulation' in an FMU's
// message is the loader's word even where the graph uses it too).
bool data_like(const std::string& token) {
  return token.size() >= kPiece && std::any_of(token.begin(), token.end(), [](char c) {
           return std::isdigit(static_cast<unsigned char>(c)) != 0 || std::isupper(static_cast<unsigned char>(c)) != 0;
         });
}

std::vector<std::string> redacted(const std::vector<config::Diagnostic>& diagnostics, const std::string& file_text) {
  const auto plain = [](const std::string& q) {
    return !q.empty() && q.size() <= 64 &&
           q.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") ==
               std::string::npos &&
           !(q.size() >= 3 && q.compare(q.size() - 3, 3, "...") == 0);  // a cut value
  };
  std::vector<std::vector<Segment>> messages;
  std::unordered_set<std::uint64_t> wanted, found;
  std::bitset<1u << 16> maybe;  // a first filter: most of the file's windows are no message's
  const auto bucket = [](std::uint64_t w) { return static_cast<std::size_t>((w * 0x9E3779B97F4A7C15ull) >> 48); };
  for (const auto& d : diagnostics) {
    messages.push_back(segments_of(d.message));
    for (auto& seg : messages.back()) {
      if (seg.kind == Segment::kQuoted) seg.blank = !plain(seg.text) || file_text.find(seg.text) != std::string::npos;
      const bool look = seg.kind == Segment::kQuoted ? !seg.blank : seg.kind == Segment::kToken && data_like(seg.text);
      for (std::size_t i = 0; look && i + kPiece <= seg.text.size(); ++i) {
        wanted.insert(piece_at(seg.text, i));
        maybe.set(bucket(piece_at(seg.text, i)));
      }
    }
  }
  for (std::size_t i = 0; !wanted.empty() && i + kPiece <= file_text.size(); ++i) {
    const std::uint64_t w = piece_at(file_text, i);
    if (maybe.test(bucket(w)) && wanted.count(w) != 0) found.insert(w);
  }
  std::vector<std::string> out;
  for (std::size_t k = 0; k < diagnostics.size(); ++k) {
    std::string message;
    for (auto& seg : messages[k]) {
      const bool look = seg.kind == Segment::kQuoted || (seg.kind == Segment::kToken && data_like(seg.text));
      for (std::size_t i = 0; look && !seg.blank && i + kPiece <= seg.text.size(); ++i) {
        seg.blank = found.count(piece_at(seg.text, i)) != 0;
      }
      if (seg.kind == Segment::kQuoted) {
        message += "'" + (seg.blank ? std::string("…") : seg.text) + "'";
      } else {
        message += seg.blank ? std::string("…") : seg.text;
      }
    }
    config::Diagnostic copy = diagnostics[k];
    copy.message = message;
    out.push_back(copy.str());
  }
  return out;
}

}  // namespace

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
  Prepared p;
  p.text = text;
  p.label = label;
  std::string diagnostics;
  for (const auto& d : loaded.diagnostics) diagnostics += d.str() + "\n";
  if (!loaded.ok()) {
    p.error = diagnostics;
    return p;
  }
  if (!diagnostics.empty()) std::cerr << diagnostics;
  // The daemon runs in real time only.
  if (const std::string why = loaded.graph.realtime_refusal(); !why.empty()) {
    p.error = label + ": " + why + "\n";
    return p;
  }
  try {
    // The running graph's registry is replaced only once the new graph is
    // built: a file that fails leaves everything as it was.
    p.methods = std::make_unique<coupling::MethodRegistry>(config::plugin_registry(loaded.graph, options_.plugin_dirs));
    auto graph = runtime::Graph::build(loaded.graph, blocks_, *p.methods);
    // The data files as the blocks just read them: a replay log of a run of
    // this graph names these, however long it runs before it is logged.
    p.data_files = runtime::replay_data_files(loaded.graph.diagram, blocks_);
    if (loaded.graph.sync.optimise.enabled) {
      // Refused now, with the running graph untouched, if it cannot run
      // (a measured signal it reads that the file does not record, ...).
      const runtime::Recorder trial(*graph, {});
      const session::LiveSync check(graph->spec(), blocks_, *graph, trial, 0.0);
    }
    if (!options_.host.empty()) {
      // As `rtcosim run --host`: only this host's tasks run.
      if (!loaded.graph.find_host(options_.host)) {
        std::string known;
        for (const auto& h : loaded.graph.hosts) known += (known.empty() ? "" : ", ") + h.name;
        p.error = label + ": --host " + options_.host +
                  (known.empty() ? ": the file declares no 'hosts:'" : ": no such host — expected one of: " + known) +
                  "\n";
        return p;
      }
#ifndef RTCOSIM_HAVE_DDS
      p.error = "this rtcosimd was built without Cyclone DDS (install cyclonedds-dev and rebuild); --host needs it\n";
      return p;
#endif
      graph->set_host(options_.host);
    }
    // Laid out before the running graph stops (dot takes up to 5 s).
    if (options_.web.port != 0) p.svg = lay_out(loaded.graph, &p.layout_why);
    p.graph = std::move(graph);
  } catch (const std::exception& e) {
    p.error = label + ": " + e.what() + "\n";
  }
  return p;
}

bool Daemon::commit(Prepared&& p, std::string* errors) {
  if (!p.error.empty() || !p.graph) {
    *errors = p.error.empty() ? p.label + ": no graph was built\n" : p.error;
    return false;
  }
  const std::string& label = p.label;
  const std::string& text_in = p.text;
  try {
    auto graph = std::move(p.graph);
    auto methods = std::move(*p.methods);
    graph_svg_ = std::move(p.svg);
    if (options_.web.port != 0) feed_.set_layout(!graph_svg_.empty(), p.layout_why);
    stop_graph();
    if (replay_log_) {
      // Armed for a run of the graph that goes now: it taps that graph's
      // sources and links, and the next run would be another graph's.
      finish_replay_log();
      replay_log_error_ = "the reload came before the logged run started: the replay log holds no run";
      std::cerr << "rtcosimd: " << replay_log_error_ << '\n';
    }
    if (recording_ && recording_->columns()) {
      // A column file holds one graph's tasks and signals: the reload ends
      // it, complete (docs/daemon.md).
      std::cerr << "rtcosimd: the reload ends the recording to " << record_path_ << '\n';
      record_error_ = end_recording();
    }
    methods_ = std::move(methods);
    live_sync_.reset();
    remote_.reset();  // the old graph's
    graph_ = std::move(graph);
    // Memory stays fixed for months: the rings, and the latest sample per
    // signal for the status preview.
    // With the live view, the latest 4096 samples per signal for its charts.
    // The state synchronisation reads the latest 4096 too.
    const bool keep_latest = options_.web.port != 0 || graph_->spec().sync.optimise.enabled;
    recorder_ = std::make_unique<runtime::Recorder>(
        *graph_, runtime::Recorder::Options{.keep = keep_latest ? std::size_t{4096} : std::size_t{1},
                                            .probes = options_.web.port != 0 ? kProbeSlots : std::size_t{0}});
    next_probe_slot_ = 0;
    feed_.reset();
    if (web_) web_->set_graph_svg(graph_svg_);
    if (recording_) {
      // The same file goes on; time_s starts again at 0 after the marker.
      recording_->mark_reload(++reloads_recorded_);
      drain_recorder();
    }
    config_file_ = label;
    config_text_ = text_in;
    data_files_ = std::move(p.data_files);
    return true;
  } catch (const std::exception& e) {
    *errors = label + ": " + e.what() + "\n";
    return false;
  }
}

std::string Daemon::lay_out(const config::GraphSpec& spec, std::string* why) const {
  std::string svg =
      options_.dot_program.empty() ? std::string() : render_svg(options_.dot_program, session::graph_dot(spec), why);
  if (options_.dot_program.empty()) *why = "rtcosimd runs with --dot none";
  // What the page inserts: the <svg> element, without XML prologue.
  if (const auto at = svg.find("<svg"); at != std::string::npos) svg.erase(0, at);
  if (!why->empty()) std::cerr << "rtcosimd: live view: the page draws the graph itself: " << *why << '\n';
  return svg;
}

bool Daemon::start_graph(std::string* error, std::uint64_t client, bool* deferred, const std::string& ok_reply) {
  if (running_) return true;
  if (pending_start_) {
    *error = "the graph is starting already (waiting for the other hosts)";
    return false;
  }
  if (!graph_) {
    *error = "no graph is loaded";
    return false;
  }
  run_ = std::make_unique<session::RealtimeRun>(*graph_, recorder_.get());
  remote_ = run_->remote();
  report_ = run_->prepare();
  for (const auto& w : report_.warnings) std::cerr << "warning: " << w << '\n';
  if (!report_.ok) {
    run_.reset();
    *error = "real-time set-up failed: " + (report_.errors.empty() ? std::string("?") : report_.errors.front());
    return false;
  }
  for (const auto& w : graph_->link_warnings()) std::cerr << "warning: " << w << '\n';
  last_frames_.assign(graph_->tasks().size(), 0);  // notify_status reads it while the hosts agree
  std::int64_t epoch_ns = 0;
  if (run_->distributed()) {
    std::cerr << "rtcosimd: host " << graph_->host() << ": waiting for the other hosts (at most "
              << base::format_duration(graph_->spec().dds.discovery_timeout) << ")\n";
    lost_hosts_.clear();
    try {
      run_->open_bridge();
    } catch (const std::exception& e) {
      run_.reset();
      *error = e.what();
      return false;
    }
    if (deferred) {
      // Beside the loop: signals, the watchdog and every client are
      // served while the hosts agree (up to discovery_timeout).
      auto pending = std::make_unique<PendingStart>();
      pending->client = client;
      pending->ok_reply = ok_reply.empty() ? reply_ok() : ok_reply;
      session::RealtimeRun* run = run_.get();
      pending->epoch = std::async(std::launch::async, [run] { return run->coordinate(); });
      pending_start_ = std::move(pending);
      *deferred = true;
      return true;
    }
    try {
      epoch_ns = run_->coordinate();
    } catch (const std::exception& e) {
      // The hosts did not agree, or no worker could be started: nothing ran.
      run_.reset();
      *error = e.what();
      return false;
    }
  }
  return launch(epoch_ns, error);
}

bool Daemon::launch(std::int64_t epoch_ns, std::string* error) {
  try {
    // Simulation time starts again at 0: so do the kept series and the
    // live view's (the previous run's samples were drained at its stop).
    if (recorder_) recorder_->clear_kept();
    feed_.reset();
    if (replay_log_) {
      // This run is the logged one; its batches count from here.
      replay_base_.clear();
      for (const auto& c : recorder_->counts()) replay_base_.push_back(c.samples);
    }
    run_->start(0.0, epoch_ns, replay_log_.get());  // until stopped
    replay_log_running_ = replay_log_ != nullptr;
  } catch (const std::exception& e) {
    // realtime: required and a thread could not be set up: nothing ran.
    run_.reset();
    *error = e.what();
    if (replay_log_) {
      // Its rings hold the reset's words of a run that did not happen.
      replay_log_broken_ = true;
      finish_replay_log();
      replay_log_error_ = "the start failed: the replay log holds no run";
    }
    return false;
  }
  for (const auto& e : run_->thread_errors()) std::cerr << "warning: " << e << '\n';
  running_ = true;
  // A fresh run starts at t = 0: so does its synchronisation.
  live_sync_.reset();
  if (graph_->spec().sync.optimise.enabled) {
    live_sync_ = std::make_unique<session::LiveSync>(graph_->spec(), blocks_, *graph_, *recorder_, 0.0);
  }
  last_frames_.assign(graph_->tasks().size(), 0);
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
    run_.reset();
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
    run_->cancel_coordination();
    pending_start_->epoch.wait();
    late_replies_.emplace_back(pending_start_->client, reply_error("the start was cancelled by stop"));
    pending_start_.reset();
    run_.reset();
    return;
  }
  if (!run_) return;
  (void)run_->stop();
  run_.reset();
  running_ = false;
  drain_recorder();
  if (replay_log_running_) finish_replay_log();
}

void Daemon::drain_recorder() {
  if (!recorder_) return;
  if (recording_) {
    recording_->drain(*recorder_);
  } else {
    recorder_->drain();
  }
  drain_replay_log();
  if (recording() && recording()->failed()) {
    // A write error ends the recording; status and `record stop` report it.
    record_error_ = recording()->error();
    std::cerr << "rtcosimd: " << record_error_ << '\n';
    recording_.reset();
    record_path_.clear();
  }
}

std::string Daemon::end_recording() {
  drain_recorder();
  std::string error;
  if (runtime::ColumnFile* columns = recording_ ? recording_->columns() : nullptr;
      columns && graph_ && columns->flush()) {
    const session::RecordingState state{recorder_.get(), columns, nullptr, {}};
    columns->set_summary(session::summary_json(*graph_, {}, report_.fifo ? "fifo" : "other",
                                               session::recording_json(*graph_, state), remote_.get()));
  }
  if (recording() && !recording()->commit()) error = recording()->error();
  recording_.reset();
  record_path_.clear();
  rotation_ = {};
  return error;
}

std::string Daemon::status_json() {
  const session::RecordingState recording{recorder_.get(), this->recording(), nullptr, record_error_};
  std::string summary = graph_ ? session::summary_json(*graph_, {}, report_.fifo ? "fifo" : "other",
                                                       session::recording_json(*graph_, recording), remote_.get())
                               : "null\n";
  if (!summary.empty() && summary.back() == '\n') summary.pop_back();
  // A task that stopped on a failure (an FMU, a state no longer a number, a
  // divergence, docs/stalls.md) fails the graph: the others run on and the
  // recording is kept, but nobody should read the run as good.
  std::string failed;
  if (graph_) {
    for (const auto& t : graph_->tasks()) {
      if (!t->failed()) continue;
      failed += std::string(failed.empty() ? "" : ",") + "{\"task\":" + base::json_string(t->spec().name) +
                ",\"failure\":" + base::json_string(t->failure()) + "}";
    }
  }
  return "\"running\":" + std::string(running_ ? "true" : "false") + ",\"config\":" + base::json_string(config_file_) +
         ",\"starting\":" + std::string(pending_start_ ? "true" : "false") +
         ",\"recording\":" + (this->recording() ? base::json_string(record_path_) : std::string("null")) +
         ",\"recording_error\":" + (record_error_.empty() ? std::string("null") : base::json_string(record_error_)) +
         ",\"replay_log\":" + (replay_log_ ? base::json_string(replay_log_path_) : std::string("null")) +
         ",\"replay_log_error\":" +
         (replay_log_error_.empty() ? std::string("null") : base::json_string(replay_log_error_)) +
         ",\"tracing\":" + (trace_ ? base::json_string(trace_->directory) : std::string("null")) + host_json() +
         ",\"sync\":" + (live_sync_ ? live_sync_->status_json() : std::string("null")) + ",\"failed\":[" + failed +
         "],\"status\":" + summary;
}

std::string Daemon::live_json() {
  std::string out = "{\"ok\":true," + status_json() + ",\"live\":{\"t\":" + base::json_number(now_s() - web_started_) +
                    "," + feed_.json(graph_.get(), recorder_.get());
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

std::string Daemon::handle(const std::string& line) { return respond(line, 0, nullptr); }

bool peer_in_group(std::uint32_t uid, std::uint32_t gid, const std::vector<std::uint32_t>& groups,
                   std::uint32_t own_uid, std::uint32_t socket_gid) noexcept {
  if (uid == 0 || uid == own_uid || gid == socket_gid) return true;
  return std::find(groups.begin(), groups.end(), socket_gid) != groups.end();
}

bool peer_in_group(int fd, std::uint32_t socket_gid) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return false;
  // The peer's supplementary groups (Linux 4.13): with 64 first, then as
  // many as the kernel says (at most NGROUPS_MAX, 65536); none when it
  // cannot tell (a failed call leaves the buffer meaningless).
  std::vector<gid_t> groups(64);
  len = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
  bool known = getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &len) == 0;
  if (!known && errno == ERANGE && len <= 65536 * sizeof(gid_t)) {
    groups.resize(len / sizeof(gid_t));
    known = getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &len) == 0;
  }
  groups.resize(known ? std::min<std::size_t>(groups.size(), len / sizeof(gid_t)) : 0);
  const std::vector<std::uint32_t> list(groups.begin(), groups.end());
  return peer_in_group(cred.uid, cred.gid, list, geteuid(), socket_gid);
}

std::string Daemon::web_token(bool in_group) {
  if (!web_) return reply_error("the live view is off — start rtcosimd with --listen ADDRESS:PORT (docs/live.md)");
  // The web thread's forwarded actions come from the daemon's own user but
  // never ask for this (it forwards start, stop, reload and record only).
  if (!in_group) {
    return reply_error("a web token is only given to root, rtcosimd's user and the control socket's group");
  }
  // GRND_NONBLOCK: before the kernel's pool is seeded (early boot) a plain
  // getrandom waits, and this runs in the daemon's loop.
  unsigned char random[24];
  ssize_t got = 0;
  while ((got = getrandom(random, sizeof random, GRND_NONBLOCK)) < 0 && errno == EINTR) {
  }
  if (got != static_cast<ssize_t>(sizeof random)) {
    return reply_error(got < 0 && errno == EAGAIN
                           ? std::string("no random bytes for a token yet: the kernel's random pool is not "
                                         "initialised (early boot) — try again in a moment")
                           : std::string("no random bytes for a token: ") +
                                 (got < 0 ? std::strerror(errno) : "a short read from getrandom"));
  }
  std::string token;
  for (const unsigned char b : random) {
    static const char* hex = "0123456789abcdef";
    token += hex[b >> 4];
    token += hex[b & 15];
  }
  web_->grant(token, options_.web.token_lifetime_s);
  return reply_ok(
      "\"token\":\"" + token + "\",\"expires_in_s\":" + base::json_number(options_.web.token_lifetime_s) + ",\"url\":" +
      base::json_string("http://" + options_.web.address + ":" + std::to_string(web_->port()) + "/#token=" + token));
}

std::string Daemon::probe(const std::string& signal) {
  if (!recorder_ || recorder_->probes().empty()) {
    return reply_error("probes are part of the live view — start rtcosimd with --listen ADDRESS:PORT (docs/live.md)");
  }
  const std::size_t index = recorder_->find_probeable(signal);
  if (index == runtime::Recorder::kNoProbe) {
    std::string some;
    const auto& all = recorder_->probeable();
    for (std::size_t i = 0; i < all.size() && i < 8; ++i) some += (some.empty() ? "" : ", ") + all[i].signal;
    return reply_error("no output '" + signal.substr(0, 200) +
                       "' in the running graph's tasks — expected BLOCK.PORT or BLOCK.PORT[i], e.g. " + some + " (" +
                       std::to_string(all.size()) + " in all; the live view's graph.signals lists them)");
  }
  const auto& slots = recorder_->probes();
  std::size_t slot = slots.size();
  for (std::size_t i = 0; i < slots.size(); ++i) {
    if (slots[i].probe == index) slot = i;
  }
  if (slot == slots.size()) {
    // The slot chosen longest ago makes room.
    slot = next_probe_slot_;
    next_probe_slot_ = (next_probe_slot_ + 1) % slots.size();
    recorder_->set_probe(slot, index);
  }
  return reply_ok("\"slot\":" + std::to_string(slot) + ",\"signal\":" + base::json_string(signal) +
                  ",\"task\":" + base::json_string(slots[slot].task));
}

std::string Daemon::respond(const std::string& line, std::uint64_t client, bool* deferred, bool in_group) {
  std::string why;
  const auto request = base::parse_flat_object(line, &why);
  if (!request)
    return reply_error("malformed request: " + why + " — expected one JSON object per line, e.g. {\"cmd\":\"status\"}");
  const auto get = [&](const std::string& key) {
    const auto it = request->find(key);
    return it == request->end() ? std::string() : it->second;
  };
  const std::string cmd = get("cmd");
  if (cmd == "status") return reply_ok(status_json());
  if (cmd == "web-token") return web_token(in_group);
  if (cmd == "probe") return probe(get("signal"));
  if (cmd == "stop") {
    stop_graph();
    return reply_ok();
  }
  if (cmd == "start") {
    if (!start_graph(&why, client, deferred)) return reply_error(why);
    return deferred && *deferred ? std::string() : reply_ok();
  }
  for (const char* key : {"file", "dir"}) {
    if (get(key).find('\0') != std::string::npos) {
      return reply_error(std::string("\"") + key + "\" contains a NUL character — give a plain name");
    }
  }
  if (cmd == "reload") {
    if (!deferred) return reload(get("file"));
    std::string now = begin_reload(get("file"), client);
    *deferred = now.empty();
    return now;
  }
  if (cmd == "record") {
    const std::string action = get("action");
    if (action == "start") {
      return record_start(get("file"), get("format"), get("overwrite") == "true", get("max_file_size"),
                          get("rotate_every"), get("replay_log"));
    }
    if (action == "stop") {
      if (const std::string error = end_recording(); !error.empty()) record_error_ = error;
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
    if (action == "start" && !deferred) return trace_start(get("dir"));
    if (action == "start") {
      std::string now;
      begin_trace_start(get("dir"), client, &now);
      *deferred = now.empty();
      return now;
    }
    if (action == "stop") {
      if (!trace_) return reply_error(pending_trace_ ? "the trace session is still being set up" : "not tracing");
      const auto discarded = trace_->session->stop();
      const std::string dir = trace_->directory;
      const std::string stop_error = trace_->session->stop_error();
      trace_.reset();
      if (!stop_error.empty()) return reply_error("trace stop: " + stop_error + " (the trace is in " + dir + ")");
      return reply_ok("\"dir\":" + base::json_string(dir) + ",\"discarded_events\":" + std::to_string(discarded));
    }
    return reply_error("trace needs \"action\": \"start\" or \"stop\"");
  }
  if (cmd.empty())
    return reply_error("the request has no \"cmd\" — expected one of: status, stop, start, reload, record, trace");
  return reply_error("unknown command '" + cmd +
                     "' — expected one of: status, stop, start, reload, record, trace, probe, web-token");
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
  *label = config_file_;
  const bool named = !file.empty();
  const int fd = named ? base::open_beneath(options_.config_dir, file, O_RDONLY, 0, &why)
                       : base::open_regular_file(config_file_, &why);
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
    p.label = label;
    p.error = "the new file has errors; the running graph keeps running:\n" + errors;
    return p;
  }
  return prepare(check, text, label);
}

std::string Daemon::apply_reload(Prepared&& prepared, std::uint64_t client, bool* deferred) {
  // A file that loads but cannot start (real time refused, ...) gives the
  // previous graph back, running as it was (from the text it was built
  // from: the file may have changed since).
  const std::string label = prepared.label;
  const std::string previous_file = config_file_;
  const std::string previous_text = config_text_;
  const bool was_running = running_;
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

namespace {

// Rotation bounds (docs/daemon.md): a file is cut at most once a second,
// and never below the size the format starts at (an empty HDF5 file is
// about 18 kB: a smaller limit cut every file at once, 799 files in 10 s).
constexpr double kMinRotateBytes = 4000.0;             // "4kB"
constexpr double kMinColumnarRotateBytes = 1000000.0;  // "1MB": HDF5 and MAT
constexpr double kMinRotateSeconds = 1.0;

// "64MB", "512k", "1G", "1048576": bytes; 0 with `error` set otherwise.
std::uint64_t parse_size(const std::string& text, std::string* error) {
  std::size_t end = 0;
  double value = 0.0;
  try {
    value = std::stod(text, &end);
  } catch (const std::exception&) {
    end = 0;
  }
  std::string unit = text.substr(end);
  for (auto& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const double scale = unit.empty() || unit == "b"   ? 1.0
                       : unit == "k" || unit == "kb" ? 1e3
                       : unit == "m" || unit == "mb" ? 1e6
                       : unit == "g" || unit == "gb" ? 1e9
                                                     : 0.0;
  if (end == 0 || !(value > 0.0) || scale == 0.0 || value * scale < kMinRotateBytes || value * scale > 1e15) {
    *error = "max_file_size '" + text + "' — expected a size of 4kB or more, e.g. \"64MB\", \"512kB\", \"1GB\"";
    return 0;
  }
  return static_cast<std::uint64_t>(value * scale);
}

// "run.h5", 2 -> "run.2.h5" (the suffix before the extension, in the same directory).
std::string rotated_name(const std::string& name, std::uint64_t n) {
  const auto slash = name.rfind('/');
  const auto dot = name.rfind('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash) || dot == 0) {
    return name + "." + std::to_string(n);
  }
  return name.substr(0, dot) + "." + std::to_string(n) + name.substr(dot);
}

}  // namespace

namespace {

// A file of a `record start`, opened beneath the recording directory and
// not yet written: one this request created is removed again when the
// request is refused after all, and an existing one (overwrite) is
// truncated only once everything is accepted.
struct NewFile {
  int fd = -1;
  std::string path;  // the full name, as status shows it
  bool created = false;
};

bool open_new_file(const std::string& root, const std::string& name, bool overwrite, NewFile* f, std::string* why) {
  f->path = std::filesystem::path(name).is_absolute() ? name : root + "/" + name;
  f->fd = base::open_beneath(root, name, O_WRONLY | O_CREAT | O_EXCL, 0640, why);
  f->created = f->fd >= 0;
  // An existing one, when it may be overwritten: the reason it cannot be
  // (a FIFO, a link) is this open's.
  if (f->fd < 0 && overwrite) f->fd = base::open_beneath(root, name, O_WRONLY, 0, why);
  return f->fd >= 0;
}

void discard(NewFile& f) {
  if (f.fd >= 0) ::close(f.fd);
  if (f.created) ::unlink(f.path.c_str());
  f = {};
}

// Two names of one file (a hard link, another spelling): refused before
// either is truncated.
bool same_file(int a, int b) {
  struct stat sa {
  }, sb{};
  return ::fstat(a, &sa) == 0 && ::fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

// A name in the recording directory as one path: "x", "./x", "sub/../x"
// and "/recordings/x" are one file.
std::filesystem::path canonical_in(const std::string& root, const std::string& name) {
  std::error_code ec;
  const std::filesystem::path full = std::filesystem::path(name).is_absolute()
                                         ? std::filesystem::path(name)
                                         : std::filesystem::absolute(root, ec) / name;
  const auto canonical = std::filesystem::weakly_canonical(full, ec);
  return ec ? full.lexically_normal() : canonical;
}

}  // namespace

std::string Daemon::record_start(const std::string& file, const std::string& format_name, bool overwrite,
                                 const std::string& max_file_size, const std::string& rotate_every,
                                 const std::string& replay_log) {
  // The whole request is checked, and its files opened, before anything of
  // the daemon changes: a refused one leaves the running recording, its
  // rotation and the replay log as they were, and no file behind (issue 44:
  // a refused request replaced the running recording's rotation and armed
  // its replay log).
  Rotation rotation;
  std::string why;
  if (file.empty()) return reply_error("record start needs \"file\"");
  if (!recorder_ || recorder_->empty()) return reply_error("the graph records no signals (add a 'record:' section)");
  const auto format = runtime::record_format_for(file, format_name, &why);
  if (!format) return reply_error("record: " + why);
  if (!replay_log.empty()) {
    // A replay starts from the state every run starts from: the log holds
    // a run from its first frame (docs/replay.md, "The daemon").
    if (running_ || pending_start_) {
      return reply_error(
          "record: replay_log: the graph is running — a replay log holds a run from its start: send stop, then "
          "record start with replay_log, then start");
    }
    if (replay_log_) return reply_error("record: replay_log: the run is already logged to " + replay_log_path_);
    if (!graph_) return reply_error("record: replay_log: no graph is loaded");
    if (const std::string refusal = runtime::replay_log_refusal(*graph_); !refusal.empty()) {
      return reply_error("record: replay_log: " + config_file_ + " cannot be replayed exactly: " + refusal);
    }
    // Both would write into one file (with overwrite, each truncating what
    // the other wrote).
    if (canonical_in(options_.recording_dir, replay_log) == canonical_in(options_.recording_dir, file)) {
      return reply_error("record: replay_log '" + replay_log + "' is the recording's own file ('" + file +
                         "') — name another file for the replay log, e.g. run.rpl");
    }
  }
  if (!max_file_size.empty() && (rotation.max_bytes = parse_size(max_file_size, &why)) == 0) {
    return reply_error("record: " + why);
  }
  if (rotation.max_bytes > 0 && static_cast<double>(rotation.max_bytes) < kMinColumnarRotateBytes &&
      runtime::is_columnar(*format)) {
    return reply_error("record: max_file_size '" + max_file_size + "' — a " + runtime::to_string(*format) +
                       " file starts at tens of kB: expected 1MB or more for hdf5, mat73 and mat5 (4kB or more "
                       "for csv)");
  }
  if (!rotate_every.empty()) {
    const auto every = base::parse_duration(rotate_every, &why);
    if (!every || !(*every >= kMinRotateSeconds)) {
      return reply_error("record: rotate_every '" + rotate_every + "'" + (why.empty() ? "" : ": " + why) +
                         " — expected a duration of 1s or more, e.g. \"1h\", \"10min\"");
    }
    rotation.every_s = *every;
  }
  rotation.name = file;
  rotation.format = format_name;

  NewFile target, log_file;
  if (!open_new_file(options_.recording_dir, file, overwrite, &target, &why)) return reply_error("record: " + why);
  if (!replay_log.empty()) {
    if (!open_new_file(options_.recording_dir, replay_log, overwrite, &log_file, &why)) {
      discard(target);
      return reply_error("record: replay_log: " + why);
    }
    if (same_file(target.fd, log_file.fd)) {
      discard(target);
      discard(log_file);
      return reply_error("record: replay_log '" + replay_log + "' is the recording's own file ('" + file +
                         "') — name another file for the replay log, e.g. run.rpl");
    }
  }
  // The running recording is completed into its file after the new files
  // are emptied: overwriting that file would have both write into it.
  struct stat running {};
  if (recording() && ::stat(record_path_.c_str(), &running) == 0) {
    for (const NewFile* f : {&target, &log_file}) {
      struct stat st {};
      if (f->fd >= 0 && ::fstat(f->fd, &st) == 0 && st.st_dev == running.st_dev && st.st_ino == running.st_ino) {
        const std::string name = f == &target ? file : replay_log;
        discard(target);
        discard(log_file);
        return reply_error("record: '" + name + "' is the running recording's file (" + record_path_ +
                           ") — send record stop first, or name another file");
      }
    }
  }
  // Accepted. What can still fail is writing the files' beginnings (a full
  // disk, the HDF5 library); then the new files go again and the running
  // recording goes on, but an overwritten file has been emptied.
  for (NewFile* f : {&target, &log_file}) {
    if (f->fd >= 0 && !f->created && ::ftruncate(f->fd, 0) != 0) {
      why = "cannot empty '" + f->path + "' to overwrite it: " + std::strerror(errno);
      discard(target);
      discard(log_file);
      return reply_error("record: " + why);
    }
  }
  auto recording =
      session::Recording::open(*format, target.path, target.fd, *graph_, *recorder_, config_text_, false, &why);
  target.fd = -1;  // the writer's now, closed with it
  if (!recording) {
    discard(target);
    discard(log_file);
    return reply_error("record: " + why);
  }
  std::unique_ptr<runtime::ReplayLog> log;
  if (!replay_log.empty()) {
    log = make_replay_log(log_file.path, log_file.fd, &why);
    log_file.fd = -1;
    if (!log) {
      recording.reset();
      discard(target);
      discard(log_file);
      return reply_error("record: replay_log: " + why);
    }
  }
  install_recording(std::move(recording), target.path, false);
  rotation.started = now_s();
  rotation_ = rotation;
  std::string reply = reply_ok("\"file\":" + base::json_string(record_path_));
  if (log) {
    replay_log_ = std::move(log);
    replay_log_name_ = replay_log;
    replay_log_path_ = log_file.path;
    replay_log_next_ = 1;
    replay_log_running_ = false;
    replay_log_error_.clear();
    reply.insert(reply.size() - 1, ",\"replay_log\":" + base::json_string(replay_log_path_));
  }
  return reply;
}

std::unique_ptr<runtime::ReplayLog> Daemon::make_replay_log(const std::string& path, int fd, std::string* why) const {
  const std::string graph_file = std::filesystem::path(config_file_).is_absolute() || config_file_.empty()
                                     ? config_file_
                                     : std::filesystem::absolute(config_file_).lexically_normal().string();
  auto log = std::make_unique<runtime::ReplayLog>(
      *graph_, path,
      runtime::ReplayLog::Header{graph_file, base::sha256_hex(config_text_), 0, "real time (rtcosimd)", graph_->host(),
                                 data_files_});
  if (!log->adopt(fd, path, why)) return nullptr;
  return log;
}

void Daemon::drain_replay_log() {
  if (!replay_log_ || !replay_log_running_) return;
  // Per recorded task, its samples of this run so far: where this batch of
  // the recording ends, so that a replay writes the same batches.
  std::vector<std::uint64_t> recorded;
  const auto counts = recorder_->counts();
  for (std::size_t i = 0; i < counts.size(); ++i) {
    recorded.push_back(counts[i].samples - (i < replay_base_.size() ? replay_base_[i] : 0));
  }
  replay_log_->drain(recorded);
}

void Daemon::finish_replay_log() {
  if (!replay_log_) return;
  if (replay_log_broken_) {
    replay_log_.reset();
    replay_log_running_ = replay_log_broken_ = false;
    return;
  }
  drain_replay_log();
  std::string why;
  const bool started = replay_log_running_;
  if (!replay_log_->finish(&why)) {
    replay_log_error_ = why;
    std::cerr << "rtcosimd: " << why << '\n';
  } else if (started) {
    std::cerr << "rtcosimd: replay log written to " << replay_log_path_
              << (replay_log_next_ > 1 ? " and the " + std::to_string(replay_log_next_ - 1) + " file(s) it goes on in"
                                       : std::string())
              << " (" << replay_log_->bytes() << " bytes)\n";
  }
  replay_log_.reset();
  replay_log_running_ = false;
}

void Daemon::rotate_replay_log() {
  if (!replay_log_ || replay_log_broken_) return;
  std::string why;
  const std::string next = rotated_name(replay_log_name_, replay_log_next_++);
  const int fd = base::open_beneath(options_.recording_dir, next, O_WRONLY | O_CREAT | O_EXCL, 0640, &why);
  const std::string path = std::filesystem::path(next).is_absolute() ? next : options_.recording_dir + "/" + next;
  if (fd < 0 || !replay_log_->rotate(fd, path, &why)) {
    // The files so far stay a log that ends here, incomplete. The log
    // itself stays until the run stops: the run's threads put their words
    // into its rings (which fill and count) until they are joined.
    replay_log_error_ = "rotating the replay log to '" + next + "' failed: " + why;
    std::cerr << "rtcosimd: " << replay_log_error_ << '\n';
    replay_log_broken_ = true;
  }
}

void Daemon::rotate_if_due() {
  if (!recording() || (rotation_.max_bytes == 0 && rotation_.every_s == 0.0)) return;
  if (now_s() - rotation_.started < kMinRotateSeconds) return;
  const bool full = rotation_.max_bytes > 0 && recording()->file_bytes() >= rotation_.max_bytes;
  const bool old = rotation_.every_s > 0.0 && now_s() - rotation_.started >= rotation_.every_s;
  if (!full && !old) return;
  // The current file is completed (each file stands on its own), then the
  // next one starts with the samples that follow.
  Rotation rotation = rotation_;
  if (const std::string error = end_recording(); !error.empty()) {
    record_error_ = error;
    std::cerr << "rtcosimd: " << error << '\n';
    return;
  }
  const std::string next = rotated_name(rotation.name, rotation.next++);
  const std::string reply = open_recording(next, rotation.format, true);
  if (!recording()) {
    record_error_ = "rotating the recording to '" + next + "' failed: " + reply;
    std::cerr << "rtcosimd: " << record_error_ << '\n';
    return;
  }
  rotate_replay_log();
  rotation.started = now_s();
  rotation_ = rotation;
}

std::string Daemon::open_recording(const std::string& file, const std::string& format_name, bool continued) {
  if (!recorder_ || recorder_->empty()) return reply_error("the graph records no signals (add a 'record:' section)");
  std::string why;
  const auto format = runtime::record_format_for(file, format_name, &why);
  if (!format) return reply_error("record: " + why);
  NewFile target;
  if (!open_new_file(options_.recording_dir, file, false, &target, &why)) return reply_error("record: " + why);
  auto recording =
      session::Recording::open(*format, target.path, target.fd, *graph_, *recorder_, config_text_, false, &why);
  target.fd = -1;
  if (!recording) {
    discard(target);
    return reply_error("record: " + why);
  }
  install_recording(std::move(recording), target.path, continued);
  return reply_ok("\"file\":" + base::json_string(record_path_));
}

void Daemon::install_recording(std::unique_ptr<session::Recording> recording, const std::string& path, bool continued) {
  // A recording running until now is completed first, as `record stop`;
  // a new one starts with the samples that follow (a rotated one with the
  // next sample of the previous file: the rings are not drained in between).
  if (this->recording()) (void)end_recording();
  if (!continued) drain_recorder();
  // CSV: whole-row batches, one write(2) each; a write error ends the
  // recording with a count of what was lost (docs/recording.md). A column
  // file: the daemon keeps no frame log, so it holds the signals, the graph
  // text and, at the end, the summary.
  recording_ = std::move(recording);
  record_path_ = path;
  record_error_.clear();
  reloads_recorded_ = 0;
}

std::string Daemon::trace_start(const std::string& dir) {
  std::string reply;
  begin_trace_start(dir, 0, &reply);
  if (!reply.empty()) return reply;
  // Called directly (tests, SIGHUP-less callers): wait for the worker.
  pending_trace_->result.wait();
  return finish_trace_start()->second;
}

void Daemon::begin_trace_start(const std::string& dir, std::uint64_t client, std::string* reply_now) {
  if (trace_) {
    *reply_now = reply_error("already tracing to " + trace_->directory);
    return;
  }
  if (pending_trace_) {
    *reply_now = reply_error("a trace session is being set up");
    return;
  }
  if (dir.empty()) {
    *reply_now = reply_error("trace start needs \"dir\"");
    return;
  }
  // The trace goes to a new directory directly in the recording directory.
  std::string why;
  const auto full = base::make_dir_beneath(options_.recording_dir, dir, 0750, &why);
  if (full.empty()) {
    *reply_now = reply_error("trace: " + why);
    return;
  }
  pending_trace_ = std::make_unique<PendingTrace>();
  pending_trace_->client = client;
  pending_trace_->directory = full;
  pending_trace_->result = std::async(std::launch::async, [full] {
    std::string error;
    auto session = session::TraceSession::start(full, 10000.0, &error);
    return std::make_pair(std::move(session), error);
  });
}

std::optional<std::pair<std::uint64_t, std::string>> Daemon::finish_trace_start() {
  if (!pending_trace_ || pending_trace_->result.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
    return std::nullopt;
  }
  auto [session, error] = pending_trace_->result.get();
  const auto client = pending_trace_->client;
  const auto dir = pending_trace_->directory;
  pending_trace_.reset();
  if (!session) return std::make_pair(client, reply_error(error));
  trace_ = std::make_unique<TraceState>();
  trace_->session = std::move(session);
  trace_->directory = dir;
  if (graph_) graph_->trace_names();
  return std::make_pair(client, reply_ok("\"dir\":" + base::json_string(dir)));
}

void Daemon::notify_status() {
  if (!graph_) return;
  if (run_ && !pending_start_) {
    const auto events = run_->take_events();
    for (const auto& h : events.lost_hosts) {
      std::cerr << "rtcosimd: error: host '" << h << "' fell silent (no announce for "
                << session::RealtimeRun::host_silence()
                << " s); the tasks here keep running, their inputs from it held at the horizon\n";
      lost_hosts_.push_back(h);
    }
    for (const auto& w : events.clock_warnings) std::cerr << "rtcosimd: warning: " << w << '\n';
  }
  std::uint64_t frames = 0, overruns = 0;
  std::int64_t worst = 0;
  bool progress = true;
  std::string failed, ended;
  for (std::size_t i = 0; i < graph_->tasks().size(); ++i) {
    const auto& s = graph_->tasks()[i]->stats();
    const auto f = s.frames.load();
    // A task that stopped on a failure is reported, not restarted: a
    // restart would run the same graph into the same failure.
    const bool stopped = graph_->tasks()[i]->failed();
    if (stopped && failed.empty()) failed = graph_->tasks()[i]->spec().name;
    // A model that ended the run stopped every task, normally.
    if (graph_->tasks()[i]->ended() && ended.empty()) ended = graph_->tasks()[i]->spec().name;
    // Another host's tasks never run here.
    if (running_ && graph_->tasks()[i]->local() && !stopped && !graph_->model_ended() && f == last_frames_[i])
      progress = false;
    last_frames_[i] = f;
    frames += f;
    overruns += s.overruns.load();
    worst = std::max(worst, s.wakeup_latency_ns.max());
  }
  char status[320];
  const std::string failed_state = "failed (task '" + failed.substr(0, 64) + "' stopped, see status)";
  const std::string ended_state = "ended (the model of task '" + ended.substr(0, 64) + "' ended the run, see status)";
  std::snprintf(status, sizeof status, "STATUS=%s: %llu frames, %llu overruns, worst wake-up latency %.1f us",
                !failed.empty()  ? failed_state.c_str()
                : !ended.empty() ? ended_state.c_str()
                : running_       ? "running"
                : pending_start_ ? "starting (waiting for the other hosts)"
                                 : "stopped",
                static_cast<unsigned long long>(frames), static_cast<unsigned long long>(overruns),
                static_cast<double>(worst) * 1e-3);
  notify(status);
  // The watchdog is fed only while every task makes progress: a hung task
  // stops the pings and systemd restarts the service.
  if (progress) notify("WATCHDOG=1");
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
  if (const std::string error = end_recording(); !error.empty()) std::cerr << "rtcosimd: " << error << '\n';
  std::cerr << "rtcosimd: stopped\n"
            << (graph_ ? session::run_summary(*graph_, remote_.get()) +
                             session::recording_summary(*graph_, {recorder_.get(), nullptr, nullptr, record_error_})
                       : std::string());
}

int Daemon::run() {
  // A client that closes before its replies are out must cost the daemon
  // nothing: writes use MSG_NOSIGNAL, and nothing else should raise SIGPIPE
  // either (a recording on a pipe-like file, a library's write).
  signal(SIGPIPE, SIG_IGN);
  if (!notifier_.problem().empty()) {
    std::cerr << "rtcosimd: " << notifier_.problem() << " — systemd will not hear READY=1 or WATCHDOG=1\n";
  }
  const int sfd = signals_to_fd();
  if (sfd < 0) {
    std::cerr << "rtcosimd: cannot take signals through a signalfd: " << std::strerror(errno) << '\n';
    return 1;
  }
  std::string why;
  if (!load(options_.config, &why)) {
    std::cerr << why << "rtcosimd: " << options_.config << " cannot be run\n";
    close(sfd);
    return 1;
  }
  // The control socket: created before the tasks start, mode 0660.
  const int lfd = open_control_socket(&why);
  if (lfd < 0) {
    std::cerr << "rtcosimd: " << why << '\n';
    close(sfd);
    return 1;
  }
  const auto close_sockets = [&] {
    close(lfd);
    close(sfd);
    ::unlink(options_.socket_path.c_str());
  };
  bool start_deferred = false;
  if (!start_graph(&why, 0, &start_deferred)) {
    std::cerr << "rtcosimd: " << why << '\n';
    close_sockets();
    return 1;
  }
  // A graph across hosts agrees on its epoch beside the loop; if that
  // fails, the daemon ends with status 1 as it would have before READY.
  if (start_deferred) pending_start_->at_launch = true;
  if (options_.web.port != 0 && !start_web(&why)) {
    std::cerr << "rtcosimd: " << why << '\n';
    stop_graph();
    close_sockets();
    return 1;
  }
  notify("READY=1");
  std::cerr << "rtcosimd: running " << options_.config << " (" << graph_->tasks().size() << " tasks); control socket "
            << options_.socket_path << '\n';

  std::vector<ControlClient> clients;
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
    if (poll(fds.data(), fds.size(), more ? 0 : live_sync_ && running_ ? 5 : 100) < 0) {
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

    drain_recorder();
    if (live_sync_ && running_) live_sync_->poll();
    rotate_if_due();
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
  shut_down();
  clients.clear();
  close_sockets();
  return startup_failed_ ? 1 : 0;
}

}  // namespace rtcosim::daemon
