// rtcosim: the command-line front end. Thin: it picks a verb and hands the
// rest of the arguments to that verb's library function.
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "io/plant_receivers.hpp"
#include "tools/rtcosim/check_command.hpp"
#include "tools/rtcosim/ctl_command.hpp"
#include "tools/rtcosim/eval_command.hpp"
#include "tools/rtcosim/fmu_command.hpp"
#include "tools/rtcosim/import_command.hpp"
#include "tools/rtcosim/preflight_command.hpp"
#include "tools/rtcosim/run_command.hpp"
#include "tools/rtcosim/stall_sweep_command.hpp"
#include "tools/rtcosim/sync_command.hpp"
#include "tools/rtcosim/trace_command.hpp"
#ifdef RTCOSIM_HAVE_BABELTRACE2
#endif

namespace {

constexpr const char* kUsage = R"(usage: rtcosim <command> [options]

rtcosim is a multi-core real-time co-simulation runtime: partitions of a block
diagram run as CPU-pinned SCHED_FIFO tasks and exchange time-tagged data blocks
through lock-free links, each consumer reconstructing its inputs with a
coupling (extrapolation) method.

commands:
  check     validate a task-graph file; print its tasks and links, or Graphviz DOT
  run       run a task graph (--virtual: on a fake clock with scripted execution times)
  replay    a logged real-time run again, bit for bit, or a changed graph against its timing
  stall-sweep  long frames injected task by task in virtual time: error against the reference, silent blow-ups
  preflight check the real-time set-up of this PC for a graph's CPUs
  ctl       talk to a running rtcosimd (status, stop, start, reload, record, trace)
  trace     'trace report DIR': latency, execution time and deadline misses from an LTTng trace
  fmu       'fmu info FILE': what an FMU declares and whether it loads here
  import    'import ssp FILE.ssp': a task graph of an SSP's system of FMUs
  sync      replay a graph's state synchronisation: tunable parameters kept in step with measurements
  eval      evaluate the coupling methods on the paper's test signals (MSE, table, SVG plot)

  rtcosim <command> --help    options of one command
  rtcosim --version           version
)";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "--version") {
    std::cout << "rtcosim " << RTCOSIM_VERSION << '\n';
    return 0;
  }
  const std::string verb = args[0];
  args.erase(args.begin());
  // The live plant sources' threads and sockets, for every verb that loads a
  // graph; they go after the verb's graphs (io/plant_receivers.hpp).
  rtcosim::io::PlantReceivers receivers;
  if (verb == "eval") return rtcosim::tools::run_eval_command(args);
  if (verb == "check") return rtcosim::tools::run_check_command(args);
  if (verb == "run") return rtcosim::tools::run_run_command(args);
  if (verb == "replay") return rtcosim::tools::run_replay_command(args);
  if (verb == "stall-sweep") return rtcosim::tools::run_stall_sweep_command(args);
  if (verb == "ctl") return rtcosim::tools::run_ctl_command(args);
  if (verb == "sync") return rtcosim::tools::run_sync_command(args);
  if (verb == "fmu") return rtcosim::tools::run_fmu_command(args);
  if (verb == "import") return rtcosim::tools::run_import_command(args);
  if (verb == "preflight") return rtcosim::tools::run_preflight_command(args);
  if (verb == "trace") {
#ifdef RTCOSIM_HAVE_BABELTRACE2
    return rtcosim::tools::run_trace_command(args);
#else
    std::cerr << "rtcosim: this build has no trace reader: libbabeltrace2-dev was not installed, or the build left "
                 "out the part 'trace-report' (RTCOSIM_WITHOUT, as scripts/quickstart.sh builds it) — "
                 "scripts/test.sh installs it and builds every part\n";
    return 1;
#endif
  }
  std::cerr << "rtcosim: unknown command '" << verb << "'\n" << kUsage;
  return 2;
}
