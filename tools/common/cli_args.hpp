#pragma once

#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace rtcosim::tools {

// A usage error: the CLI prints it with a pointer to --help and exits 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/*
 * Command-line options of one verb: `--name value`, `--name=value` and
 * boolean `--flag` (`-h` is `--help` when the verb has that flag). Repeatable options keep every value. Anything not
 * declared is a UsageError that names it (with a did-you-mean).
 */
class CliArgs {
 public:
  CliArgs(std::string verb, std::set<std::string> valued, std::set<std::string> flags,
          std::set<std::string> repeatable = {});
  void parse(const std::vector<std::string>& args);
  // parse() for a verb that takes one task-graph file: the file, or nullopt
  // after printing `help` for --help; UsageError without exactly one file.
  std::optional<std::string> parse_for_file(const std::vector<std::string>& args, const char* help);

  [[nodiscard]] bool flag(const std::string& name) const { return flags_seen_.count(name) != 0; }
  [[nodiscard]] std::optional<std::string> value(const std::string& name) const;
  [[nodiscard]] std::vector<std::string> values(const std::string& name) const;
  [[nodiscard]] const std::vector<std::string>& positionals() const noexcept { return positionals_; }
  // A positive duration with a unit ("40ms"), or `fallback` when absent;
  // UsageError naming the option otherwise.
  [[nodiscard]] double positive_duration(const std::string& name, double fallback) const;
  // `--max-file-size MIB` as bytes, or `fallback` when absent: a task graph
  // file larger than this is refused before it is parsed.
  [[nodiscard]] std::size_t max_file_bytes(std::size_t fallback) const;
  // The path given to an output option, checked before any work is done:
  // its directory exists and is writable and the path is not a directory
  // (a long run must not end in "cannot write"). UsageError naming the
  // option otherwise; nullopt when the option is absent.
  [[nodiscard]] std::optional<std::string> output_path(const std::string& name) const;

 private:
  std::string verb_;
  std::set<std::string> valued_, flags_, repeatable_;
  std::map<std::string, std::vector<std::string>> values_;
  std::set<std::string> flags_seen_;
  std::vector<std::string> positionals_;
};

// Runs a verb's body and turns what it throws into the CLI's exit codes:
// a UsageError prints with a pointer to --help and gives 2, any other
// exception prints its message and gives 1.
template <class Body>
int run_verb(const std::string& verb, Body&& body) {
  try {
    return body();
  } catch (const UsageError& e) {
    std::cerr << "rtcosim " << verb << ": " << e.what() << "\nsee 'rtcosim " << verb << " --help'\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "rtcosim " << verb << ": " << e.what() << '\n';
    return 1;
  }
}

}  // namespace rtcosim::tools
