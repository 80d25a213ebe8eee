#include "tools/rtcosimd/web_server.hpp"

// Boost 1.74's asio uses std::exchange without including it (C++20).
#include <algorithm>
#include <chrono>
#include <iostream>
#include <list>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

#include "base/json.hpp"
#include "tools/rtcosim/ctl_command.hpp"

namespace rtcosim::daemon {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

bool token_matches(const std::string& presented, const std::string& expected) noexcept {
  if (expected.empty()) return false;
  // Every byte of the longer one is looked at, whatever matches, so the
  // time taken tells nothing about how much of the token was right.
  const std::size_t n = std::max(presented.size(), expected.size());
  unsigned char diff = presented.size() == expected.size() ? 0 : 1;
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned char a = i < presented.size() ? static_cast<unsigned char>(presented[i]) : 0;
    const unsigned char b = i < expected.size() ? static_cast<unsigned char>(expected[i]) : 0;
    diff = static_cast<unsigned char>(diff | (a ^ b));
  }
  return diff == 0;
}

namespace {

struct Shared {
  WebOptions options;
  std::string control_socket;
  WebCounters counters;
  std::atomic<std::size_t> clients{0};
  std::mutex mutex;
  std::shared_ptr<const std::string> snapshot = std::make_shared<const std::string>("{}");
  // Tokens from the control socket and when they expire (under `mutex`).
  std::vector<std::pair<std::string, Clock::time_point>> granted;
  std::shared_ptr<const std::string> graph_svg = std::make_shared<const std::string>();  // under `mutex`

  std::shared_ptr<const std::string> latest() {
    std::lock_guard lock(mutex);
    return snapshot;
  }
};

class WsSession;

// The WebSocket clients of the one loop thread; only that thread touches it.
struct Registry {
  std::list<std::weak_ptr<WsSession>> sessions;
};

// Holds one client slot for as long as a connection lives.
class Slot {
 public:
  explicit Slot(Shared& s) : s_(&s) { s_->clients.fetch_add(1); }
  ~Slot() {
    if (s_) s_->clients.fetch_sub(1);
  }
  Slot(Slot&& o) noexcept : s_(o.s_) { o.s_ = nullptr; }
  Slot(const Slot&) = delete;
  Slot& operator=(const Slot&) = delete;
  Slot& operator=(Slot&&) = delete;

 private:
  Shared* s_;
};

class WsSession : public std::enable_shared_from_this<WsSession> {
 public:
  WsSession(tcp::socket socket, Shared& shared, Slot slot)
      : ws_(std::move(socket)), shared_(shared), slot_(std::move(slot)) {
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
  Shared& shared_;
  Slot slot_;
  beast::flat_buffer in_;
  std::shared_ptr<const std::string> message_;
  bool open_ = false, writing_ = false;
  Clock::time_point write_started_;
};

class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(tcp::socket socket, Shared& shared, Registry& registry, Slot slot)
      : stream_(std::move(socket)), shared_(shared), registry_(registry), slot_(std::move(slot)) {}

  void run() { read(); }

 private:
  void read() {
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(shared_.options.max_request_bytes));
    parser_->body_limit(shared_.options.max_request_bytes);
    stream_.expires_after(std::chrono::seconds(10));
    http::async_read(stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec) {
        if (ec != http::error::end_of_stream) {
          self->shared_.counters.bad_requests.fetch_add(1);
          if (ec == http::error::header_limit || ec == http::error::body_limit) {
            self->reply(http::status::payload_too_large, "text/plain", "request too large\n", false);
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
    auto request = parser_->release();
    const std::string target(request.target());
    const std::string path = target.substr(0, target.find('?'));
    if (websocket::is_upgrade(request)) {
      if (path != "/ws") return reply(http::status::not_found, "text/plain", "no WebSocket at " + path + "\n", false);
      auto ws = std::make_shared<WsSession>(stream_.release_socket(), shared_, std::move(slot_));
      registry_.sessions.push_back(ws);
      ws->accept(std::move(request));
      return;
    }
    const bool keep = request.keep_alive();
    if (request.method() == http::verb::get && (path == "/" || path == "/index.html")) {
      return reply(http::status::ok, "text/html; charset=utf-8", live_page(), keep);
    }
    if (request.method() == http::verb::get && path == "/status.json") {
      return reply(http::status::ok, "application/json", *shared_.latest(), keep);
    }
    if (request.method() == http::verb::get && path == "/graph.svg") {
      std::shared_ptr<const std::string> svg;
      {
        std::lock_guard lock(shared_.mutex);
        svg = shared_.graph_svg;
      }
      if (svg->empty()) {
        return reply(http::status::not_found, "text/plain",
                     "the graph has no Graphviz layout (see live.graph.layout)\n", keep);
      }
      return reply(http::status::ok, "image/svg+xml", *svg, keep);
    }
    if (request.method() == http::verb::get && path == "/whoami") {
      return reply(http::status::ok, "application/json",
                   std::string("{\"act\":") + (authorised(request) ? "true" : "false") + "}", keep);
    }
    if (path == "/action") {
      if (request.method() != http::verb::post) {
        return reply(http::status::method_not_allowed, "text/plain", "POST an action\n", keep);
      }
      if (!authorised(request)) {
        shared_.counters.forbidden.fetch_add(1);
        return reply(http::status::forbidden, "application/json",
                     "{\"ok\":false,\"error\":\"actions need the daemon's token or one from 'rtcosim ctl web-token' "
                     "(docs/live.md)\"}",
                     keep);
      }
      return reply(http::status::ok, "application/json", act(request.body()), keep);
    }
    if (path == "/probe") {
      if (request.method() != http::verb::post) {
        return reply(http::status::method_not_allowed, "text/plain", "POST a signal to probe\n", keep);
      }
      return reply(http::status::ok, "application/json", probe(request.body()), keep);
    }
    reply(http::status::not_found, "text/plain", "nothing at " + path + "\n", keep);
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
    const std::string reply = tools::control_request(shared_.control_socket, line, &error, 3000);
    return reply.empty() ? "{\"ok\":false,\"error\":" + base::json_string(error) + "}" : reply;
  }

  // "Authorization: Bearer TOKEN", compared in constant time.
  bool authorised(const http::request<http::string_body>& request) const {
    const auto it = request.find(http::field::authorization);
    if (it == request.end()) return false;
    const std::string value(it->value());
    const std::string prefix = "Bearer ";
    if (value.rfind(prefix, 0) != 0) return false;
    const std::string presented = value.substr(prefix.size());
    bool ok = token_matches(presented, shared_.options.token);
    const auto now = Clock::now();
    std::lock_guard lock(shared_.mutex);
    // Every granted token is compared, whichever matches (constant time).
    for (const auto& [token, expires] : shared_.granted) ok = (token_matches(presented, token) && now < expires) || ok;
    return ok;
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
    auto response = std::make_shared<http::response<http::string_body>>(status, 11);
    response->set(http::field::server, "rtcosimd");
    response->set(http::field::content_type, type);
    response->set(http::field::cache_control, "no-store");
    response->keep_alive(keep);
    response->body() = std::move(body);
    response->prepare_payload();
    http::async_write(stream_, *response, [self = shared_from_this(), response, keep](beast::error_code ec, std::size_t) {
      if (ec || !keep) {
        beast::error_code ignored;
        self->stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
        return;
      }
      self->read();
    });
  }

  beast::tcp_stream stream_;
  Shared& shared_;
  Registry& registry_;
  Slot slot_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
};

}  // namespace

struct WebServer::Impl {
  Shared shared;
  Registry registry;
  asio::io_context io{1};
  tcp::acceptor acceptor{io};
  asio::steady_timer timer{io};
  std::thread thread;
  unsigned short port = 0;

  void accept() {
    acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
      if (!acceptor.is_open()) return;
      if (!ec) {
        if (shared.clients.load() >= shared.options.max_clients) {
          shared.counters.refused.fetch_add(1);
          // A short answer, written without waiting: the client learns why.
          static const std::string busy =
              "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\nRetry-After: 5\r\n\r\n";
          beast::error_code ignored;
          socket.non_blocking(true, ignored);
          socket.write_some(asio::buffer(busy), ignored);
          socket.close(ignored);
        } else {
          shared.counters.connections.fetch_add(1);
          std::make_shared<HttpSession>(std::move(socket), shared, registry, Slot(shared))->run();
        }
      }
      accept();
    });
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
      impl_->io.stop();
    });
    impl_->thread.join();
  }
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
