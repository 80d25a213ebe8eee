#pragma once

// What the live view's HTTP and WebSocket sessions (web_server.cpp) lean on:
// a bounded worker for what would block the asio loop, the checks of a
// request's Host and Origin, the key a peer's limits count under, and
// tokens. Private to rtcosimd; the tests reach the checks through it.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/ip/address.hpp>

#include "tools/rtcosimd/web_server.hpp"

namespace rtcosim::daemon {

// One thread that runs what would block the asio loop (a request to the
// control socket waits up to 3 s for the daemon): a bounded queue, so a
// flood of probes is refused (503) instead of queued without end.
class Worker {
 public:
  Worker() : thread_([this] { loop(); }) {}
  ~Worker() { stop(); }
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;
  bool post(std::function<void()> job) {
    std::lock_guard lock(mutex_);
    if (stopping_ || jobs_.size() >= kMaxQueued) return false;
    jobs_.push_back(std::move(job));
    ready_.notify_one();
    return true;
  }
  void stop() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
      jobs_.clear();
    }
    ready_.notify_one();
    if (thread_.joinable()) thread_.join();
  }

 private:
  static constexpr std::size_t kMaxQueued = 32;
  void loop() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
        if (stopping_) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      try {
        job();
      } catch (const std::exception& e) {
        std::cerr << "rtcosimd: live view: " << e.what() << '\n';
      }
    }
  }
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  std::thread thread_;
};

// The host name of an authority ("name:port", "[v6]:port"), in lower case.
std::string host_name(std::string_view authority);

// A Host header's or an Origin's authority, exactly "name", "name:port" or
// "[v6]:port": the port all digits (1 to 65535, no sign, no leading zero)
// and nothing after it, no user part. Issue 44: strtol took ":18080x",
// ":18080@evil.com" and ":18080.evil.com" for port 18080.
struct Authority {
  std::string host;  // lower case; an IPv6 address in its brackets
  long port = -1;    // -1: none written
};
std::optional<Authority> parse_authority(std::string_view text);

// Whether a Host header's name (host_name) is the live view's own: its
// listen address, the loopback names, or one of --web-host.
bool host_allowed(const WebOptions& options, const std::string& name);

// The address a connection's per-address limits count it under. Every
// loopback address is one, "loopback": 127.0.0.0/8 (any local process may
// bind 127.0.0.2, 127.0.0.3, … without privileges; issue 44: 49 of them
// made 303 token guesses a second), ::1, and 127.x as a dual-stack socket
// sees it (::ffff:127.0.0.1, which asio does not call loopback).
std::string peer_key(const boost::asio::ip::address& address, bool* loopback);

// 24 random bytes in hex (48 digits); "" before the kernel's pool is
// seeded (never waited for: this runs on the server's loop).
std::string random_hex();

// Whether a presented token is the expected one, in a time that does not
// depend on how much of it matches; an empty expected token matches nothing.
bool token_matches(const std::string& presented, const std::string& expected) noexcept;

/*
 * WebShared: what the live view's sessions share, on the asio thread and
 * the worker: the options, the latest snapshot and layout, the tokens and
 * place cookies handed out, and the per-peer counts that bound a flood.
 * Members marked "under `mutex`" are read and written with it held; the
 * counters are atomics. Owned by WebServer::Impl, which outlives every
 * session.
 */
struct WebShared {
  WebOptions options;
  std::string control_socket;
  WebCounters counters;
  std::atomic<std::size_t> clients{0};
  std::mutex mutex;
  std::shared_ptr<const std::string> snapshot = std::make_shared<const std::string>("{}");
  // Tokens from the control socket and when they expire (under `mutex`).
  std::vector<std::pair<std::string, std::chrono::steady_clock::time_point>> granted;
  std::shared_ptr<const std::string> graph_svg = std::make_shared<const std::string>();  // under `mutex`
  // Under `mutex`: open connections per peer address, and the wrong tokens
  // an address presented in its current one-second window.
  std::map<std::string, std::size_t> per_peer;
  struct Wrong {
    std::chrono::steady_clock::time_point since;
    int count = 0;
  };
  std::map<std::string, Wrong> wrong;
  // Under `mutex`: the place cookies handed to browsers that presented a
  // valid token (docs/live.md, "Places"), and when each expires.
  std::vector<std::pair<std::string, std::chrono::steady_clock::time_point>> places;
  // WebSockets without a token or place cookie (the loop thread's).
  std::atomic<std::size_t> anonymous_ws{0};
  Worker worker;  // stopped before the rest goes (WebServer::~WebServer)

  // The places every WebSocket may hold; the rest are kept for token holders.
  [[nodiscard]] std::size_t watcher_places() const {
    return options.max_clients - std::min(WebServer::kReservedForTokens, options.max_clients / 4);
  }
  // Named after the port: cookies are per host, not per port, and two
  // daemons on one machine must not overwrite each other's.
  [[nodiscard]] std::string place_cookie_name() const { return "rtcosim_place_" + std::to_string(bound_port.load()); }
  // Renews the place `held` (the request's cookie, when valid) until
  // `expires`, or makes a new one; its value, "" without random bytes.
  std::string give_place(const std::string& held, std::chrono::steady_clock::time_point expires);
  // Whether `value` is an unexpired place; every one is compared, in constant time.
  bool holds_place(const std::string& value);

  std::shared_ptr<const std::string> latest();
  [[nodiscard]] bool allowed_host(const std::string& name) const { return host_allowed(options, name); }
  // An Origin header: exactly http(s)://ALLOWED-HOST[:port] (parse_authority);
  // "null" and others are foreign. Its port (written, or the scheme's
  // 80/443) must be the live view's own: a page served by another program
  // on the same host is another site.
  [[nodiscard]] bool allowed_origin(std::string_view origin) const;
  std::atomic<unsigned short> bound_port{0};  // set when listening
  // Counts a wrong token of `peer`; whether its checks are throttled now.
  bool throttled(const std::string& peer, bool add_wrong);
};

}  // namespace rtcosim::daemon
