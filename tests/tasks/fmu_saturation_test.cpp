// FMU integer inputs at the edges of their types (issue 45, item 7;
// docs/fmi.md): a double on a port is rounded to the nearest integer
// (halves away from zero) and saturates at the type's limits. The values
// that matter are the powers of two just past each limit: 2^k does not fit
// a type whose largest value is 2^k - 1 (UInt8 256, Int8 128, Int16 32768,
// UInt16 65536, Int32 2^31, UInt32 2^32, Int64 2^63, UInt64 2^64), nor
// does a half that rounds onto it (255.5). Each input is echoed by an
// output of its type (tests/fmus/counter_model.h): the FMU says what it
// was given. count3 (FMI 3.0) has inputs of every integer type but Int32;
// count2's `inc` is an FMI 2.0 Integer, an Int32.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tasks/diagram.hpp"

namespace rtcosim::tasks {
namespace {

std::string fmu(const std::string& name) { return std::string(RTCOSIM_FMU_DIR) + "/" + name + ".fmu"; }

struct NoInputs final : InputSource {
  void sample(std::size_t, double, std::span<double>) noexcept override {}
};

// count2 or count3 as block 'm', its inputs driven by constants: `in` set
// to `value`, inc 1 and enable 1 unless set, the others 0.
std::unique_ptr<Partition> counter(const std::string& file, const std::string& iface, const std::string& in,
                                   double value) {
  std::vector<std::string> names{"inc", "enable"};
  if (file == "count3") {
    for (const char* n : {"u8", "i16", "u16", "u32", "u64", "f32", "i64"}) names.emplace_back(n);
  }
  std::vector<BlockSpec> blocks;
  std::vector<WireSpec> wires;
  for (const auto& n : names) {
    const double v = n == in ? value : (n == "inc" || n == "enable") ? 1.0 : 0.0;
    blocks.push_back({"c_" + n, "constant", {{"value", v}}, ""});
    wires.push_back({{"c_" + n, "y"}, {"m", n}});
  }
  blocks.push_back({"m", "fmu", {{"file", fmu(file)}, {"interface", iface}}, ""});
  return build_partition(BlockRegistry::with_builtins(), "p", blocks, wires, {}, IntegratorKind::kRk4);
}

struct Case {
  const char* in;
  const char* out;
  double value, expected;
};

// 1.5 s of 10 ms frames (the counter has counted once: it stays far from
// overflowing an Int32 itself), then the echo of the input.
void expect_echoes(const char* file, const std::vector<Case>& cases) {
  for (const char* iface : {"model_exchange", "co_simulation"}) {
    for (const Case& c : cases) {
      auto p = counter(file, iface, c.in, c.value);
      NoInputs none;
      for (int i = 0; i < 150; ++i) p->step(i * 0.01, 0.01, none);
      ASSERT_FALSE(p->failed()) << p->failure();
      EXPECT_EQ(p->output(p->find_output({"m", c.out}))[0], c.expected)
          << file << " " << iface << ": " << c.in << " = " << std::to_string(c.value);
    }
  }
}

TEST(FmuSaturation, Fmi3IntegerInputsSaturateAtExactlyTwoToTheK) {
  const double two63 = 9223372036854775808.0, two64 = 18446744073709551616.0;
  expect_echoes("count3", {
                              // UInt8: 255 is the last value; 256 = 2^8 and 255.5 (which rounds to it) saturate.
                              {"u8", "u8_out", 255.0, 255.0},
                              {"u8", "u8_out", 255.49, 255.0},
                              {"u8", "u8_out", 255.5, 255.0},
                              {"u8", "u8_out", 256.0, 255.0},
                              {"u8", "u8_out", 257.0, 255.0},
                              {"u8", "u8_out", -0.4, 0.0},
                              {"u8", "u8_out", -0.5, 0.0},
                              {"u8", "u8_out", -1.0, 0.0},
                              // Int8: 128 = 2^7 and 127.5 saturate at 127; -128 fits, -128.5 and -129 do not.
                              {"inc", "inc_out", 127.0, 127.0},
                              {"inc", "inc_out", 127.5, 127.0},
                              {"inc", "inc_out", 128.0, 127.0},
                              {"inc", "inc_out", -128.0, -128.0},
                              {"inc", "inc_out", -128.5, -128.0},
                              {"inc", "inc_out", -129.0, -128.0},
                              // Int16 and UInt16.
                              {"i16", "i16_out", 32767.0, 32767.0},
                              {"i16", "i16_out", 32768.0, 32767.0},
                              {"i16", "i16_out", -32768.0, -32768.0},
                              {"i16", "i16_out", -32769.0, -32768.0},
                              {"u16", "u16_out", 65535.5, 65535.0},
                              {"u16", "u16_out", 65536.0, 65535.0},
                              // UInt32: 2^32.
                              {"u32", "u32_out", 4294967295.0, 4294967295.0},
                              {"u32", "u32_out", 4294967296.0, 4294967295.0},
                              // Int64 and UInt64: 2^63 and 2^64 (their limits read back as doubles
                              // are 2^63 and 2^64; anything else read back would be a wrapped value).
                              {"i64", "i64_out", two63, two63},
                              {"i64", "i64_out", -two63, -two63},
                              {"i64", "i64_out", -2.0 * two63, -two63},
                              {"u64", "u64_out", two64, two64},
                              {"u64", "u64_out", -1.0, 0.0},
                          });
}

TEST(FmuSaturation, Fmi2IntegerInputsSaturateAtTwoToThe31) {
  expect_echoes("count2", {
                              {"inc", "inc_out", 2147483647.0, 2147483647.0},
                              {"inc", "inc_out", 2147483647.4, 2147483647.0},
                              {"inc", "inc_out", 2147483647.5, 2147483647.0},
                              {"inc", "inc_out", 2147483648.0, 2147483647.0},
                              {"inc", "inc_out", -2147483648.0, -2147483648.0},
                              {"inc", "inc_out", -2147483648.5, -2147483648.0},
                              {"inc", "inc_out", -2147483649.0, -2147483648.0},
                          });
}

}  // namespace
}  // namespace rtcosim::tasks
