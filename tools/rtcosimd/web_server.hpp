#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace rtcosim::daemon {

// How rtcosimd serves its live view (docs/live.md). Off unless `port` is set.
struct WebOptions {
  std::string address = "127.0.0.1";
  unsigned short port = 0;               // 0: no live view
  bool allow_public = false;             // an address other than loopback needs it
  std::string token;                     // actions need it (or a granted one); empty: read-only unless granted
  double token_lifetime_s = 900;         // how long a token handed out by `web-token` allows actions
  std::size_t max_clients = 16;          // HTTP and WebSocket connections at once; more get 503
  double push_rate = 10.0;               // WebSocket snapshots per second
  std::size_t max_request_bytes = 8192;  // header + body of one HTTP request
  double slow_client_s = 2.0;            // a client that has not taken a snapshot for this long is dropped
  // Host names the live view answers to besides its listen address,
  // localhost, 127.0.0.1 and [::1] (a request's Host and, when present,
  // its Origin must name one of them: DNS rebinding and cross-site pages
  // are refused).
  std::vector<std::string> hosts;
  std::size_t max_per_peer = 8;  // connections from one address at once (beyond: 503); loopback has no such cap
};

// What the live view counted since it started (docs/live.md).
struct WebCounters {
  std::atomic<std::uint64_t> connections{0};   // accepted and served
  std::atomic<std::uint64_t> refused{0};       // 503: no place (docs/live.md, "Places"), or evicted for a newcomer
  std::atomic<std::uint64_t> bad_requests{0};  // malformed, oversized or timed-out requests and WebSocket frames
  std::atomic<std::uint64_t> slow_dropped{0};  // WebSocket clients that did not read
  std::atomic<std::uint64_t> snapshots{0};     // WebSocket messages sent
  std::atomic<std::uint64_t> actions{0};       // actions forwarded to the control socket
  std::atomic<std::uint64_t> forbidden{0};     // actions refused for want of the token
  std::atomic<std::uint64_t> granted{0};       // tokens handed out through the control socket
  std::atomic<std::uint64_t> cross_site{0};    // a Host or Origin not of this live view: 421/403
  std::atomic<std::uint64_t> throttled{0};     // token checks refused after too many wrong tokens from an address: 429
};

/*
 * WebServer: the daemon's live view. One non-real-time thread runs an
 * asio event loop (Boost.Beast) that serves one self-contained page, the
 * latest snapshot as /status.json and, on /ws, pushes that snapshot to
 * every WebSocket client `push_rate` times a second. The daemon's loop hands
 * in snapshots through `publish` (a mutex-guarded pointer swap: both sides
 * are non-real-time); the real-time tasks are never touched. Actions (POST
 * /action) need the token and are forwarded, as one request line, to the
 * daemon's own control socket, so they pass the same checks as `rtcosim ctl`.
 * Bounded: requests by size and time, clients by count (in all, and per
 * peer address, every loopback address being one), WebSockets without a
 * token or the place cookie a token holder's browser is given to all but
 * the last kReservedForTokens places, and each WebSocket client by one
 * message in flight; a client that does not read is dropped. When every
 * place is taken, the connection that has waited longest for its request
 * gives its place to a newcomer (slowloris). Requests to the control
 * socket (actions, probes) run on a worker thread, never on the loop.
 * Only the live view's own host names and origins (exactly
 * scheme://host[:port]) are served; state
 * changes need `Content-Type: application/json` (which a cross-site form
 * cannot send); wrong tokens are throttled per address.
 */
class WebServer {
 public:
  WebServer(WebOptions options, std::string control_socket);
  ~WebServer();
  WebServer(const WebServer&) = delete;
  WebServer& operator=(const WebServer&) = delete;

  // Binds and starts the thread; false with `why` when it cannot listen.
  bool start(std::string* why);
  // The newest snapshot (a JSON object); any thread.
  void publish(std::string snapshot);
  // A token the daemon handed out through its control socket (`rtcosim ctl
  // web-token`): it allows actions for lifetime_s from now (none when not
  // positive). The latest kMaxGranted are kept; any thread.
  static constexpr std::size_t kMaxGranted = 16;
  // Places only a WebSocket with a token or a place cookie may hold (a
  // quarter of max_clients at most).
  static constexpr std::size_t kReservedForTokens = 4;
  // Place cookies kept (the newest; one per browser that showed a token).
  static constexpr std::size_t kMaxPlaces = 64;
  // Wrong tokens an address may present per second before its token checks
  // are answered 429 for the rest of that second.
  static constexpr int kWrongTokensPerSecond = 10;
  // Descriptors kept for the daemon itself (control clients, files, DDS).
  static constexpr std::size_t kDescriptorMargin = 256;
  void grant(std::string token, double lifetime_s);
  // The running graph laid out by Graphviz, served as /graph.svg; empty:
  // none (the page draws the graph itself). Any thread.
  void set_graph_svg(std::string svg);
  [[nodiscard]] const WebCounters& counters() const noexcept;
  [[nodiscard]] std::size_t clients() const noexcept;
  [[nodiscard]] unsigned short port() const noexcept;  // the bound one

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The page, self-contained (HTML, CSS and script; nothing from elsewhere).
const char* live_page() noexcept;

}  // namespace rtcosim::daemon
