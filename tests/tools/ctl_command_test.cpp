#include "tools/rtcosim/ctl_command.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "session/control_request.hpp"
#include "tests/support/scratch.hpp"
#include "tools/common/cli_args.hpp"

namespace rtcosim::tools {
namespace {

// The lines `rtcosim ctl` sends are the requests docs/daemon.md lists; the
// daemon tests send them to a running daemon (rotation uses the 8 kB one).
TEST(CtlCommand, WordsAndOptionsBecomeTheDocumentedRequests) {
  EXPECT_EQ(ctl_request_line({"status"}, {}), R"({"cmd":"status"})");
  EXPECT_EQ(ctl_request_line({"reload", "g.yaml"}, {}), R"({"cmd":"reload","file":"g.yaml"})");
  EXPECT_EQ(ctl_request_line({"record", "stop"}, {}), R"({"cmd":"record","action":"stop"})");
  EXPECT_EQ(ctl_request_line({"web-token"}, {}), R"({"cmd":"web-token"})");
  EXPECT_EQ(ctl_request_line({"probe", "k.y[2]"}, {}), R"({"cmd":"probe","signal":"k.y[2]"})");
  EXPECT_EQ(ctl_request_line({"trace", "start", "t1"}, {}), R"({"cmd":"trace","action":"start","dir":"t1"})");
  EXPECT_EQ(
      ctl_request_line({"record", "start", "run \"1\".h5"},
                       {{"max-file-size", "64MB"}, {"rotate-every", "1h"}, {"overwrite", ""}, {"format", "hdf5"}}),
      R"({"cmd":"record","action":"start","file":"run \"1\".h5","format":"hdf5","max_file_size":"64MB",)"
      R"("overwrite":true,"rotate_every":"1h"})");
}

TEST(CtlCommand, OptionsOutsideRecordStartAndMissingWordsAreUsageErrors) {
  EXPECT_THROW(ctl_request_line({}, {}), UsageError);
  EXPECT_THROW(ctl_request_line({"record", "start"}, {}), UsageError);
  EXPECT_THROW(ctl_request_line({"record", "stop", "x.csv"}, {}), UsageError);
  EXPECT_THROW(ctl_request_line({"status", "now"}, {}), UsageError);
  EXPECT_THROW(ctl_request_line({"record", "stop"}, {{"rotate-every", "1h"}}), UsageError);
  EXPECT_THROW(ctl_request_line({"trace", "start", "t"}, {{"max-file-size", "8kB"}}), UsageError);
  try {
    ctl_request_line({"status"}, {{"overwrite", ""}});
    ADD_FAILURE() << "no error";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), "--overwrite belongs to 'record start FILE', not to 'status'");
  }
}

// A stand-in for rtcosimd at `path`: takes one connection, reads its request
// line and answers with whatever `answer` sends, then closes.
class FakeDaemon {
 public:
  FakeDaemon(const std::string& path, std::function<void(int)> answer) {
    listener_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    if (listener_ < 0 || bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        listen(listener_, 1) != 0) {
      ADD_FAILURE() << "cannot listen on " << path << ": " << std::strerror(errno);
      return;
    }
    thread_ = std::thread([this, answer = std::move(answer)] {
      const int fd = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) return;
      char c = 0;
      while (recv(fd, &c, 1, 0) == 1 && c != '\n') {
      }
      answer(fd);
      close(fd);
    });
  }
  ~FakeDaemon() {
    if (thread_.joinable()) thread_.join();
    if (listener_ >= 0) close(listener_);
  }
  FakeDaemon(const FakeDaemon&) = delete;
  FakeDaemon& operator=(const FakeDaemon&) = delete;

 private:
  int listener_ = -1;
  std::thread thread_;
};

// Sends until `total` bytes are out or the client is gone (MSG_NOSIGNAL:
// its going is expected, not a SIGPIPE for the test).
void send_bytes(int fd, std::size_t total) {
  const std::string chunk(1u << 16, 'x');
  for (std::size_t sent = 0; sent < total;) {
    const ssize_t n = send(fd, chunk.data(), std::min(chunk.size(), total - sent), MSG_NOSIGNAL);
    if (n <= 0) return;
    sent += static_cast<std::size_t>(n);
  }
}

// A peer that never ends its reply line costs the client the bound, not
// whatever the peer cares to send (the reply used to grow without limit).
TEST(ControlRequest, AReplyLineLongerThanTheBoundIsAnError) {
  const std::string path = (testing::test_scratch_dir("ctl") / "c.sock").string();
  FakeDaemon peer(path, [](int fd) { send_bytes(fd, session::kMaxControlReplyBytes + (1u << 20)); });
  std::string error;
  const std::string reply = session::control_request(path, R"({"cmd":"status"})", &error, 10000);
  EXPECT_EQ(reply, "");
  EXPECT_NE(error.find(std::to_string(session::kMaxControlReplyBytes) + " bytes without ending its line"),
            std::string::npos)
      << error;
}

// A reply as long as the bound is still a reply.
TEST(ControlRequest, AReplyLineUpToTheBoundIsTaken) {
  const std::string path = (testing::test_scratch_dir("ctl") / "c.sock").string();
  FakeDaemon peer(path, [](int fd) {
    send_bytes(fd, session::kMaxControlReplyBytes);
    (void)send(fd, "\n", 1, MSG_NOSIGNAL);
  });
  std::string error;
  const std::string reply = session::control_request(path, R"({"cmd":"status"})", &error, 10000);
  EXPECT_EQ(reply.size(), session::kMaxControlReplyBytes) << error;
}

// A connection that ends inside the reply line gives an error, not the part
// that came (which `rtcosim ctl` printed as if it were the whole reply).
TEST(ControlRequest, AReplyCutShortIsAnErrorNotAReply) {
  const std::string path = (testing::test_scratch_dir("ctl") / "c.sock").string();
  FakeDaemon peer(path, [](int fd) { (void)send(fd, R"({"ok":true,"tas)", 15, MSG_NOSIGNAL); });
  std::string error;
  EXPECT_EQ(session::control_request(path, R"({"cmd":"status"})", &error, 10000), "");
  EXPECT_NE(error.find("closed the connection after 15 bytes"), std::string::npos) << error;
}

}  // namespace
}  // namespace rtcosim::tools
