// rtcosimd: the rtcosim daemon. Thin: arguments, then Daemon::run.
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <sys/stat.h>

#include "io/plant_receivers.hpp"
#include "tools/common/cli_args.hpp"
#include "tools/rtcosimd/daemon.hpp"

namespace {

constexpr const char* kUsage = R"(usage: rtcosimd --config FILE [--socket PATH] [options]

Runs a task graph as a service: loads and validates FILE, prepares real time,
starts every task, and serves the control socket until SIGTERM or SIGINT.
Under systemd (Type=notify) it reports READY=1, a STATUS= line every second,
and feeds the watchdog only while every task makes progress. SIGHUP reloads.

options:
  --config FILE        the task graph (e.g. /etc/rtcosim/graph.yaml)
  --socket PATH        control socket (default /run/rtcosim/control.sock); see
                       'rtcosim ctl --help' and docs/daemon.md, "Security model"
  --config-dir DIR     where a client's 'reload' may read files (default /etc/rtcosim)
  --recording-dir DIR  where a client's 'record' and 'trace' write (default
                       /var/lib/rtcosim/recordings)
  --max-clients N      control-socket connections served at once (default 64)
  --plugin-dir DIR     where the task graphs' 'plugins:' ids may be loaded from;
                       repeatable; none by default (docs/plugins.md)
  --fmu-dir DIR        where a task graph's files (an FMU's 'file') may be read
                       from besides --config-dir; repeatable (docs/daemon.md)
  --host NAME          run only the tasks of host NAME of the graph's 'hosts:';
                       links to other hosts' tasks travel over DDS, and every
                       host starts on one common epoch (docs/dds.md)
  --listen ADDR:PORT   serve the live view (a web page; docs/live.md) there, e.g.
                       127.0.0.1:8080; off by default, loopback addresses only
                       unless --listen-public
  --listen-public      allow --listen on an address other than loopback
  --web-token-file F   the token (first line of F) that web clients present to
                       act (start, stop, reload, record); without it the page
                       is read-only for everyone
  --web-host NAME      a host name the live view answers to besides its address,
                       localhost and 127.0.0.1 (a request naming another in
                       Host or Origin is refused); repeatable
  --web-max-clients N  web connections served at once (default 16; the last 4
                       only for requests with a token; at most what
                       LimitNOFILE allows)
  --web-push-rate HZ   snapshots per second to each web client (default 10)
  --web-token-lifetime S  how long a token from 'rtcosim ctl web-token' (given
                       to the control socket's group) allows actions (default 900)
  --dot PROGRAM        Graphviz's dot, which lays out the live view's graph
                       (default: dot, looked up in PATH); 'none': the page
                       draws the graph itself
  -h, --help           this text
)";

// A whole number or a number in [lo, hi] from `text`; nullopt otherwise.
std::optional<double> number_in(const std::string& text, double lo, double hi, bool whole) {
  char* end = nullptr;
  const double n = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(n >= lo) || n > hi) return std::nullopt;
  if (whole && n != static_cast<double>(static_cast<long>(n))) return std::nullopt;
  return n;
}

// The options from argv; throws UsageError naming what was wrong.
std::optional<rtcosim::daemon::Options> parse_options(const std::vector<std::string>& raw) {
  using rtcosim::tools::UsageError;
  rtcosim::tools::CliArgs args(
      "rtcosimd",
      {"config", "socket", "config-dir", "recording-dir", "max-clients", "plugin-dir", "fmu-dir", "host", "listen",
       "web-token-file", "web-host", "web-max-clients", "web-push-rate", "web-token-lifetime", "dot"},
      {"help", "listen-public"}, {"plugin-dir", "fmu-dir", "web-host"});
  args.parse(raw);
  if (args.flag("help")) {
    std::cout << kUsage;
    return std::nullopt;
  }
  if (!args.positionals().empty()) throw UsageError("unexpected argument '" + args.positionals().front() + "'");
  rtcosim::daemon::Options options;
  const auto config = args.value("config");
  if (!config) throw UsageError("--config FILE is required");
  options.config = *config;
  options.socket_path = args.value("socket").value_or(options.socket_path);
  options.config_dir = args.value("config-dir").value_or(options.config_dir);
  options.recording_dir = args.value("recording-dir").value_or(options.recording_dir);
  options.host = args.value("host").value_or(options.host);
  if (const auto dot = args.value("dot")) options.dot_program = *dot == "none" ? std::string() : *dot;
  options.plugin_dirs = args.values("plugin-dir");
  options.fmu_dirs = args.values("fmu-dir");
  if (const auto v = args.value("listen")) {
    const auto colon = v->rfind(':');
    const auto port = colon == std::string::npos ? std::nullopt : number_in(v->substr(colon + 1), 1, 65535, true);
    if (colon == std::string::npos || colon == 0 || !port) {
      throw UsageError("--listen '" + *v + "' — expected ADDRESS:PORT, e.g. 127.0.0.1:8080");
    }
    options.web.address = v->substr(0, colon);
    options.web.port = static_cast<unsigned short>(*port);
  }
  options.web.allow_public = args.flag("listen-public");
  options.web.hosts = args.values("web-host");
  if (const auto file = args.value("web-token-file")) {
    // The token is a secret: a file others may read is refused.
    struct stat st {};
    if (::stat(file->c_str(), &st) != 0) {
      throw UsageError("--web-token-file '" + *file + "': " + std::strerror(errno));
    }
    if ((st.st_mode & 077) != 0) {
      std::ostringstream mode;
      mode << std::oct << (st.st_mode & 0777);
      throw UsageError("--web-token-file '" + *file + "' may be read by group or others (mode 0" + mode.str() +
                       ") — chmod 600 it");
    }
    std::ifstream in(*file);
    std::getline(in, options.web.token);
    if (!in || options.web.token.size() < 16) {
      throw UsageError("--web-token-file '" + *file +
                       "': cannot read a token of at least 16 characters from its first line");
    }
  }
  if (const auto v = args.value("web-token-lifetime")) {
    const auto s = number_in(*v, 1.0, 86400.0, false);
    if (!s) throw UsageError("--web-token-lifetime '" + *v + "' — expected seconds from 1 to 86400");
    options.web.token_lifetime_s = *s;
  }
  if (const auto v = args.value("web-max-clients")) {
    const auto n = number_in(*v, 1.0, 10000.0, true);
    if (!n) throw UsageError("--web-max-clients '" + *v + "' — expected a whole number from 1 to 10000");
    options.web.max_clients = static_cast<std::size_t>(*n);
  }
  if (const auto v = args.value("web-push-rate")) {
    const auto n = number_in(*v, 0.1, 100.0, false);
    if (!n) throw UsageError("--web-push-rate '" + *v + "' — expected a rate from 0.1 to 100 (per second)");
    options.web.push_rate = *n;
  }
  if (const auto v = args.value("max-clients")) {
    const auto n = number_in(*v, 1.0, 100000.0, true);
    if (!n) throw UsageError("--max-clients '" + *v + "' — expected a whole number from 1 to 100000");
    options.max_clients = static_cast<std::size_t>(*n);
  }
  return options;
}

}  // namespace

int main(int argc, char** argv) {
  std::optional<rtcosim::daemon::Options> options;
  try {
    options = parse_options(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const rtcosim::tools::UsageError& e) {
    std::cerr << "rtcosimd: " << e.what() << "\nsee 'rtcosimd --help'\n";
    return 2;
  }
  if (!options) return 0;
  // Declared first, destroyed last: the graphs the daemon loads hold its
  // live plant sources (io/plant_receivers.hpp).
  rtcosim::io::PlantReceivers receivers;
  rtcosim::daemon::Daemon daemon(*options);
  return daemon.run();
}
