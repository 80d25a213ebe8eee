// The rtcosim CLI run as a process of its own, as a user runs it: in a
// directory, with a time limit, optionally sent a signal part way.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace rtcosim::testing {

// The rtcosim binary of this build: beside the running test's executable
// (every executable of the build goes to build/bin).
std::filesystem::path rtcosim_binary();

// Every member has a default initializer, so that designated initializers
// ({.limit = 20s, .signal = SIGINT}) may leave any out without
// -Wmissing-field-initializers.
struct CliOptions {
  // Killed with SIGKILL (and the test fails) when it has not ended by then.
  std::chrono::milliseconds limit = std::chrono::seconds(30);
  // Sent once, as soon as its stdout holds `when_stdout_holds` or `when`
  // returns true (whichever is given); 0: none.
  int signal = 0;
  std::string when_stdout_holds = {};
  std::function<bool()> when = {};
  // NAME=value: replaces NAME in this process's environment, or adds it.
  std::vector<std::string> environment = {};
  // How often the process (and what sends the signal) is looked at.
  std::chrono::microseconds poll = std::chrono::milliseconds(5);
};

struct CliResult {
  int code = -1;           // the exit status, or minus the number of the signal that ended it
  bool signalled = false;  // the options' signal was sent
  std::string out, err;    // what it wrote to stdout and stderr
};

// Runs `rtcosim ARGS` in `dir`, its stdout and stderr to dir/stdout.txt and
// dir/stderr.txt, with SIGINT and SIGTERM at their default actions and no
// signal blocked, whatever this process was given.
CliResult run_rtcosim(const std::vector<std::string>& args, const std::filesystem::path& dir,
                      const CliOptions& options = {});

// How it ended and what it wrote, for a failure's message.
std::string said(const CliResult& r);

}  // namespace rtcosim::testing
