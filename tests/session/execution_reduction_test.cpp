// The thesis's execution reduction (Zipper, section 4.4; docs/sync.md):
// the four co-simulations of its figure 4.4, synchronised with T_P = T_D,
// must cost per optimiser evaluation exactly what its table 4.2 gives
// without reduction (T_P K: 9, 15, 2, 9) and with Ansatz 1 (eq. 4.5) and
// Ansatz 2 combined (eq. 4.13: one execution per component on a shortest
// path from u to y, none for the others: 3, 5, 1, 3), and give the same
// bits either way.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "session/sync/state_sync.hpp"
#include "tasks/block_registry.hpp"

namespace rtcosim::session::sync {

using namespace rtcosim::tasks;  // the partitions and blocks the optimiser drives
namespace {

const BlockRegistry& registry() {
  static const auto r = BlockRegistry::with_builtins();
  return r;
}

// A component of the figure: x' = (sum of its inputs) + u (when it holds u)
// or + 1 (a source), output x. Every output is a state, so that an input
// reaches the output one macro step later (the thesis's components have no
// feed-through, eq. 3.2).
std::unique_ptr<Partition> component(const std::string& name, std::size_t inputs, bool holds_u) {
  std::vector<std::unique_ptr<Block>> blocks;
  std::vector<WireSpec> wires;
  std::string signs(inputs + 1, '+');
  blocks.push_back(registry().create("constant", "u", {{"value", Vector{holds_u ? 0.0 : 1.0}}}));
  blocks.push_back(registry().create("sum", "in", {{"signs", signs}}));
  blocks.push_back(registry().create("integrator", "x", {}));
  wires.push_back({{"u", "y"}, {"in", "u" + std::to_string(inputs + 1)}});
  wires.push_back({{"in", "y"}, {"x", "u"}});
  std::vector<ExternalInputSpec> externals;
  for (std::size_t i = 0; i < inputs; ++i)
    externals.push_back({"in" + std::to_string(i + 1), 1, {{"in", "u" + std::to_string(i + 1)}}});
  return std::make_unique<Partition>(name, std::move(blocks), wires, externals, IntegratorKind::kRk4);
}

// One of figure 4.4's co-simulations: components by name, edges source ->
// consumer (each edge one input of the consumer, in order), u in k_input,
// y from k_output.
struct Figure {
  std::vector<std::string> names;
  std::vector<std::pair<std::size_t, std::size_t>> edges;
  std::size_t input = 0, output = 0;
  int horizon = 1;                              // T_P = T_D
  std::uint32_t full = 0, reduced = 0;          // table 4.2
  std::vector<std::size_t> also_compared = {};  // more compared outputs, against y^ = 0.5 t
};

struct Outcome {
  std::vector<double> y, u, objective;
  std::vector<std::vector<std::uint32_t>> executions;  // per macro step, per candidate
  int distance = 0;
  std::vector<int> gamma;
};

// At T_P = `horizon` (the figure's T_D when 0).
Outcome synchronise(const Figure& f, bool reduce, int horizon = 0) {
  std::vector<std::unique_ptr<Partition>> parts;
  std::vector<Component> components;
  for (std::size_t c = 0; c < f.names.size(); ++c) {
    const auto in = static_cast<std::size_t>(
        std::count_if(f.edges.begin(), f.edges.end(), [&](const auto& e) { return e.second == c; }));
    parts.push_back(component(f.names[c], in, c == f.input));
    components.push_back({parts.back().get(), {}});
  }
  for (const auto& [from, to] : f.edges) {
    components[to].inputs.push_back({InputFeed::Kind::kComponent, from, parts[from]->find_output({"x", "y"}), 0.0});
  }
  // The measurement: y^ = 0.3 t^2, which no component follows unless u moves.
  Measurements m;
  m.columns.resize(2);
  for (int k = 0; k <= 40; ++k) {
    m.columns[0].push_back(0.3 * (k * 0.1) * (k * 0.1));
    m.columns[1].push_back(0.5 * (k * 0.1));
  }
  SyncSettings s;
  s.step = 0.1;
  s.horizon = horizon > 0 ? horizon : f.horizon;
  s.max_evaluations = 12;
  s.reduce = reduce;
  std::vector<ComparedPair> compared{{f.output, parts[f.output]->find_output({"x", "y"}), 0, 1.0}};
  for (auto c : f.also_compared) compared.push_back({c, parts[c]->find_output({"x", "y"}), 1, 1.0});
  StateSync sync(components, {{f.input, 0, 0, -10.0, 10.0, 0.0}}, compared, m, s);
  Outcome o;
  o.distance = sync.distance();
  o.gamma = sync.gamma();
  for (int k = 0; k < 6; ++k) {
    const auto fig = sync.synchronise();
    o.executions.push_back(fig.executions);
    for (std::size_t q = 0; q < compared.size(); ++q) o.y.push_back(sync.output(q));
    o.u.push_back(sync.u()[0]);
    o.objective.push_back(fig.objective_after);
  }
  return o;
}

void expect_table_4_2(const Figure& f, const std::vector<int>& gamma) {
  const auto full = synchronise(f, false);
  const auto reduced = synchronise(f, true);
  EXPECT_EQ(reduced.distance, f.horizon);
  EXPECT_EQ(reduced.gamma, gamma);
  EXPECT_EQ(full.y, reduced.y);  // bit for bit
  EXPECT_EQ(full.u, reduced.u);
  EXPECT_EQ(full.objective, reduced.objective);
  ASSERT_EQ(full.executions.size(), reduced.executions.size());
  for (std::size_t k = 0; k < full.executions.size(); ++k) {
    ASSERT_EQ(full.executions[k].size(), reduced.executions[k].size()) << "macro step " << k;
    ASSERT_GE(reduced.executions[k].size(), 2u) << "macro step " << k;
    for (auto e : full.executions[k]) EXPECT_EQ(e, f.full) << "macro step " << k;
    // The optimiser starts at the current u, which the pass before the
    // optimisation ran already: every execution of that candidate is
    // reused. Every later candidate moves u.
    EXPECT_EQ(reduced.executions[k][0], 0u) << "macro step " << k;
    for (std::size_t e = 1; e < reduced.executions[k].size(); ++e)
      EXPECT_EQ(reduced.executions[k][e], f.reduced) << "macro step " << k << ", candidate " << e;
  }
}

// (a) k_input -> k1 -> k_output, T_D = T_P = 3: 9 -> 3 (Gamma 1, 2, 3).
TEST(ExecutionReduction, SequentialComponentsNineToThree) {
  expect_table_4_2({{"k_input", "k1", "k_output"}, {{0, 1}, {1, 2}}, 0, 2, 3, 9, 3}, {1, 2, 3});
}

// (b) three parallel paths k_input -> k1|k2|k3 -> k_output: 15 -> 5.
TEST(ExecutionReduction, ParallelComponentsFifteenToFive) {
  expect_table_4_2(
      {{"k_input", "k1", "k2", "k3", "k_output"}, {{0, 1}, {0, 2}, {0, 3}, {1, 4}, {2, 4}, {3, 4}}, 0, 4, 3, 15, 5},
      {1, 2, 2, 2, 3});
}

// (c) k1 -> k_input = k_output, T_D = T_P = 1: k1 is not influenced by u, 2 -> 1.
TEST(ExecutionReduction, AComponentUNeverReachesRunsOnceTwoToOne) {
  expect_table_4_2({{"k_input", "k1"}, {{1, 0}}, 0, 0, 1, 2, 1}, {1, 0});
}

// (d) the chain of (a) closed by k_output -> k_input: 9 -> 3, as (a).
TEST(ExecutionReduction, ACycleCostsWhatTheChainDoesNineToThree) {
  expect_table_4_2({{"k_input", "k1", "k_output"}, {{0, 1}, {1, 2}, {2, 0}}, 0, 2, 3, 9, 3}, {1, 2, 3});
}

// With a horizon longer than the distance, a component that is not re-run
// must still supply each horizon step's value, not the end of the horizon's:
// reduced and full runs of every figure at T_P = T_D + 2 give the same bits.
void expect_same_bits_at_longer_horizon(const Figure& f) {
  const auto full = synchronise(f, false, f.horizon + 2);
  const auto reduced = synchronise(f, true, f.horizon + 2);
  EXPECT_EQ(full.y, reduced.y);
  EXPECT_EQ(full.u, reduced.u);
  EXPECT_EQ(full.objective, reduced.objective);
  // And the reduction still saves executions: every candidate after the
  // first of each step runs fewer of them.
  for (std::size_t k = 0; k < full.executions.size(); ++k) {
    ASSERT_EQ(full.executions[k].size(), reduced.executions[k].size()) << "macro step " << k;
    for (std::size_t e = 1; e < reduced.executions[k].size(); ++e)
      EXPECT_LT(reduced.executions[k][e], full.executions[k][e]) << "macro step " << k << ", candidate " << e;
  }
}

TEST(ExecutionReduction, EveryFigureGivesTheSameBitsAtAHorizonBeyondTheDistance) {
  expect_same_bits_at_longer_horizon({{"k_input", "k1", "k_output"}, {{0, 1}, {1, 2}}, 0, 2, 3, 9, 3});
  expect_same_bits_at_longer_horizon(
      {{"k_input", "k1", "k2", "k3", "k_output"}, {{0, 1}, {0, 2}, {0, 3}, {1, 4}, {2, 4}, {3, 4}}, 0, 4, 3, 15, 5});
  expect_same_bits_at_longer_horizon({{"k_input", "k1"}, {{1, 0}}, 0, 0, 1, 2, 1});
  expect_same_bits_at_longer_horizon({{"k_input", "k1", "k_output"}, {{0, 1}, {1, 2}, {2, 0}}, 0, 2, 3, 9, 3});
}

// Figure 4.4c with k1's output compared too, which u cannot reach, at T_P = 3
// > T_D = 1: k1 is never re-run, and each horizon step j must compare its
// output at j (as the full run does), not at the horizon's end.
TEST(ExecutionReduction, AnUnreachableComparedOutputGivesTheSameBitsAsTheFullRun) {
  const Figure f{{"k_input", "k1"}, {{1, 0}}, 0, 0, 1, 2, 1, {1}};
  const auto full = synchronise(f, false, 3);
  const auto reduced = synchronise(f, true, 3);
  EXPECT_EQ(full.y, reduced.y);
  EXPECT_EQ(full.u, reduced.u);
  EXPECT_EQ(full.objective, reduced.objective);
  for (std::size_t k = 0; k < full.executions.size(); ++k) {
    for (std::size_t e = 1; e < reduced.executions[k].size(); ++e) {
      EXPECT_EQ(full.executions[k][e], 6u) << "macro step " << k;     // T_P K = 3 x 2
      EXPECT_EQ(reduced.executions[k][e], 3u) << "macro step " << k;  // k_input only
    }
  }
}

}  // namespace
}  // namespace rtcosim::session::sync
