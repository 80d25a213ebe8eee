// Bundled links against a link per wire over generated link sets (issue
// 45): a producer task of sources (sines, lags of sines, two-signal muxes,
// vector constants, and signals that jump: a step, a sum through a step, a
// switch) and a consumer task that reads each through a wire with a random
// method and parameter values (polynomial order 1 vs 2 vs the default,
// macro steps, horizons), the wires in a random order (so a bundle's wires
// have gaps of any kind among the consumer's inputs), some ports read twice,
// the consumer stepping at 1, 2 or 3 producer periods before or after the
// producer's frame (so that it interpolates or extrapolates), under random
// integrators. The same graph built with Graph::build's bundle_links true
// and false must record the same bits: after every consumer frame, its
// whole state and every output of its blocks; at the end, each wire's
// counters.
//
// Seeded (std::mt19937, seed = kFirstSeed + case); a failure prints the
// seed and the graph's YAML. RTCOSIM_BUNDLE_DIFF_CASES=N runs N cases,
// RTCOSIM_BUNDLE_DIFF_SEED=S only the case of seed S.
//
// Then issue 45's items 3 and 4 against values worked out from the
// producer's samples (Lagrange extrapolation, where the methods use Newton
// form).
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/dice.hpp"
#include "tests/support/graphs.hpp"

namespace rtcosim::runtime {
namespace {

constexpr std::uint32_t kFirstSeed = 45000;
constexpr int kCases = 300;
constexpr int kProducerFrames = 150;

using rtcosim::testing::Dice;
using rtcosim::testing::random_coupling;

const char* const kIntegrators[] = {"euler", "ab2", "rk2", "rk4", "ros1", "ros2"};

struct Case {
  std::string yaml;
  int consumer_periods = 1;     // consumer period in producer periods (1 ms)
  bool consumer_first = false;  // the consumer's frame before the producer's in a tick it is due
};

Case generate(std::uint32_t seed) {
  Dice d(seed);
  Case c;
  c.consumer_periods = 1 + static_cast<int>(d.below(3));
  c.consumer_first = d.chance(0.5);
  std::string blocks = "blocks:\n", wires;
  std::vector<std::string> lines;  // the consumer's wires, shuffled below
  // The case's couplings: a few, each wire one of them, so that bundles
  // form; now and then the same method again with other parameter values.
  std::vector<std::string> palette;
  for (std::size_t k = 1 + d.below(3); k > 0; --k) palette.push_back(random_coupling(d));
  if (d.chance(0.5)) {
    palette.push_back(d.chance(0.5) ? "{method: polynomial, order: 1}" : "{method: hermite, order: 1}");
    palette.push_back(palette.back() == "{method: polynomial, order: 1}" ? "{method: polynomial, order: 2}"
                                                                         : "{method: hermite, order: 2}");
  }
  const std::size_t sources = 3 + d.below(10);
  for (std::size_t i = 0; i < sources; ++i) {
    const std::string n = std::to_string(i), p = "p" + n;
    std::size_t width = 1;
    auto block = [&](const std::string& name, const std::string& type, const std::string& params) {
      blocks += "  - {name: " + name + ", type: " + type + ", task: producer" +
                (params.empty() ? "" : ", params: {" + params + "}") + "}\n";
    };
    auto sine = [&](const std::string& name) {
      block(name, "sine",
            "frequency: " + d.real_text(0.5, 9.0) + ", phase: " + d.real_text(-3.0, 3.0) +
                ", amplitude: " + d.real_text(0.5, 2.0));
    };
    switch (d.below(9)) {
      case 0:
      case 1:
      case 2:
        sine(p);
        break;
      case 3:
        sine(p + "s");
        block(p, "first_order_lag", "time_constant: " + d.real_text(0.005, 0.05));
        wires += "  - {from: " + p + "s.y, to: " + p + ".u}\n";
        break;
      case 4:
        sine(p + "a");
        sine(p + "b");
        block(p, "mux", "");
        wires += "  - {from: " + p + "a.y, to: " + p + ".u1}\n  - {from: " + p + "b.y, to: " + p + ".u2}\n";
        width = 2;
        break;
      case 5:
        width = 2 + d.below(2);
        block(p, "constant",
              width == 2
                  ? "value: [" + d.real_text(-1, 1) + ", " + d.real_text(-1, 1) + "]"
                  : "value: [" + d.real_text(-1, 1) + ", " + d.real_text(-1, 1) + ", " + d.real_text(-1, 1) + "]");
        break;
      case 6:  // jumps: travels alone
        block(p, "step", "time: " + d.real_text(0.01, 0.1) + ", final: " + d.real_text(-2.0, 2.0));
        break;
      case 7:  // downstream of a jump: travels alone
        sine(p + "s");
        block(p + "j", "step", "time: " + d.real_text(0.01, 0.1));
        block(p, "sum", "");
        wires += "  - {from: " + p + "s.y, to: " + p + ".u1}\n  - {from: " + p + "j.y, to: " + p + ".u2}\n";
        break;
      default:  // a switch between two sines on a third
        sine(p + "a");
        sine(p + "b");
        sine(p + "c");
        block(p, "switch", "threshold: " + d.real_text(-0.5, 0.5));
        wires += "  - {from: " + p + "a.y, to: " + p + ".u1}\n  - {from: " + p + "c.y, to: " + p +
                 ".control}\n  - {from: " + p + "b.y, to: " + p + ".u3}\n";
        break;
    }
    // The consumer's side: a unit gain shows the link's value at the
    // frame's end; a lag (an integrator for a vector) its integration
    // stages' values.
    const std::string cpl = palette[d.below(palette.size())];
    const std::string w = std::to_string(width);
    blocks += "  - {name: g" + n + ", type: gain, task: consumer, params: {gain: 1, width: " + w + "}}\n";
    if (width == 1) {
      blocks += "  - {name: l" + n +
                ", type: first_order_lag, task: consumer, params: {time_constant: " + d.real_text(0.005, 0.05) + "}}\n";
    } else {
      blocks += "  - {name: l" + n + ", type: integrator, task: consumer, params: {width: " + w + "}}\n";
    }
    wires += "  - {from: g" + n + ".y, to: l" + n + ".u}\n";
    lines.push_back("  - {from: " + p + ".y, to: g" + n + ".u, coupling: " + cpl + "}\n");
    if (d.chance(0.15)) {
      // The port read a second time in the consumer, with the same coupling.
      blocks += "  - {name: h" + n + ", type: gain, task: consumer, params: {gain: -1, width: " + w + "}}\n";
      lines.push_back("  - {from: " + p + ".y, to: h" + n + ".u, coupling: " + cpl + "}\n");
    }
  }
  // The wire order is the consumer's input order: shuffled.
  for (std::size_t i = lines.size(); i > 1; --i) std::swap(lines[i - 1], lines[d.below(i)]);
  for (const auto& l : lines) wires += l;
  c.yaml = "# seed " + std::to_string(seed) + ", consumer every " + std::to_string(c.consumer_periods) +
           " producer frame(s), " + (c.consumer_first ? "before" : "after") + " the producer's frame\n" +
           "tasks:\n  - {name: producer, period: 1ms, integrator: " + d.pick(kIntegrators) +
           "}\n  - {name: consumer, period: " + std::to_string(c.consumer_periods) +
           "ms, integrator: " + d.pick(kIntegrators) + "}\n" + blocks + "wires:\n" + wires;
  return c;
}

// One run of the case's graph: the producer every 1 ms, the consumer every
// consumer_periods ms; the recording is the consumer's state and every
// output of its blocks after each of its frames.
struct Run {
  std::unique_ptr<Graph> graph;
  std::vector<tasks::OutputRef> recorded;
  std::vector<double> row;

  Run(const Case& c, bool bundled) {
    graph =
        rtcosim::testing::build_graph(rtcosim::testing::checked(config::load_graph_text(c.yaml, "generated")), bundled);
    graph->reset();
    const auto& part = graph->find_task("consumer")->partition();
    for (std::size_t b = 0; b < part.block_count(); ++b)
      recorded.push_back(part.find_output({part.block(b).name(), "y"}));
  }
  TaskRuntime& task(const char* name) { return *graph->find_task(name); }
  static void frame(TaskRuntime& t, double h) {
    t.drain();
    t.step(h);
    t.publish();
  }
  // Tick n: the producer's frame, and the consumer's when it is due; true
  // when the consumer stepped (`row` then holds what it recorded).
  bool tick(const Case& c, int n) {
    const bool due = n % c.consumer_periods == c.consumer_periods - 1;
    const double hc = 1e-3 * c.consumer_periods;
    if (due && c.consumer_first) frame(task("consumer"), hc);
    frame(task("producer"), 1e-3);
    if (due && !c.consumer_first) frame(task("consumer"), hc);
    if (!due) return false;
    const auto& part = task("consumer").partition();
    row.assign(part.state().begin(), part.state().end());
    for (const auto& r : recorded) row.insert(row.end(), part.output(r).begin(), part.output(r).end());
    return true;
  }
};

std::string describe_row(const std::vector<double>& r) {
  std::string s;
  for (double v : r) {
    char b[32];
    std::snprintf(b, sizeof b, "%.17g ", v);
    s += b;
  }
  return s;
}

struct Outcome {
  std::size_t bundles = 0, links = 0;
};

Outcome run_case(std::uint32_t seed) {
  const Case c = generate(seed);
  Outcome o;
  Run bundled(c, true), alone(c, false);
  o.bundles = bundled.graph->bundles().size();
  o.links = bundled.graph->links().size();
  if (alone.graph->bundles().size() != alone.graph->links().size()) {
    ADD_FAILURE() << "seed " << seed << ": a link per wire has bundles of several\n" << c.yaml;
    return o;
  }
  for (int n = 0; n < kProducerFrames; ++n) {
    const bool recorded = bundled.tick(c, n);
    alone.tick(c, n);
    if (!recorded) continue;
    if (bundled.row.size() != alone.row.size() ||
        std::memcmp(bundled.row.data(), alone.row.data(), bundled.row.size() * sizeof(double)) != 0) {
      ADD_FAILURE() << "seed " << seed << ": the recordings differ after producer frame " << n
                    << "\n  bundled: " << describe_row(bundled.row) << "\n  alone:   " << describe_row(alone.row)
                    << "\n(state, then each consumer block's outputs)\n"
                    << c.yaml;
      return o;
    }
  }
  for (std::size_t i = 0; i < bundled.graph->links().size(); ++i) {
    const GraphLink& b = *bundled.graph->links()[i];
    const GraphLink& a = *alone.graph->links()[i];
    const LinkHealth hb = b.health(), ha = a.health();
    if (b.source != a.source || b.link->published() != a.link->published() || b.link->dropped() != a.link->dropped() ||
        hb.stale != ha.stale || hb.rejected_values != ha.rejected_values ||
        hb.beyond_horizon_frames != ha.beyond_horizon_frames || hb.fallback_frames != ha.fallback_frames) {
      ADD_FAILURE() << "seed " << seed << ": wire " << b.source << "'s counters differ\n" << c.yaml;
      return o;
    }
  }
  if (bundled.task("consumer").failed() || bundled.task("producer").failed())
    ADD_FAILURE() << "seed " << seed << ": a task failed\n" << c.yaml;
  return o;
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

TEST(BundleDifferential, GeneratedLinkSetsRecordTheBitsOfALinkPerWire) {
  if (const int only = env_int("RTCOSIM_BUNDLE_DIFF_SEED", -1); only >= 0) {
    const auto o = run_case(static_cast<std::uint32_t>(only));
    std::cout << generate(static_cast<std::uint32_t>(only)).yaml << o.links << " wires in " << o.bundles
              << " bundles\n";
    return;
  }
  const int cases = env_int("RTCOSIM_BUNDLE_DIFF_CASES", kCases);
  int shared = 0;
  for (int k = 0; k < cases && !HasFailure(); ++k) {
    const auto o = run_case(kFirstSeed + static_cast<std::uint32_t>(k));
    shared += o.bundles < o.links ? 1 : 0;
  }
  // Most cases put several wires in one bundle.
  if (!HasFailure()) {
    EXPECT_GE(shared, cases * 3 / 4);
  }
}

// ---------------------------------------------------------------------------
// Issue 45, items 3 and 4, against the producer's samples.

// The value at t of the Lagrange polynomial through (tags[i], values[i]).
double lagrange(const std::vector<double>& tags, const std::vector<double>& values, double t) {
  double sum = 0.0;
  for (std::size_t i = 0; i < tags.size(); ++i) {
    double w = values[i];
    for (std::size_t j = 0; j < tags.size(); ++j) {
      if (j != i) w *= (t - tags[j]) / (tags[i] - tags[j]);
    }
    sum += w;
  }
  return sum;
}

// A producer of sines s0..s(n-1) (1 + k Hz) and a consumer of unit gains
// g0..g(n-1), each reading its sine through the wire of `couplings[k]`,
// the wires in that order (the consumer's input order). Both at 1 ms, rk4;
// the consumer steps before the producer, so that at the end of its step
// [t, t + 1 ms] every method extrapolates from the samples up to t.
std::string sines_to_gains(const std::vector<std::string>& couplings) {
  std::string text =
      "tasks:\n  - {name: producer, period: 1ms, integrator: rk4}\n  - {name: consumer, period: 1ms, integrator: "
      "rk4}\nblocks:\n";
  std::string wires = "wires:\n";
  for (std::size_t k = 0; k < couplings.size(); ++k) {
    const std::string n = std::to_string(k);
    text += "  - {name: s" + n + ", type: sine, task: producer, params: {frequency: " + std::to_string(1 + k) +
            ", phase: 0.3}}\n";
    text += "  - {name: g" + n + ", type: gain, task: consumer, params: {gain: 1}}\n";
    text += "  - {name: l" + n + ", type: first_order_lag, task: consumer, params: {time_constant: 0.01}}\n";
    wires += "  - {from: s" + n + ".y, to: g" + n + ".u, coupling: " + couplings[k] + "}\n";
    wires += "  - {from: g" + n + ".y, to: l" + n + ".u}\n";
  }
  return text + wires;
}

// Runs sines_to_gains(couplings) bundled and with a link per wire for 200
// frames; per frame, both consumers' states and gains the same bits, and
// gain k equal to the polynomial of degree orders[k] (0: the zero-order
// hold) through the newest samples of sine k (from the first frame with
// enough of them). Returns the bundled graph's bundle count.
std::size_t expect_extrapolations(const std::vector<std::string>& couplings, const std::vector<int>& orders) {
  const std::string text = sines_to_gains(couplings);
  auto graph_of = [&](bool bundled) {
    auto g =
        rtcosim::testing::build_graph(rtcosim::testing::checked(config::load_graph_text(text, "focused")), bundled);
    g->reset();
    return g;
  };
  auto bundled = graph_of(true), alone = graph_of(false);
  const std::size_t n = couplings.size();
  std::vector<std::vector<double>> samples(n);
  std::vector<double> tags;
  auto& producer = bundled->find_task("producer")->partition();
  auto sample = [&] {
    tags.push_back(producer.time());
    for (std::size_t k = 0; k < n; ++k)
      samples[k].push_back(producer.output(producer.find_output({"s" + std::to_string(k), "y"}))[0]);
  };
  sample();  // the initial outputs, published at t = 0
  for (int frame = 0; frame < 200; ++frame) {
    for (Graph* g : {bundled.get(), alone.get()}) {
      for (const char* name : {"consumer", "producer"}) {
        TaskRuntime& t = *g->find_task(name);
        t.drain();
        t.step(1e-3);
        t.publish();
      }
    }
    const auto& cb = bundled->find_task("consumer")->partition();
    const auto& ca = alone->find_task("consumer")->partition();
    EXPECT_EQ(std::memcmp(cb.state().data(), ca.state().data(), cb.state().size_bytes()), 0) << "frame " << frame;
    const double end = cb.time();
    for (std::size_t k = 0; k < n; ++k) {
      const tasks::OutputRef g = cb.find_output({"g" + std::to_string(k), "y"});
      const double value = cb.output(g)[0];
      EXPECT_EQ(std::memcmp(&value, ca.output(g).data(), sizeof value), 0) << "g" << k << " frame " << frame;
      const auto used = static_cast<std::size_t>(orders[k]) + 1;
      if (tags.size() >= used) {
        const std::vector<double> t(tags.end() - static_cast<std::ptrdiff_t>(used), tags.end());
        const std::vector<double> v(samples[k].end() - static_cast<std::ptrdiff_t>(used), samples[k].end());
        EXPECT_NEAR(value, lagrange(t, v, end), 1e-12) << "g" << k << " (" << couplings[k] << ") frame " << frame;
      }
    }
    sample();
  }
  return bundled->bundles().size();
}

// Item 3: the consumer's inputs in the order zoh, polynomial, zoh, zoh: the
// zoh bundle's wires have a gap before its second wire only (inputs 0, 2,
// 3). Each gain reads its own sine: the zoh ones its newest sample, the
// polynomial one the quadratic through the newest three.
TEST(BundleFocused, AGapOnlyBeforeTheSecondWireGivesEachWireItsOwnSignal) {
  EXPECT_EQ(expect_extrapolations({"{method: zoh}", "{method: polynomial, order: 2}", "{method: zoh}", "{method: zoh}"},
                                  {0, 2, 0, 0}),
            2u);
  // And the gap's mirror: after the first wire only (inputs 0, 1, 3).
  EXPECT_EQ(expect_extrapolations({"{method: zoh}", "{method: zoh}", "{method: polynomial, order: 2}", "{method: zoh}"},
                                  {0, 0, 2, 0}),
            2u);
}

// Item 4: polynomial order 1 and order 2 are two couplings: the line and
// the parabola through the newest samples, in two bundles; the two order-1
// wires share theirs.
TEST(BundleFocused, SameMethodWithOtherParameterValuesKeepsEachWiresValues) {
  EXPECT_EQ(expect_extrapolations(
                {"{method: polynomial, order: 1}", "{method: polynomial, order: 2}", "{method: polynomial, order: 1}"},
                {1, 2, 1}),
            2u);
  EXPECT_EQ(expect_extrapolations({"{method: polynomial, order: 2}", "{method: polynomial, order: 1}"}, {2, 1}), 2u);
}

}  // namespace
}  // namespace rtcosim::runtime
