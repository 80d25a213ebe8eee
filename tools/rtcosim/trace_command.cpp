#include "tools/rtcosim/trace_command.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <stdexcept>

#include "session/report/trace/trace_reader.hpp"
#include "session/report/trace/trace_report.hpp"
#include "tools/common/cli_args.hpp"

namespace rtcosim::tools {

namespace {

constexpr const char* kTraceHelp = R"(usage: rtcosim trace report DIR [--json FILE] [--svg OUT_DIR] [--perfetto FILE]

Reads the LTTng trace that 'rtcosim run --trace DIR' recorded (with
babeltrace2) and prints per task the wake-up latency and execution-time
statistics with a text histogram and every deadline miss with its time, and
per link the age of data when consumed.

options:
  --json FILE        the report as JSON
  --svg OUT_DIR      latency_histograms.svg and timeline.svg (the second around the worst frame)
  --perfetto FILE    a Chrome/Perfetto JSON trace (open it in ui.perfetto.dev or chrome://tracing)
  -h, --help         this text
)";

// Empty when `text` is in the file, else why not.
std::string write_file(const std::string& path, const std::string& text) {
  errno = 0;
  std::ofstream out(path, std::ios::trunc);
  out << text;
  // What fits the stream's buffer is written only at close: a full disk
  // shows there, not at the <<.
  out.close();
  if (out) return {};
  return "cannot write '" + path + "'" + (errno != 0 ? std::string(": ") + std::strerror(errno) : std::string());
}

}  // namespace

int run_trace_command(const std::vector<std::string>& raw_args) {
  using namespace trace_report;
  try {
    CliArgs args("trace", {"json", "svg", "perfetto"}, {"help"});
    args.parse(raw_args);
    if (args.flag("help") || args.positionals().empty()) {
      std::cout << kTraceHelp;
      return args.flag("help") ? 0 : 2;
    }
    if (args.positionals().front() != "report") {
      throw UsageError("unknown trace command '" + args.positionals().front() + "' — expected 'report'");
    }
    if (args.positionals().size() != 2) throw UsageError("expected 'rtcosim trace report DIR'");
    const std::string dir = args.positionals()[1];
    TraceData data;
    std::string why;
    if (!read_trace(dir, data, &why)) {
      std::cerr << "rtcosim trace report: " << why << '\n';
      return 1;
    }
    if (data.tasks.empty()) {
      std::cerr << "rtcosim trace report: " << dir
                << " holds no rtcosim events (was it recorded with 'rtcosim run --trace'?)\n";
      return 1;
    }
    std::cout << text_report(dir, data);
    if (const auto p = args.value("json")) {
      if (const auto error = write_file(*p, json_report(data)); !error.empty()) throw std::runtime_error(error);
      std::cout << "report written to " << *p << '\n';
    }
    if (const auto p = args.value("perfetto")) {
      if (const auto error = write_file(*p, perfetto_json(data)); !error.empty()) throw std::runtime_error(error);
      std::cout << "Perfetto trace written to " << *p << '\n';
    }
    if (const auto p = args.value("svg")) {
      if (!write_svgs(data, *p, &why)) throw std::runtime_error(why);
      std::cout << "SVGs written to " << *p << '\n';
    }
    return 0;
  } catch (const UsageError& e) {
    std::cerr << "rtcosim trace: " << e.what() << "\nsee 'rtcosim trace report --help'\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "rtcosim trace: " << e.what() << '\n';
    return 1;
  }
}

}  // namespace rtcosim::tools
