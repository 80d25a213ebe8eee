// rtcosimd: the rtcosim daemon. Thin: arguments, then Daemon::run.
#include <cstdlib>
#include <iostream>
#include <string>

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
    } else if (a == "--plugin-dir" && i + 1 < argc) {
      options.plugin_dirs.emplace_back(argv[++i]);
    } else if (a == "--fmu-dir" && i + 1 < argc) {
      options.fmu_dirs.emplace_back(argv[++i]);
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
