// MethodRegistry: the ten built-in methods, their defaults, and set-up
// errors that name the method, the parameter and what is allowed, so that a
// configuration file's author can fix the line without reading the code.
#include "coupling/registry.hpp"

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace rtcosim::coupling {
namespace {

const MethodRegistry& builtins() {
  static const MethodRegistry r = MethodRegistry::with_builtins();
  return r;
}

// The error of creating `method` with `params`, or nullopt if there was none.
std::optional<CouplingError> error_of(const std::string& method, const ParamSettings& params) {
  try {
    (void)builtins().create(method, params, 1);
  } catch (const CouplingError& e) {
    return e;
  }
  return std::nullopt;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(Registry, HoldsTheTenBuiltInMethods) {
  EXPECT_EQ(builtins().ids(), (std::vector<std::string>{"zoh", "zoh_average", "polynomial", "hermite", "interpolated",
                                                        "smoothed", "ecd", "ecc", "predictor", "rim"}));
  for (const MethodInfo& m : builtins().methods()) {
    EXPECT_FALSE(m.summary.empty()) << m.id;
    EXPECT_TRUE(m.make) << m.id;
    EXPECT_EQ(m.origin, "built-in") << m.id;
    const auto e = builtins().create(m.id, {}, 3);
    ASSERT_NE(e, nullptr) << m.id;
    EXPECT_EQ(e->method_id(), m.id);
    EXPECT_EQ(e->signal_count(), 3u) << m.id;
  }
  // Only the methods that read derivatives say so.
  EXPECT_TRUE(builtins().get("hermite").uses_derivatives);
  EXPECT_TRUE(builtins().get("predictor").uses_derivatives);
  EXPECT_FALSE(builtins().get("polynomial").uses_derivatives);
}

TEST(Registry, AnUnknownMethodIsNamedWithTheChoicesAndTheClosestOne) {
  const auto e = error_of("polynomal", {});
  ASSERT_TRUE(e);
  EXPECT_STREQ(e->what(),
               "unknown coupling method 'polynomal' — expected one of: zoh, zoh_average, polynomial, hermite, "
               "interpolated, smoothed, ecd, ecc, predictor, rim (did you mean 'polynomial'?)");
  EXPECT_EQ(e->method(), "polynomal");
  EXPECT_EQ(e->parameter(), "");

  // Nothing close: the choices, and no guess.
  const auto far = error_of("kalman_filter", {});
  ASSERT_TRUE(far);
  EXPECT_TRUE(contains(far->what(), "unknown coupling method 'kalman_filter' — expected one of: zoh,")) << far->what();
  EXPECT_FALSE(contains(far->what(), "did you mean")) << far->what();

  EXPECT_EQ(builtins().find("polynomal"), nullptr);
  EXPECT_THROW((void)builtins().get("polynomal"), CouplingError);
}

struct BadParameter {
  std::string method;
  std::string parameter;
  std::string value;
  std::string message;
};

// Names the case in a failure instead of dumping its bytes.
void PrintTo(const BadParameter& bad, std::ostream* os) {
  *os << bad.method << ": " << bad.parameter << " = '" << bad.value << "'";
}

class RegistryBadParameter : public ::testing::TestWithParam<BadParameter> {};

TEST_P(RegistryBadParameter, NamesTheMethodTheParameterAndTheAllowedRange) {
  const BadParameter& bad = GetParam();
  const auto e = error_of(bad.method, {{bad.parameter, bad.value}});
  ASSERT_TRUE(e) << bad.method << " " << bad.parameter << "=" << bad.value << " was accepted";
  EXPECT_EQ(e->what(), bad.message);
  EXPECT_EQ(e->method(), bad.method);
  EXPECT_EQ(e->parameter(), bad.parameter);
}

const std::string kOrderRange = "expected an integer from 1 to 8";
const std::string kStepRange = "expected a duration from 0 s to 1 h";

INSTANTIATE_TEST_SUITE_P(
    Registry, RegistryBadParameter,
    ::testing::Values(
        BadParameter{"polynomial", "order", "0",
                     "coupling method 'polynomial': parameter 'order' = '0' is out of range — " + kOrderRange},
        BadParameter{"hermite", "order", "9",
                     "coupling method 'hermite': parameter 'order' = '9' is out of range — " + kOrderRange},
        BadParameter{"polynomial", "order", "3.5",
                     "coupling method 'polynomial': parameter 'order' = '3.5' is not an integer — " + kOrderRange},
        BadParameter{"polynomial", "order", "abc",
                     "coupling method 'polynomial': parameter 'order' = 'abc' is not a number — " + kOrderRange},
        // NaN compares false with both ends of a range: it must fail as a number.
        BadParameter{"smoothed", "order", "nan",
                     "coupling method 'smoothed': parameter 'order' = 'nan' is not a number — " + kOrderRange},
        BadParameter{"ecd", "order", "inf",
                     "coupling method 'ecd': parameter 'order' = 'inf' is not a number — " + kOrderRange},
        BadParameter{"ecd", "order", "",
                     "coupling method 'ecd': parameter 'order' = '' is not a number — " + kOrderRange},
        BadParameter{"ecc", "interp_order", "12",
                     "coupling method 'ecc': parameter 'interp_order' = '12' is out of range — " + kOrderRange},
        BadParameter{"ecd", "macro_step", "-10ms",
                     "coupling method 'ecd': parameter 'macro_step' = '-10ms' is out of range — " + kStepRange},
        BadParameter{"interpolated", "macro_step", "2h",
                     "coupling method 'interpolated': parameter 'macro_step' = '2h' is out of range — " + kStepRange},
        BadParameter{
            "smoothed", "macro_step", "5 parsecs",
            "coupling method 'smoothed': parameter 'macro_step' = '5 parsecs' is not a duration — " + kStepRange},
        BadParameter{"smoothed", "ordr", "2",
                     "coupling method 'smoothed': unknown parameter 'ordr' — expected one of: order, macro_step (did "
                     "you mean 'order'?)"},
        BadParameter{"ecc", "step", "10ms",
                     "coupling method 'ecc': unknown parameter 'step' — expected one of: order, interp_order, "
                     "macro_step"},
        BadParameter{"zoh", "order", "2",
                     "coupling method 'zoh': unknown parameter 'order' — this method takes no parameters"},
        BadParameter{"predictor", "order", "2",
                     "coupling method 'predictor': unknown parameter 'order' — this method takes no parameters"}));

TEST(Registry, UnsetParametersTakeTheirDefaults) {
  for (const MethodInfo& m : builtins().methods()) {
    const ParamValues values = builtins().resolve(m.id, {});
    ASSERT_EQ(values.all().size(), m.params.size()) << m.id;
    for (const ParamSpec& spec : m.params) {
      EXPECT_EQ(values.get(spec.name), spec.default_value) << m.id << "." << spec.name;
    }
  }
  const ParamValues ecc = builtins().resolve("ecc", {});
  EXPECT_EQ(ecc.get_int("order"), 3);
  EXPECT_EQ(ecc.get_int("interp_order"), 3);
  EXPECT_EQ(ecc.get("macro_step"), 0.0);  // estimated from the tags
  EXPECT_TRUE(builtins().resolve("zoh", {}).all().empty());
  EXPECT_THROW((void)ecc.get("no_such_parameter"), CouplingError);
}

TEST(Registry, SetParametersAreParsedAndTheRestDefault) {
  const ParamValues v = builtins().resolve("ecc", {{"order", "4"}, {"macro_step", "40ms"}});
  EXPECT_EQ(v.get_int("order"), 4);
  EXPECT_EQ(v.get_int("interp_order"), 3);
  EXPECT_DOUBLE_EQ(v.get("macro_step"), 0.04);
}

TEST(Registry, BothEndsOfARangeAreAllowed) {
  EXPECT_EQ(builtins().resolve("polynomial", {{"order", "1"}}).get_int("order"), 1);
  EXPECT_EQ(builtins().resolve("polynomial", {{"order", "8"}}).get_int("order"), 8);
  EXPECT_EQ(builtins().resolve("ecd", {{"macro_step", "0"}}).get("macro_step"), 0.0);
  EXPECT_EQ(builtins().resolve("ecd", {{"macro_step", "1h"}}).get("macro_step"), 3600.0);
  EXPECT_EQ(builtins().resolve("ecd", {{"macro_step", "60 min"}}).get("macro_step"), 3600.0);
}

ParamSpec spec_of(ParamKind kind, double min, double max) {
  ParamSpec spec;
  spec.name = "p";
  spec.kind = kind;
  spec.min = min;
  spec.max = max;
  return spec;
}

TEST(Registry, DescribesRangesInWords) {
  EXPECT_EQ(describe_range(spec_of(ParamKind::kInteger, 1, 8)), "an integer from 1 to 8");
  EXPECT_EQ(describe_range(spec_of(ParamKind::kDuration, 0.0, 3600.0)), "a duration from 0 s to 1 h");
  EXPECT_EQ(describe_range(spec_of(ParamKind::kDuration, 250e-6, 0.04)), "a duration from 250 us to 40 ms");
  EXPECT_EQ(describe_range(spec_of(ParamKind::kReal, -1.5, 2.0)), "a number from -1.5 to 2");
}

TEST(Registry, AddRejectsDuplicatesNamingWhoRegisteredTheFirst) {
  MethodRegistry registry = MethodRegistry::with_builtins();
  MethodInfo copy = *registry.find("zoh");
  try {
    registry.add(copy);
    FAIL() << "a duplicate was added";
  } catch (const CouplingError& e) {
    EXPECT_STREQ(e.what(), "coupling method 'zoh' is already registered (by built-in)");
    EXPECT_EQ(e.method(), "zoh");
  }
  EXPECT_EQ(registry.ids().size(), 10u);

  copy.origin = "libmine.so";
  copy.id = "zoh2";
  registry.add(copy);
  copy.id = "zoh2";
  try {
    registry.add(copy);
    FAIL() << "a duplicate was added";
  } catch (const CouplingError& e) {
    EXPECT_TRUE(contains(e.what(), "(by libmine.so)")) << e.what();
  }
  EXPECT_EQ(registry.ids().back(), "zoh2");
  EXPECT_EQ(registry.get("zoh2").origin, "libmine.so");
}

TEST(Registry, AddRejectsInvalidIdsAndMissingFactories) {
  MethodRegistry registry;
  MethodInfo info = *builtins().find("zoh");
  for (const char* id : {"", "Bad Name", "Zoh", "zoh-2", "zöh"}) {
    info.id = id;
    EXPECT_THROW(registry.add(info), CouplingError) << "'" << id << "'";
  }
  info.id = "zoh_2";
  info.make = nullptr;
  try {
    registry.add(info);
    FAIL() << "a method without a factory was added";
  } catch (const CouplingError& e) {
    EXPECT_TRUE(contains(e.what(), "'zoh_2' has no factory")) << e.what();
  }
  EXPECT_TRUE(registry.ids().empty());
}

}  // namespace
}  // namespace rtcosim::coupling
