#include "tests/support/unprivileged.hpp"

#include <cerrno>
#include <cstring>
#include <exception>

#include <grp.h>
#include <pwd.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

namespace rtcosim::testing {
namespace {

void write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

// In the child: drop to nobody:nogroup for good, or say why not.
std::string drop_privileges() {
  uid_t uid = 65534;
  gid_t gid = 65534;
  if (const passwd* pw = ::getpwnam("nobody")) {
    uid = pw->pw_uid;
    gid = pw->pw_gid;
  }
  if (const group* gr = ::getgrnam("nogroup")) gid = gr->gr_gid;
  if (::setgroups(0, nullptr) != 0) return std::string("setgroups: ") + std::strerror(errno);
  if (::setresgid(gid, gid, gid) != 0) return std::string("setresgid: ") + std::strerror(errno);
  if (::setresuid(uid, uid, uid) != 0) return std::string("setresuid: ") + std::strerror(errno);
  if (::geteuid() == 0 || ::setuid(0) == 0) return "still privileged after dropping to nobody";
  return {};
}

}  // namespace

std::string run_unprivileged(const std::function<std::string()>& body) {
  if (::geteuid() != 0) return body();
  int fds[2];
  if (::pipe(fds) != 0) return std::string("child: pipe: ") + std::strerror(errno);
  const pid_t pid = ::fork();
  if (pid < 0) return std::string("child: fork: ") + std::strerror(errno);
  if (pid == 0) {
    ::close(fds[0]);
    int status = 0;
    std::string out;
    if (const std::string why = drop_privileges(); !why.empty()) {
      out = "child: " + why;
      status = 1;
    } else {
      try {
        out = body();
      } catch (const std::exception& e) {
        out = std::string("child: exception: ") + e.what();
        status = 1;
      }
    }
    write_all(fds[1], out);
    ::_exit(status);  // no atexit handlers, no GoogleTest teardown in the child
  }
  ::close(fds[1]);
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status)) return "child: killed by signal " + std::to_string(WTERMSIG(status)) + "; " + out;
  if (WEXITSTATUS(status) != 0 && out.rfind("child: ", 0) != 0) {
    return "child: exit status " + std::to_string(WEXITSTATUS(status)) + "; " + out;
  }
  return out;
}

}  // namespace rtcosim::testing
