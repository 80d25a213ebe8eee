#pragma once

#include <atomic>
#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "rt_config/loader.hpp"
#include "session/report/live_feed.hpp"
#include "session/service_graph.hpp"
#include "tools/rtcosimd/notify.hpp"
#include "tools/rtcosimd/web_server.hpp"

namespace rtcosim::daemon {

class ControlClient;

struct Options {
  std::string config;  // the task-graph file (trusted: the admin's)
  std::string socket_path = "/run/rtcosim/control.sock";
  // Where a client's `reload` may read task graphs from, and where its
  // `record` and `trace` may write (docs/daemon.md, "Security model").
  std::string config_dir = "/etc/rtcosim";
  std::string recording_dir = "/var/lib/rtcosim/recordings";
  // The only directories plugins (named by id in a task graph) load from.
  std::vector<std::string> plugin_dirs;
  // Besides config_dir, the only directories a graph's files (an FMU's
  // `file`) may be read from: a reloaded graph cannot load a binary from
  // anywhere else.
  std::vector<std::string> fmu_dirs;
  // The live view over HTTP (docs/live.md); off unless web.port is set.
  WebOptions web;
  // This host's part of a graph across hosts (docs/dds.md): only its tasks
  // run, links to other hosts' tasks travel over DDS. Empty: every task.
  std::string host;
  // Graphviz's dot, which lays out the live view's graph ("": the page
  // draws it itself).
  std::string dot_program = "dot";
  std::size_t max_request_bytes = 1u << 20;   // 1 MiB
  std::size_t max_pending_output = 1u << 20;  // per client, replies not yet read
  std::size_t max_clients = 64;               // connections beyond it are refused
  double status_interval = 1.0;               // seconds between STATUS= updates
};

/*
 * Daemon: rtcosimd's main loop. Loads and validates the graph, prepares the
 * process for real time, runs the tasks, and then serves, in one
 * non-real-time thread, everything else through poll(2): the control socket
 * (line-delimited JSON requests, each client with its own bounded buffer, so
 * a silent or slow client blocks nobody), signals through a signalfd
 * (SIGTERM/SIGINT stop, SIGHUP reloads), the recorder's rings, and systemd's
 * notification socket: READY=1 once every task runs, STATUS= every second,
 * WATCHDOG=1 only while every task makes progress, STOPPING=1 on the way
 * out. Requests never touch a task: they read statistics (atomics) or stop
 * and restart the whole graph.
 */
class Daemon {
 public:
  explicit Daemon(Options options);
  ~Daemon();
  // Runs until SIGTERM/SIGINT; the exit code (0 after a clean stop).
  int run();
  // One request line in, one reply line out (no newline). Public for tests.
  std::string handle(const std::string& line);

 private:
  bool load(const std::string& file, std::string* errors);
  bool load_text(const std::string& text, const std::string& label, std::string* errors);
  // A graph built from a loaded file, not yet running, and its layout for
  // the live view (with --listen; dot takes up to 5 s, so it is laid out
  // beside the loop too).
  struct Prepared {
    session::PreparedGraph graph;
    std::string svg, layout_why;
  };
  [[nodiscard]] Prepared prepare(const config::LoadResult& loaded, const std::string& text,
                                 const std::string& label) const;
  bool commit(Prepared&& prepared, std::string* errors);
  std::string read_reload_file(const std::string& file, std::string* text, std::string* label) const;
  [[nodiscard]] Prepared prepare_reload(const std::string& text, const std::string& label, bool named) const;
  // Swaps in a prepared graph, restarting it if the old one ran. `client`
  // and `deferred` as for start_graph: a graph across hosts starts beside
  // the loop and the client is answered when it runs.
  std::string apply_reload(Prepared&& prepared, std::uint64_t client = 0, bool* deferred = nullptr);
  // A reload for a client of the loop (0: SIGHUP): "" when its graph is
  // being built on a worker (answered by finish_reload), else the reply now.
  std::string begin_reload(const std::string& file, std::uint64_t client);
  std::optional<std::pair<std::uint64_t, std::string>> finish_reload();
  struct PendingReload;
  std::unique_ptr<PendingReload> pending_reload_;
  bool sighup_pending_ = false;  // a SIGHUP came while a reload was being built
  // handle(), for a client of the loop: a request that runs on a worker
  // sets *deferred and is answered later (finish_trace_start).
  // `in_group`: the client is in the control socket's group (peer_in_group).
  std::string respond(const std::string& line, std::uint64_t client, bool* deferred, bool in_group = false);
  // Probes a signal of the running graph for the live view (docs/live.md).
  std::string probe(const std::string& signal);
  static constexpr std::size_t kProbeSlots = 4;
  std::size_t next_probe_slot_ = 0;
  // A token for the live view's actions, for a client in the group.
  std::string web_token(bool in_group);
  std::string reload(const std::string& file);
  [[nodiscard]] config::LoadOptions load_options() const;
  std::string record_start(const session::ServiceRecording::Request& request);
  std::string trace_start(const std::string& dir);
  // Requests that may take seconds (trace session set-up) run on a worker;
  // the poll loop stays responsive and collects the result here.
  void begin_trace_start(const std::string& dir, std::uint64_t client, std::string* reply_now);
  std::optional<std::pair<std::uint64_t, std::string>> finish_trace_start();
  // Starts the loaded graph. A graph across hosts (--host) first agrees on
  // its epoch with the other hosts, which takes up to its discovery_timeout:
  // with `deferred` that runs on a worker beside the loop (*deferred set,
  // the request answered by finish_start with `ok_reply`, client 0: in the
  // log), without it here. False with *error when it cannot start.
  bool start_graph(std::string* error, std::uint64_t client = 0, bool* deferred = nullptr,
                   const std::string& ok_reply = {});
  // The executor (and the DDS bridge) on the epoch: the last step of a start.
  bool launch(std::int64_t epoch_ns, std::string* error);
  std::optional<std::pair<std::uint64_t, std::string>> finish_start();
  struct PendingStart;
  std::unique_ptr<PendingStart> pending_start_;
  // Replies for clients of the loop decided outside it (a cancelled start).
  std::vector<std::pair<std::uint64_t, std::string>> late_replies_;
  bool startup_failed_ = false;  // the start at launch failed after READY: exit 1
  void stop_graph();
  // The steps of run(): everything up to READY=1 (false: exit 1), the
  // sockets' end, the serving loop; and within them the control socket
  // (-1 and *why when it cannot be made), the live view, one pass's signals,
  // the replies of work done beside the loop, the clients' requests, new
  // clients, and the end.
  bool set_up(int* sfd, int* lfd);
  void close_sockets(int sfd, int lfd);
  void serve(int sfd, int lfd, std::vector<ControlClient>& clients);
  int open_control_socket(std::string* why);
  bool start_web(std::string* why);
  void take_signals(int sfd);
  void answer_finished_work(std::vector<ControlClient>& clients);
  void serve_requests(std::vector<ControlClient>& clients);
  void accept_clients(int lfd, std::vector<ControlClient>& clients, double* accept_again);
  void shut_down();
  std::uint64_t next_client_id_ = 1;
  void notify_status();
  std::string status_json();
  // What the live view pushes: the status, the tasks' histograms, the
  // recorded signals' samples since the last push, the graph's shape.
  std::string live_json();
  [[nodiscard]] std::string host_json() const;

  Options options_;
  tasks::BlockRegistry blocks_;
  // The loaded graph, its run and its recording (session/service_graph.hpp).
  session::ServiceGraph graph_;
  std::vector<std::string> lost_hosts_;  // hosts that fell silent during this run
  SystemdNotifier notifier_;             // READY, STATUS, WATCHDOG, STOPPING
  // Sends to systemd; a failure is logged once until a send works again
  // (a lost READY=1 or WATCHDOG=1 ends in systemd stopping the service).
  void notify(const char* message);
  bool notify_failing_ = false;
  // A list of warnings to the log, one line each.
  static void log_warnings(const std::vector<std::string>& warnings);
  struct TraceState;
  std::unique_ptr<TraceState> trace_;
  struct PendingTrace;
  std::unique_ptr<PendingTrace> pending_trace_;
  std::unique_ptr<WebServer> web_;
  double web_started_ = 0.0;
  session::LiveFeed feed_;
  std::string graph_svg_;  // the loaded graph laid out by dot, or ""
  [[nodiscard]] std::string lay_out(const config::GraphSpec& spec, std::string* why) const;
  bool quit_ = false;
  std::uint32_t socket_gid_ = 0;  // the control socket's group
};

// Whether a control-socket peer (uid, gid and supplementary groups as the
// kernel gives them: SO_PEERCRED, SO_PEERGROUPS) may have a live-view token:
// root, the daemon's own user, or a member of the socket's group.
bool peer_in_group(std::uint32_t uid, std::uint32_t gid, const std::vector<std::uint32_t>& groups,
                   std::uint32_t own_uid, std::uint32_t socket_gid) noexcept;
// The same for a connected Unix socket; false when the kernel tells nothing.
bool peer_in_group(int fd, std::uint32_t socket_gid);

}  // namespace rtcosim::daemon
