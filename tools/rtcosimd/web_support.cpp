#include "tools/rtcosimd/web_support.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <mutex>

#include <boost/asio/ip/address_v4.hpp>
#include <boost/asio/ip/address_v6.hpp>
#include <sys/random.h>

namespace rtcosim::daemon {

namespace asio = boost::asio;

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

std::string host_name(std::string_view authority) {
  std::string h(authority);
  if (!h.empty() && h.front() == '[') {
    const auto close = h.find(']');
    if (close != std::string::npos) h.resize(close + 1);
  } else if (const auto colon = h.find(':'); colon != std::string::npos) {
    h.resize(colon);
  }
  for (auto& c : h) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return h;
}

std::optional<Authority> parse_authority(std::string_view text) {
  Authority a;
  std::size_t end = 0;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string_view::npos || close == 1 ||
        text.substr(1, close - 1).find_first_not_of("0123456789abcdefABCDEF:.") != std::string_view::npos) {
      return std::nullopt;
    }
    end = close + 1;
  } else {
    end = std::min(text.find(':'), text.size());
    if (end == 0 || text.substr(0, end).find_first_not_of(
                        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-") != std::string_view::npos) {
      return std::nullopt;
    }
  }
  a.host = host_name(text.substr(0, end));
  const std::string_view port = end < text.size() ? text.substr(end + 1) : std::string_view();
  if (end == text.size()) return a;
  if (text[end] != ':' || port.empty() || port.size() > 5 || port.front() == '0' ||
      port.find_first_not_of("0123456789") != std::string_view::npos) {
    return std::nullopt;
  }
  a.port = std::strtol(std::string(port).c_str(), nullptr, 10);
  if (a.port > 65535) return std::nullopt;
  return a;
}

bool host_allowed(const WebOptions& options, const std::string& name) {
  // An IPv6 listen address is written bare (2001:db8::1) and named in brackets.
  const std::string own = options.address.find(':') != std::string::npos && options.address.front() != '['
                              ? "[" + options.address + "]"
                              : host_name(options.address);
  if (name == own || name == "localhost" || name == "127.0.0.1" || name == "[::1]") return true;
  return std::any_of(options.hosts.begin(), options.hosts.end(),
                     [&](const std::string& h) { return host_name(h) == name; });
}

std::string peer_key(const boost::asio::ip::address& address, bool* loopback) {
  asio::ip::address a = address;
  if (a.is_v6() && a.to_v6().is_v4_mapped()) a = asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6());
  *loopback = a.is_loopback();
  return *loopback ? std::string("loopback") : a.to_string();
}

std::string random_hex() {
  unsigned char random[24];
  ssize_t got = 0;
  while ((got = getrandom(random, sizeof random, GRND_NONBLOCK)) < 0 && errno == EINTR) {
  }
  if (got != static_cast<ssize_t>(sizeof random)) return {};
  std::string hex;
  for (const unsigned char b : random) {
    hex += "0123456789abcdef"[b >> 4];
    hex += "0123456789abcdef"[b & 15];
  }
  return hex;
}

std::string WebShared::give_place(const std::string& held, std::chrono::steady_clock::time_point expires) {
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mutex);
  std::erase_if(places, [&](const auto& p) { return p.second <= now; });
  for (auto& p : places) {
    if (!held.empty() && token_matches(held, p.first)) {
      p.second = expires;
      return p.first;
    }
  }
  std::string value = random_hex();
  if (value.empty()) return {};
  if (places.size() >= WebServer::kMaxPlaces) places.erase(places.begin());
  places.emplace_back(value, expires);
  return value;
}

bool WebShared::holds_place(const std::string& value) {
  if (value.empty()) return false;
  const auto now = std::chrono::steady_clock::now();
  bool ok = false;
  std::lock_guard lock(mutex);
  for (const auto& [place, expires] : places) ok = (token_matches(value, place) && now < expires) || ok;
  return ok;
}

std::shared_ptr<const std::string> WebShared::latest() {
  std::lock_guard lock(mutex);
  return snapshot;
}

bool WebShared::allowed_origin(std::string_view origin) const {
  for (const std::string_view scheme : {"http://", "https://"}) {
    if (origin.substr(0, scheme.size()) == scheme) {
      const auto authority = parse_authority(origin.substr(scheme.size()));
      if (!authority) return false;
      const long port = authority->port >= 0 ? authority->port : (scheme == "http://" ? 80 : 443);
      return port == static_cast<long>(bound_port.load()) && allowed_host(authority->host);
    }
  }
  return false;
}

bool WebShared::throttled(const std::string& peer, bool add_wrong) {
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mutex);
  if (wrong.size() > 4096)
    std::erase_if(wrong, [&](const auto& w) { return now - w.second.since > std::chrono::seconds(1); });
  Wrong& w = wrong[peer];
  if (now - w.since > std::chrono::seconds(1)) w = Wrong{now, 0};
  if (w.count >= WebServer::kWrongTokensPerSecond) return true;
  if (add_wrong) ++w.count;
  return false;
}

}  // namespace rtcosim::daemon
