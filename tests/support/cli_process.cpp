#include "tests/support/cli_process.hpp"

#include <csignal>
#include <cstring>
#include <thread>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/support/files.hpp"

namespace rtcosim::testing {
namespace {

namespace fs = std::filesystem;

// This process's environment with each NAME=value of `changes` in place of
// NAME's entry (or added).
std::vector<std::string> environment_with(const std::vector<std::string>& changes) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry(*e);
    const std::string name = entry.substr(0, entry.find('=') + 1);
    bool replaced = false;
    for (const auto& c : changes) replaced = replaced || c.rfind(name, 0) == 0;
    if (!replaced) env.push_back(entry);
  }
  env.insert(env.end(), changes.begin(), changes.end());
  return env;
}

std::vector<char*> pointers(std::vector<std::string>& texts) {
  std::vector<char*> out;
  for (auto& t : texts) out.push_back(t.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

fs::path rtcosim_binary() { return fs::read_symlink("/proc/self/exe").parent_path() / "rtcosim"; }

CliResult run_rtcosim(const std::vector<std::string>& args, const fs::path& dir, const CliOptions& options) {
  CliResult r;
  const fs::path binary = rtcosim_binary();
  if (!fs::exists(binary)) {
    ADD_FAILURE() << binary << " is not built (ninja rtcosim)";
    return r;
  }
  const fs::path out = dir / "stdout.txt", err = dir / "stderr.txt";
  // Everything the child needs is made before the fork: after it, the child
  // only makes calls that are safe there.
  std::vector<std::string> argv_text{binary.string()};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<std::string> env_text = environment_with(options.environment);
  const std::vector<char*> argv = pointers(argv_text), envp = pointers(env_text);
  const pid_t pid = fork();
  if (pid == 0) {
    const int out_fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const int err_fd = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out_fd < 0 || err_fd < 0 || dup2(out_fd, STDOUT_FILENO) < 0 || dup2(err_fd, STDERR_FILENO) < 0) _exit(126);
    if (chdir(dir.c_str()) != 0) _exit(126);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  EXPECT_GT(pid, 0) << "fork: " << std::strerror(errno);
  if (pid <= 0) return r;
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + options.limit;
  for (;;) {
    if (waitpid(pid, &status, WNOHANG) == pid) break;
    if (options.signal != 0 && !r.signalled &&
        ((!options.when_stdout_holds.empty() && slurp(out).find(options.when_stdout_holds) != std::string::npos) ||
         (options.when && options.when()))) {
      kill(pid, options.signal);
      r.signalled = true;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      ADD_FAILURE() << "rtcosim " << (args.empty() ? "" : args.front()) << " did not end within "
                    << std::chrono::duration<double>(options.limit).count() << " s";
      break;
    }
    std::this_thread::sleep_for(options.poll);
  }
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? -WTERMSIG(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

std::string said(const CliResult& r) {
  return "exit " + std::to_string(r.code) + "\nstdout:\n" + r.out + "stderr:\n" + r.err;
}

}  // namespace rtcosim::testing
