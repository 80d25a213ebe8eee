// `rtcosim preflight` on a graph across hosts: is CLOCK_REALTIME
// synchronised? Checked on adjtimex states given here, and on this machine
// through the command.
#include <sys/timex.h>

#include <gtest/gtest.h>

#include "tools/rtcosim/preflight_command.hpp"

namespace rtcosim::tools {
namespace {

TEST(PreflightClock, AnUnsynchronisedClockIsAWarningWithTheFix) {
  const auto c = clock_sync_check({TIME_ERROR, STA_UNSYNC, 16000000, {}}, 0.001);
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.what,
            "CLOCK_REALTIME NOT synchronised (adjtimex: STA_UNSYNC set; running: no PTP or NTP service) — the hosts "
            "of a graph across hosts start on one CLOCK_REALTIME instant");
  EXPECT_NE(c.fix.find("linuxptp"), std::string::npos) << c.fix;
  EXPECT_NE(c.fix.find("chrony"), std::string::npos) << c.fix;
  // A daemon that runs but has not locked yet: still not synchronised.
  EXPECT_FALSE(clock_sync_check({TIME_OK, STA_UNSYNC, 0, {"ptp4l"}}, 0.001).ok);
}

TEST(PreflightClock, ASynchronisedClockNamesItsServicesAndError) {
  const auto ptp = clock_sync_check({TIME_OK, 0, 3, {"phc2sys", "ptp4l"}}, 0.001);
  EXPECT_TRUE(ptp.ok);
  EXPECT_EQ(ptp.what,
            "CLOCK_REALTIME synchronised (adjtimex: STA_UNSYNC clear, estimated error 3 us; running: phc2sys, ptp4l) "
            "— the hosts of a graph across hosts start on one CLOCK_REALTIME instant");
  EXPECT_TRUE(ptp.fix.empty());
  // NTP at 5 ms: synchronised, but not to the graph's 1 ms.
  const auto ntp = clock_sync_check({TIME_OK, STA_PLL, 5000, {"chronyd"}}, 0.001);
  EXPECT_TRUE(ntp.ok);
  EXPECT_NE(ntp.what.find("; the estimated error is above dds: max_clock_offset"), std::string::npos) << ntp.what;
}

TEST(PreflightClock, TheCommandChecksTheClockOnlyForAGraphAcrossHosts) {
  const std::string examples = RTCOSIM_EXAMPLES_DIR;
  ::testing::internal::CaptureStdout();
  (void)run_preflight_command({examples + "/flight_control_two_hosts.yaml"});
  const std::string two = ::testing::internal::GetCapturedStdout();
  ::testing::internal::CaptureStdout();
  (void)run_preflight_command({examples + "/two_task_sine.yaml"});
  const std::string one = ::testing::internal::GetCapturedStdout();
  // This machine's state, whichever it is, as adjtimex says it.
  timex t{};
  const int state = adjtimex(&t);
  const bool synced = state != TIME_ERROR && (t.status & STA_UNSYNC) == 0;
  EXPECT_NE(two.find(synced ? "ok    CLOCK_REALTIME synchronised" : "warn  CLOCK_REALTIME NOT synchronised"),
            std::string::npos)
      << two;
  EXPECT_EQ(one.find("CLOCK_REALTIME"), std::string::npos) << one;
}

}  // namespace
}  // namespace rtcosim::tools
