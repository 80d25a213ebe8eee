#include "tools/rtcosim/ctl_command.hpp"

#include <gtest/gtest.h>

#include "session/control_request.hpp"
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

}  // namespace
}  // namespace rtcosim::tools
