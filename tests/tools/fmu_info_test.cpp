// `rtcosim fmu info`: which variables are ports, and their types (issue 28).
#include <gtest/gtest.h>

#include "tools/rtcosim/fmu_command.hpp"

namespace rtcosim::tools {
namespace {

std::string info(const std::string& name) {
  const std::string path = std::string(RTCOSIM_FMU_DIR) + "/" + name + ".fmu";
  return format_fmu_info(path, tasks::fmu::inspect(path));
}

// How a port is named in a graph (issue 40): the first-dot rule with one of
// the FMU's own names, and the YAML quotes only where a name needs them.
TEST(FmuInfo, SaysHowToNameAStructuredVariable) {
  const std::string dotted = info("dotted2");
  EXPECT_NE(dotted.find("  naming            BLOCK.<name> in wires, record and probes, split at the first dot: e.g. "
                        "fmu.body.x\n                    in a YAML {...} or [...] quote a name with [ ] { } , # : ' or "
                        "a space: \"fmu.c[1].count\"\n"),
            std::string::npos)
      << dotted;
  const std::string plain = info("count2");
  EXPECT_NE(plain.find("split at the first dot: e.g. fmu.x\n    name "), std::string::npos) << plain;
}

TEST(FmuInfo, ListsThePortsWithTheirTypes) {
  const std::string two = info("count2");
  EXPECT_NE(two.find("  input ports       inc (Integer), enable (Boolean)\n"), std::string::npos) << two;
  EXPECT_NE(two.find("  output ports      x (Real), counter (Integer), inc_out (Integer), mode (Enumeration), "
                     "enable_out (Boolean), odd (Boolean)\n"),
            std::string::npos)
      << two;
  // A String output is listed, and said not to be a port.
  EXPECT_NE(two.find("    label        0  output     discrete     String       -         -  no (String)\n"),
            std::string::npos)
      << two;
  const std::string three = info("count3");
  EXPECT_NE(three.find("  input ports       inc (Int8), enable (Boolean), u8 (UInt8), i16 (Int16), u16 (UInt16), "
                       "u32 (UInt32), u64 (UInt64), f32 (Float32), i64 (Int64)\n"),
            std::string::npos)
      << three;
  EXPECT_NE(three.find("  output ports      x (Float64), counter (Int32), big (Int64), mode (Enumeration), u8_out "
                       "(UInt8), i16_out (Int16), u16_out (UInt16), u32_out (UInt32), u64_out (UInt64), f32_out "
                       "(Float32), i64_out (Int64), even (Boolean), inc_out (Int8)\n"),
            std::string::npos)
      << three;
  EXPECT_NE(info("msd3").find("  input ports       F (Float64)\n"), std::string::npos);
}

// FMI 3.0 arrays are ports as wide as their elements: the dimensions
// (a structural parameter by name, with its declared start) and the width.
TEST(FmuInfo, ShowsTheWidthOfArrayPorts) {
  const std::string vec = info("vec3");
  EXPECT_NE(vec.find("  input ports       u (Float64[n=3]) width 3, i (Int32[2]) width 2\n"), std::string::npos) << vec;
  EXPECT_NE(vec.find("  output ports      y (Float64[n=3]) width 3, x (Float64[n=3]) width 3, s (Float64), j "
                     "(Int32[2]) width 2\n"),
            std::string::npos)
      << vec;
  EXPECT_NE(vec.find("  continuous states 3 (x[n=3])\n"), std::string::npos) << vec;
  EXPECT_NE(vec.find("    u        3  input                continuous   Float64[n=3]  -         0  input\n"),
            std::string::npos)
      << vec;
  EXPECT_NE(vec.find("      max output derivative order   1\n"), std::string::npos) << vec;
  EXPECT_EQ(vec.find("not supported"), std::string::npos) << vec;
}

}  // namespace
}  // namespace rtcosim::tools
