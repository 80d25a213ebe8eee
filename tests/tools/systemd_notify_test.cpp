// SystemdNotifier (tools/rtcosimd/notify.hpp) against a notification socket
// of our own, as systemd's: what it sends arrives byte for byte, on a path
// and in the abstract namespace, and a manager that never reads makes sends
// fail and count instead of blocking (libsystemd's sd_notify blocked the
// daemon's loop there). A blocking send would hang the last test until
// ctest's limit fails it.
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "tests/support/scratch.hpp"
#include "tools/rtcosimd/notify.hpp"

namespace rtcosim::daemon {
namespace {

// A datagram socket bound at `name` (a path, or "@name": abstract).
int bind_socket(const std::string& name) {
  const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path, name.data(), name.size());
  socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size());
  if (name[0] == '@')
    a.sun_path[0] = '\0';
  else
    ++len;
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&a), len) != 0) return -1;
  return fd;
}

std::string receive(int fd) {
  char buf[256];
  const ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

TEST(SystemdNotifier, WithoutASocketEverySendIsANoOp) {
  unsetenv("NOTIFY_SOCKET");
  SystemdNotifier n;
  EXPECT_FALSE(n.active());
  EXPECT_FALSE(n.send("READY=1"));
  EXPECT_EQ(n.problem(), "");
  setenv("NOTIFY_SOCKET", "tcp://somewhere", 1);
  SystemdNotifier other;
  EXPECT_FALSE(other.active());
  unsetenv("NOTIFY_SOCKET");
}

// A $NOTIFY_SOCKET that is set but cannot be used is said (a Type=notify
// unit would otherwise time out waiting for READY=1 with nothing logged),
// and a send that fails keeps its errno for the daemon's message.
TEST(SystemdNotifier, AnUnusableSocketAndAFailedSendSayWhy) {
  setenv("NOTIFY_SOCKET", "tcp://somewhere", 1);
  SystemdNotifier other_scheme;
  EXPECT_NE(other_scheme.problem().find("NOTIFY_SOCKET='tcp://somewhere' is not a Unix socket"), std::string::npos)
      << other_scheme.problem();
  const auto dir = testing::test_scratch_dir("notify");
  const std::string missing = (dir / "no-such-dir" / "notify.sock").string();
  setenv("NOTIFY_SOCKET", missing.c_str(), 1);
  SystemdNotifier n;
  ASSERT_TRUE(n.active());
  EXPECT_EQ(n.problem(), "");
  EXPECT_FALSE(n.send("READY=1"));
  EXPECT_EQ(n.last_errno(), ENOENT);
  EXPECT_EQ(n.dropped(), 1u);
  unsetenv("NOTIFY_SOCKET");
}

TEST(SystemdNotifier, MessagesArriveOnAPathAndInTheAbstractNamespace) {
  const auto dir = testing::test_scratch_dir("notify");
  const std::string path = (dir / "notify.sock").string();
  const std::string abstract = "@rtcosim-notify-test-" + std::to_string(getpid());
  for (const std::string& name : {path, abstract}) {
    const int fd = bind_socket(name);
    ASSERT_GE(fd, 0) << name;
    setenv("NOTIFY_SOCKET", name.c_str(), 1);
    SystemdNotifier n;
    ASSERT_TRUE(n.active()) << name;
    EXPECT_TRUE(n.send("READY=1"));
    EXPECT_TRUE(n.send("STATUS=running: 12 frames"));
    EXPECT_EQ(receive(fd), "READY=1");
    EXPECT_EQ(receive(fd), "STATUS=running: 12 frames");
    EXPECT_EQ(n.dropped(), 0u);
    close(fd);
  }
  unsetenv("NOTIFY_SOCKET");
}

TEST(SystemdNotifier, AManagerThatNeverReadsCostsDroppedMessagesNotAStall) {
  const auto dir = testing::test_scratch_dir("notify");
  const std::string path = (dir / "full.sock").string();
  const int fd = bind_socket(path);
  ASSERT_GE(fd, 0);
  setenv("NOTIFY_SOCKET", path.c_str(), 1);
  SystemdNotifier n;
  int delivered = 0;
  constexpr int kSends = 5000;  // far beyond net.unix.max_dgram_qlen
  for (int i = 0; i < kSends; ++i) delivered += n.send("WATCHDOG=1") ? 1 : 0;
  EXPECT_GT(n.dropped(), 0u);
  EXPECT_EQ(n.dropped(), static_cast<unsigned long>(kSends - delivered));
  int received = 0;
  while (receive(fd) == "WATCHDOG=1") ++received;
  EXPECT_EQ(received, delivered);
  // Read, the queue takes messages again.
  EXPECT_TRUE(n.send("READY=1"));
  EXPECT_EQ(receive(fd), "READY=1");
  close(fd);
  unsetenv("NOTIFY_SOCKET");
}

}  // namespace
}  // namespace rtcosim::daemon
