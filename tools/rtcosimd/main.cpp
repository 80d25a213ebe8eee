// rtcosimd: the rtcosim daemon. Thin: arguments, then Daemon::run.
#include <iostream>
#include <string>

#include "tools/rtcosimd/daemon.hpp"

namespace {

constexpr const char* kUsage = R"(usage: rtcosimd --config FILE [--socket PATH]

Runs a task graph as a service: loads and validates FILE, prepares real time,
starts every task, and serves the control socket until SIGTERM or SIGINT.
Under systemd (Type=notify) it reports READY=1, a STATUS= line every second,
and feeds the watchdog only while every task makes progress. SIGHUP reloads.

options:
  --config FILE   the task graph (e.g. /etc/rtcosim/graph.yaml)
  --socket PATH   control socket (default /run/rtcosim/control.sock); see 'rtcosim ctl --help'
  -h, --help      this text
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
    if ((a == "--config" || a == "--socket") && i + 1 < argc) {
      (a == "--config" ? options.config : options.socket_path) = argv[++i];
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
