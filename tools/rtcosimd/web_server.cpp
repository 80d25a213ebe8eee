#include "tools/rtcosimd/web_server.hpp"

// Boost 1.74's asio uses std::exchange without including it (C++20).
#include <algorithm>
#include <chrono>
#include <iostream>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <sys/resource.h>

#include "base/json.hpp"
#include "session/control_request.hpp"
#include "tools/rtcosimd/web_support.hpp"

namespace rtcosim::daemon {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

enum class Auth { kNone, kOk, kWrong, kThrottled };

class WsSession;
class HttpSession;

// The clients of the one loop thread; only that thread touches it.
struct Registry {
  std::list<std::weak_ptr<WsSession>> sessions;
  std::list<std::weak_ptr<HttpSession>> http;  // the HTTP connections, evictable ones among them
};

// Holds one client slot (and its peer address's count) for as long as a
// connection lives.
class Slot {
 public:
  Slot(WebShared& s, std::string peer, bool loopback) : s_(&s), peer_(std::move(peer)), loopback_(loopback) {
    s_->clients.fetch_add(1);
    std::lock_guard lock(s_->mutex);
    ++s_->per_peer[peer_];
  }
  ~Slot() { release(); }
  // Gives the place back now (an evicted connection whose handlers have
  // yet to run).
  void release() {
    if (!s_) return;
    s_->clients.fetch_sub(1);
    std::lock_guard lock(s_->mutex);
    if (auto it = s_->per_peer.find(peer_); it != s_->per_peer.end() && --it->second == 0) s_->per_peer.erase(it);
    s_ = nullptr;
  }
  Slot(Slot&& o) noexcept : s_(o.s_), peer_(std::move(o.peer_)), loopback_(o.loopback_) { o.s_ = nullptr; }
  Slot(const Slot&) = delete;
  Slot& operator=(const Slot&) = delete;
  Slot& operator=(Slot&&) = delete;
  [[nodiscard]] const std::string& peer() const noexcept { return peer_; }
  [[nodiscard]] bool loopback() const noexcept { return loopback_; }

 private:
  WebShared* s_;
  std::string peer_;
  bool loopback_ = false;
};

class WsSession : public std::enable_shared_from_this<WsSession> {
 public:
  // `anonymous`: without a token or place cookie, counted against the
  // places every watcher may hold.
  WsSession(tcp::socket socket, WebShared& shared, Slot slot, bool anonymous)
      : ws_(std::move(socket)), shared_(shared), slot_(std::move(slot)), anonymous_(anonymous) {
    if (anonymous_) shared_.anonymous_ws.fetch_add(1);
    // A small kernel buffer per client: a client that stops reading is
    // noticed within seconds (and holds little memory) instead of after
    // the kernel has queued megabytes for it.
    beast::error_code ignored;
    beast::get_lowest_layer(ws_).socket().set_option(asio::socket_base::send_buffer_size(64 * 1024), ignored);
  }

  void accept(http::request<http::string_body> request) {
    ws_.read_message_max(4096);
    ws_.set_option(websocket::stream_base::timeout::suggested(beast::role_type::server));
    ws_.async_accept(request, [self = shared_from_this()](beast::error_code ec) {
      if (ec) {
        self->shared_.counters.bad_requests.fetch_add(1);
        return;
      }
      self->open_ = true;
      self->read();
      self->push();  // the first snapshot at once
    });
  }

  // Sends the newest snapshot unless one is still on its way; a client that
  // has not taken one for slow_client_s is dropped.
  void push() {
    if (!open_) return;
    if (writing_) {
      const double waited = std::chrono::duration<double>(Clock::now() - write_started_).count();
      if (waited > shared_.options.slow_client_s) {
        shared_.counters.slow_dropped.fetch_add(1);
        close();
      }
      return;
    }
    message_ = shared_.latest();
    writing_ = true;
    write_started_ = Clock::now();
    ws_.text(true);
    ws_.async_write(asio::buffer(*message_), [self = shared_from_this()](beast::error_code ec, std::size_t) {
      self->writing_ = false;
      if (ec) {
        self->open_ = false;
        return;
      }
      self->shared_.counters.snapshots.fetch_add(1);
    });
  }

  ~WsSession() {
    if (anonymous_) shared_.anonymous_ws.fetch_sub(1);
  }
  WsSession(const WsSession&) = delete;
  WsSession& operator=(const WsSession&) = delete;

  [[nodiscard]] bool open() const noexcept { return open_; }

 private:
  // The page sends nothing; whatever comes is read and thrown away, and a
  // frame that breaks the protocol or exceeds 4 kB ends this connection.
  void read() {
    ws_.async_read(in_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec) {
        // A connection this side closed (a slow client) is counted there.
        if (ec != websocket::error::closed && self->open_) self->shared_.counters.bad_requests.fetch_add(1);
        self->open_ = false;
        beast::error_code ignored;
        beast::get_lowest_layer(self->ws_).socket().close(ignored);
        return;
      }
      self->in_.consume(self->in_.size());
      self->read();
    });
  }
  void close() {
    open_ = false;
    beast::error_code ignored;
    beast::get_lowest_layer(ws_).socket().close(ignored);
  }

  websocket::stream<beast::tcp_stream> ws_;
  WebShared& shared_;
  Slot slot_;
  bool anonymous_ = false;
  beast::flat_buffer in_;
  std::shared_ptr<const std::string> message_;
  bool open_ = false, writing_ = false;
  Clock::time_point write_started_;
};

// The answer to a client that finds (or holds) no place, written without
// waiting: the client learns why.
constexpr std::string_view kBusy =
    "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\nRetry-After: 5\r\n\r\n";

class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(tcp::socket socket, WebShared& shared, Registry& registry, Slot slot)
      : stream_(std::move(socket)), shared_(shared), registry_(registry), slot_(std::move(slot)) {}

  void run() { read(); }

  // Whether a new client may take this connection's place when every place
  // is taken: while it waits for a request, or for its answer to be taken,
  // it holds the place only by being slow (slowloris). Not while a worker
  // answers it, nor once it is a WebSocket.
  [[nodiscard]] bool evictable() const noexcept {
    return !evicted_ && (phase_ == Phase::kReading || phase_ == Phase::kWriting);
  }
  [[nodiscard]] Clock::time_point since() const noexcept { return since_; }
  // Gives its place to a new client: a connection still waiting for its
  // request is told 503 (it may come back), one being answered is cut.
  void evict() {
    evicted_ = true;
    beast::error_code ignored;
    auto& socket = stream_.socket();
    if (phase_ == Phase::kReading) {
      socket.non_blocking(true, ignored);
      socket.write_some(asio::buffer(kBusy.data(), kBusy.size()), ignored);
    }
    socket.close(ignored);
    slot_.release();
  }

 private:
  enum class Phase { kReading, kRouting, kWorking, kWriting, kDone };
  void enter(Phase phase) {
    phase_ = phase;
    since_ = Clock::now();
  }

  void read() {
    enter(Phase::kReading);
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(shared_.options.max_request_bytes));
    parser_->body_limit(shared_.options.max_request_bytes);
    stream_.expires_after(std::chrono::seconds(10));
    http::async_read(stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (self->evicted_) return;  // counted as refused when it was evicted
      if (ec) {
        if (ec != http::error::end_of_stream) {
          self->shared_.counters.bad_requests.fetch_add(1);
          if (ec == http::error::header_limit || ec == http::error::body_limit) {
            self->reply(http::status::payload_too_large, "text/plain", "request too large\n", false);
            return;
          }
          // What the parser refused (not a timeout or a closed connection): 400.
          if (ec.category() == http::make_error_code(http::error::bad_target).category()) {
            self->reply(http::status::bad_request, "text/plain", "malformed HTTP request\n", false);
            return;
          }
        }
        beast::error_code ignored;
        self->stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
        return;
      }
      self->route();
    });
  }

  void route() {
    enter(Phase::kRouting);
    auto request = parser_->release();
    const std::string target(request.target());
    const std::string path = target.substr(0, target.find('?'));
    if (!same_site(request)) return;
    if (websocket::is_upgrade(request)) return upgrade(std::move(request), path);
    const bool keep = request.keep_alive();
    if (request.method() == http::verb::get && serve_get(request, path, keep)) return;
    if (path == "/action" || path == "/probe") return serve_post(std::move(request), path, keep);
    reply(http::status::not_found, "text/plain", "nothing at " + path + "\n", keep);
  }

  // DNS rebinding: a page of evil.example whose name resolves to this
  // address reaches the port, with Host: evil.example. A foreign Origin
  // is a page of another site (a WebSocket upgrade or a POST from it).
  // False when refused (and answered).
  bool same_site(const http::request<http::string_body>& request) {
    const auto host = request.find(http::field::host);
    const auto authority = host == request.end()
                               ? std::nullopt
                               : parse_authority(std::string_view(host->value().data(), host->value().size()));
    if (!authority || !shared_.allowed_host(authority->host)) {
      shared_.counters.cross_site.fetch_add(1);
      reply(http::status::misdirected_request, "text/plain",
            "this live view answers to its own host names only (rtcosimd --web-host NAME adds one)\n", false);
      return false;
    }
    if (const auto origin = request.find(http::field::origin);
        origin != request.end() && !shared_.allowed_origin(std::string(origin->value()))) {
      shared_.counters.cross_site.fetch_add(1);
      reply(http::status::forbidden, "text/plain", "cross-site requests are refused\n", false);
      return false;
    }
    return true;
  }

  // A WebSocket holds its place for as long as it stays: the last
  // places are kept for token holders, whose browser shows its place
  // cookie (a page's `new WebSocket` cannot send a token).
  void upgrade(http::request<http::string_body> request, const std::string& path) {
    if (path != "/ws") return reply(http::status::not_found, "text/plain", "no WebSocket at " + path + "\n", false);
    const bool anonymous = !holds_place(request) && authorise(request) != Auth::kOk;
    if (anonymous && shared_.anonymous_ws.load() >= shared_.watcher_places()) {
      shared_.counters.refused.fetch_add(1);
      return reply(http::status::service_unavailable, "text/plain",
                   "every place for watching is taken; the last ones are kept for token holders (docs/live.md)\n",
                   false);
    }
    enter(Phase::kDone);
    auto ws = std::make_shared<WsSession>(stream_.release_socket(), shared_, std::move(slot_), anonymous);
    registry_.sessions.push_back(ws);
    ws->accept(std::move(request));
  }

  // The read-only resources, answered on this loop since none of them
  // waits for anything; false when the path is none of them.
  bool serve_get(const http::request<http::string_body>& request, const std::string& path, bool keep) {
    if (path == "/" || path == "/index.html") {
      reply(http::status::ok, "text/html; charset=utf-8", live_page(), keep);
      return true;
    }
    if (path == "/status.json") {
      reply(http::status::ok, "application/json", *shared_.latest(), keep);
      return true;
    }
    if (path == "/graph.svg") {
      std::shared_ptr<const std::string> svg;
      {
        std::lock_guard lock(shared_.mutex);
        svg = shared_.graph_svg;
      }
      if (svg->empty()) {
        reply(http::status::not_found, "text/plain", "the graph has no Graphviz layout (see live.graph.layout)\n",
              keep);
        return true;
      }
      reply(http::status::ok, "image/svg+xml", *svg, keep);
      return true;
    }
    if (path == "/whoami") {
      Clock::time_point expires;
      const Auth a = authorise(request, &expires);
      if (a == Auth::kThrottled) {
        throttle(keep);
        return true;
      }
      if (a == Auth::kOk) give_place(request, expires);
      reply(http::status::ok, "application/json", std::string("{\"act\":") + (a == Auth::kOk ? "true" : "false") + "}",
            keep);
      return true;
    }
    return false;
  }

  // /action and /probe: checked here, answered by the worker, since both
  // ask the control socket, which may block.
  void serve_post(http::request<http::string_body> request, const std::string& path, bool keep) {
    if (request.method() != http::verb::post) {
      return reply(http::status::method_not_allowed, "text/plain",
                   path == "/action" ? "POST an action\n" : "POST a signal to probe\n", keep);
    }
    // A state change: JSON only. A cross-site form or a "simple" fetch
    // cannot send this type without a preflight, which is not answered.
    const auto type = request.find(http::field::content_type);
    if (type == request.end() || std::string(type->value()).rfind("application/json", 0) != 0) {
      return reply(http::status::unsupported_media_type, "text/plain",
                   "send the request body as Content-Type: application/json\n", keep);
    }
    if (path == "/action") {
      const Auth a = authorise(request);
      if (a == Auth::kThrottled) return throttle(keep);
      if (a != Auth::kOk) {
        shared_.counters.forbidden.fetch_add(1);
        return reply(http::status::forbidden, "application/json",
                     "{\"ok\":false,\"error\":\"actions need the daemon's token or one from 'rtcosim ctl "
                     "web-token' (docs/live.md)\"}",
                     keep);
      }
    }
    // The control socket is asked on the worker, never on this loop.
    const bool action = path == "/action";
    enter(Phase::kWorking);
    auto self = shared_from_this();
    const bool queued = shared_.worker.post([self, body = std::move(request.body()), action, keep]() mutable {
      std::string answer = action ? self->act(body) : self->probe(body);
      asio::post(self->stream_.get_executor(), [self, answer = std::move(answer), keep]() mutable {
        self->reply(http::status::ok, "application/json", std::move(answer), keep);
      });
    });
    if (!queued) return reply(http::status::service_unavailable, "text/plain", "busy — try again\n", false);
  }

  void throttle(bool keep) {
    shared_.counters.throttled.fetch_add(1);
    reply(http::status::too_many_requests, "text/plain", "too many wrong tokens from this address — wait a second\n",
          keep);
  }

  // Choosing a probe is watching, open to every client: the daemon checks
  // the name against the running graph; only the name reaches the socket.
  std::string probe(const std::string& body) {
    std::string why;
    const auto request = base::parse_flat_object(body, &why);
    const auto signal = request ? request->find("signal") : decltype(request->end()){};
    if (!request || signal == request->end() || signal->second.size() > 256) {
      return "{\"ok\":false,\"error\":\"expected {\\\"signal\\\":\\\"BLOCK.PORT\\\"}\"}";
    }
    return forward("{\"cmd\":\"probe\",\"signal\":" + base::json_string(signal->second) + "}");
  }

  std::string forward(const std::string& line) {
    std::string error;
    const std::string reply = session::control_request(shared_.control_socket, line, &error, 3000);
    return reply.empty() ? "{\"ok\":false,\"error\":" + base::json_string(error) + "}" : reply;
  }

  // The request's place cookie, if it shows one (any of its Cookie headers).
  std::string place_of(const http::request<http::string_body>& request) const {
    const std::string name = shared_.place_cookie_name() + "=";
    for (auto [it, end] = request.equal_range(http::field::cookie); it != end; ++it) {
      const std::string_view cookies(it->value().data(), it->value().size());
      for (std::size_t at = 0; at < cookies.size();) {
        auto next = cookies.find(';', at);
        if (next == std::string_view::npos) next = cookies.size();
        std::string_view pair = cookies.substr(at, next - at);
        while (!pair.empty() && pair.front() == ' ') pair.remove_prefix(1);
        if (pair.substr(0, name.size()) == name) return std::string(pair.substr(name.size()));
        at = next + 1;
      }
    }
    return {};
  }
  bool holds_place(const http::request<http::string_body>& request) { return shared_.holds_place(place_of(request)); }

  // A request with a valid token is given a place cookie (or has its own
  // renewed): the page asks /whoami with its token, and from then on its
  // page loads and WebSocket, which cannot send the token, show the
  // cookie. HttpOnly: no script reads it; SameSite=Strict: no other site's
  // request carries it. It allows a place, never an action.
  void give_place(const http::request<http::string_body>& request, Clock::time_point expires) {
    const std::string value = shared_.give_place(place_of(request), expires);
    if (value.empty()) return;
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(expires - Clock::now()).count();
    set_cookie_ = shared_.place_cookie_name() + "=" + value +
                  "; Path=/; Max-Age=" + std::to_string(std::max<long long>(1, seconds)) +
                  "; HttpOnly; SameSite=Strict";
  }

  // "Authorization: Bearer TOKEN", compared in constant time; an address
  // that presented kWrongTokensPerSecond wrong ones in this second is not
  // checked until the next (guessing went at ~1 100 tokens a second).
  // `expires`: until when the token allows acting.
  Auth authorise(const http::request<http::string_body>& request, Clock::time_point* expires = nullptr) {
    const auto it = request.find(http::field::authorization);
    if (it == request.end()) return Auth::kNone;
    // Every loopback client is one address: there a valid token is always
    // checked (another local process guessing must not lock its holder out;
    // 24 random bytes are not guessed), and only wrong ones are throttled.
    if (!slot_.loopback() && shared_.throttled(slot_.peer(), false)) return Auth::kThrottled;
    const std::string value(it->value());
    const std::string prefix = "Bearer ";
    const std::string presented = value.rfind(prefix, 0) == 0 ? value.substr(prefix.size()) : std::string();
    bool ok = !presented.empty() && token_matches(presented, shared_.options.token);
    const auto now = Clock::now();
    Clock::time_point until = now + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(shared_.options.token_lifetime_s));
    {
      std::lock_guard lock(shared_.mutex);
      // Every granted token is compared, whichever matches (constant time).
      for (const auto& [token, granted_until] : shared_.granted) {
        const bool match = token_matches(presented, token) && now < granted_until;
        if (match) until = granted_until;
        ok = match || ok;
      }
    }
    if (expires) *expires = until;
    if (ok) return Auth::kOk;
    return shared_.throttled(slot_.peer(), true) ? Auth::kThrottled : Auth::kWrong;
  }

  // Only the control socket's own actions, one flat JSON object each; the
  // daemon checks them as it checks `rtcosim ctl`.
  std::string act(const std::string& body) {
    std::string why;
    const auto request = base::parse_flat_object(body, &why);
    if (!request) return "{\"ok\":false,\"error\":" + base::json_string("malformed action: " + why) + "}";
    const auto cmd = request->find("cmd");
    const std::string name = cmd == request->end() ? std::string() : cmd->second;
    if (name != "start" && name != "stop" && name != "reload" && name != "record") {
      return "{\"ok\":false,\"error\":\"actions are start, stop, reload and record\"}";
    }
    shared_.counters.actions.fetch_add(1);
    // Sent as re-encoded, so nothing but the flat keys reaches the socket.
    std::string line = "{";
    for (const auto& [k, v] : *request) {
      line += (line.size() > 1 ? "," : "") + base::json_string(k) + ":" +
              (v == "true" || v == "false" ? v : base::json_string(v));
    }
    line += "}";
    return forward(line);
  }

  void reply(http::status status, const char* type, std::string body, bool keep) {
    if (evicted_) return;  // a worker's answer to a connection given away meanwhile
    enter(Phase::kWriting);
    // The read's expiry covered the wait for the request (and a worker's
    // answer may come seconds later): the write gets its own.
    stream_.expires_after(std::chrono::seconds(10));
    auto response = std::make_shared<http::response<http::string_body>>(status, 11);
    response->set(http::field::server, "rtcosimd");
    response->set(http::field::content_type, type);
    response->set(http::field::cache_control, "no-store");
    response->set("X-Content-Type-Options", "nosniff");
    response->keep_alive(keep);
    if (!set_cookie_.empty()) response->set(http::field::set_cookie, std::exchange(set_cookie_, {}));
    response->body() = std::move(body);
    response->prepare_payload();
    http::async_write(stream_, *response,
                      [self = shared_from_this(), response, keep](beast::error_code ec, std::size_t) {
                        if (ec || !keep) {
                          beast::error_code ignored;
                          self->stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
                          return;
                        }
                        self->read();
                      });
  }

  beast::tcp_stream stream_;
  WebShared& shared_;
  Registry& registry_;
  Slot slot_;
  Phase phase_ = Phase::kReading;
  Clock::time_point since_ = Clock::now();
  bool evicted_ = false;
  std::string set_cookie_;  // for the next answer
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
};

}  // namespace

struct WebServer::Impl {
  WebShared shared;
  Registry registry;
  asio::io_context io{1};
  tcp::acceptor acceptor{io};
  asio::steady_timer timer{io};
  asio::steady_timer accept_timer{io};
  std::thread thread;
  unsigned short port = 0;

  void accept() {
    acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
      if (!acceptor.is_open()) return;
      if (ec) {
        // Out of descriptors (EMFILE) the listening socket stays readable:
        // accepting again at once would spin. Wait a quarter second.
        accept_timer.expires_after(std::chrono::milliseconds(250));
        accept_timer.async_wait([this](beast::error_code e) {
          if (!e) accept();
        });
        return;
      }
      beast::error_code peer_ec;
      const auto remote = socket.remote_endpoint(peer_ec);
      bool loopback = false;
      const std::string peer = peer_ec ? std::string("?") : peer_key(remote.address(), &loopback);
      std::size_t from_peer = 0;
      {
        std::lock_guard lock(shared.mutex);
        if (auto it = shared.per_peer.find(peer); it != shared.per_peer.end()) from_peer = it->second;
      }
      // Loopback is one address for every local client, the operator's
      // browser (and everyone behind the SSH tunnel) included: a cap per
      // address there would be the cap for all, so it has none; eviction
      // and the places kept for token holders are what protects.
      bool busy = !loopback && from_peer >= shared.options.max_per_peer;
      if (!busy && shared.clients.load() >= shared.options.max_clients) busy = !evict_oldest();
      if (busy) {
        shared.counters.refused.fetch_add(1);
        beast::error_code ignored;
        socket.non_blocking(true, ignored);
        socket.write_some(asio::buffer(kBusy.data(), kBusy.size()), ignored);
        socket.close(ignored);
      } else {
        shared.counters.connections.fetch_add(1);
        auto session = std::make_shared<HttpSession>(std::move(socket), shared, registry, Slot(shared, peer, loopback));
        registry.http.push_back(session);
        session->run();
      }
      accept();
    });
  }

  // Every place is taken: the connection that has waited longest for its
  // request (or for its answer to be taken) gives its place to the new one
  // (503, counted as refused). A slowloris crowd that holds every place
  // with requests it never finishes is pushed out by each newcomer, where
  // before the places went to whoever came first and it always came back
  // first (issue 44: the page loaded 7 of 20 times). WebSockets and
  // requests a worker answers are not evicted; the last places for
  // WebSockets are kept for token holders.
  bool evict_oldest() {
    std::shared_ptr<HttpSession> oldest;
    for (auto it = registry.http.begin(); it != registry.http.end();) {
      auto s = it->lock();
      if (!s) {
        it = registry.http.erase(it);
        continue;
      }
      if (s->evictable() && (!oldest || s->since() < oldest->since())) oldest = std::move(s);
      ++it;
    }
    if (!oldest) return false;
    oldest->evict();
    shared.counters.refused.fetch_add(1);
    return true;
  }

  void tick() {
    const auto period = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(1.0 / std::max(shared.options.push_rate, 0.1)));
    timer.expires_after(period);
    timer.async_wait([this](beast::error_code ec) {
      if (ec) return;
      for (auto it = registry.sessions.begin(); it != registry.sessions.end();) {
        auto s = it->lock();
        if (!s) {
          it = registry.sessions.erase(it);
          continue;
        }
        s->push();
        ++it;
      }
      std::erase_if(registry.http, [](const std::weak_ptr<HttpSession>& h) { return h.expired(); });
      tick();
    });
  }
};

WebServer::WebServer(WebOptions options, std::string control_socket) : impl_(std::make_unique<Impl>()) {
  impl_->shared.options = std::move(options);
  impl_->shared.control_socket = std::move(control_socket);
}

WebServer::~WebServer() {
  if (impl_->thread.joinable()) {
    asio::post(impl_->io, [this] {
      beast::error_code ignored;
      impl_->acceptor.close(ignored);
      impl_->timer.cancel();
      impl_->accept_timer.cancel();
      impl_->io.stop();
    });
    impl_->thread.join();
  }
  // Its jobs hold sessions that post to the loop: gone before the loop is.
  impl_->shared.worker.stop();
}

bool WebServer::start(std::string* why) {
  const WebOptions& o = impl_->shared.options;
  beast::error_code ec;
  const auto address = asio::ip::make_address(o.address, ec);
  if (ec) {
    *why = "live view: '" + o.address + "' is not an IP address — expected e.g. 127.0.0.1";
    return false;
  }
  if (!address.is_loopback() && !o.allow_public) {
    *why = "live view: " + o.address +
           " is not a loopback address — the page shows the graph to anyone who reaches it; give --listen-public "
           "to mean it, or reach 127.0.0.1 through an SSH tunnel (docs/live.md)";
    return false;
  }
  // Each web client is a descriptor: more places than the process may
  // open would fail at accept, not at start (the unit sets LimitNOFILE=1024).
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY &&
      o.max_clients + kDescriptorMargin > files.rlim_cur) {
    *why = "live view: --web-max-clients " + std::to_string(o.max_clients) + " needs " +
           std::to_string(o.max_clients + kDescriptorMargin) + " descriptors with the daemon's own, but it may open " +
           std::to_string(files.rlim_cur) + " (LimitNOFILE / ulimit -n) — give at most " +
           std::to_string(files.rlim_cur > kDescriptorMargin ? files.rlim_cur - kDescriptorMargin : 0);
    return false;
  }
  const tcp::endpoint endpoint(address, o.port);
  impl_->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl_->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) impl_->acceptor.bind(endpoint, ec);
  if (!ec) impl_->acceptor.listen(64, ec);
  if (ec) {
    *why = "live view: cannot listen on " + o.address + ":" + std::to_string(o.port) + ": " + ec.message();
    return false;
  }
  impl_->port = impl_->acceptor.local_endpoint().port();
  impl_->shared.bound_port = impl_->port;
  impl_->accept();
  impl_->tick();
  impl_->thread = std::thread([this] {
    // A handler that throws (memory exhausted) ends that handler, not the
    // live view or the daemon.
    for (;;) {
      try {
        impl_->io.run();
        return;
      } catch (const std::exception& e) {
        std::cerr << "rtcosimd: live view: " << e.what() << '\n';
      }
    }
  });
  return true;
}

void WebServer::publish(std::string snapshot) {
  auto next = std::make_shared<const std::string>(std::move(snapshot));
  std::lock_guard lock(impl_->shared.mutex);
  impl_->shared.snapshot = std::move(next);
}

void WebServer::grant(std::string token, double lifetime_s) {
  const auto expires =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(lifetime_s));
  std::lock_guard lock(impl_->shared.mutex);
  auto& granted = impl_->shared.granted;
  std::erase_if(granted, [now = Clock::now()](const auto& g) { return g.second <= now; });
  if (granted.size() >= kMaxGranted) granted.erase(granted.begin());
  granted.emplace_back(std::move(token), expires);
  impl_->shared.counters.granted.fetch_add(1);
}

void WebServer::set_graph_svg(std::string svg) {
  auto next = std::make_shared<const std::string>(std::move(svg));
  std::lock_guard lock(impl_->shared.mutex);
  impl_->shared.graph_svg = std::move(next);
}

const WebCounters& WebServer::counters() const noexcept { return impl_->shared.counters; }
std::size_t WebServer::clients() const noexcept { return impl_->shared.clients.load(); }
unsigned short WebServer::port() const noexcept { return impl_->port; }

}  // namespace rtcosim::daemon
