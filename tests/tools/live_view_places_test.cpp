// The live view's places (issue 44, item 8): a token holder's browser gets
// in while anonymous WebSockets hold every place open to watchers, a
// slowloris crowd does not keep the page away, loopback aliases are one
// address for the wrong-token limit, and an Origin or Host that is not
// exactly scheme://host[:port] is refused.
//
// Threads of its own: the notification drainer, the WebSocket readers and
// the slowloris crowd (each on its own descriptors; only atomics are shared).
#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>

#include "tests/tools/daemon_fixture.hpp"

namespace rtcosim::tools {
namespace {

unsigned short free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

// A connection to 127.0.0.1:port from the loopback address `from`
// (127.0.0.N: any of them may be bound without privileges), or over IPv6
// from ::1 when `from` is "::1". -1 when it cannot connect.
int connect_from(unsigned short port, const std::string& from = "127.0.0.1") {
  const bool v6 = from.find(':') != std::string::npos;
  const int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int ok = -1;
  if (v6) {
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_port = htons(port);
    inet_pton(AF_INET6, from.c_str(), &a.sin6_addr);
    ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  } else {
    sockaddr_in local{};
    local.sin_family = AF_INET;
    inet_pton(AF_INET, from.c_str(), &local.sin_addr);
    bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof local);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  }
  if (ok != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

void send_all(int fd, const std::string& data) {
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  for (std::size_t sent = 0; sent < data.size();) {
    const ssize_t n = send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;
    sent += static_cast<std::size_t>(n);
  }
}

// The first answer on `fd` (what one recv gives within `wait`).
std::string first_answer(int fd, std::chrono::milliseconds wait) {
  timeval tv{static_cast<time_t>(wait.count() / 1000), static_cast<suseconds_t>(wait.count() % 1000 * 1000)};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char buf[4096];
  const ssize_t got = recv(fd, buf, sizeof buf, 0);
  return std::string(buf, got > 0 ? static_cast<std::size_t>(got) : 0);
}

bool status_is(const std::string& answer, int code) { return answer.rfind("HTTP/1.1 " + std::to_string(code), 0) == 0; }

class LiveViewPlaces : public Daemon {
 protected:
  void start_live(const std::vector<std::string>& extra = {}, const std::string& address = "127.0.0.1") {
    port_ = free_port();
    std::vector<std::string> args = {"--listen", address + ":" + std::to_string(port_)};
    args.insert(args.end(), extra.begin(), extra.end());
    start(write_graph("graph.yaml", "1e9"), args);
    ASSERT_TRUE(any(notifications(2000ms), "READY=1"));
    drainer_ = std::thread([this] {
      while (!stop_) (void)notifications(100ms);
    });
  }
  void start_with_token(const std::vector<std::string>& extra = {}) {
    std::ofstream(dir_ / "token") << token_ << "\n";
    fs::permissions(dir_ / "token", fs::perms::owner_read | fs::perms::owner_write);
    std::vector<std::string> args = {"--web-token-file", (dir_ / "token").string(), "--web-max-clients", "16"};
    args.insert(args.end(), extra.begin(), extra.end());
    start_live(args);
  }
  void TearDown() override {
    stop_ = true;
    if (reader_.joinable()) reader_.join();
    if (drainer_.joinable()) drainer_.join();
    for (int fd : held_) close(fd);
    Daemon::TearDown();
  }
  // One request on a new connection (from `from`); the whole answer.
  std::string http(const std::string& request, const std::string& from = "127.0.0.1") const {
    const int fd = connect_from(port_, from);
    if (fd < 0) return {};
    send_all(fd, request);
    std::string out = read_all(fd, 3000ms);
    close(fd);
    return out;
  }
  std::string get(const std::string& path, const std::string& headers = {}) const {
    return http("GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" + headers + "\r\n");
  }
  static std::string ws_upgrade(const std::string& extra = {}) {
    return "GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n" +
           extra + "\r\n";
  }
  // A WebSocket upgrade on a new connection: its first answer, and the
  // connection in *fd (closed unless asked for).
  std::string open_ws(const std::string& extra = {}, int* fd = nullptr) const {
    const int c = connect_from(port_);
    send_all(c, ws_upgrade(extra));
    std::string hello = first_answer(c, 3000ms);
    if (fd) {
      *fd = c;
    } else {
      close(c);
    }
    return hello;
  }
  // `n` anonymous WebSockets that stay open and are read (a thread takes
  // their snapshots, so none is dropped as slow): what a crowd of watchers,
  // or one who wants the places, holds.
  int hold_anonymous_websockets(int n) {
    int upgraded = 0;
    for (int i = 0; i < n; ++i) {
      int fd = -1;
      if (status_is(open_ws({}, &fd), 101)) ++upgraded;
      held_.push_back(fd);
    }
    reader_ = std::thread([this, fds = held_] {
      char buf[65536];
      std::vector<pollfd> polled;
      for (int fd : fds) polled.push_back({fd, POLLIN, 0});
      while (!stop_) {
        if (poll(polled.data(), polled.size(), 50) <= 0) continue;
        for (auto& p : polled) {
          if (p.revents & POLLIN) (void)recv(p.fd, buf, sizeof buf, MSG_DONTWAIT);
          if (p.revents & (POLLHUP | POLLERR)) p.fd = -1;
        }
      }
    });
    return upgraded;
  }
  // The place cookie a request with the token is given ("" without one):
  // NAME=VALUE, as a browser sends it back.
  std::string place_cookie(const std::string& answer) const {
    const auto at = answer.find("\r\nSet-Cookie: ");
    if (at == std::string::npos) return {};
    const auto from = at + 14;
    const auto end = answer.find_first_of(";\r", from);
    return answer.substr(from, end - from);
  }
  std::string cookie_attributes(const std::string& answer) const {
    const auto at = answer.find("\r\nSet-Cookie: ");
    return at == std::string::npos ? std::string() : answer.substr(at + 14, answer.find('\r', at + 14) - at - 14);
  }

  const std::string token_ = "0123456789abcdef-live-places";
  unsigned short port_ = 0;
  std::thread drainer_, reader_;
  std::atomic<bool> stop_{false};
  std::vector<int> held_;
};

// Twelve anonymous WebSockets hold every place open to watchers (16 less
// the 4 kept for token holders). Before, the kept places went only to a
// request with an Authorization header, which neither a browser's page
// load nor its `new WebSocket` can send: the token holder's page and /ws
// got 0 of 10. Now a request with the token is given a place cookie
// (HttpOnly, SameSite=Strict), and with it the page loads 10 of 10 and its
// WebSocket upgrades 10 of 10; without it (or with a forged one) a 13th
// WebSocket is refused, while the page itself, which holds no place once
// answered, still loads for anyone.
TEST_F(LiveViewPlaces, ATokenHoldersBrowserGetsAPlaceWhileAnonymousWebSocketsHoldTheRest) {
  start_with_token();
  ASSERT_EQ(hold_anonymous_websockets(12), 12);
  EXPECT_TRUE(status_is(open_ws(), 503)) << "a 13th anonymous WebSocket";
  const std::string wrong = get("/whoami", "Authorization: Bearer 0123456789abcdef-wrong-token\r\n");
  EXPECT_NE(wrong.find("{\"act\":false}"), std::string::npos) << wrong.substr(0, 200);
  EXPECT_EQ(place_cookie(wrong), "") << "no place for a wrong token";
  const std::string who = get("/whoami", "Authorization: Bearer " + token_ + "\r\n");
  EXPECT_NE(who.find("{\"act\":true}"), std::string::npos) << who.substr(0, 300);
  const std::string cookie = place_cookie(who);
  ASSERT_EQ(cookie.rfind("rtcosim_place_" + std::to_string(port_) + "=", 0), 0u) << who.substr(0, 400);
  const std::string attributes = cookie_attributes(who);
  EXPECT_NE(attributes.find("; HttpOnly"), std::string::npos) << attributes;
  EXPECT_NE(attributes.find("; SameSite=Strict"), std::string::npos) << attributes;
  EXPECT_NE(attributes.find("; Path=/"), std::string::npos) << attributes;
  EXPECT_EQ(cookie.find(token_), std::string::npos) << "the cookie is not the token";
  int pages = 0, sockets = 0, anonymous_pages = 0;
  for (int i = 0; i < 10; ++i) {
    const std::string page = get("/", "Cookie: theme=dark; " + cookie + "\r\n");
    pages += status_is(page, 200) && page.find("rtcosimd live view") != std::string::npos ? 1 : 0;
    sockets += status_is(open_ws("Cookie: " + cookie + "\r\n"), 101) ? 1 : 0;
    anonymous_pages += status_is(get("/"), 200) ? 1 : 0;
  }
  EXPECT_EQ(pages, 10);
  EXPECT_EQ(sockets, 10);
  EXPECT_EQ(anonymous_pages, 10);
  std::string forged = cookie;
  forged.back() = forged.back() == '0' ? '1' : '0';
  EXPECT_TRUE(status_is(open_ws("Cookie: " + forged + "\r\n"), 503)) << "a forged place cookie";
  EXPECT_TRUE(status_is(open_ws(), 503)) << "still no place for an anonymous WebSocket";
  // The cookie allows a place, not an action.
  const std::string body = "{\"cmd\":\"stop\"}";
  EXPECT_TRUE(status_is(
      http("POST /action HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nCookie: " + cookie +
           "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body),
      403));
}

// The page in headless Chromium, opened at the address `rtcosim ctl
// web-token` gives (#token=…), while twelve anonymous WebSockets hold the
// watchers' places: its script presents the token, is given the place
// cookie, and its WebSocket is let in and delivers snapshots (the page
// counts them in data-pushes). Without the token its WebSocket is refused.
TEST_F(LiveViewPlaces, ChromiumWithTheTokenInItsAddressGetsItsWebSocket) {
  if (std::system("command -v chromium >/dev/null 2>&1") != 0) GTEST_SKIP() << "chromium is not installed";
  start_live({"--web-max-clients", "16"});
  ASSERT_EQ(hold_anonymous_websockets(12), 12);
  const std::string given = request("{\"cmd\":\"web-token\"}");
  ASSERT_EQ(given.rfind("{\"ok\":true,\"token\":\"", 0), 0u) << given;
  const std::string token = given.substr(20, 48);
  const auto dump = [&](const std::string& fragment) {
    const fs::path dom = dir_ / "dom.html";
    const std::string command =
        "timeout 60 chromium --headless=new --no-sandbox --disable-gpu --virtual-time-budget=3000 "
        "--user-data-dir=" +
        (dir_ / ("chromium" + std::to_string(fragment.size()))).string() +
        " --dump-dom 'http://127.0.0.1:" + std::to_string(port_) + "/" + fragment + "' > " + dom.string() +
        " 2>/dev/null";
    EXPECT_EQ(std::system(command.c_str()), 0);
    return slurp_file(dom);
  };
  const auto pushes = [](const std::string& page) -> long {
    const auto at = page.find("data-pushes=\"");
    return at == std::string::npos ? 0 : std::stol(page.substr(at + 13));
  };
  // A loaded machine can end chromium's budget before the first snapshot:
  // the token holder's page gets three loads to show one (the anonymous
  // page below gets one, and must show none).
  std::string with_token;
  for (int attempt = 0; attempt < 3 && pushes(with_token) < 1; ++attempt) with_token = dump("#token=" + token);
  EXPECT_NE(with_token.find("id=\"frames-fast\""), std::string::npos) << with_token.substr(0, 300);
  EXPECT_GE(pushes(with_token), 1) << "no snapshot came over the page's WebSocket";
  const std::string without = dump("");
  EXPECT_NE(without.find("id=\"frames-fast\""), std::string::npos) << "the page still shows /status.json";
  EXPECT_EQ(pushes(without), 0) << "an anonymous page's WebSocket was let in";
}

// A crowd that holds places with requests it never finishes (a byte every
// half second; reconnecting whenever it is cut off), 48 connections for 16
// places, from two threads. Before, it left the page 7 of 20 loads (the
// places went to whoever came first, and the crowd always came back
// first). Now a new connection takes the place of the one that has waited
// longest for its request: the page loads 20 of 20, and a token holder's
// WebSocket gets in 10 of 10 (each within two tries).
TEST_F(LiveViewPlaces, ASlowlorisCrowdDoesNotKeepThePageAway) {
  start_with_token();
  const std::string who = get("/whoami", "Authorization: Bearer " + token_ + "\r\n");
  const std::string cookie = place_cookie(who);
  std::atomic<int> reconnects{0};
  std::vector<std::thread> crowd;
  for (int t = 0; t < 2; ++t) {
    crowd.emplace_back([&] {
      std::vector<int> fds(24, -1);
      auto last_byte = std::chrono::steady_clock::now();
      while (!stop_) {
        for (int& fd : fds) {
          if (fd >= 0) {
            pollfd p{fd, POLLIN, 0};
            if (poll(&p, 1, 0) > 0) {  // answered (503) or closed: come back at once
              close(fd);
              fd = -1;
            }
          }
          if (fd < 0) {
            fd = connect_from(port_);
            if (fd >= 0) send(fd, "GET / HTTP/1.1\r\n", 16, MSG_NOSIGNAL | MSG_DONTWAIT);
            ++reconnects;
          }
        }
        if (std::chrono::steady_clock::now() - last_byte > 500ms) {
          last_byte = std::chrono::steady_clock::now();
          for (int fd : fds) {
            if (fd >= 0) send(fd, "X", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
          }
        }
        std::this_thread::sleep_for(5ms);
      }
      for (int fd : fds) {
        if (fd >= 0) close(fd);
      }
    });
  }
  std::this_thread::sleep_for(1500ms);  // the crowd holds every place
  int pages = 0, sockets = 0;
  for (int i = 0; i < 20; ++i) {
    pages += status_is(get("/"), 200) ? 1 : 0;
    // A second try, as a browser's page makes: under the whole suite on 2
    // CPUs one of ten first tries was once answered 503 (the place its
    // previous socket held not yet given back).
    if (i % 2 == 0) {
      bool in = status_is(open_ws("Cookie: " + cookie + "\r\n"), 101);
      if (!in) {
        std::this_thread::sleep_for(100ms);
        in = status_is(open_ws("Cookie: " + cookie + "\r\n"), 101);
      }
      sockets += in ? 1 : 0;
    }
    std::this_thread::sleep_for(100ms);
  }
  stop_ = true;
  for (auto& t : crowd) t.join();
  EXPECT_FALSE(cookie.empty()) << who.substr(0, 300);
  EXPECT_EQ(pages, 20) << reconnects.load() << " connections of the crowd";
  EXPECT_EQ(sockets, 10);
  ASSERT_TRUE(alive());
}

// Wrong tokens from 30 loopback addresses (127.0.0.2 … 127.0.0.31, which
// any local process may bind): one limit of 10 a second for all of them.
// Before, each address had its own (49 addresses: 303 guesses a second).
// The right token from yet another alias is still checked and accepted.
TEST_F(LiveViewPlaces, LoopbackAliasesShareOneWrongTokenLimit) {
  start_with_token();
  int answered = 0, throttled = 0;
  for (int i = 0; i < 30; ++i) {
    const std::string r = http(
        "GET /whoami HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nAuthorization: "
        "Bearer guess-" +
            std::to_string(i) + "\r\n\r\n",
        "127.0.0." + std::to_string(2 + i));
    answered += r.find("{\"act\":false}") != std::string::npos ? 1 : 0;
    throttled += status_is(r, 429) ? 1 : 0;
  }
  EXPECT_EQ(answered + throttled, 30);
  EXPECT_LE(answered, 20);  // 10 a second; the burst may straddle one boundary
  EXPECT_GE(throttled, 10);
  const std::string right = http(
      "GET /whoami HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nAuthorization: Bearer " + token_ + "\r\n\r\n",
      "127.0.0.77");
  EXPECT_NE(right.find("{\"act\":true}"), std::string::npos) << right.substr(0, 200);
}

// The same on a dual-stack socket (--listen [::]): ::1 and 127.x (seen as
// ::ffff:127.x) are one address. Before, a 127.x peer there was not even
// taken for loopback.
TEST_F(LiveViewPlaces, Ipv6AndIpv4LoopbackAreOneAddress) {
  const int probe = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in6 any6{};
  any6.sin6_family = AF_INET6;
  const bool v6 = probe >= 0 && bind(probe, reinterpret_cast<sockaddr*>(&any6), sizeof any6) == 0;
  if (probe >= 0) close(probe);
  if (!v6) GTEST_SKIP() << "no IPv6 here";
  std::ofstream(dir_ / "token") << token_ << "\n";
  fs::permissions(dir_ / "token", fs::perms::owner_read | fs::perms::owner_write);
  start_live({"--listen-public", "--web-token-file", (dir_ / "token").string()}, "::");
  int answered = 0, throttled = 0;
  for (int i = 0; i < 30; ++i) {
    const std::string from = i % 2 == 0 ? std::string("::1") : "127.0.0." + std::to_string(2 + i);
    const std::string r = http(
        "GET /whoami HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nAuthorization: "
        "Bearer guess-" +
            std::to_string(i) + "\r\n\r\n",
        from);
    answered += r.find("{\"act\":false}") != std::string::npos ? 1 : 0;
    throttled += status_is(r, 429) ? 1 : 0;
  }
  EXPECT_EQ(answered + throttled, 30);
  EXPECT_LE(answered, 20);
  EXPECT_GE(throttled, 10);
}

// An Origin is exactly scheme://host[:port], the port all digits: what
// strtol read as the port before (":18080x", ":18080@evil.com",
// ":18080.evil.com") and every other extra is refused (403, a WebSocket
// upgrade and a POST alike); so is a Host with anything after its port
// (421). The live view's own origins are still served.
TEST_F(LiveViewPlaces, OriginsAndHostsAreParsedStrictly) {
  start_live();
  const std::string own = "127.0.0.1:" + std::to_string(port_);
  const std::string p = std::to_string(port_);
  const std::string body = "{\"signal\":\"wave.y\"}";
  const auto probe = [&](const std::string& origin) {
    return http("POST /probe HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nOrigin: " + origin +
                "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
                body);
  };
  for (const std::string& bad :
       {"http://" + own + "x", "http://" + own + "@evil.com", "http://" + own + ".evil.com", "http://" + own + "/",
        "http://" + own + "?", "http://" + own + "#", "http://" + own + ":" + p, "http://127.0.0.1:+" + p,
        "http://127.0.0.1: " + p, "http://127.0.0.1:0" + p, "http://127.0.0.1:" + p + "0", "http://evil.com@" + own,
        "http://127.0.0.1 :" + p, "http:/" + own, "ws://" + own, "http://:" + p, "http://[::1:" + p,
        std::string("http://127.0.0.1:"), std::string("null")}) {
    EXPECT_TRUE(status_is(probe(bad), 403)) << "Origin: " << bad;
    EXPECT_TRUE(status_is(open_ws("Origin: " + bad + "\r\n"), 403)) << "Origin: " << bad;
  }
  for (const std::string& good : {"http://" + own, "http://localhost:" + p, "https://localhost:" + p}) {
    EXPECT_NE(probe(good).find("\"signal\":\"wave.y\""), std::string::npos) << "Origin: " << good;
    EXPECT_TRUE(status_is(open_ws("Origin: " + good + "\r\n"), 101)) << "Origin: " << good;
  }
  for (const std::string& bad : {own + "x", own + "@evil.com", own + ".evil.com", own + "/", "127.0.0.1:+" + p}) {
    EXPECT_TRUE(status_is(http("GET /status.json HTTP/1.1\r\nHost: " + bad + "\r\nConnection: close\r\n\r\n"), 421))
        << "Host: " << bad;
  }
  for (const std::string& good : {own, std::string("localhost"), std::string("127.0.0.1")}) {
    EXPECT_TRUE(status_is(http("GET /status.json HTTP/1.1\r\nHost: " + good + "\r\nConnection: close\r\n\r\n"), 200))
        << "Host: " << good;
  }
}

}  // namespace
}  // namespace rtcosim::tools
