// Issue 28: every FMI scalar type as a port, time events in model exchange
// and co-simulation, an FMI 3.0 state event, resources. Against analytic
// results: the test FMUs count2/count3 (tests/fmus/counter_model.h) step a
// counter by `inc` at t = 1, 2, 3, ... s and integrate it, x' = counter,
// so with inc = 1: counter(t) = floor(t), x(t) = n (n - 1) / 2 + n (t - n),
// n = floor(t).
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include <gtest/gtest.h>

#include "tasks/diagram.hpp"
#include "tasks/fmu/fmu_instance.hpp"
#include "tests/support/alloc_counter.hpp"

namespace rtcosim::tasks {
namespace {

std::string fmu(const std::string& name) { return std::string(RTCOSIM_FMU_DIR) + "/" + name + ".fmu"; }

struct NoInputs final : InputSource {
  void sample(std::size_t, double, std::span<double>) noexcept override {}
};

double floor_t(double t) { return std::floor(t + 1e-9); }
double integral_of_floor(double t) {
  const double n = floor_t(t);
  return n * (n - 1.0) / 2.0 + n * (t - n);
}

// count2 or count3 as block 'm', every input driven by a constant (by
// name; the ones not named: inc 1, enable 1, the others 0).
std::unique_ptr<Partition> counter(const std::string& file, const std::string& iface, IntegratorKind integrator,
                                   std::vector<std::pair<std::string, double>> inputs = {}, BlockParams extra = {}) {
  std::vector<std::string> names{"inc", "enable"};
  if (file == "count3") {
    for (const char* n : {"u8", "i16", "u16", "u32", "u64", "f32", "i64"}) names.emplace_back(n);
  }
  std::vector<BlockSpec> blocks;
  std::vector<WireSpec> wires;
  for (const auto& n : names) {
    double value = n == "inc" || n == "enable" ? 1.0 : 0.0;
    for (const auto& [k, v] : inputs) {
      if (k == n) value = v;
    }
    blocks.push_back({"c_" + n, "constant", {{"value", value}}, ""});
    wires.push_back({{"c_" + n, "y"}, {"m", n}});
  }
  BlockParams p{{"file", fmu(file)}, {"interface", iface}};
  for (const auto& [k, v] : extra.all()) p.set(k, v);
  blocks.push_back({"m", "fmu", p, ""});
  return build_partition(BlockRegistry::with_builtins(), "p", blocks, wires, {}, integrator);
}

const char* const kCounters[] = {"count2", "count3"};
const char* const kInterfaces[] = {"model_exchange", "co_simulation"};

// At every frame the counter is floor(t); its output (and every output of
// the block) is flagged as having jumped exactly in the frames that hold an
// event, its derivative is known and zero, and x is the exact integral.
TEST(FmuTypes, TheCounterIsFloorOfTimeAtEveryFrameAndJumpsExactlyInTheEventsFrames) {
  for (const char* file : kCounters) {
    for (const char* iface : kInterfaces) {
      auto p = counter(file, iface, IntegratorKind::kRk4);
      NoInputs in;
      const auto count = p->find_output({"m", "counter"}), x = p->find_output({"m", "x"});
      const auto mode = p->find_output({"m", "mode"});
      const double h = 0.01;
      int jumps = 0;
      for (int i = 0; i < 350; ++i) {
        p->step(i * h, h, in);
        ASSERT_FALSE(p->failed()) << p->failure();
        const double t = p->time();
        ASSERT_EQ(p->output(count)[0], floor_t(t)) << file << " " << iface << " t " << t;
        ASSERT_EQ(p->output(mode)[0], 1.0 + std::fmod(floor_t(t), 3.0)) << file << " " << iface << " t " << t;
        ASSERT_NEAR(p->output(x)[0], integral_of_floor(t), 1e-9) << file << " " << iface << " t " << t;
        ASSERT_TRUE(p->output_derivative_valid(count, 0));
        ASSERT_EQ(p->output_derivative(count)[0], 0.0);
        const bool event_here = floor_t(t) != floor_t(i * h);
        ASSERT_EQ(p->output_jumped(count), event_here) << file << " " << iface << " t " << t;
        jumps += event_here ? 1 : 0;
      }
      EXPECT_EQ(jumps, 3) << file << " " << iface;
      if (std::string(iface) == "model_exchange") {
        EXPECT_EQ(p->events(), 3u) << file;
      }
      const auto parity = p->find_output({"m", file == std::string("count2") ? "odd" : "even"});
      EXPECT_EQ(p->output(parity)[0], file == std::string("count2") ? 1.0 : 0.0) << file;  // counter 3
    }
  }
}

// An FMU input left unconnected keeps its start value, as FMI and SSP say:
// count2 and count3 with none of their inputs wired (inc starts at 1, enable
// at true, count3's other inputs at 0) count exactly as with every input
// driven by those constants, in both interfaces, bit for bit.
TEST(FmuTypes, UnconnectedInputsKeepTheirStartValues) {
  for (const char* file : kCounters) {
    for (const char* iface : kInterfaces) {
      auto unwired = build_partition(BlockRegistry::with_builtins(), "p",
                                     {{"m", "fmu", BlockParams{{"file", fmu(file)}, {"interface", iface}}, ""}}, {}, {},
                                     IntegratorKind::kRk4);
      auto wired = counter(file, iface, IntegratorKind::kRk4);
      NoInputs in;
      const auto count = unwired->find_output({"m", "counter"}), x = unwired->find_output({"m", "x"});
      const auto count_w = wired->find_output({"m", "counter"}), x_w = wired->find_output({"m", "x"});
      for (int i = 0; i < 250; ++i) {
        unwired->step(i * 0.01, 0.01, in);
        wired->step(i * 0.01, 0.01, in);
        ASSERT_FALSE(unwired->failed()) << unwired->failure();
        ASSERT_EQ(unwired->output(count)[0], floor_t(unwired->time())) << file << " " << iface;
        ASSERT_EQ(unwired->output(count)[0], wired->output(count_w)[0]) << file << " " << iface;
        ASSERT_EQ(unwired->output(x)[0], wired->output(x_w)[0]) << file << " " << iface;
      }
      // A reset starts again from the start values.
      unwired->reset(0.0);
      unwired->step(0.0, 1.5, in);
      EXPECT_EQ(unwired->output(count)[0], 1.0) << file << " " << iface;
      // The block's own start for an input is the value it keeps.
      auto by_two = build_partition(
          BlockRegistry::with_builtins(), "p",
          {{"m", "fmu", BlockParams{{"file", fmu(file)}, {"interface", iface}, {"start.inc", 2.0}}, ""}}, {}, {},
          IntegratorKind::kRk4);
      for (int i = 0; i < 250; ++i) by_two->step(i * 0.01, 0.01, in);
      EXPECT_EQ(by_two->output(by_two->find_output({"m", "counter"}))[0], 4.0) << file << " " << iface;
    }
  }
}

// Frames of 0.3 s (and, as a measured step would, alternating 0.13 and
// 0.37 s) hold the events at 1, 2, 3 s inside them: euler, rk2 and rk4 end
// a sub-step on each, so x, whose derivative jumps there, stays exact; ab2
// handles each at the end of the frame that holds it, and x is late by the
// rest of that frame for each event.
TEST(FmuTypes, ModelExchangeLandsOnTimeEventsWhereTheIntegratorAllows) {
  for (const char* file : kCounters) {
    for (const IntegratorKind kind : {IntegratorKind::kEuler, IntegratorKind::kRk2, IntegratorKind::kRk4}) {
      for (const bool measured : {false, true}) {
        auto p = counter(file, "model_exchange", kind);
        NoInputs in;
        const auto count = p->find_output({"m", "counter"}), x = p->find_output({"m", "x"});
        double t = 0.0;
        for (int i = 0; t < 3.5; ++i) {
          const double h = measured ? (i % 2 ? 0.37 : 0.13) : 0.3;
          p->step(t, h, in);
          t = p->time();
          ASSERT_FALSE(p->failed()) << p->failure();
          ASSERT_EQ(p->output(count)[0], floor_t(t)) << file << " t " << t;
          ASSERT_NEAR(p->output(x)[0], integral_of_floor(t), 1e-12)
              << file << " " << integrator_name(kind) << (measured ? " measured" : " fixed") << " t " << t;
        }
        EXPECT_EQ(p->events(), 3u);
      }
    }
    // ab2: located at the frame's end, 1.2, 2.1 and 3.0 s: x lags by
    // 0.2 + 0.1 (+ 0.0) at 3.3 s, the counter is still floor(t).
    auto p = counter(file, "model_exchange", IntegratorKind::kAb2);
    NoInputs in;
    const auto x = p->find_output({"m", "x"});
    for (int i = 0; i < 11; ++i) p->step(i * 0.3, 0.3, in);
    EXPECT_NEAR(p->output(x)[0], integral_of_floor(3.3) - 0.2 * 1.0 - 0.1 * 1.0, 1e-9) << file;
  }
}

// Integer and Boolean inputs through fmi2SetInteger / fmi2SetBoolean
// (count2 refuses every fmi2SetReal), read back through the getters.
TEST(FmuTypes, Fmi2IntegerAndBooleanInputsAreSetWithTheTypedSettersAndReadBack) {
  for (const char* iface : kInterfaces) {
    const struct {
      double inc, enable;
      double inc_out, enable_out, counter_at_2_5;
    } cases[] = {{2.6, 1.0, 3.0, 1.0, 6.0},
                 {-2.5, 0.5, -3.0, 1.0, -6.0},
                 {3.0, 0.0, 3.0, 0.0, 0.0},
                 {1.0, std::nan(""), 1.0, 0.0, 0.0},
                 {std::nan(""), 1.0, 0.0, 1.0, 0.0}};
    for (const auto& c : cases) {
      auto p = counter("count2", iface, IntegratorKind::kRk4, {{"inc", c.inc}, {"enable", c.enable}});
      NoInputs in;
      for (int i = 0; i < 250; ++i) p->step(i * 0.01, 0.01, in);
      ASSERT_FALSE(p->failed()) << p->failure();
      EXPECT_EQ(p->output(p->find_output({"m", "inc_out"}))[0], c.inc_out) << iface << " inc " << c.inc;
      EXPECT_EQ(p->output(p->find_output({"m", "enable_out"}))[0], c.enable_out) << iface << " enable " << c.enable;
      EXPECT_EQ(p->output(p->find_output({"m", "counter"}))[0], c.counter_at_2_5) << iface << " inc " << c.inc;
    }
  }
}

// Every FMI 3.0 integer type, Float32 and Boolean: each input echoed by an
// output of its type. Values in range come back exactly; beyond it they
// saturate at the type's limits; a Float32 is the nearest float.
TEST(FmuTypes, Fmi3InputsOfEveryTypeAreSetAndReadBackExactlyOrSaturated) {
  const double two53 = 9007199254740992.0;
  const struct {
    const char* in;
    const char* out;
    double value, expected;
  } cases[] = {
      {"u8", "u8_out", 200.0, 200.0},
      {"u8", "u8_out", 300.0, 255.0},
      {"u8", "u8_out", -4.0, 0.0},
      {"i16", "i16_out", -40000.0, -32768.0},
      {"i16", "i16_out", -1234.4, -1234.0},
      {"u16", "u16_out", 65535.0, 65535.0},
      {"u32", "u32_out", 4e9, 4e9},
      {"u32", "u32_out", 5e9, 4294967295.0},
      {"u64", "u64_out", two53, two53},
      {"u64", "u64_out", 1e30, 18446744073709551615.0},
      {"i64", "i64_out", -two53, -two53},
      {"i64", "i64_out", -1e30, -9223372036854775808.0},
      {"f32", "f32_out", 0.1, static_cast<double>(0.1f)},
      {"f32", "f32_out", 1e300, std::numeric_limits<double>::infinity()},
      {"inc", "inc_out", -1.4, -1.0},
      {"inc", "inc_out", 1000.0, 127.0},
      {"enable", "even", 0.0, 1.0},  // enable false: the counter stays 0, which is even
  };
  for (const char* iface : kInterfaces) {
    for (const auto& c : cases) {
      auto p = counter("count3", iface, IntegratorKind::kRk4, {{c.in, c.value}});
      NoInputs in;
      for (int i = 0; i < 150; ++i) p->step(i * 0.01, 0.01, in);
      ASSERT_FALSE(p->failed()) << p->failure();
      EXPECT_EQ(p->output(p->find_output({"m", c.out}))[0], c.expected) << iface << " " << c.in << " = " << c.value;
    }
  }
  // inc = -1: the counter steps down, an Int8 through fmi3SetInt8.
  auto p = counter("count3", "model_exchange", IntegratorKind::kRk4, {{"inc", -1.0}});
  NoInputs in;
  for (int i = 0; i < 250; ++i) p->step(i * 0.01, 0.01, in);
  EXPECT_EQ(p->output(p->find_output({"m", "counter"}))[0], -2.0);
}

TEST(FmuTypes, A64BitStartValueBeyond2To53IsRefusedNamingTheVariable) {
  try {
    (void)counter("count3", "co_simulation", IntegratorKind::kRk4, {}, {{"start.offset", 9007199254740994.0}});
    ADD_FAILURE() << "accepted";
  } catch (const BlockError& e) {
    EXPECT_EQ(std::string(e.what()),
              "block 'm' (fmu): the start value of 'offset' (Int64) is beyond 2^53 = 9007199254740992 — a double "
              "holds integers exactly only up to there");
  }
  // 2^53 itself is exact.
  EXPECT_NO_THROW(
      (void)counter("count3", "co_simulation", IntegratorKind::kRk4, {}, {{"start.offset", 9007199254740992.0}}));
}

// At run time an Int64 output beyond 2^53 is the nearest double (ties to
// even), counted, and the run goes on.
TEST(FmuTypes, AnInt64OutputBeyond2To53BecomesTheNearestDoubleAndIsCounted) {
  fmu::FmuOptions o;
  o.interface = fmu::FmuInterface::kCoSimulation;
  o.start = {{"offset", {9007199254740990.0}}};  // 2^53 - 2
  fmu::FmuInstance f(fmu("count3"), o);
  const std::uint32_t big = f.description().find("big")->value_reference;
  std::uint64_t scratch = 0;
  const double expected[] = {9007199254740990.0, 9007199254740991.0, 9007199254740992.0,
                             9007199254740992.0 /* 2^53 + 1, a tie: to even */};
  for (int k = 0; k < 4; ++k) {
    double v = 0.0;
    if (k > 0) {
      ASSERT_TRUE(f.do_step(k - 1.0, 1.0));
    }
    ASSERT_TRUE(f.get_values(fmu::VarType::kInt64, &big, 1, &v, &scratch)) << f.failure();
    EXPECT_EQ(v, expected[k]) << k;
  }
  EXPECT_EQ(f.inexact_reads(), 1u);
  EXPECT_FALSE(f.failed());
}

// The same through the block: the run tells its user (Block::run_notice,
// reported with TaskRuntime::allocation_reports by `rtcosim run` and the
// daemon's status) how many 64-bit values it read inexactly.
TEST(FmuTypes, TheBlockSaysHowManyOutputsItReadInexactly) {
  auto p = counter("count3", "co_simulation", IntegratorKind::kRk4, {}, {{"start.offset", 9007199254740990.0}});
  const Block& m = p->block(p->block_count() - 1);
  ASSERT_EQ(m.name(), "m");
  NoInputs in;
  EXPECT_EQ(m.run_notice(), "");
  for (int k = 0; k < 3; ++k) p->step(k * 1.0, 1.0, in);  // big: 2^53 - 2 + 3 = 2^53 + 1 read last
  ASSERT_FALSE(p->failed()) << p->failure();
  EXPECT_EQ(
      m.run_notice(),
      "1 value(s) of its 64-bit integer outputs lay beyond 2^53 and were read as the nearest double (docs/fmi.md, "
      "\"Types\")");
}

// resources/value.txt holds 4711: the FMU finds it through the
// fmuResourceLocation URI (FMI 2.0, percent-encoded: here under a $TMPDIR
// with a space and a percent sign) or the resourcePath (FMI 3.0).
TEST(FmuTypes, AValueReadFromTheFmusResourcesFolder) {
  for (const char* file : {"resource2", "resource3"}) {
    for (const bool odd_tmpdir : {false, true}) {
      const char* old = std::getenv("TMPDIR");
      const std::string saved = old ? old : "";
      const std::string dir = ::testing::TempDir() + "res dir 100%";
      if (odd_tmpdir) {
        std::filesystem::create_directories(dir);
        ::setenv("TMPDIR", dir.c_str(), 1);
      }
      auto p = build_partition(BlockRegistry::with_builtins(), "p", {{"r", "fmu", {{"file", fmu(file)}}, ""}}, {}, {},
                               IntegratorKind::kRk4);
      if (odd_tmpdir) {
        if (old) {
          ::setenv("TMPDIR", saved.c_str(), 1);
        } else {
          ::unsetenv("TMPDIR");
        }
      }
      NoInputs in;
      p->step(0.0, 0.01, in);
      ASSERT_FALSE(p->failed()) << p->failure();
      EXPECT_EQ(p->output(p->find_output({"r", "value"}))[0], 4711.0) << file << (odd_tmpdir ? " odd $TMPDIR" : "");
    }
  }
}

// The bouncing ball in FMI 3.0 (state event, event indicator h): each
// bounce found within one frame of the analytic time, two frames per
// earlier bounce.
TEST(FmuTypes, Fmi3BouncingBallBouncesAtTheAnalyticTimes) {
  const double h = 0.001, g = 9.81, e = 0.8;
  auto p = build_partition(BlockRegistry::with_builtins(), "ball", {{"ball", "fmu", {{"file", fmu("bball3")}}, ""}}, {},
                           {}, IntegratorKind::kRk4);
  NoInputs in;
  const double v1 = std::sqrt(2.0 * g);
  std::vector<double> impacts{std::sqrt(2.0 / g)};
  for (int n = 1; n < 4; ++n) impacts.push_back(impacts.back() + 2.0 * std::pow(e, n) * v1 / g);
  std::vector<double> seen;
  const auto height = p->find_output({"ball", "h"});
  for (int i = 0; i < 2000; ++i) {
    const auto before = p->events();
    p->step(i * h, h, in);
    if (p->events() != before) seen.push_back((i + 1) * h);
    ASSERT_EQ(p->output_jumped(height), p->events() != before) << i;
  }
  ASSERT_EQ(seen.size(), 3u);
  for (std::size_t k = 0; k < seen.size(); ++k) {
    EXPECT_GE(seen[k], impacts[k] - 1e-9) << k;
    EXPECT_LE(seen[k], impacts[k] + 2.0 * static_cast<double>(k + 1) * h) << k;
  }
  EXPECT_FALSE(p->failed());
}

}  // namespace
}  // namespace rtcosim::tasks
