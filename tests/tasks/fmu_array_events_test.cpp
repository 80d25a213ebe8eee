// A discrete array output whose only change is in an element after the
// first (issue 45, item 8): the step after which it changed is an event of
// the block and a jump of its outputs (Block::branch), exactly as a change
// in element 0 is. The test FMU vec3 (tests/fmus/vec3.c) echoes its Int32
// array input i as j = 2 i; i comes from an external input whose elements
// change one at a time at chosen instants, so j's changes are known
// beforehand: in co-simulation the FMU takes i at each step's start, so
// frame k (from t_k to t_k + h) ends with j = 2 i(t_k) and jumps exactly
// when i(t_k) != i(t_(k-1)). In model exchange a changed discrete input is
// set in Event Mode: one event per change, counted by Partition::events.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tasks/diagram.hpp"

namespace rtcosim::tasks {
namespace {

std::string fmu(const std::string& name) { return std::string(RTCOSIM_FMU_DIR) + "/" + name + ".fmu"; }

constexpr double kH = 0.01;

// i(t): [-7, 3] until 0.305 s, then element 1 alone changes: [-7, 5];
// at 0.605 s element 1 again: [-7, 4]; at 0.805 s element 0 alone: [9, 4];
// at 1.005 s element 1 alone: [9, -4].
std::vector<double> i_at(double t) {
  if (t < 0.305) return {-7.0, 3.0};
  if (t < 0.605) return {-7.0, 5.0};
  if (t < 0.805) return {-7.0, 4.0};
  if (t < 1.005) return {9.0, 4.0};
  return {9.0, -4.0};
}

struct Inputs final : InputSource {
  void sample(std::size_t, double t, std::span<double> out) noexcept override {
    const auto v = i_at(t);
    out[0] = v[0];
    out[1] = v[1];
  }
};

std::unique_ptr<Partition> vec3(const std::string& iface) {
  std::vector<BlockSpec> blocks{{"cu", "constant", {{"value", Vector{1.0, 2.0, 3.0}}}, ""},
                                {"m", "fmu", {{"file", fmu("vec3")}, {"interface", iface}}, ""}};
  std::vector<WireSpec> wires{{{"cu", "y"}, {"m", "u"}}};
  std::vector<ExternalInputSpec> externals{{"i", 2, {{"m", "i"}}}};
  return build_partition(BlockRegistry::with_builtins(), "p", blocks, wires, externals, IntegratorKind::kRk4);
}

TEST(FmuArrayEvents, ACoSimulationArrayOutputChangingOnlyAfterItsFirstElementJumps) {
  auto p = vec3("co_simulation");
  Inputs in;
  const auto j = p->find_output({"m", "j"}), s = p->find_output({"m", "s"});
  EXPECT_TRUE(p->output_may_jump(j));
  int jumps = 0;
  for (int k = 0; k < 120; ++k) {
    const double t = k * kH;
    p->step(t, kH, in);
    ASSERT_FALSE(p->failed()) << p->failure();
    const auto taken = i_at(t);
    ASSERT_EQ(p->output(j)[0], 2.0 * taken[0]) << "t " << t;
    ASSERT_EQ(p->output(j)[1], 2.0 * taken[1]) << "t " << t;
    const bool changed = k > 0 && i_at(t) != i_at(t - kH);
    EXPECT_EQ(p->output_jumped(j), changed) << "frame from t = " << t;
    EXPECT_EQ(p->output_jumped(s), changed) << "frame from t = " << t;  // every output of the block
    jumps += p->output_jumped(j) ? 1 : 0;
  }
  EXPECT_EQ(jumps, 4);  // three changes in element 1, one in element 0
}

TEST(FmuArrayEvents, AModelExchangeArrayInputChangingOnlyAfterItsFirstElementIsAnEvent) {
  auto p = vec3("model_exchange");
  Inputs in;
  const auto j = p->find_output({"m", "j"});
  // The first frame sets i from its start value (0, 0) to (-7, 3): that
  // change is an event of its own; the four changes after it are counted
  // from there.
  p->step(0.0, kH, in);
  ASSERT_FALSE(p->failed()) << p->failure();
  std::vector<double> previous_j(p->output(j).begin(), p->output(j).end());
  ASSERT_EQ(previous_j, (std::vector<double>{-14.0, 6.0}));
  const std::uint64_t first = p->events();
  int jumps = 0;
  for (int k = 1; k < 120; ++k) {
    const double t = k * kH;
    const std::uint64_t before = p->events();
    p->step(t, kH, in);
    ASSERT_FALSE(p->failed()) << p->failure();
    const std::vector<double> now(p->output(j).begin(), p->output(j).end());
    // Whenever j changed, the frame holds one event and a jump; j is 2 i of
    // an instant inside the frame.
    const bool changed = now != previous_j;
    EXPECT_EQ(p->events() - before, changed ? 1u : 0u) << "frame from t = " << t;
    EXPECT_EQ(p->output_jumped(j), changed) << "frame from t = " << t;
    const auto a = i_at(t), b = i_at(t + kH);
    EXPECT_TRUE((now[0] == 2.0 * a[0] && now[1] == 2.0 * a[1]) || (now[0] == 2.0 * b[0] && now[1] == 2.0 * b[1]))
        << "t " << t << ": j = " << now[0] << ", " << now[1];
    jumps += changed ? 1 : 0;
    previous_j = now;
  }
  EXPECT_EQ(jumps, 4);  // three changes in element 1, one in element 0
  EXPECT_EQ(p->events() - first, 4u);
  EXPECT_EQ(previous_j, (std::vector<double>{18.0, -8.0}));
}

}  // namespace
}  // namespace rtcosim::tasks
