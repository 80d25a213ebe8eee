#include "tools/rtcosim/ctl_command.hpp"

#include <iostream>
#include <map>

#include "base/json.hpp"
#include "session/control_request.hpp"
#include "tools/common/cli_args.hpp"

namespace rtcosim::tools {

namespace {

constexpr const char* kCtlHelp = R"(usage: rtcosim ctl [--socket PATH] COMMAND

Talks to a running rtcosimd through its control socket (default
/run/rtcosim/control.sock; the socket's group is rtcosim).

commands:
  status                  per-task and per-link statistics (JSON)
  stop | start            stop the tasks at a frame boundary / start them again
  reload [FILE]           validate FILE (default: the current one) and switch to it;
                          a file with errors is refused and the running graph keeps running
  record start FILE       record the graph's 'record:' signals into the new FILE in
                          the daemon's recording directory (/var/lib/rtcosim/recordings);
                          .csv, .h5 (HDF5) or .mat (MAT v7.3) by its extension
      --format F          csv, hdf5, mat73 or mat5 (must fit the extension)
      --max-file-size S   go on in FILE.1.EXT, FILE.2.EXT, ... once a file holds S
                          on disk (e.g. 64MB; k/kB, M/MB, G/GB; at least 4 kB for
                          csv, 1 MB for hdf5/mat; at most one cut a second)
      --rotate-every D    ... or once a file has run for D (e.g. 1h; 1 s or more)
      --replay-log L      also log the next run, from its start to its stop, into L
                          for 'rtcosim replay' (the graph must be stopped; rotated
                          with the recording as L.1.EXT, ...; docs/replay.md)
      --overwrite         replace an existing FILE
  record stop
  trace start DIR         record an LTTng trace into the new directory DIR there
  trace stop
  probe SIGNAL            show BLOCK.PORT[i] of the running graph in the live view
                          (4 slots; the one chosen longest ago makes room)
  web-token               a token for the live view's actions (start, stop, reload,
                          record), valid for --web-token-lifetime (900 s), and
                          the page's address with it: for the control socket's group
  raw JSON                send one request as written, e.g. raw '{"cmd":"status"}'
)";

}  // namespace

std::string ctl_request_line(const std::vector<std::string>& p, const std::map<std::string, std::string>& options) {
  if (p.empty())
    throw UsageError("no command — expected status, stop, start, reload, record, trace, probe, web-token or raw");
  const std::string& cmd = p[0];
  const bool record_start = cmd == "record" && p.size() >= 2 && p[1] == "start";
  for (const auto& [name, value] : options) {
    if (!record_start) throw UsageError("--" + name + " belongs to 'record start FILE', not to '" + cmd + "'");
  }
  std::string request;
  if ((cmd == "status" || cmd == "stop" || cmd == "start" || cmd == "web-token") && p.size() == 1) {
    request = "{\"cmd\":\"" + cmd + "\"}";
  } else if (cmd == "reload" && p.size() <= 2) {
    request = p.size() == 2 ? "{\"cmd\":\"reload\",\"file\":" + base::json_string(p[1]) + "}" : "{\"cmd\":\"reload\"}";
  } else if ((cmd == "record" || cmd == "trace") && p.size() >= 2 && (p[1] == "start" || p[1] == "stop")) {
    if (p[1] == "start" && p.size() != 3) throw UsageError(cmd + " start needs " + (cmd == "record" ? "FILE" : "DIR"));
    if (p[1] == "stop" && p.size() != 2) throw UsageError(cmd + " stop takes no argument");
    request = "{\"cmd\":\"" + cmd + "\",\"action\":\"" + p[1] + "\"";
    if (p.size() == 3)
      request += std::string(",\"") + (cmd == "record" ? "file" : "dir") + "\":" + base::json_string(p[2]);
    // The daemon validates the values (it is the one that must not trust
    // them); the option names map one to one onto its request's keys.
    for (const auto& [name, value] : options) {
      if (name == "overwrite") {
        request += ",\"overwrite\":true";
      } else {
        std::string key = name;
        for (char& c : key) c = c == '-' ? '_' : c;
        request += ",\"" + key + "\":" + base::json_string(value);
      }
    }
    request += "}";
  } else if (cmd == "probe" && p.size() == 2) {
    request = "{\"cmd\":\"probe\",\"signal\":" + base::json_string(p[1]) + "}";
  } else if (cmd == "raw" && p.size() == 2) {
    request = p[1];
  } else {
    throw UsageError("cannot read '" + cmd + "' with " + std::to_string(p.size() - 1) +
                     " argument(s) — see 'rtcosim ctl --help'");
  }
  return request;
}

int run_ctl_command(const std::vector<std::string>& raw_args) {
  try {
    CliArgs args("ctl", {"socket", "format", "max-file-size", "rotate-every", "replay-log"}, {"help", "overwrite"});
    args.parse(raw_args);
    if (args.flag("help")) {
      std::cout << kCtlHelp;
      return 0;
    }
    std::map<std::string, std::string> options;
    for (const char* name : {"format", "max-file-size", "rotate-every", "replay-log"}) {
      if (const auto v = args.value(name)) options[name] = *v;
    }
    if (args.flag("overwrite")) options["overwrite"] = "";
    const std::string request = ctl_request_line(args.positionals(), options);
    std::string error;
    const std::string reply =
        session::control_request(args.value("socket").value_or("/run/rtcosim/control.sock"), request, &error);
    if (reply.empty()) {
      std::cerr << "rtcosim ctl: " << error << '\n';
      return 3;
    }
    std::cout << reply << '\n';
    return reply.rfind("{\"ok\":true", 0) == 0 ? 0 : 1;
  } catch (const UsageError& e) {
    std::cerr << "rtcosim ctl: " << e.what() << '\n';
    return 2;
  }
}

}  // namespace rtcosim::tools
