#include "tools/rtcosim/ctl_command.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "base/json.hpp"
#include "tools/rtcosim/cli_args.hpp"

namespace rtcosim::tools {

namespace {

constexpr const char* kHelp = R"(usage: rtcosim ctl [--socket PATH] COMMAND

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
  record stop
  trace start DIR         record an LTTng trace into the new directory DIR there
  trace stop
  raw JSON                send one request as written, e.g. raw '{"cmd":"status"}'
)";

}  // namespace

std::string control_request(const std::string& socket_path, const std::string& request, std::string* error,
                            int timeout_ms) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket_path.c_str(), sizeof addr.sun_path - 1);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    *error = "cannot reach rtcosimd at " + socket_path + ": " + std::strerror(errno) +
             " (is it running? is your user in group rtcosim?)";
    close(fd);
    return {};
  }
  const std::string line = request + "\n";
  for (std::size_t sent = 0; sent < line.size();) {
    const ssize_t n = write(fd, line.data() + sent, line.size() - sent);
    if (n <= 0) {
      *error = std::string("sending failed: ") + std::strerror(errno);
      close(fd);
      return {};
    }
    sent += static_cast<std::size_t>(n);
  }
  std::string reply;
  char buf[65536];
  while (reply.find('\n') == std::string::npos) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) <= 0) {
      *error = "rtcosimd did not answer within " + std::to_string(timeout_ms) + " ms";
      break;
    }
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    reply.append(buf, static_cast<std::size_t>(n));
  }
  close(fd);
  if (const auto nl = reply.find('\n'); nl != std::string::npos) reply.resize(nl);
  return reply;
}

int run_ctl_command(const std::vector<std::string>& raw_args) {
  try {
    CliArgs args("ctl", {"socket"}, {"help"});
    args.parse(raw_args);
    const auto& p = args.positionals();
    if (args.flag("help")) {
      std::cout << kHelp;
      return 0;
    }
    if (p.empty()) throw UsageError("no command — expected status, stop, start, reload, record, trace or raw");
    std::string request;
    const std::string& cmd = p[0];
    if ((cmd == "status" || cmd == "stop" || cmd == "start") && p.size() == 1) {
      request = "{\"cmd\":\"" + cmd + "\"}";
    } else if (cmd == "reload" && p.size() <= 2) {
      request = p.size() == 2 ? "{\"cmd\":\"reload\",\"file\":" + base::json_string(p[1]) + "}" : "{\"cmd\":\"reload\"}";
    } else if ((cmd == "record" || cmd == "trace") && p.size() >= 2 && (p[1] == "start" || p[1] == "stop")) {
      if (p[1] == "start" && p.size() != 3) throw UsageError(cmd + " start needs " + (cmd == "record" ? "FILE" : "DIR"));
      request = "{\"cmd\":\"" + cmd + "\",\"action\":\"" + p[1] + "\"";
      if (p.size() == 3) request += std::string(",\"") + (cmd == "record" ? "file" : "dir") + "\":" + base::json_string(p[2]);
      request += "}";
    } else if (cmd == "raw" && p.size() == 2) {
      request = p[1];
    } else {
      throw UsageError("cannot read '" + cmd + "' with " + std::to_string(p.size() - 1) + " argument(s) — see 'rtcosim ctl --help'");
    }
    std::string error;
    const std::string reply = control_request(args.value("socket").value_or("/run/rtcosim/control.sock"), request, &error);
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
