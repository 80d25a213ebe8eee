#include "session/report/text_table.hpp"

#include <cmath>
#include <limits>
#include <memory>
#include <sstream>

#include <gtest/gtest.h>

namespace rtcosim::tools {
namespace {

TEST(FormatSi, DurationsHaveAPrefixAndThreeSignificantDigits) {
  EXPECT_EQ(session::format_seconds(0.0), "0 s");
  EXPECT_EQ(session::format_seconds(0.0123), "12.3 ms");
  EXPECT_EQ(session::format_seconds(0.71), "710 ms");
  EXPECT_EQ(session::format_seconds(1.05), "1.05 s");
  EXPECT_EQ(session::format_seconds(983e-6), "983 us");
  EXPECT_EQ(session::format_seconds(1e-9), "1.00 ns");
  EXPECT_EQ(session::format_seconds(-2.5e-3), "-2.50 ms");
  EXPECT_EQ(session::format_seconds(-1e-9), "-1.00 ns");
  EXPECT_EQ(session::format_seconds(6.94e-18), "0 s");  // rounding noise, not a duration
  EXPECT_EQ(session::format_seconds(std::nan("")), "-");
  EXPECT_EQ(session::format_seconds(std::numeric_limits<double>::infinity()), "inf s");
  EXPECT_EQ(session::format_seconds(-std::numeric_limits<double>::infinity()), "-inf s");
}

TEST(FormatSi, RoundingThatCarriesMovesToTheNextPrefix) {
  EXPECT_EQ(session::format_seconds(0.99996), "1.00 s");
  EXPECT_EQ(session::format_seconds(999.96e-6), "1.00 ms");
  EXPECT_EQ(session::format_seconds(9.996e-3), "10.0 ms");
  EXPECT_EQ(session::format_seconds(0.0012345), "1.23 ms");
}

TEST(FormatSi, BeyondTheLargestPrefixTheWholeNumberBelowTheSmallestTheDigits) {
  // Seconds stop at "s": 7.105e5 s is 710500 s, every digit kept.
  EXPECT_EQ(session::format_seconds(7.105e5), "710500 s");
  EXPECT_EQ(session::format_seconds(999.6), "1000 s");
  EXPECT_EQ(session::format_seconds(1e-12), "0 s");  // below the clocks' nanosecond: noise
  EXPECT_EQ(session::format_si(1e-12, "s", 3, -9, 0), "0.00100 ns");
  // Without that bound the prefixes go on.
  // 710500 is exact in binary, a true tie: printf rounds it to even.
  EXPECT_EQ(session::format_si(7.105e5, "Hz"), "710 kHz");
  EXPECT_EQ(session::format_si(7.106e5, "Hz"), "711 kHz");
  EXPECT_EQ(session::format_si(1500.0, ""), "1.50 k");
  EXPECT_EQ(session::format_si(42.0, ""), "42.0");
  EXPECT_EQ(session::format_si(2.5e-3, "s", 2), "2.5 ms");
}

TEST(FormatSi, NanosecondsCountsAndPlainNumbers) {
  EXPECT_EQ(session::format_nanoseconds(0), "0 s");
  EXPECT_EQ(session::format_nanoseconds(300'000), "300 us");
  EXPECT_EQ(session::format_nanoseconds(2'600'000), "2.60 ms");
  EXPECT_EQ(session::format_nanoseconds(1), "1.00 ns");
  EXPECT_EQ(session::format_count(0), "0");
  EXPECT_EQ(session::format_count(710'500), "710500");
  EXPECT_EQ(session::format_count(18'446'744'073'709'551'615ull), "18446744073709551615");
  EXPECT_EQ(session::format_general(3.08e-5), "3.08e-05");
  EXPECT_EQ(session::format_general(0.000591), "0.000591");
  EXPECT_EQ(session::format_general(std::nan("")), "-");
}

TEST(TextTable, SmallTableHasTheExpectedText) {
  session::TextTable t(
      {{"name", session::Align::kLeft}, {"frames", session::Align::kRight}, {"lost", session::Align::kRight}});
  t.add_row({"a", "5", "0 s"});
  t.add_row({"longer", "12345", "1.05 s"});
  EXPECT_EQ(t.render(),
            "  name    frames    lost\n"
            "  a            5     0 s\n"
            "  longer   12345  1.05 s\n");
  EXPECT_EQ(t.render(""),
            "name    frames    lost\n"
            "a            5     0 s\n"
            "longer   12345  1.05 s\n");
}

TEST(TextTable, HugeValuesNeverTouchTheNeighbourColumn) {
  session::TextTable t({{"name", session::Align::kLeft},
                        {"count", session::Align::kRight},
                        {"lost", session::Align::kRight},
                        {"note", session::Align::kLeft}});
  const std::string huge = "18446744073709551615";
  t.add_row({"x", "1", "0 s", "-"});
  t.add_row({"a-very-long-task-name-indeed", huge, session::format_seconds(7.105e5), "text"});
  t.add_row({"y", huge + huge, session::format_seconds(1e300), "-"});
  std::istringstream lines(t.render());
  std::size_t count = 0;
  for (std::string line; std::getline(lines, line); ++count) {
    // Every column is separated by at least two spaces: splitting on
    // two-space runs gives the cells back (units carry one space inside).
    std::vector<std::string> cells;
    std::size_t i = 2;
    while (i < line.size()) {
      const auto gap = line.find("  ", i);
      cells.push_back(line.substr(i, gap == std::string::npos ? std::string::npos : gap - i));
      if (gap == std::string::npos) break;
      i = line.find_first_not_of(' ', gap);
    }
    ASSERT_EQ(cells.size(), 4u) << line;
    EXPECT_NE(line.back(), ' ') << "trailing space: '" << line << "'";
  }
  EXPECT_EQ(count, 4u);
  // The widest cell still has two spaces on either side.
  const std::string text = t.render();
  EXPECT_NE(text.find("  " + huge + huge + "  "), std::string::npos) << text;
}

TEST(TextTable, CountsUtf8CodePointsAsOneCharacterAndChecksRowWidth) {
  EXPECT_EQ(session::display_width("12 µs"), 5u);
  session::TextTable t({{"unit", session::Align::kRight}, {"x", session::Align::kLeft}});
  t.add_row({"µs", "a"});
  t.add_row({"ms", "b"});
  EXPECT_EQ(t.render(""), "unit  x\n  µs  a\n  ms  b\n");
  EXPECT_THROW(t.add_row({"only one"}), std::invalid_argument);
}

struct Item {
  std::string name;
  double seconds;
};

TEST(RenderTable, OneFieldPerColumnOverObjectsOrPointers) {
  const std::vector<session::Field<Item>> fields = {
      {"item", session::Align::kLeft, [](const Item& i) { return i.name; }},
      {"time", session::Align::kRight, [](const Item& i) { return session::format_seconds(i.seconds); }},
  };
  std::vector<std::unique_ptr<Item>> owned;
  owned.push_back(std::make_unique<Item>(Item{"p", 0.0123}));
  owned.push_back(std::make_unique<Item>(Item{"q", 1e-9}));
  const std::string expected = "  item     time\n  p     12.3 ms\n  q     1.00 ns\n";
  EXPECT_EQ(session::render_table(fields, owned), expected);
  const std::vector<Item> plain = {{"p", 0.0123}, {"q", 1e-9}};
  EXPECT_EQ(session::render_table(fields, plain), expected);
}

}  // namespace
}  // namespace rtcosim::tools
