#include "coupling/registry.hpp"

#include <gtest/gtest.h>

#include "base/duration.hpp"

namespace rtcosim::coupling {
namespace {

std::string error_of(const std::string& method, ParamSettings params) {
  static const auto registry = MethodRegistry::with_builtins();
  try {
    (void)registry.create(method, params, 1);
  } catch (const CouplingError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Registry, HoldsTheNineBuiltInMethods) {
  const auto ids = MethodRegistry::with_builtins().ids();
  EXPECT_EQ(ids, (std::vector<std::string>{"zoh", "zoh_average", "polynomial", "hermite", "interpolated", "smoothed",
                                           "ecd", "ecc", "predictor"}));
}

TEST(Registry, ErrorsNameTheMethodTheParameterAndTheAllowedRange) {
  EXPECT_EQ(error_of("polynomal", {}),
            "unknown coupling method 'polynomal' — expected one of: zoh, zoh_average, polynomial, hermite, "
            "interpolated, smoothed, ecd, ecc, predictor (did you mean 'polynomial'?)");
  EXPECT_EQ(error_of("polynomial", {{"order", "0"}}),
            "coupling method 'polynomial': parameter 'order' = '0' is out of range — expected an integer from 1 to 8");
  EXPECT_EQ(error_of("hermite", {{"order", "9"}}),
            "coupling method 'hermite': parameter 'order' = '9' is out of range — expected an integer from 1 to 8");
  EXPECT_EQ(error_of("polynomial", {{"order", "3.5"}}),
            "coupling method 'polynomial': parameter 'order' = '3.5' is not an integer — expected an integer from 1 to 8");
  EXPECT_EQ(error_of("polynomial", {{"order", "abc"}}),
            "coupling method 'polynomial': parameter 'order' = 'abc' is not a number — expected an integer from 1 to 8");
  EXPECT_EQ(error_of("ecd", {{"macro_step", "-10ms"}}),
            "coupling method 'ecd': parameter 'macro_step' = '-10ms' is out of range — expected a duration from 0 s to 1 h");
  EXPECT_EQ(error_of("smoothed", {{"ordr", "2"}}),
            "coupling method 'smoothed': unknown parameter 'ordr' — expected one of: order, macro_step (did you mean 'order'?)");
  EXPECT_EQ(error_of("zoh", {{"order", "2"}}),
            "coupling method 'zoh': unknown parameter 'order' — this method takes no parameters");
}

TEST(Registry, ErrorsCarryMethodAndParameter) {
  try {
    (void)MethodRegistry::with_builtins().resolve("ecc", {{"interp_order", "12"}});
    FAIL();
  } catch (const CouplingError& e) {
    EXPECT_EQ(e.method(), "ecc");
    EXPECT_EQ(e.parameter(), "interp_order");
  }
}

TEST(Registry, DefaultsAndParsedValues) {
  const auto registry = MethodRegistry::with_builtins();
  const auto v = registry.resolve("ecc", {{"order", "4"}, {"macro_step", "40ms"}});
  EXPECT_EQ(v.get_int("order"), 4);
  EXPECT_EQ(v.get_int("interp_order"), 3);
  EXPECT_DOUBLE_EQ(v.get("macro_step"), 0.04);
}

TEST(Registry, RejectsDuplicateAndInvalidIds) {
  auto registry = MethodRegistry::with_builtins();
  MethodInfo copy = *registry.find("zoh");
  EXPECT_THROW(registry.add(copy), CouplingError);
  copy.id = "Bad Name";
  EXPECT_THROW(registry.add(copy), CouplingError);
  copy.id = "zoh2";
  EXPECT_NO_THROW(registry.add(copy));
  EXPECT_NE(registry.find("zoh2"), nullptr);
}

TEST(Duration, ParsesUnitsAndRejectsNonsenseWithTheAcceptedForms) {
  EXPECT_DOUBLE_EQ(*base::parse_duration("5ms"), 0.005);
  EXPECT_DOUBLE_EQ(*base::parse_duration("250us"), 250e-6);
  EXPECT_DOUBLE_EQ(*base::parse_duration("0.02s"), 0.02);
  EXPECT_DOUBLE_EQ(*base::parse_duration("1.5 min"), 90.0);
  EXPECT_DOUBLE_EQ(*base::parse_duration("2h"), 7200.0);
  EXPECT_DOUBLE_EQ(*base::parse_duration("0.5"), 0.5);
  EXPECT_DOUBLE_EQ(*base::parse_duration(" 10 ns "), 10e-9);
  std::string why;
  EXPECT_FALSE(base::parse_duration("", &why));
  EXPECT_NE(why.find("ns, us, ms, s, min or h"), std::string::npos);
  EXPECT_FALSE(base::parse_duration("abc", &why));
  EXPECT_NE(why.find("is not a duration"), std::string::npos);
  EXPECT_FALSE(base::parse_duration("5 parsecs", &why));
  EXPECT_NE(why.find("unknown unit 'parsecs'"), std::string::npos);
  EXPECT_FALSE(base::parse_duration("1e999s", &why));
  EXPECT_EQ(base::format_duration(0.04), "40 ms");
  EXPECT_EQ(base::format_duration(250e-6), "250 us");
}

}  // namespace
}  // namespace rtcosim::coupling
