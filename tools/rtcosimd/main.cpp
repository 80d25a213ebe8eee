// rtcosimd: the rtcosim daemon. Thin: arguments, then Daemon::run.
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>

#include <sys/stat.h>

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

}  // namespace

int main(int argc, char** argv) {
  rtcosim::daemon::Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::cout << kUsage;
      return 0;
    }
    if ((a == "--config" || a == "--socket" || a == "--config-dir" || a == "--recording-dir" || a == "--host") &&
        i + 1 < argc) {
      (a == "--config"       ? options.config
       : a == "--socket"     ? options.socket_path
       : a == "--config-dir" ? options.config_dir
       : a == "--host"       ? options.host
                             : options.recording_dir) = argv[++i];
    } else if (a == "--dot" && i + 1 < argc) {
      options.dot_program = argv[++i];
      if (options.dot_program == "none") options.dot_program.clear();
    } else if (a == "--plugin-dir" && i + 1 < argc) {
      options.plugin_dirs.emplace_back(argv[++i]);
    } else if (a == "--fmu-dir" && i + 1 < argc) {
      options.fmu_dirs.emplace_back(argv[++i]);
    } else if (a == "--listen" && i + 1 < argc) {
      const std::string v = argv[++i];
      const auto colon = v.rfind(':');
      char* end = nullptr;
      const long port = colon == std::string::npos ? -1 : std::strtol(v.c_str() + colon + 1, &end, 10);
      if (colon == std::string::npos || colon == 0 || *end != '\0' || port < 1 || port > 65535) {
        std::cerr << "rtcosimd: --listen '" << v << "' — expected ADDRESS:PORT, e.g. 127.0.0.1:8080\n";
        return 2;
      }
      options.web.address = v.substr(0, colon);
      options.web.port = static_cast<unsigned short>(port);
    } else if (a == "--listen-public") {
      options.web.allow_public = true;
    } else if (a == "--web-host" && i + 1 < argc) {
      options.web.hosts.emplace_back(argv[++i]);
    } else if (a == "--web-token-file" && i + 1 < argc) {
      // The token is a secret: a file others may read is refused.
      struct stat st {};
      if (::stat(argv[++i], &st) == 0 && (st.st_mode & 077) != 0) {
        std::cerr << "rtcosimd: --web-token-file '" << argv[i] << "' may be read by group or others (mode 0" << std::oct
                  << (st.st_mode & 0777) << std::dec << ") — chmod 600 it\n";
        return 2;
      }
      std::ifstream in(argv[i]);
      std::getline(in, options.web.token);
      if (!in || options.web.token.size() < 16) {
        std::cerr << "rtcosimd: --web-token-file '" << argv[i]
                  << "': cannot read a token of at least 16 characters from its first line\n";
        return 2;
      }
    } else if (a == "--web-token-lifetime" && i + 1 < argc) {
      char* end = nullptr;
      const double s = std::strtod(argv[++i], &end);
      if (*end != '\0' || !(s >= 1.0) || s > 86400.0) {
        std::cerr << "rtcosimd: --web-token-lifetime '" << argv[i] << "' — expected seconds from 1 to 86400\n";
        return 2;
      }
      options.web.token_lifetime_s = s;
    } else if ((a == "--web-max-clients" || a == "--web-push-rate") && i + 1 < argc) {
      char* end = nullptr;
      const double n = std::strtod(argv[++i], &end);
      const bool clients = a == "--web-max-clients";
      if (*end != '\0' || !(n >= (clients ? 1.0 : 0.1)) || n > (clients ? 10000.0 : 100.0) ||
          (clients && n != static_cast<double>(static_cast<long>(n)))) {
        std::cerr << "rtcosimd: " << a << " '" << argv[i] << "' — expected "
                  << (clients ? "a whole number from 1 to 10000" : "a rate from 0.1 to 100 (per second)") << '\n';
        return 2;
      }
      if (clients) {
        options.web.max_clients = static_cast<std::size_t>(n);
      } else {
        options.web.push_rate = n;
      }
    } else if (a == "--max-clients" && i + 1 < argc) {
      char* end = nullptr;
      const long n = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || n < 1 || n > 100000) {
        std::cerr << "rtcosimd: --max-clients '" << argv[i] << "' — expected a whole number from 1 to 100000\n";
        return 2;
      }
      options.max_clients = static_cast<std::size_t>(n);
    } else {
      std::cerr << "rtcosimd: unexpected argument '" << a << "'\n" << kUsage;
      return 2;
    }
  }
  if (options.config.empty()) {
    std::cerr << "rtcosimd: --config FILE is required\n" << kUsage;
    return 2;
  }
  rtcosim::daemon::Daemon daemon(options);
  return daemon.run();
}
