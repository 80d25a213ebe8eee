// FMUs as blocks: the test FMUs of tests/fmus/ against their analytic
// solutions, the loader against hostile archives and broken FMUs.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <list>

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <zip.h>

#include "tasks/diagram.hpp"
#include "tasks/fmu/fmu_instance.hpp"
#include "tests/support/alloc_counter.hpp"

namespace rtcosim::tasks {
namespace {

std::string fmu(const std::string& name) { return std::string(RTCOSIM_FMU_DIR) + "/" + name + ".fmu"; }

struct NoInputs final : InputSource {
  void sample(std::size_t, double, std::span<double>) noexcept override {}
};

// m = 1, k = 4, c = 0.4, x(0) = 1, v(0) = 0, F = 0: zeta = 0.1, wn = 2.
double msd_x(double t) {
  const double s = 0.2, wd = 2.0 * std::sqrt(0.99);
  return std::exp(-s * t) * (std::cos(wd * t) + s / wd * std::sin(wd * t));
}
double msd_v(double t) {
  const double wd = 2.0 * std::sqrt(0.99);
  return -std::exp(-0.2 * t) * (4.0 / wd) * std::sin(wd * t);
}

std::unique_ptr<Partition> msd_partition(const std::string& file, const std::string& iface, IntegratorKind integrator,
                                         BlockParams extra = {}) {
  BlockParams p{{"file", fmu(file)}, {"interface", iface}};
  for (const auto& [k, v] : extra.all()) p.set(k, v);
  return build_partition(BlockRegistry::with_builtins(), "plant",
                         {{"force", "constant", {{"value", 0.0}}, ""}, {"msd", "fmu", p, ""}},
                         {{{"force", "y"}, {"msd", "F"}}}, {}, integrator);
}

// |x(T) - exact| after integrating to T with step h.
double msd_error(const std::string& file, IntegratorKind integrator, double h, double T = 2.0) {
  auto p = msd_partition(file, "model_exchange", integrator);
  NoInputs in;
  const int n = static_cast<int>(std::lround(T / h));
  for (int i = 0; i < n; ++i) p->step(i * h, h, in);
  EXPECT_FALSE(p->failed()) << p->failure();
  return std::fabs(p->state()[0] - msd_x(n * h));
}

TEST(Fmu, ModelExchangeConvergesAtEachIntegratorsOrder) {
  const struct {
    IntegratorKind kind;
    double order;
  } cases[] = {
      {IntegratorKind::kEuler, 1}, {IntegratorKind::kAb2, 2}, {IntegratorKind::kRk2, 2}, {IntegratorKind::kRk4, 4}};
  for (const auto& c : cases) {
    const double e1 = msd_error("msd2", c.kind, 0.01), e2 = msd_error("msd2", c.kind, 0.005);
    const double observed = std::log2(e1 / e2);
    EXPECT_NEAR(observed, c.order, 0.15) << integrator_name(c.kind) << ": errors " << e1 << ", " << e2;
  }
  EXPECT_LT(msd_error("msd2", IntegratorKind::kRk4, 0.001), 1e-11);
}

TEST(Fmu, ModelExchangeOutputsThatAreStatesCarryExactDerivatives) {
  auto p = msd_partition("msd2", "model_exchange", IntegratorKind::kRk4);
  NoInputs in;
  for (int i = 0; i < 500; ++i) p->step(i * 0.002, 0.002, in);
  const auto x = p->find_output({"msd", "x"}), v = p->find_output({"msd", "v"}), a = p->find_output({"msd", "a"});
  ASSERT_TRUE(p->output_derivative_valid(x, 0));
  ASSERT_TRUE(p->output_derivative_valid(v, 0));
  EXPECT_FALSE(p->output_derivative_valid(a, 0));  // not a state: unknown, the link falls back
  EXPECT_NEAR(p->output(x)[0], msd_x(1.0), 1e-10);
  EXPECT_NEAR(p->output_derivative(x)[0], msd_v(1.0), 1e-10);
  // v' = (F - k x - c v) / m, from the FMU's own derivative function.
  EXPECT_NEAR(p->output_derivative(v)[0], -4.0 * msd_x(1.0) - 0.4 * msd_v(1.0), 1e-9);
  EXPECT_NEAR(p->output(a)[0], -4.0 * msd_x(1.0) - 0.4 * msd_v(1.0), 1e-9);
}

TEST(Fmu, CoSimulationStepsMatchTheClosedFormAndModelExchangeUnderVariableSteps) {
  auto cs = msd_partition("msd2", "co_simulation", IntegratorKind::kEuler);
  auto me = msd_partition("msd2", "model_exchange", IntegratorKind::kRk4);
  NoInputs in;
  const auto x = cs->find_output({"msd", "x"}), v = cs->find_output({"msd", "v"});
  double t = 0.0;
  double worst_cs = 0.0, worst_me = 0.0;
  for (int i = 0; t < 3.0; ++i) {
    const double h = i % 2 ? 0.013 : 0.007;  // a measured step never repeats
    cs->step(t, h, in);
    me->step(t, h, in);
    t += h;
    worst_cs = std::max(worst_cs, std::fabs(cs->output(x)[0] - msd_x(t)));
    worst_me = std::max(worst_me, std::fabs(me->output(me->find_output({"msd", "x"}))[0] - cs->output(x)[0]));
    // Outputs are tagged at the end of the step: with derivatives from
    // GetRealOutputDerivatives.
    ASSERT_TRUE(cs->output_derivative_valid(x, 0));
    ASSERT_NEAR(cs->output_derivative(x)[0], cs->output(v)[0], 1e-15);
  }
  EXPECT_LT(worst_cs, 1e-9);  // RK4 at h/20 inside the FMU
  EXPECT_LT(worst_me, 2e-8);  // the partition's RK4 at h
  EXPECT_FALSE(cs->failed());
}

TEST(Fmu, StartValuesAreAppliedBeforeInitialisation) {
  auto p = msd_partition("msd2", "model_exchange", IntegratorKind::kRk4, {{"start.x0", 0.5}, {"start.v0", 2.0}});
  EXPECT_DOUBLE_EQ(p->state()[0], 0.5);
  EXPECT_DOUBLE_EQ(p->state()[1], 2.0);
}

TEST(Fmu, Fmi3VariantMatchesTheClosedForm) {
  EXPECT_LT(msd_error("msd3", IntegratorKind::kRk4, 0.001), 1e-11);
  const double e1 = msd_error("msd3", IntegratorKind::kRk2, 0.01), e2 = msd_error("msd3", IntegratorKind::kRk2, 0.005);
  EXPECT_NEAR(std::log2(e1 / e2), 2.0, 0.15);
  auto cs = msd_partition("msd3", "co_simulation", IntegratorKind::kEuler);
  NoInputs in;
  for (int i = 0; i < 1000; ++i) cs->step(i * 0.002, 0.002, in);
  const auto x = cs->find_output({"msd", "x"});
  EXPECT_NEAR(cs->output(x)[0], msd_x(2.0), 1e-10);
  EXPECT_FALSE(cs->output_derivative_valid(x, 0));  // maxOutputDerivativeOrder 0: marked absent
}

TEST(Fmu, BouncingBallEventsAreLocatedAtFrameResolution) {
  const double h = 0.001, g = 9.81, e = 0.8;
  auto p = build_partition(BlockRegistry::with_builtins(), "ball", {{"ball", "fmu", {{"file", fmu("bball2")}}, ""}}, {},
                           {}, IntegratorKind::kRk4);
  NoInputs in;
  // Impacts: t1 = sqrt(2 h0 / g), then flights of 2 e^n v1 / g.
  const double v1 = std::sqrt(2.0 * g);
  std::vector<double> impacts{std::sqrt(2.0 / g)};
  for (int n = 1; n < 4; ++n) impacts.push_back(impacts.back() + 2.0 * std::pow(e, n) * v1 / g);
  std::vector<double> seen;
  std::uint64_t events = 0;
  // A bounce detected up to one frame late has sunk p <= |v| h: reflected,
  // it keeps g p more potential energy and e^2 (v^2 + 2 g p) / 2 kinetic,
  // so the energy error grows by at most g (1 + e^2) |v| h per bounce and
  // shrinks by e^2 with the bounce after it.
  double bound = 0.0;
  for (int i = 0; i < 2000; ++i) {
    p->step(i * h, h, in);
    if (p->events() != events) {
      events = p->events();
      seen.push_back((i + 1) * h);
      const double n = static_cast<double>(events);
      bound = e * e * bound + g * (1.0 + e * e) * std::pow(e, n - 1.0) * v1 * h;
      const double energy = 0.5 * p->state()[1] * p->state()[1] + g * p->state()[0];
      const double expected = g * std::pow(e, 2.0 * n);  // e^(2n) of the drop's g h0
      EXPECT_GE(energy, expected - 1e-9) << "bounce " << events;
      EXPECT_LE(energy, expected + bound) << "bounce " << events;
    }
  }
  ASSERT_EQ(seen.size(), 3u);  // t = 0.452, 1.174, 1.752 s before 2 s
  for (std::size_t k = 0; k < seen.size(); ++k) {
    // Each detection is at most one frame late, and each late detection
    // delays the bounces after it by at most one more frame.
    EXPECT_GE(seen[k], impacts[k] - 1e-9) << k;
    EXPECT_LE(seen[k], impacts[k] + 2.0 * static_cast<double>(k + 1) * h) << k;
  }
  EXPECT_FALSE(p->failed());
}

// stair2: x' = 1 from x = 0; at x = 1 its event takes two rounds (round 1
// resets x := x - 1 and reports the state change, round 2 steps the counter
// and reports none). The block must keep round 1's change: x(t) = t - k
// after the k-th step through an integer, and the counter k.
std::unique_ptr<Partition> stair_partition(BlockParams extra = {}) {
  BlockParams p{{"file", fmu("stair2")}};
  for (const auto& [k, v] : extra.all()) p.set(k, v);
  return build_partition(BlockRegistry::with_builtins(), "stair", {{"stair", "fmu", p, ""}}, {}, {},
                         IntegratorKind::kRk4);
}

TEST(Fmu, AStateChangeInAnEarlierEventRoundIsKept) {
  auto p = stair_partition();
  NoInputs in;
  const double h = 0.001;
  const auto x = p->find_output({"stair", "x"}), count = p->find_output({"stair", "count"});
  for (int i = 0; i < 2500; ++i) p->step(i * h, h, in);
  ASSERT_FALSE(p->failed()) << p->failure();
  // Two crossings (t = 1, 2), each located at the end of the frame that
  // holds it: the reset keeps the overshoot, so x is exact up to rounding.
  EXPECT_EQ(p->events(), 2u);
  EXPECT_NEAR(p->state()[0], 0.5, 1e-9);
  EXPECT_NEAR(p->output(x)[0], 0.5, 1e-9);
  EXPECT_EQ(p->output(count)[0], 2.0);
}

TEST(Fmu, IntegerStartValuesAreRoundedHalfAwayFromZeroAndBooleansAreNonzero) {
  NoInputs in;
  const double h = 0.001;
  // n0 is an Integer: 2.7 -> 3, 2.5 -> 3, -0.5 -> -1, -2.5 -> -3 (std::lround:
  // nearest, halves away from zero; docs/fmi.md "rounded"); truncation would
  // give 2, 2, 0, -2. `up` is a Boolean: every nonzero value is true.
  const struct {
    double n0, up, count_after_1_5_s, up_out;
  } cases[] = {{2.7, 1.0, 4.0, 1.0}, {2.5, 1.0, 4.0, 1.0}, {-0.5, 1.0, 0.0, 1.0}, {-2.5, -1.0, -2.0, 1.0},
               {2.7, 0.5, 4.0, 1.0}, {2.7, 0.0, 2.0, 0.0}, {-0.5, 0.0, -2.0, 0.0}};
  for (const auto& c : cases) {
    auto p = stair_partition({{"start.n0", c.n0}, {"start.up", c.up}});
    const auto count = p->find_output({"stair", "count"}), up = p->find_output({"stair", "up_out"});
    for (int i = 0; i < 1500; ++i) p->step(i * h, h, in);
    ASSERT_FALSE(p->failed()) << p->failure();
    EXPECT_EQ(p->output(count)[0], c.count_after_1_5_s) << "n0 " << c.n0 << " up " << c.up;
    EXPECT_EQ(p->output(up)[0], c.up_out) << "n0 " << c.n0 << " up " << c.up;
  }
}

TEST(Fmu, SteadyStateFramesAllocateNothing) {
  NoInputs in;
  for (const char* iface : {"model_exchange", "co_simulation"}) {
    for (const char* file : {"msd2", "msd3"}) {
      auto p = msd_partition(file, iface, IntegratorKind::kAb2);
      for (int i = 0; i < 10; ++i) p->step(i * 0.001, 0.001, in);
      testing::AllocationScope scope;
      for (int i = 10; i < 10010; ++i) p->step(i * 0.001, 0.001, in);
      EXPECT_EQ(scope.count(), 0u) << file << " " << iface;
    }
  }
  for (const char* file : {"bball2", "bball3"}) {
    auto ball = build_partition(BlockRegistry::with_builtins(), "ball", {{"ball", "fmu", {{"file", fmu(file)}}, ""}},
                                {}, {}, IntegratorKind::kRk4);
    testing::AllocationScope scope;
    for (int i = 0; i < 10000; ++i) ball->step(i * 0.001, 0.001, in);  // events included
    EXPECT_EQ(scope.count(), 0u) << file;
    EXPECT_GT(ball->events(), 3u) << file;
  }
}

// The typed ports (count3: Int8 ... UInt64, Float32, Boolean, Enumeration;
// count2: Integer, Boolean, Enumeration) and the time events every second,
// landed on inside a frame (rk4, frames of 7 ms) or stepped across by the
// FMU (co-simulation): 10^4 frames, 10 events, no allocation.
TEST(Fmu, SteadyStateFramesWithTypedPortsAndTimeEventsAllocateNothing) {
  NoInputs in;
  for (const char* file : {"count2", "count3"}) {
    for (const char* iface : {"model_exchange", "co_simulation"}) {
      std::vector<BlockSpec> blocks;
      std::vector<WireSpec> wires;
      std::vector<std::string> inputs{"inc", "enable"};
      if (std::string(file) == "count3") {
        for (const char* n : {"u8", "i16", "u16", "u32", "u64", "f32", "i64"}) inputs.emplace_back(n);
      }
      for (const auto& n : inputs) {
        blocks.push_back({"c_" + n, "constant", {{"value", 1.0}}, ""});
        wires.push_back({{"c_" + n, "y"}, {"m", n}});
      }
      blocks.push_back({"m", "fmu", {{"file", fmu(file)}, {"interface", iface}}, ""});
      auto p = build_partition(BlockRegistry::with_builtins(), "p", blocks, wires, {}, IntegratorKind::kRk4);
      for (int i = 0; i < 10; ++i) p->step(i * 0.007, 0.007, in);
      testing::AllocationScope scope;
      for (int i = 10; i < 10010; ++i) p->step(i * 0.007, 0.007, in);
      EXPECT_EQ(scope.count(), 0u) << file << " " << iface;
      EXPECT_FALSE(p->failed()) << p->failure();
      EXPECT_EQ(p->output(p->find_output({"m", "counter"}))[0], 70.0) << file << " " << iface;  // floor(70.07)
    }
  }
}

TEST(Fmu, AnFmuThatAllocatesPerStepIsDetected) {
  fmu::FmuOptions o;
  o.interface = fmu::FmuInterface::kCoSimulation;
  // Stepped in turn on one thread: each is charged its own requests only
  // (instantiation's allocateMemory is not a step's).
  fmu::FmuInstance leaky(fmu("msd2_alloc"), o);
  fmu::FmuInstance clean(fmu("msd2"), o);
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(leaky.do_step(i * 0.01, 0.01));
    ASSERT_TRUE(clean.do_step(i * 0.01, 0.01));
  }
  EXPECT_EQ(leaky.allocations(), 100u);  // one allocateMemory per doStep
  EXPECT_EQ(clean.allocations(), 0u);
  // Set-up and snapshots are not frames: not counted.
  ASSERT_TRUE(clean.reinitialize());
  (void)clean.serialize_state();
  EXPECT_EQ(clean.allocations(), 0u);
}

// x and v after each of `steps` doSteps of 10 ms with a varying force.
std::vector<double> continue_steps(fmu::FmuInstance& f, int from, int steps) {
  const auto& md = f.description();
  const std::uint32_t force = md.find("F")->value_reference;
  const std::uint32_t out[2] = {md.find("x")->value_reference, md.find("v")->value_reference};
  std::vector<double> xv;
  for (int i = from; i < from + steps; ++i) {
    const double F = std::sin(0.37 * i);
    double y[2];
    EXPECT_TRUE(f.set_real(&force, 1, &F) && f.do_step(i * 0.01, 0.01) && f.get_real(out, 2, y)) << f.failure();
    xv.insert(xv.end(), y, y + 2);
  }
  return xv;
}

TEST(Fmu, ARestoredSerializedStateContinuesBitIdentically) {
  fmu::FmuOptions o;
  o.interface = fmu::FmuInterface::kCoSimulation;
  for (const char* file : {"msd2", "msd3"}) {
    fmu::FmuInstance a(fmu(file), o);
    ASSERT_TRUE(a.can_serialize_state()) << file;
    (void)continue_steps(a, 0, 100);
    const std::vector<std::uint8_t> bytes = a.serialize_state();
    // A magic ("MSD2", "MSD3"), the FMU's 11 reals and the time.
    EXPECT_EQ(bytes.size(), 4u + 12u * 8u) << file;
    const auto ahead = continue_steps(a, 100, 200);
    // Rolled back in the same instance...
    a.deserialize_state(bytes);
    const auto again = continue_steps(a, 100, 200);
    ASSERT_EQ(again.size(), ahead.size());
    EXPECT_EQ(std::memcmp(again.data(), ahead.data(), ahead.size() * sizeof(double)), 0) << file;
    // ... and into a fresh instance, which would otherwise start from x0 = 1.
    fmu::FmuInstance b(fmu(file), o);
    const auto fresh = continue_steps(b, 100, 1);
    b.reinitialize();
    b.deserialize_state(bytes);
    const auto moved = continue_steps(b, 100, 200);
    EXPECT_EQ(std::memcmp(moved.data(), ahead.data(), ahead.size() * sizeof(double)), 0) << file;
    EXPECT_NE(fresh[0], ahead[0]) << file;
    EXPECT_FALSE(a.failed() || b.failed());
  }
}

TEST(Fmu, SerializationIsRefusedClearlyWhereTheFmuCannot) {
  fmu::FmuOptions o;
  o.instance_name = "ball";
  fmu::FmuInstance ball(fmu("bball2"), o);
  EXPECT_FALSE(ball.can_serialize_state());
  try {
    (void)ball.serialize_state();
    ADD_FAILURE() << "bball2 serialized";
  } catch (const fmu::FmuError& e) {
    EXPECT_EQ(std::string(e.what()), "FMU 'ball' (" + fmu("bball2") +
                                         "): cannot serialize its state: its <ModelExchange> does not declare "
                                         "canGetAndSetFMUstate=\"true\" — only an FMU that declares both can be "
                                         "snapshotted to bytes");
  }
  EXPECT_FALSE(ball.failed());  // nothing was asked of it
  // Bytes that are not a state of this FMU: the FMU's own reason, and the
  // instance takes no further calls.
  o.instance_name = "msd";
  o.interface = fmu::FmuInterface::kCoSimulation;
  fmu::FmuInstance msd(fmu("msd2"), o);
  const std::vector<std::uint8_t> junk(10, 0x41);
  try {
    msd.deserialize_state(junk);
    ADD_FAILURE() << "junk accepted";
  } catch (const fmu::FmuError& e) {
    EXPECT_EQ(std::string(e.what()), "FMU 'msd' (" + fmu("msd2") +
                                         "): fmi2DeSerializeFMUstate returned Error at t = 0 s: not a serialized msd2 "
                                         "state (10 bytes; expected 100 starting with MSD2)");
  }
  EXPECT_TRUE(msd.failed());
  EXPECT_THROW(msd.deserialize_state({}), fmu::FmuError);
}

TEST(Fmu, AFailingFunctionStopsThePartitionWithTheFmusMessage) {
  std::vector<std::string> log;
  auto p = msd_partition("msd2_fail", "model_exchange", IntegratorKind::kRk4);
  NoInputs in;
  int steps = 0;
  for (int i = 0; i < 100 && !p->failed(); ++i, ++steps) p->step(i * 0.01, 0.01, in);
  ASSERT_TRUE(p->failed());
  // The step from 0.49 evaluates at 0.495 and 0.5: GetDerivatives fails at 0.5.
  EXPECT_EQ(steps, 50);
  const std::string why = p->failure();
  EXPECT_NE(why.find("fmi2GetDerivatives returned Error at t = 0.5 s"), std::string::npos) << why;
  EXPECT_NE(why.find("the spring broke at t = 0.5 s"), std::string::npos) << why;
  const double t = p->time();
  p->step(t, 0.01, in);  // asks nothing more of the FMU
  EXPECT_EQ(p->time(), t);
}

TEST(Fmu, LoggerMessagesReachTheSinkThroughTheRing) {
  std::vector<std::string> lines;
  fmu::FmuOptions o;
  o.interface = fmu::FmuInterface::kCoSimulation;
  o.instance_name = "plant";
  o.log_sink = [&](const std::string& l) { lines.push_back(l); };
  {
    fmu::FmuInstance f(fmu("msd2_fail"), o);
    EXPECT_TRUE(f.do_step(0.0, 0.25));
    EXPECT_FALSE(f.do_step(0.25, 0.5));
    EXPECT_FALSE(f.do_step(0.75, 0.1));  // no further call once failed
    f.flush_log();
    EXPECT_NE(f.failure().find("fmi2DoStep returned Error at t = 0.25 s: the spring broke"), std::string::npos)
        << f.failure();
  }
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "fmu 'plant' [Error] logStatusError: the spring broke at t = 0.25 s");
}

std::string load_error(const std::string& path, fmu::FmuInterface i = fmu::FmuInterface::kModelExchange) {
  try {
    fmu::FmuOptions o;
    o.interface = i;
    fmu::FmuInstance f(path, o);
  } catch (const fmu::FmuError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Fmu, BrokenFmusGiveOneClearMessageEach) {
  EXPECT_EQ(load_error(fmu("msd2_no_binary")),
            fmu("msd2_no_binary") +
                ": no binaries/linux64/msd2.so for model_exchange — the FMU carries binaries for: "
                "no platform (a source-only FMU is not supported)");
  EXPECT_EQ(load_error(fmu("bad_xml")),
            fmu("bad_xml") + ": modelDescription.xml line 6: Start-end tags mismatch — expected well-formed XML");
  EXPECT_EQ(load_error(fmu("msd2_wrong_guid")),
            fmu("msd2_wrong_guid") +
                ": fmi2Instantiate returned no instance: GUID '{not-this-one}' does not match this "
                "binary's '{msd-2}' (the GUID in modelDescription.xml is '{not-this-one}')");
  EXPECT_EQ(load_error(fmu("bball2"), fmu::FmuInterface::kCoSimulation),
            fmu("bball2") + ": the FMU has no co_simulation interface — it offers model_exchange");
  EXPECT_NE(load_error("/nonexistent.fmu").find("/nonexistent.fmu: cannot open as an FMU (a zip archive)"),
            std::string::npos);
}

// A zip written entry by entry, for hostile archives.
class ZipWriter {
 public:
  explicit ZipWriter(const std::string& path) : path_(path) {
    int err = 0;
    z_ = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
  }
  void add(const std::string& name, const std::string& data) {
    keep_.push_back(data);
    zip_source_t* s = zip_source_buffer(z_, keep_.back().data(), keep_.back().size(), 0);
    const zip_int64_t i = zip_file_add(z_, name.c_str(), s, ZIP_FL_ENC_UTF_8);
    ASSERT_GE(i, 0) << zip_strerror(z_);
  }
  ~ZipWriter() {
    if (z_) zip_close(z_);
  }
  void close() {
    zip_close(z_);
    z_ = nullptr;
  }

 private:
  std::string path_;
  zip_t* z_ = nullptr;
  std::list<std::string> keep_;  // stable addresses: libzip reads them at close
};

TEST(Fmu, HostileArchivesAreRefusedWithoutWritingOutside) {
  const std::string dir = ::testing::TempDir() + "fmu_hostile";
  std::filesystem::create_directories(dir);
  const std::string victim = dir + "/victim";
  std::filesystem::remove(victim);
  struct Case {
    std::string name, entry;
    std::string expect;
  } cases[] = {
      {"climb", "../../../../../../" + victim.substr(1), "would be written outside the FMU's directory — refused"},
      {"dotdot", "resources/../../victim", "would be written outside the FMU's directory — refused"},
      {"absolute", victim, "would be written outside the FMU's directory — refused"},
      {"backslash", "..\\victim", "would be written outside the FMU's directory — refused"},
  };
  for (const auto& c : cases) {
    const std::string path = dir + "/" + c.name + ".fmu";
    {
      ZipWriter w(path);
      w.add("modelDescription.xml", "<fmiModelDescription/>");
      w.add(c.entry, "owned");
    }
    const std::string e = load_error(path);
    EXPECT_NE(e.find(c.expect), std::string::npos) << c.name << ": " << e;
    EXPECT_FALSE(std::filesystem::exists(victim)) << c.name;
  }
  EXPECT_EQ(load_error(fmu("symlink")), fmu("symlink") + ": entry 'resources/link' is a symbolic link — refused");
  // Too many entries.
  {
    const std::string path = dir + "/many.fmu";
    ZipWriter w(path);
    for (int i = 0; i < 10001; ++i) w.add("f" + std::to_string(i), "");
    w.close();
    EXPECT_NE(load_error(path).find("10001 entries — more than the 10000 an FMU may hold"), std::string::npos);
  }
  // Deep paths (1 990 levels cost 11 s for 10 entries when every
  // directory was made by full path) and long names are refused by their
  // count before anything is made; 32 levels, the limit, unpack.
  {
    std::string deep, limit;
    for (int i = 0; i < 1990; ++i) deep += "d/";
    for (int i = 0; i < 31; ++i) limit += "d/";
    const std::string path = dir + "/deep.fmu";
    {
      ZipWriter w(path);
      w.add("modelDescription.xml", "<fmiModelDescription/>");
      w.add(deep.substr(0, 80) + "f", "deep enough");
      w.add(deep + "f", "too deep");
    }
    const std::string e = load_error(path);
    EXPECT_NE(e.find("has 41 path components — more than the 32 allowed"), std::string::npos) << e;
    const std::string named = dir + "/named.fmu";
    {
      ZipWriter w(named);
      w.add("modelDescription.xml", "<fmiModelDescription/>");
      w.add("resources/" + std::string(300, 'n'), "a name part beyond NAME_MAX");
    }
    EXPECT_NE(load_error(named).find("has a name part longer than 255 bytes — refused"), std::string::npos)
        << load_error(named);
    // A file where a later entry needs a directory: refused by name, not
    // written through.
    const std::string clash = dir + "/clash.fmu";
    {
      ZipWriter w(clash);
      w.add("modelDescription.xml", "<fmiModelDescription/>");
      w.add("resources", "a file");
      w.add("resources/x", "under a file");
    }
    EXPECT_NE(load_error(clash).find("entry 'resources/x' needs 'resources' to be a directory — refused"),
              std::string::npos)
        << load_error(clash);
    fmu::ExtractedArchive ok_depth = [&] {
      const std::string p = dir + "/limit.zip";
      {
        ZipWriter w(p);
        w.add(limit + "f", "32 components");
      }
      return fmu::ExtractedArchive(p, fmu::ArchiveLimits{});
    }();
    EXPECT_EQ(ok_depth.files(), 1u);
  }
  // An entry larger than the limit (a small bound here, a bomb in earnest).
  {
    const std::string path = dir + "/big.fmu";
    {
      ZipWriter w(path);
      w.add("modelDescription.xml", std::string(1 << 20, ' '));
    }
    fmu::ArchiveLimits limits;
    limits.max_entry_bytes = 1000;
    try {
      fmu::ExtractedArchive a(path, limits);
      ADD_FAILURE() << "extracted";
    } catch (const fmu::FmuError& e) {
      EXPECT_NE(std::string(e.what()).find("is 1048576 bytes — more than the 1000 allowed per entry"),
                std::string::npos)
          << e.what();
    }
  }
}

// msd3 with one clocked variable added: the block refuses it before the
// run (its clocks would never tick), naming the variable and the file.
TEST(Fmu, AnFmuWithClocksIsRefusedAsABlock) {
  const std::string dir = ::testing::TempDir() + "fmu_clocked";
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/msd3_clocked.fmu";
  {
    fmu::ExtractedArchive original(fmu("msd3"));
    auto read = [](const std::string& file) {
      std::ifstream in(file, std::ios::binary);
      return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    };
    std::string xml = read(original.directory() + "/modelDescription.xml");
    const std::string anchor = "  </ModelVariables>";
    ASSERT_NE(xml.find(anchor), std::string::npos);
    xml.insert(xml.find(anchor),
               "    <Clock name=\"tick\" valueReference=\"20\" causality=\"input\" variability=\"discrete\" "
               "intervalVariability=\"constant\" intervalDecimal=\"0.01\"/>\n"
               "    <Float64 name=\"sampled\" valueReference=\"21\" causality=\"output\" variability=\"discrete\" "
               "clocks=\"20\"/>\n");
    ZipWriter w(path);
    w.add("modelDescription.xml", xml);
    w.add("binaries/x86_64-linux/msd3.so", read(original.directory() + "/binaries/x86_64-linux/msd3.so"));
  }
  try {
    (void)build_partition(BlockRegistry::with_builtins(), "plant",
                          {{"msd", "fmu", BlockParams{{"file", path}, {"interface", "model_exchange"}}, ""}}, {}, {},
                          IntegratorKind::kRk4);
    ADD_FAILURE() << "a clocked FMU was accepted";
  } catch (const BlockError& e) {
    EXPECT_EQ(std::string(e.what()), "block 'msd' (fmu): " + path +
                                         " declares the clock or clocked variable 'tick' — FMI 3.0 clocks are not "
                                         "supported (rtcosim cannot tick them); use an FMU without clocks");
  }
}

// count3 with its Int64 output 'big' declaring a max beyond 2^53: refused
// as a port at set-up, naming the variable and the attribute.
TEST(Fmu, A64BitPortDeclaringARangeBeyond2To53IsRefusedNamingIt) {
  const std::string dir = ::testing::TempDir() + "fmu_big";
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/count3_big.fmu";
  {
    fmu::ExtractedArchive original(fmu("count3"));
    auto read = [](const std::string& file) {
      std::ifstream in(file, std::ios::binary);
      return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    };
    std::string xml = read(original.directory() + "/modelDescription.xml");
    const std::string anchor = "<Int64 name=\"big\" valueReference=\"6\"";
    ASSERT_NE(xml.find(anchor), std::string::npos);
    xml.insert(xml.find(anchor) + anchor.size(), " max=\"9223372036854775807\"");
    ZipWriter w(path);
    w.add("modelDescription.xml", xml);
    w.add("binaries/x86_64-linux/count3.so", read(original.directory() + "/binaries/x86_64-linux/count3.so"));
  }
  try {
    (void)build_partition(BlockRegistry::with_builtins(), "p",
                          {{"m", "fmu", BlockParams{{"file", path}, {"interface", "co_simulation"}}, ""}}, {}, {},
                          IntegratorKind::kRk4);
    ADD_FAILURE() << "accepted";
  } catch (const BlockError& e) {
    EXPECT_EQ(std::string(e.what()), "block 'm' (fmu): " + path +
                                         ": the Int64 output 'big' declares max=\"9223372036854775807\", beyond 2^53 = "
                                         "9007199254740992 — a port carries doubles, which hold integers exactly only "
                                         "up to there");
  }
}

// Issue 44, point 7: the bound on the elements of all variables together
// (2^22) holds for sizes the block's start values give too: vec3 without
// its max on n, with start.n = 2^20, would size k, u, y, x and der(x) at
// 2^20 each. Refused before the binary is asked anything, naming the file,
// the variable that passes the bound, the total and the limit.
TEST(Fmu, AStructuralParameterCannotSizeTheVariablesBeyondTheTotalBound) {
  const std::string dir = ::testing::TempDir() + "fmu_total";
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/vec3_unbounded.fmu";
  {
    fmu::ExtractedArchive original(fmu("vec3"));
    auto read = [](const std::string& file) {
      std::ifstream in(file, std::ios::binary);
      return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    };
    std::string xml = read(original.directory() + "/modelDescription.xml");
    const std::string bounds = " min=\"1\" max=\"8\"";
    ASSERT_NE(xml.find(bounds), std::string::npos);
    xml.erase(xml.find(bounds), bounds.size());
    ZipWriter w(path);
    w.add("modelDescription.xml", xml);
    w.add("binaries/x86_64-linux/vec3.so", read(original.directory() + "/binaries/x86_64-linux/vec3.so"));
  }
  auto build = [&](double n) {
    return build_partition(
        BlockRegistry::with_builtins(), "p",
        {{"m", "fmu", BlockParams{{"file", path}, {"interface", "co_simulation"}, {"start.n", n}}, ""}}, {}, {},
        IntegratorKind::kRk4);
  };
  EXPECT_NO_THROW((void)build(5.0));  // within the binary's own 8
  try {
    (void)build(1048576.0);
    ADD_FAILURE() << "accepted";
  } catch (const BlockError& e) {
    EXPECT_EQ(std::string(e.what()), "block 'm' (fmu): " + path +
                                         ": variable 'x' (Float64[n=1048576]) brings the elements of the FMU's "
                                         "variables to 4194306 in all — more than the 4194304 (2^22) an FMU may "
                                         "declare — refused");
  }
}

TEST(Fmu, ExtractionDirectoryIsPrivateAndRemoved) {
  std::string where;
  {
    fmu::ExtractedArchive a(fmu("msd2"));
    where = a.directory();
    struct stat st;
    ASSERT_EQ(::stat(where.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
    EXPECT_TRUE(std::filesystem::exists(where + "/binaries/linux64/msd2.so"));
    EXPECT_EQ(a.files(), 2u);
  }
  EXPECT_FALSE(std::filesystem::exists(where));
}

TEST(Fmu, ModelDescriptionMapsStatesDerivativesAndDependencies) {
  const auto info = fmu::inspect(fmu("msd2"));
  const auto& md = info.description;
  EXPECT_EQ(md.fmi_major, 2);
  ASSERT_EQ(md.states.size(), 2u);
  EXPECT_EQ(md.variables[md.states[0]].name, "x");
  EXPECT_EQ(md.variables[md.states[1]].name, "v");
  ASSERT_EQ(md.outputs.size(), 3u);
  ASSERT_TRUE(md.output_dependencies[2].has_value());
  EXPECT_EQ(md.variables[md.output_dependencies[2]->at(2)].name, "F");
  EXPECT_TRUE(md.co_simulation.can_handle_variable_step);
  EXPECT_EQ(md.co_simulation.max_output_derivative_order, 1);
  const auto info3 = fmu::inspect(fmu("msd3"));
  EXPECT_EQ(info3.description.fmi_major, 3);
  EXPECT_EQ(info3.description.token, "{msd-3}");
  EXPECT_EQ(info3.platforms, std::vector<std::string>{"x86_64-linux"});
  EXPECT_EQ(info3.description.variables[info3.description.states[1]].name, "v");
}

}  // namespace
}  // namespace rtcosim::tasks
