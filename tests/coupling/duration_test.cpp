// Durations as configuration files and the command line write them: the
// units people use, spaces where they put them, and errors that say what
// would have been accepted.
#include "base/duration.hpp"

#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace rtcosim::base {
namespace {

constexpr const char* kAcceptedUnits = "ns, us, ms, s, min or h";

TEST(Duration, ParsesEveryUnit) {
  EXPECT_DOUBLE_EQ(*parse_duration("5ms"), 0.005);
  EXPECT_DOUBLE_EQ(*parse_duration("250us"), 250e-6);
  EXPECT_DOUBLE_EQ(*parse_duration("250µs"), 250e-6);
  EXPECT_DOUBLE_EQ(*parse_duration("0.02s"), 0.02);
  EXPECT_DOUBLE_EQ(*parse_duration("1.5 min"), 90.0);
  EXPECT_DOUBLE_EQ(*parse_duration("2h"), 7200.0);
  EXPECT_DOUBLE_EQ(*parse_duration("10 ns"), 10e-9);
  EXPECT_DOUBLE_EQ(*parse_duration("1e-3s"), 0.001);
}

TEST(Duration, ABareNumberIsSeconds) {
  EXPECT_DOUBLE_EQ(*parse_duration("0.5"), 0.5);
  EXPECT_DOUBLE_EQ(*parse_duration("3"), 3.0);
  EXPECT_EQ(*parse_duration("0"), 0.0);
}

TEST(Duration, SpacesAroundAndBetweenAreAllowed) {
  EXPECT_DOUBLE_EQ(*parse_duration(" 10 ns "), 10e-9);
  EXPECT_DOUBLE_EQ(*parse_duration("5   ms"), 0.005);
  EXPECT_DOUBLE_EQ(*parse_duration("\t5ms\t"), 0.005);
  EXPECT_DOUBLE_EQ(*parse_duration("  0.5  "), 0.5);
}

// Ranges are the caller's: a negative duration parses, and the parameter's
// range check rejects it with the range (see registry_test).
TEST(Duration, ANegativeDurationParses) { EXPECT_DOUBLE_EQ(*parse_duration("-10ms"), -0.01); }

TEST(Duration, AnErrorSaysWhatWasWrongAndWhatIsAccepted) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "empty duration"},
      {"   ", "empty duration"},
      {"abc", "'abc' is not a duration"},
      {"ms", "'ms' is not a duration"},
      {"5 parsecs", "unknown unit 'parsecs' in '5 parsecs'"},
      {"5 m", "unknown unit 'm' in '5 m'"},
      {"5 MS", "unknown unit 'MS' in '5 MS'"},
      {"1e999s", "'1e999s' is not a duration"},  // beyond a double: from_chars refuses it
      {"inf s", "'inf s' is not a finite duration"},
      {"nan", "'nan' is not a finite duration"},
      {"1e306 h", "'1e306 h' is not a finite duration"},  // a finite number, but not in seconds
  };
  for (const auto& [text, what] : cases) {
    std::string why;
    EXPECT_FALSE(parse_duration(text, &why)) << "'" << text << "' was accepted";
    EXPECT_NE(why.find(what), std::string::npos) << "'" << text << "': " << why;
    EXPECT_NE(why.find(kAcceptedUnits), std::string::npos) << "'" << text << "': " << why;
  }
}

TEST(Duration, TheErrorIsOptional) {
  EXPECT_FALSE(parse_duration("abc"));
  EXPECT_FALSE(parse_duration("5 parsecs", nullptr));
}

TEST(Duration, FormatsWithTheLargestUnitThatKeepsItShort) {
  EXPECT_EQ(format_duration(0.0), "0 s");
  EXPECT_EQ(format_duration(10e-9), "10 ns");
  EXPECT_EQ(format_duration(250e-6), "250 us");
  EXPECT_EQ(format_duration(0.04), "40 ms");
  EXPECT_EQ(format_duration(1.5), "1.5 s");
  EXPECT_EQ(format_duration(90.0), "90 s");  // min and h only when whole
  EXPECT_EQ(format_duration(120.0), "2 min");
  EXPECT_EQ(format_duration(3600.0), "1 h");
  EXPECT_EQ(format_duration(-0.01), "-10 ms");
}

TEST(Duration, FormattedDurationsParseBack) {
  for (const double seconds : {10e-9, 250e-6, 0.04, 1.5, 120.0, 7200.0}) {
    const auto parsed = parse_duration(format_duration(seconds));
    ASSERT_TRUE(parsed) << format_duration(seconds);
    EXPECT_DOUBLE_EQ(*parsed, seconds);
  }
}

}  // namespace
}  // namespace rtcosim::base
