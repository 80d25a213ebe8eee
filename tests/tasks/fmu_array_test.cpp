// Issue 28, point 3: FMI 3.0 arrays as vector ports, sized by their
// <Dimension>s and a structural parameter, `start` taking a list, and FMI
// 3.0 co-simulation output derivatives. The test FMU vec3
// (tests/fmus/vec3.c): n (UInt64 structural parameter, start 3, 1 ... 8)
// sizes k, u, y = k u and the states x (x' = u, x(0) = 0); s = sin(w t);
// Int32 arrays i, j = 2 i of two elements. Its getters and setters refuse
// an nValues that is not the elements of their variables.
#include <cmath>
#include <string>

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

const char* const kInterfaces[] = {"model_exchange", "co_simulation"};

// vec3 as block 'm': u from a constant of width n, i from [-7, 123456];
// y into a vector gain of 2 ('g'), x into a demux ('d', one port per element).
std::unique_ptr<Partition> vec(const std::string& iface, const Vector& u, BlockParams extra = {}) {
  std::vector<BlockSpec> blocks{{"cu", "constant", {{"value", u}}, ""},
                                {"ci", "constant", {{"value", Vector{-7.0, 123456.0}}}, ""},
                                {"g", "gain", {{"gain", 2.0}, {"width", static_cast<double>(u.size())}}, ""},
                                {"d", "demux", {{"widths", Vector(u.size(), 1.0)}}, ""}};
  BlockParams p{{"file", fmu("vec3")}, {"interface", iface}};
  for (const auto& [k, v] : extra.all()) p.set(k, v);
  blocks.push_back({"m", "fmu", p, ""});
  std::vector<WireSpec> wires{
      {{"cu", "y"}, {"m", "u"}}, {{"ci", "y"}, {"m", "i"}}, {{"m", "y"}, {"g", "u"}}, {{"m", "x"}, {"d", "u"}}};
  return build_partition(BlockRegistry::with_builtins(), "p", blocks, wires, {}, IntegratorKind::kRk4);
}

std::string refusal(const std::string& iface, const Vector& u, const BlockParams& extra) {
  try {
    (void)vec(iface, u, extra);
  } catch (const BlockError& e) {
    return e.what();
  }
  return "accepted";
}

// Ports as wide as the arrays; y = k u and j = 2 i exact through
// fmi3Set/GetFloat64 and fmi3Set/GetInt32 with nValues = the elements; the
// vector gain and the demux downstream see every element; x = u t (model
// exchange: the states of an array, integrated by rk4; co-simulation: the
// FMU's own step), its derivative known (a state, or the FMU's output
// derivative).
TEST(FmuArrays, ArrayPortsCarryEveryElementThroughTheTypedArrayCalls) {
  const Vector u{1.5, -2.0, 0.25};
  for (const char* iface : kInterfaces) {
    auto p = vec(iface, u);
    NoInputs in;
    const auto y = p->find_output({"m", "y"}), x = p->find_output({"m", "x"}), j = p->find_output({"m", "j"});
    const auto g = p->find_output({"g", "y"});
    ASSERT_EQ(p->output(y).size(), 3u);
    ASSERT_EQ(p->output(x).size(), 3u);
    ASSERT_EQ(p->output(j).size(), 2u);
    ASSERT_EQ(p->output(p->find_output({"m", "s"})).size(), 1u);
    const double h = 0.01;
    for (int k = 0; k < 100; ++k) {
      p->step(k * h, h, in);
      ASSERT_FALSE(p->failed()) << p->failure();
      const double t = p->time();
      for (std::size_t e = 0; e < 3; ++e) {
        const double ke = static_cast<double>(e) + 1.0;  // k[e] = e + 1
        ASSERT_EQ(p->output(y)[e], ke * u[e]) << iface << " t " << t << " e " << e;
        ASSERT_EQ(p->output(g)[e], 2.0 * ke * u[e]) << iface << " e " << e;
        ASSERT_NEAR(p->output(x)[e], u[e] * t, 1e-12) << iface << " t " << t << " e " << e;
        ASSERT_NEAR(p->output(p->find_output({"d", "y" + std::to_string(e + 1)}))[0], u[e] * t, 1e-12);
        ASSERT_TRUE(p->output_derivative_valid(x, e)) << iface;
        ASSERT_EQ(p->output_derivative(x)[e], u[e]) << iface;
      }
      ASSERT_EQ(p->output(j)[0], -14.0);
      ASSERT_EQ(p->output(j)[1], 246912.0);
      ASSERT_TRUE(p->output_derivative_valid(j, 1));  // discrete: known, zero
      ASSERT_EQ(p->output_derivative(j)[1], 0.0);
    }
  }
}

// The arrays are set and read with nValues = their elements: with
// nValues = nValueReferences the FMU refuses (it checks), so the block's
// calls above are the array calls.
TEST(FmuArrays, TheArrayCallsPassTheElementsAsNValues) {
  fmu::FmuOptions o;
  o.interface = fmu::FmuInterface::kCoSimulation;
  fmu::FmuInstance f(fmu("vec3"), o);
  const auto& md = f.description();
  const std::uint32_t vr[] = {md.find("u")->value_reference, md.find("y")->value_reference};
  std::uint64_t scratch[8] = {};
  const double u[] = {1.0, 2.0, 3.0};
  double y[3] = {};
  ASSERT_TRUE(f.set_values(fmu::VarType::kReal, &vr[0], 1, u, 3, scratch)) << f.failure();
  ASSERT_TRUE(f.get_values(fmu::VarType::kReal, &vr[1], 1, y, 3, scratch)) << f.failure();
  EXPECT_EQ(y[0], 1.0);
  EXPECT_EQ(y[1], 4.0);
  EXPECT_EQ(y[2], 9.0);
  EXPECT_EQ(f.size_of(static_cast<std::size_t>(md.find("u") - md.variables.data())), 3u);
  EXPECT_FALSE(f.get_values(fmu::VarType::kReal, &vr[1], 1, y, 1, scratch));
  EXPECT_NE(f.failure().find("fmi3GetFloat64 returned Error at t = 0 s: fmi3GetFloat64: nValues = 1, but the "
                             "variables hold 3 values"),
            std::string::npos)
      << f.failure();
}

// start.n = 5 (Configuration Mode, before initialisation) makes every array
// sized by n five wide: ports, states, the start list of k.
TEST(FmuArrays, AStructuralParameterFromTheStartValuesSizesTheArrays) {
  const Vector u{1.0, 2.0, 3.0, 4.0, 5.0};
  for (const char* iface : kInterfaces) {
    auto p = vec(iface, u, {{"start.n", 5.0}, {"start.k", Vector{0.5, 1.0, 1.5, 2.0, 2.5}}});
    NoInputs in;
    const auto y = p->find_output({"m", "y"}), x = p->find_output({"m", "x"});
    ASSERT_EQ(p->output(y).size(), 5u);
    ASSERT_EQ(p->output(x).size(), 5u);
    if (std::string(iface) == "model_exchange") {
      EXPECT_EQ(p->state_size(), 5u);
    }
    for (int k = 0; k < 10; ++k) p->step(k * 0.1, 0.1, in);
    ASSERT_FALSE(p->failed()) << p->failure();
    for (std::size_t e = 0; e < 5; ++e) {
      EXPECT_EQ(p->output(y)[e], 0.5 * (static_cast<double>(e) + 1.0) * u[e]) << iface << " " << e;
      EXPECT_NEAR(p->output(x)[e], u[e], 1e-12) << iface << " " << e;
    }
    // A second run (fmi3Reset: n back to 3 in the FMU) configures n = 5 again.
    p->reset(0.0);
    for (int k = 0; k < 10; ++k) p->step(k * 0.1, 0.1, in);
    ASSERT_FALSE(p->failed()) << p->failure();
    EXPECT_EQ(p->output(y)[4], 0.5 * 5.0 * u[4]) << iface;
    EXPECT_NEAR(p->output(x)[4], u[4], 1e-12) << iface;
  }
  // Beyond the declared min/max, not an integer, a list: refused, naming it.
  EXPECT_EQ(refusal("co_simulation", u, {{"start.n", 9.0}}),
            "block 'm' (fmu): 'n' is a structural parameter (UInt64, it sizes arrays) and declares max=\"8\" — got 9");
  EXPECT_EQ(refusal("co_simulation", u, {{"start.n", 0.0}}),
            "block 'm' (fmu): 'n' is a structural parameter (UInt64, it sizes arrays) and declares min=\"1\" — got 0");
  EXPECT_EQ(refusal("co_simulation", u, {{"start.n", 2.5}}),
            "block 'm' (fmu): 'n' is a structural parameter (UInt64, it sizes arrays) and takes one non-negative "
            "integer — got 2.5");
  EXPECT_EQ(refusal("co_simulation", u, {{"start.n", Vector{2.0, 3.0}}}),
            "block 'm' (fmu): 'n' is a structural parameter (UInt64, it sizes arrays) and takes one non-negative "
            "integer — got [2, 3]");
}

// A list sets an array's elements; one number sets every element (as a
// single start value in modelDescription.xml does).
TEST(FmuArrays, AListStartSetsAnArrayAndOneNumberEveryElement) {
  const Vector u{1.0, -1.0, 4.0};
  for (const char* iface : kInterfaces) {
    auto listed = vec(iface, u, {{"start.k", Vector{0.5, -2.0, 4.0}}});
    auto one = vec(iface, u, {{"start.k", 3.0}});
    NoInputs in;
    listed->step(0.0, 0.01, in);
    one->step(0.0, 0.01, in);
    ASSERT_FALSE(listed->failed()) << listed->failure();
    const auto y1 = listed->output(listed->find_output({"m", "y"}));
    const auto y2 = one->output(one->find_output({"m", "y"}));
    EXPECT_EQ(std::vector<double>(y1.begin(), y1.end()), (std::vector<double>{0.5, 2.0, 16.0})) << iface;
    EXPECT_EQ(std::vector<double>(y2.begin(), y2.end()), (std::vector<double>{3.0, -3.0, 12.0})) << iface;
  }
}

TEST(FmuArrays, AStartListOfTheWrongLengthIsRefusedNamingTheVariableAndBothLengths) {
  EXPECT_EQ(refusal("co_simulation", {1, 2, 3}, {{"start.k", Vector{1.0, 2.0}}}),
            "block 'm' (fmu): 'start.k' has 2 values, but 'k' is a Float64 array of 3 elements (k[n=3]) — give 3 "
            "values, or one for every element");
  // The length follows the structural parameter.
  EXPECT_EQ(refusal("co_simulation", {1, 2, 3, 4}, {{"start.n", 4.0}, {"start.k", Vector{1.0, 2.0, 3.0}}}),
            "block 'm' (fmu): 'start.k' has 3 values, but 'k' is a Float64 array of 4 elements (k[n=4]) — give 4 "
            "values, or one for every element");
  EXPECT_EQ(refusal("co_simulation", {1, 2, 3}, {{"start.w", Vector{1.0, 2.0}}}),
            "block 'm' (fmu): 'start.w' is a list of 2 values, but 'w' is a scalar Float64 — give one number");
}

// FMI 3.0 co-simulation output derivatives (maxOutputDerivativeOrder 1,
// fmi3GetOutputDerivatives with nValues = the elements): s = sin(w t) has
// w cos(w t) at every step's end and at the start; x has u (the input of
// the step).
TEST(FmuArrays, CoSimulationOutputDerivativesEqualTheAnalyticOnes) {
  const Vector u{1.0, 2.0, -3.0};
  for (const double w : {2.0, 3.0}) {
    auto p = vec("co_simulation", u, {{"start.w", w}});
    NoInputs in;
    const auto s = p->find_output({"m", "s"}), x = p->find_output({"m", "x"}), y = p->find_output({"m", "y"});
    const double h = 0.01;
    for (int k = 0; k < 200; ++k) {
      if (k == 0) {
        p->refresh_outputs(in);  // the outputs at the start, before any doStep
      } else {
        p->step((k - 1) * h, h, in);
      }
      ASSERT_FALSE(p->failed()) << p->failure();
      const double t = k * h;
      ASSERT_TRUE(p->output_derivative_valid(s, 0)) << "t " << t;
      EXPECT_NEAR(p->output(s)[0], std::sin(w * t), 1e-15) << "t " << t;
      EXPECT_NEAR(p->output_derivative(s)[0], w * std::cos(w * t), 1e-14) << "t " << t;
      for (std::size_t e = 0; e < 3; ++e) {
        ASSERT_TRUE(p->output_derivative_valid(x, e));
        // At the start the FMU has its inputs' start values (0): they are set before each doStep.
        EXPECT_EQ(p->output_derivative(x)[e], k == 0 ? 0.0 : u[e]) << "t " << t;
        ASSERT_TRUE(p->output_derivative_valid(y, e));
        EXPECT_EQ(p->output_derivative(y)[e], 0.0);  // the input held over the step
      }
    }
  }
}

// 10^4 steady frames with array ports (model exchange with array states,
// co-simulation with output derivatives) allocate nothing.
TEST(FmuArrays, SteadyFramesWithArraysAllocateNothing) {
  NoInputs in;
  for (const char* iface : kInterfaces) {
    auto p = vec(iface, {1.0, 2.0, 3.0, 4.0, 5.0, 6.0}, {{"start.n", 6.0}, {"start.k", 0.5}});
    for (int i = 0; i < 10; ++i) p->step(i * 0.001, 0.001, in);
    testing::AllocationScope scope;
    for (int i = 10; i < 10010; ++i) p->step(i * 0.001, 0.001, in);
    EXPECT_EQ(scope.count(), 0u) << iface;
    ASSERT_FALSE(p->failed()) << p->failure();
    EXPECT_NEAR(p->output(p->find_output({"m", "x"}))[5], 6.0 * 10.01, 1e-9) << iface;
  }
}

// Issue 44, point 7: each array was bounded (2^20 elements), their sum was
// not: 200 outputs of 2^20 elements made `rtcosim check` take 4.9 GB in
// 20.6 s. The elements of all variables together (a scalar counts one) are
// bounded at 2^22 = 4194304 when the description is read, before anything
// is sized; the refusal names the file, the variable that passes the
// bound, the total and the limit.
std::string big_description(const std::string& variables) {
  return R"(<?xml version="1.0" encoding="UTF-8"?>
<fmiModelDescription fmiVersion="3.0" modelName="big" instantiationToken="{big}">
  <CoSimulation modelIdentifier="big"/>
  <ModelVariables>
    <Float64 name="time" valueReference="0" causality="independent" variability="continuous"/>
)" + variables +
         R"(  </ModelVariables>
  <ModelStructure/>
</fmiModelDescription>
)";
}

// `count` Float64 outputs y0, y1, ... of `size` elements each (a number, or
// `<Dimension valueReference>` when `size` starts with "vr=").
std::string array_outputs(int count, const std::string& size, int first_vr = 10) {
  std::string out;
  const std::string dim =
      size.rfind("vr=", 0) == 0 ? "valueReference=\"" + size.substr(3) + "\"" : "start=\"" + size + "\"";
  for (int i = 0; i < count; ++i) {
    out += "    <Float64 name=\"y" + std::to_string(i) + "\" valueReference=\"" + std::to_string(first_vr + i) +
           "\" causality=\"output\" variability=\"continuous\"><Dimension " + dim + "/></Float64>\n";
  }
  return out;
}

std::string parse_error(const std::string& xml) {
  try {
    (void)fmu::parse_model_description(xml, "big.fmu");
  } catch (const fmu::FmuError& e) {
    return e.what();
  }
  return "accepted";
}

TEST(FmuArrays, TheElementsOfAllVariablesTogetherAreBoundedWhenTheDescriptionIsRead) {
  // The review's FMU: 200 outputs of 2^20. time (1) + 4 x 2^20 passes at y3.
  EXPECT_EQ(parse_error(big_description(array_outputs(200, "1048576"))),
            "big.fmu: variable 'y3' (Float64[1048576]) brings the elements of the FMU's variables to 4194305 in all "
            "— more than the 4194304 (2^22) an FMU may declare — refused");
  // Exactly 2^22 is accepted: time, three arrays of 2^20, one of 2^20 - 1.
  const std::string full = array_outputs(3, "1048576") +
                           "    <Float64 name=\"last\" valueReference=\"20\" causality=\"output\" "
                           "variability=\"continuous\"><Dimension start=\"1048575\"/></Float64>\n";
  EXPECT_EQ(parse_error(big_description(full)), "accepted");
  // One scalar more passes it, and is named.
  EXPECT_EQ(parse_error(big_description(full + "    <Float64 name=\"s\" valueReference=\"21\" causality=\"output\" "
                                               "variability=\"continuous\"/>\n")),
            "big.fmu: variable 's' (Float64) brings the elements of the FMU's variables to 4194305 in all — more "
            "than the 4194304 (2^22) an FMU may declare — refused");
  // Sizes from a structural parameter's declared start count the same.
  const std::string n =
      "    <UInt64 name=\"n\" valueReference=\"1\" causality=\"structuralParameter\" variability=\"fixed\" "
      "start=\"1048576\"/>\n";
  EXPECT_EQ(parse_error(big_description(n + array_outputs(5, "vr=1"))),
            "big.fmu: variable 'y3' (Float64[n=1048576]) brings the elements of the FMU's variables to 4194306 in "
            "all — more than the 4194304 (2^22) an FMU may declare — refused");
  // Dimensions whose product leaves 64 bits are refused too, not wrapped.
  EXPECT_EQ(parse_error(big_description(
                "    <Float64 name=\"m\" valueReference=\"5\" causality=\"output\" variability=\"continuous\">"
                "<Dimension start=\"4294967296\"/><Dimension start=\"4294967296\"/></Float64>\n")),
            "big.fmu: variable 'm' (Float64[4294967296][4294967296]) brings the elements of the FMU's variables to "
            "more than 18446744073709551615 in all — more than the 4194304 (2^22) an FMU may declare — refused");
  // A size that only the block's start values give is counted when they are
  // (FmuInstance, tests/tasks/fmu_test.cpp): here it is not known yet.
  EXPECT_EQ(
      parse_error(big_description(
          "    <UInt64 name=\"n\" valueReference=\"1\" causality=\"structuralParameter\" variability=\"fixed\"/>\n" +
          array_outputs(200, "vr=1"))),
      "accepted");
}

}  // namespace
}  // namespace rtcosim::tasks
