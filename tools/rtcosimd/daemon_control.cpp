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
#include "session/record_files.hpp"
#include "session/report/graph_report.hpp"
#include "session/report/graph_svg.hpp"
#include "session/report/recording_summary.hpp"
#include "session/report/redaction.hpp"
#include "session/report/run_summary.hpp"
#include "session/session.hpp"
#include "session/sync/sync_live.hpp"
#include "session/trace_session.hpp"
#include "tools/rtcosimd/control_client.hpp"
#include "tools/rtcosimd/daemon.hpp"
#include "tools/rtcosimd/daemon_internal.hpp"

namespace rtcosim::daemon {

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
  runtime::Recorder* recorder = graph_.recorder();
  if (!recorder || recorder->probes().empty()) {
    return reply_error("probes are part of the live view — start rtcosimd with --listen ADDRESS:PORT (docs/live.md)");
  }
  const std::size_t index = recorder->find_probeable(signal);
  if (index == runtime::Recorder::kNoProbe) {
    std::string some;
    const auto& all = recorder->probeable();
    for (std::size_t i = 0; i < all.size() && i < 8; ++i) some += (some.empty() ? "" : ", ") + all[i].signal;
    return reply_error("no output '" + signal.substr(0, 200) +
                       "' in the running graph's tasks — expected BLOCK.PORT or BLOCK.PORT[i], e.g. " + some + " (" +
                       std::to_string(all.size()) + " in all; the live view's graph.signals lists them)");
  }
  const auto& slots = recorder->probes();
  std::size_t slot = slots.size();
  for (std::size_t i = 0; i < slots.size(); ++i) {
    if (slots[i].probe == index) slot = i;
  }
  if (slot == slots.size()) {
    // The slot chosen longest ago makes room.
    slot = next_probe_slot_;
    next_probe_slot_ = (next_probe_slot_ + 1) % slots.size();
    recorder->set_probe(slot, index);
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
      return record_start({get("file"), get("format"), get("max_file_size"), get("rotate_every"), get("replay_log"),
                           get("overwrite") == "true"});
    }
    if (action == "stop") {
      session::ServiceRecording& recording = graph_.recording();
      if (const std::string error = graph_.end_recording(); !error.empty()) recording.set_error(error);
      if (!recording.error().empty()) return reply_error(recording.take_error());
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

}  // namespace rtcosim::daemon
