// The frame program against the block-by-block evaluation over generated
// partitions (issue 45): random graphs of every kernel family (sine,
// constant, scalar and matrix gains of every shape, sums of 2-4 terms,
// integrators with and without limits, the scalar state-space kernel with
// and without a direct term, the general one) with blocks of their own code
// between them (mux, demux, product, saturation, dead zone, rate limiter,
// unit delay, zero-order hold, step, switch, ramp), external inputs (whose
// derivatives are unknown) of widths 1-3 and loops through states, each run
// compiled and with Partition::set_compiled(false) under one of the six
// integrators at unequal steps: every state, discrete state, output, output
// derivative, derivative flag and jump flag must be the same bits at every
// step. Half the cases declare a random set of derivative consumers
// (Partition::set_derivative_consumers): then the consumed ports' derivatives
// must still be the reference's bits.
//
// Seeded (std::mt19937, seed = kFirstSeed + case); a failure prints the
// seed, the integrator and the generated graph as YAML.
// RTCOSIM_FRAME_DIFF_CASES=N runs N cases (a longer fuzzing run),
// RTCOSIM_FRAME_DIFF_SEED=S only the case of seed S.
//
// Then one test per behaviour of issue 45's items 1-2, against flags and
// derivatives worked out by hand.
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <numbers>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tasks/diagram.hpp"
#include "tasks/partition.hpp"
#include "tests/support/dice.hpp"

namespace rtcosim::tasks {
namespace {

constexpr std::uint32_t kFirstSeed = 4500;
constexpr int kCases = 500;
constexpr int kSteps = 150;

const BlockRegistry& registry() {
  static const BlockRegistry r = BlockRegistry::with_builtins();
  return r;
}

// External input i, signal j: sin(3 t + i + j). Its derivative is unknown
// to the partition.
struct Wave final : InputSource {
  void sample(std::size_t input, double t, std::span<double> out) noexcept override {
    for (std::size_t j = 0; j < out.size(); ++j) out[j] = std::sin(3.0 * t + static_cast<double>(input + j));
  }
};

// Numbers from the generator's raw words only (no distribution objects,
// whose algorithms the standard leaves to the library): the same graph
// from the same seed everywhere.
using rtcosim::testing::Dice;

std::string number(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::string yaml_value(const ParamValue& v) {
  if (const double* d = std::get_if<double>(&v)) return number(*d);
  if (const bool* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  if (const std::string* s = std::get_if<std::string>(&v)) return "\"" + *s + "\"";
  auto list = [](const Vector& x) {
    std::string out = "[";
    for (std::size_t i = 0; i < x.size(); ++i) out += (i ? ", " : "") + number(x[i]);
    return out + "]";
  };
  if (const Vector* x = std::get_if<Vector>(&v)) return list(*x);
  const Matrix& m = std::get<Matrix>(v);
  std::string out = "[";
  for (std::size_t r = 0; r < m.size(); ++r) out += (r ? ", " : "") + list(m[r]);
  return out + "]";
}

struct Port {
  std::string name;
  std::size_t width;
};

// A block as generated: its spec, ports, and whether none of its inputs
// feeds its outputs directly (it may then be read from anywhere: a loop
// through it closes through a state).
struct Made {
  BlockSpec spec;
  std::vector<Port> inputs, outputs;
  bool breaks_loops = false;
};

struct Generated {
  std::uint32_t seed = 0;
  IntegratorKind kind = IntegratorKind::kEuler;
  std::vector<BlockSpec> blocks;
  std::vector<WireSpec> wires;
  std::vector<ExternalInputSpec> externals;
  std::vector<Endpoint> outputs;    // every output port
  std::vector<Endpoint> consumers;  // derivative consumers (empty: none declared)
  bool declare_consumers = false;

  [[nodiscard]] std::string yaml() const {
    std::ostringstream y;
    y << "# seed " << seed << ", integrator " << integrator_name(kind) << "\n";
    y << "tasks:\n  - {name: p, period: 1ms, integrator: " << integrator_name(kind) << "}\nblocks:\n";
    for (const auto& b : blocks) {
      y << "  - {name: " << b.name << ", type: " << b.type << ", task: p";
      if (!b.params.all().empty()) {
        y << ", params: {";
        bool first = true;
        for (const auto& [k, v] : b.params.all()) {
          y << (first ? "" : ", ") << k << ": " << yaml_value(v);
          first = false;
        }
        y << "}";
      }
      y << "}\n";
    }
    y << "wires:\n";
    for (const auto& w : wires) y << "  - {from: " << w.from.str() << ", to: " << w.to.str() << "}\n";
    y << "# external inputs (sin(3 t + input + signal), derivative unknown):\n";
    for (std::size_t i = 0; i < externals.size(); ++i) {
      y << "#   " << externals[i].name << " (input " << i << ", width " << externals[i].width << ") ->";
      for (const auto& t : externals[i].targets) y << " " << t.str();
      y << "\n";
    }
    if (declare_consumers) {
      y << "# derivative consumers:";
      for (const auto& c : consumers) y << " " << c.str();
      y << "\n";
    }
    return y.str();
  }
};

Vector random_vector(Dice& d, std::size_t n, double lo, double hi) {
  Vector v(n);
  for (double& x : v) x = d.real(lo, hi);
  return v;
}

Matrix random_matrix(Dice& d, std::size_t rows, std::size_t cols, double lo, double hi) {
  Matrix m(rows);
  for (auto& r : m) r = random_vector(d, cols, lo, hi);
  return m;
}

// A stable n x n system matrix: a negative diagonal, small couplings.
Matrix stable_matrix(Dice& d, std::size_t n) {
  Matrix a = random_matrix(d, n, n, -2.0, 2.0);
  for (std::size_t i = 0; i < n; ++i) a[i][i] = -d.real(3.0, 40.0);
  return a;
}

Made make_block(Dice& d, const std::string& name) {
  Made m;
  m.spec.name = name;
  BlockParams& p = m.spec.params;
  auto in = [&](const std::string& port, std::size_t w) { m.inputs.push_back({port, w}); };
  auto out = [&](const std::string& port, std::size_t w) { m.outputs.push_back({port, w}); };
  switch (d.below(24)) {
    case 0:
    case 1:
      m.spec.type = "sine";
      p.set("frequency", d.real(0.5, 8.0));
      if (d.chance(0.5)) p.set("amplitude", d.real(0.2, 2.0));
      if (d.chance(0.5)) p.set("phase", d.real(-3.0, 3.0));
      if (d.chance(0.3)) p.set("bias", d.real(-1.0, 1.0));
      out("y", 1);
      break;
    case 2: {
      m.spec.type = "constant";
      const std::size_t w = 1 + d.below(3);
      p.set("value", random_vector(d, w, -1.0, 1.0));
      out("y", w);
      break;
    }
    case 3:
    case 4: {
      m.spec.type = "gain";
      const std::size_t w = 1 + d.below(3);
      p.set("gain", d.real(-1.5, 1.5));
      if (w > 1 || d.chance(0.3)) p.set("width", static_cast<double>(w));
      in("u", w);
      out("y", w);
      break;
    }
    case 5:
    case 6:
    case 7: {
      // A matrix gain of any shape but 1x1: 1x2, 2x1, 2x2, 3x2, 1x3, ...
      m.spec.type = "gain";
      std::size_t rows = 1 + d.below(3), cols = 1 + d.below(3);
      if (rows == 1 && cols == 1) cols = 2;
      p.set("gain", random_matrix(d, rows, cols, -1.2, 1.2));
      in("u", cols);
      out("y", rows);
      break;
    }
    case 8:
    case 9:
    case 10: {
      m.spec.type = "sum";
      const std::size_t terms = 2 + d.below(3), w = d.chance(0.75) ? 1 : 2;
      std::string signs;
      for (std::size_t k = 0; k < terms; ++k) signs += d.chance(0.6) ? '+' : '-';
      p.set("signs", signs);
      if (w > 1) p.set("width", static_cast<double>(w));
      for (std::size_t k = 0; k < terms; ++k) in("u" + std::to_string(k + 1), w);
      out("y", w);
      break;
    }
    case 11: {
      m.spec.type = "integrator";
      const std::size_t w = d.chance(0.7) ? 1 : 2;
      if (w > 1) p.set("width", static_cast<double>(w));
      if (d.chance(0.5)) {
        p.set("lower", -d.real(0.01, 0.5));
        p.set("upper", d.real(0.01, 0.5));
      }
      if (d.chance(0.3)) p.set("initial", d.real(-0.01, 0.01));
      in("u", w);
      out("y", w);
      m.breaks_loops = true;
      break;
    }
    case 12:
    case 13:
      m.spec.type = "first_order_lag";
      p.set("time_constant", d.real(0.01, 0.3));
      if (d.chance(0.5)) p.set("gain", d.real(-2.0, 2.0));
      if (d.chance(0.3)) p.set("initial", d.real(-1.0, 1.0));
      in("u", 1);
      out("y", 1);
      m.breaks_loops = true;
      break;
    case 14: {
      // One state with a direct term (the scalar kernel's has_d), or two
      // states with or without one (the general kernel).
      m.spec.type = "transfer_function";
      const double a = d.real(2.0, 40.0);
      const int form = static_cast<int>(d.below(3));
      if (form == 0) {
        p.set("num", Vector{d.real(-2.0, 2.0), d.real(-5.0, 5.0)});
        p.set("den", Vector{1.0, a});
      } else {
        const double b = d.real(2.0, 40.0);
        p.set("num", form == 1 ? Vector{d.real(-2.0, 2.0), d.real(-5.0, 5.0), d.real(-9.0, 9.0)}
                               : Vector{d.real(1.0, 5.0), d.real(-9.0, 9.0)});
        p.set("den", Vector{1.0, a + b, std::round(a * b * 1000.0) / 1000.0});
        m.breaks_loops = form == 2;
      }
      in("u", 1);
      out("y", 1);
      break;
    }
    case 15:
      m.spec.type = "second_order";
      p.set("wn", d.real(5.0, 40.0));
      p.set("zeta", d.real(0.2, 1.2));
      if (d.chance(0.3)) p.set("gain", d.real(-2.0, 2.0));
      in("u", 1);
      out("y", 1);
      m.breaks_loops = true;
      break;
    case 16: {
      // n states, k inputs, r outputs; 1-1-1 is the scalar kernel.
      m.spec.type = "state_space";
      const std::size_t n = 1 + d.below(3), k = 1 + d.below(2), r = 1 + d.below(2);
      p.set("A", stable_matrix(d, n));
      p.set("B", random_matrix(d, n, k, -3.0, 3.0));
      p.set("C", random_matrix(d, r, n, -2.0, 2.0));
      const bool direct = d.chance(0.5);
      if (direct) p.set("D", random_matrix(d, r, k, -1.0, 1.0));
      in("u", k);
      out("y", r);
      m.breaks_loops = !direct;
      break;
    }
    case 17: {
      // Blocks of their own code.
      const int which = static_cast<int>(d.below(5));
      if (which == 0) {
        m.spec.type = "saturation";
        p.set("lower", -d.real(0.05, 1.0));
        p.set("upper", d.real(0.05, 1.0));
      } else if (which == 1) {
        m.spec.type = "dead_zone";
        p.set("start", -d.real(0.0, 0.3));
        p.set("end", d.real(0.0, 0.3));
      } else if (which == 2) {
        m.spec.type = "rate_limiter";
        p.set("rising", d.real(0.5, 20.0));
      } else if (which == 3) {
        m.spec.type = "product";
        in("u1", 1);
      } else {
        m.spec.type = "zero_order_hold";
        p.set("sample_time", d.real(0.002, 0.01));
      }
      in(m.spec.type == "product" ? "u2" : "u", 1);
      out("y", 1);
      break;
    }
    case 18: {
      m.spec.type = "mux";
      const std::size_t a = 1 + d.below(2), b = 1 + d.below(2);
      p.set("widths", Vector{static_cast<double>(a), static_cast<double>(b)});
      in("u1", a);
      in("u2", b);
      out("y", a + b);
      break;
    }
    case 19: {
      m.spec.type = "demux";
      const std::size_t a = 1 + d.below(2), b = 1 + d.below(2);
      p.set("widths", Vector{static_cast<double>(a), static_cast<double>(b)});
      in("u", a + b);
      out("y1", a);
      out("y2", b);
      break;
    }
    case 20:
      m.spec.type = "unit_delay";
      p.set("sample_time", d.real(0.002, 0.01));
      if (d.chance(0.5)) p.set("initial", d.real(-1.0, 1.0));
      in("u", 1);
      out("y", 1);
      m.breaks_loops = true;
      break;
    case 21:
      m.spec.type = "step";
      p.set("time", d.real(0.0, 0.15));
      p.set("final", d.real(-1.0, 1.0));
      if (d.chance(0.3)) p.set("acceleration", d.real(50.0, 500.0));
      out("y", 1);
      break;
    case 22:
      m.spec.type = "switch";
      p.set("threshold", d.real(-0.5, 0.5));
      in("u1", 1);
      in("control", 1);
      in("u3", 1);
      out("y", 1);
      break;
    default:
      m.spec.type = "ramp";
      p.set("slope", d.real(-3.0, 3.0));
      p.set("time", d.real(0.0, 0.1));
      out("y", 1);
      break;
  }
  return m;
}

Generated generate(std::uint32_t seed) {
  static constexpr IntegratorKind kKinds[] = {IntegratorKind::kEuler, IntegratorKind::kAb2,  IntegratorKind::kRk2,
                                              IntegratorKind::kRk4,   IntegratorKind::kRos1, IntegratorKind::kRos2};
  Dice d(seed);
  Generated g;
  g.seed = seed;
  g.kind = kKinds[seed % 6];
  const std::size_t n = 4 + d.below(24);
  std::vector<Made> made;
  for (std::size_t k = 0; k < n; ++k) made.push_back(make_block(d, "b" + std::to_string(k)));
  // Wires: an input reads an earlier block, a block anywhere whose inputs
  // feed nothing directly (a loop through a state), or an external input.
  for (std::size_t k = 0; k < n; ++k) {
    for (const Port& in : made[k].inputs) {
      std::vector<Endpoint> candidates;
      for (std::size_t j = 0; j < n; ++j) {
        if (j >= k && !made[j].breaks_loops) continue;
        for (const Port& o : made[j].outputs) {
          if (o.width == in.width) candidates.push_back({made[j].spec.name, o.name});
        }
      }
      const Endpoint to{made[k].spec.name, in.name};
      if (!candidates.empty() && !d.chance(0.2)) {
        g.wires.push_back({candidates[d.below(candidates.size())], to});
        continue;
      }
      std::vector<std::size_t> same;
      for (std::size_t e = 0; e < g.externals.size(); ++e) {
        if (g.externals[e].width == in.width) same.push_back(e);
      }
      if (!same.empty() && d.chance(0.5)) {
        g.externals[same[d.below(same.size())]].targets.push_back(to);
      } else {
        g.externals.push_back({"x" + std::to_string(g.externals.size()), in.width, {to}});
      }
    }
  }
  for (const Made& m : made) {
    g.blocks.push_back(m.spec);
    for (const Port& o : m.outputs) g.outputs.push_back({m.spec.name, o.name});
  }
  g.declare_consumers = d.chance(0.5);
  if (g.declare_consumers) {
    for (const Endpoint& o : g.outputs) {
      if (d.chance(0.3)) g.consumers.push_back(o);
    }
  }
  return g;
}

template <typename T>
bool same_bits(std::span<const T> a, std::span<const T> b) {
  // memcmp on an empty span's null data is undefined (UBSan says so).
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size_bytes()) == 0);
}

template <typename T>
std::string show(std::span<const T> v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + number(static_cast<double>(v[i]));
  return s + "]";
}

// Every port's values, derivatives and flags in both, for a failure's message.
std::string dump(const Generated& g, const Partition& c, const Partition& r) {
  std::string s = "\n  port: compiled value / derivative / flags | reference value / derivative / flags";
  for (const Endpoint& e : g.outputs) {
    const OutputRef ref = c.find_output(e);
    s += "\n  " + e.str() + ": " + show(c.output(ref)) + " / " + show(c.output_derivative(ref)) + " / " +
         show(c.output_derivative_flags(ref)) + " | " + show(r.output(ref)) + " / " + show(r.output_derivative(ref)) +
         " / " + show(r.output_derivative_flags(ref));
  }
  return s;
}

// The first difference between the compiled partition and the reference
// after a step, or "".
std::string first_difference(const Generated& g, const Partition& c, const Partition& r,
                             const std::vector<bool>& consumed);

std::string difference(const Generated& g, const Partition& c, const Partition& r, const std::vector<bool>& consumed) {
  std::string d = first_difference(g, c, r, consumed);
  return d.empty() ? d : d + dump(g, c, r);
}

std::string first_difference(const Generated& g, const Partition& c, const Partition& r,
                             const std::vector<bool>& consumed) {
  if (c.failed() != r.failed())
    return "failed: compiled " + std::to_string(c.failed()) + ", reference " + std::to_string(r.failed());
  if (!same_bits(c.state(), r.state())) return "states: compiled " + show(c.state()) + ", reference " + show(r.state());
  // A step that failed (a state became NaN or infinite) is not published
  // (TaskRuntime::step): what it left in the outputs is nobody's. The
  // failure itself must be the same.
  if (c.failed()) {
    if (c.failure() != r.failure()) return "failure: compiled '" + c.failure() + "', reference '" + r.failure() + "'";
    if (c.time() != r.time()) return "time after the failure differs";
    return {};
  }
  if (!same_bits(c.discrete_state(), r.discrete_state()))
    return "discrete states: compiled " + show(c.discrete_state()) + ", reference " + show(r.discrete_state());
  for (std::size_t i = 0; i < g.outputs.size(); ++i) {
    const OutputRef ref = c.find_output(g.outputs[i]);
    const std::string port = g.outputs[i].str();
    if (!same_bits(c.output(ref), r.output(ref)))
      return port + " value: compiled " + show(c.output(ref)) + ", reference " + show(r.output(ref));
    if (c.output_jumped(ref) != r.output_jumped(ref)) return port + ": jump flags differ";
    if (!consumed[i]) continue;
    if (!same_bits(c.output_derivative_flags(ref), r.output_derivative_flags(ref)))
      return port + " derivative flags: compiled " + show(c.output_derivative_flags(ref)) + ", reference " +
             show(r.output_derivative_flags(ref));
    if (!same_bits(c.output_derivative(ref), r.output_derivative(ref)))
      return port + " derivative: compiled " + show(c.output_derivative(ref)) + ", reference " +
             show(r.output_derivative(ref));
  }
  return {};
}

struct CaseResult {
  bool built = false;
  bool stayed_finite = false;
  std::size_t kernels = 0, blocks = 0;
};

// Runs one generated case; a difference fails the test with the seed and
// the YAML.
CaseResult run_case(std::uint32_t seed) {
  const Generated g = generate(seed);
  CaseResult result;
  std::unique_ptr<Partition> compiled, reference;
  try {
    compiled = build_partition(registry(), "p", g.blocks, g.wires, g.externals, g.kind);
    reference = build_partition(registry(), "p", g.blocks, g.wires, g.externals, g.kind);
  } catch (const BlockError& e) {
    ADD_FAILURE() << "seed " << seed << ": the generated graph was refused: " << e.what() << "\n" << g.yaml();
    return result;
  }
  result.built = true;
  reference->set_compiled(false);
  std::vector<bool> consumed(g.outputs.size(), !g.declare_consumers);
  if (g.declare_consumers) {
    std::vector<OutputRef> refs;
    for (const Endpoint& e : g.consumers) refs.push_back(compiled->find_output(e));
    compiled->set_derivative_consumers(refs);
    for (std::size_t i = 0; i < g.outputs.size(); ++i) {
      for (const Endpoint& e : g.consumers) consumed[i] = consumed[i] || e.str() == g.outputs[i].str();
    }
  }
  result.kernels = compiled->kernel_count();
  result.blocks = compiled->block_count();
  Wave wave;
  compiled->refresh_outputs(wave);
  reference->refresh_outputs(wave);
  if (const std::string d = difference(g, *compiled, *reference, consumed); !d.empty()) {
    ADD_FAILURE() << "seed " << seed << ", before the first step: " << d << "\n" << g.yaml();
    return result;
  }
  double t = 0.0;
  for (int n = 0; n < kSteps; ++n) {
    const double h = 1e-3 * (1.0 + 0.37 * (n % 3));  // unequal steps
    compiled->step(t, h, wave);
    reference->step(t, h, wave);
    t += h;
    if (const std::string d = difference(g, *compiled, *reference, consumed); !d.empty()) {
      ADD_FAILURE() << "seed " << seed << ", step " << n << " (t = " << t << "): " << d << "\n" << g.yaml();
      return result;
    }
    if (compiled->failed()) return result;
  }
  if (compiled->truncation_error() != reference->truncation_error() ||
      compiled->local_error() != reference->local_error()) {
    ADD_FAILURE() << "seed " << seed << ": error estimates differ\n" << g.yaml();
  }
  result.stayed_finite = true;
  return result;
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

TEST(FrameProgramDifferential, GeneratedPartitionsGiveTheBitsOfTheBlockByBlockEvaluation) {
  if (const int only = env_int("RTCOSIM_FRAME_DIFF_SEED", -1); only >= 0) {
    const auto r = run_case(static_cast<std::uint32_t>(only));
    std::cout << generate(static_cast<std::uint32_t>(only)).yaml() << "kernels " << r.kernels << " of " << r.blocks
              << " blocks, finite: " << r.stayed_finite << "\n";
    return;
  }
  const int cases = env_int("RTCOSIM_FRAME_DIFF_CASES", kCases);
  int finite = 0, grouped = 0;
  for (int k = 0; k < cases && !HasFailure(); ++k) {
    const auto r = run_case(kFirstSeed + static_cast<std::uint32_t>(k));
    finite += r.stayed_finite ? 1 : 0;
    grouped += r.kernels < r.blocks ? 1 : 0;
  }
  if (HasFailure()) return;
  // The cases mean something: most ran every step, most compiled some
  // blocks of one type into one kernel.
  EXPECT_GE(finite, cases * 9 / 10);
  EXPECT_GE(grouped, cases / 2);
}

// The generator covers what it claims: over the fixed seeds, every kernel
// family, every matrix-gain shape and sums whose first term's derivative is
// unknown and whose last one's is known.
TEST(FrameProgramDifferential, TheGeneratedCasesCoverEveryFamilyAndShape) {
  std::set<std::string> types, shapes;
  int mixed_sums = 0, consumer_cases = 0;
  for (int k = 0; k < kCases; ++k) {
    const Generated g = generate(kFirstSeed + static_cast<std::uint32_t>(k));
    consumer_cases += g.declare_consumers ? 1 : 0;
    auto external = [&](const Endpoint& to) {
      for (const auto& e : g.externals) {
        for (const auto& t : e.targets) {
          if (t.str() == to.str()) return true;
        }
      }
      return false;
    };
    for (const auto& b : g.blocks) {
      types.insert(b.type);
      if (b.type == "gain" && std::holds_alternative<Matrix>(b.params.all().at("gain"))) {
        const Matrix& m = std::get<Matrix>(b.params.all().at("gain"));
        shapes.insert(std::to_string(m.size()) + "x" + std::to_string(m.front().size()));
      }
      if (b.type == "sum") {
        const std::size_t terms = std::get<std::string>(b.params.all().at("signs")).size();
        if (external({b.name, "u1"}) && !external({b.name, "u" + std::to_string(terms)})) ++mixed_sums;
      }
    }
  }
  for (const char* t : {"sine",
                        "constant",
                        "gain",
                        "sum",
                        "integrator",
                        "first_order_lag",
                        "transfer_function",
                        "second_order",
                        "state_space",
                        "mux",
                        "demux",
                        "product",
                        "saturation",
                        "dead_zone",
                        "rate_limiter",
                        "zero_order_hold",
                        "unit_delay",
                        "step",
                        "switch",
                        "ramp"}) {
    EXPECT_TRUE(types.count(t)) << t;
  }
  for (const char* s : {"1x2", "1x3", "2x1", "2x2", "2x3", "3x1", "3x2", "3x3"}) EXPECT_TRUE(shapes.count(s)) << s;
  EXPECT_GT(mixed_sums, 20);
  EXPECT_GT(consumer_cases, kCases / 3);
}

// ---------------------------------------------------------------------------
// Issue 45, items 1-2: derivative flags worked out by hand.

constexpr double kTwoPi = 2.0 * std::numbers::pi;

// d/dt of sin(2 pi f t) at t.
double sine_slope(double f, double t) { return kTwoPi * f * std::cos(kTwoPi * f * t); }

// Item 1: a sum's derivative is known only when every term's is. An
// external input's derivative is unknown, a sine's known: every order of
// terms, the unknown first and the known last included, in both the
// compiled program and the block-by-block evaluation.
TEST(FrameProgramFlags, ASumIsUnknownWhenAnyTermIsWhereverThatTermStands) {
  struct Case {
    std::string terms;  // per term: 's' a sine (known), 'x' the external input (unknown)
    bool known;
  };
  const Case cases[] = {{"xs", false},   {"sx", false}, {"xss", false}, {"sxs", false}, {"ssx", false},
                        {"xsss", false}, {"ss", true},  {"sss", true},  {"xx", false}};
  for (const bool compiled : {true, false}) {
    for (const Case& c : cases) {
      std::vector<BlockSpec> blocks;
      std::vector<WireSpec> wires;
      ExternalInputSpec x{"x", 1, {}};
      std::string signs;
      for (std::size_t k = 0; k < c.terms.size(); ++k) {
        const std::string port = "u" + std::to_string(k + 1);
        signs += k == 1 ? '-' : '+';
        if (c.terms[k] == 'x') {
          x.targets.push_back({"s", port});
        } else {
          blocks.push_back({"w" + std::to_string(k), "sine", {{"frequency", 1.0 + static_cast<double>(k)}}, ""});
          wires.push_back({{"w" + std::to_string(k), "y"}, {"s", port}});
        }
      }
      blocks.push_back({"s", "sum", {{"signs", signs}}, ""});
      // A second sum after it in the same run, all terms known: its flag
      // is its own.
      blocks.push_back({"k", "sum", {{"signs", std::string("++")}}, ""});
      blocks.push_back({"c", "constant", {{"value", 2.0}}, ""});
      blocks.push_back({"v", "sine", {{"frequency", 3.0}}, ""});
      wires.push_back({{"c", "y"}, {"k", "u1"}});
      wires.push_back({{"v", "y"}, {"k", "u2"}});
      std::vector<ExternalInputSpec> externals;
      if (!x.targets.empty()) externals.push_back(x);
      auto p = build_partition(registry(), "p", blocks, wires, externals, IntegratorKind::kRk4);
      p->set_compiled(compiled);
      Wave wave;
      double t = 0.0;
      for (int n = 0; n < 5; ++n, t += 0.01) p->step(t, 0.01, wave);
      const OutputRef s = p->find_output({"s", "y"}), k = p->find_output({"k", "y"});
      EXPECT_EQ(p->output_derivative_valid(s, 0), c.known)
          << "terms " << c.terms << (compiled ? " compiled" : " block by block");
      EXPECT_TRUE(p->output_derivative_valid(k, 0)) << c.terms;
      EXPECT_NEAR(p->output_derivative(k)[0], sine_slope(3.0, p->time()), 1e-9) << c.terms;
      if (c.known) {
        double expected = 0.0;
        for (std::size_t j = 0; j < c.terms.size(); ++j)
          expected += (j == 1 ? -1.0 : 1.0) * sine_slope(1.0 + static_cast<double>(j), p->time());
        EXPECT_NEAR(p->output_derivative(s)[0], expected, 1e-9) << c.terms;
      }
    }
  }
}

// Item 2: a matrix gain's derivative is known only when every element of
// its input's is. The input is a mux of sines (known) and external inputs
// (unknown) in every arrangement, for gains of every shape up to 3x3; a
// sine's flag declared right after the gain stays its own; where every
// element is known, y' = K u' against the sines' slopes.
TEST(FrameProgramFlags, AMatrixGainOfAnyShapeIsUnknownWhenAnyInputElementIs) {
  for (const bool compiled : {true, false}) {
    for (std::size_t rows = 1; rows <= 3; ++rows) {
      for (std::size_t cols = 1; cols <= 3; ++cols) {
        for (unsigned mask = 0; mask < (1u << cols); ++mask) {  // bit i: element i from an external input
          std::vector<BlockSpec> blocks;
          std::vector<WireSpec> wires;
          std::vector<ExternalInputSpec> externals;
          Matrix k(rows, Vector(cols));
          for (std::size_t r = 0; r < rows; ++r) {
            for (std::size_t c = 0; c < cols; ++c)
              k[r][c] = 0.5 + static_cast<double>(r) - 0.25 * static_cast<double>(c);
          }
          blocks.push_back({"m", "mux", {{"widths", Vector(cols, 1.0)}}, ""});
          for (std::size_t c = 0; c < cols; ++c) {
            const std::string port = "u" + std::to_string(c + 1);
            if (mask & (1u << c)) {
              externals.push_back({"x" + std::to_string(c), 1, {{"m", port}}});
            } else {
              blocks.push_back({"w" + std::to_string(c), "sine", {{"frequency", 1.0 + static_cast<double>(c)}}, ""});
              wires.push_back({{"w" + std::to_string(c), "y"}, {"m", port}});
            }
          }
          blocks.push_back({"g", "gain", {{"gain", k}}, ""});
          blocks.push_back({"after", "sine", {{"frequency", 4.0}}, ""});
          // A second matrix gain in the gains' run, reading known signals only.
          blocks.push_back({"two", "constant", {{"value", Vector{1.0, 2.0}}}, ""});
          blocks.push_back({"g2", "gain", {{"gain", Matrix{{1.0, 1.0}, {2.0, -1.0}, {0.5, 0.5}}}}, ""});
          wires.push_back({{"m", "y"}, {"g", "u"}});
          wires.push_back({{"two", "y"}, {"g2", "u"}});
          auto p = build_partition(registry(), "p", blocks, wires, externals, IntegratorKind::kRk2);
          p->set_compiled(compiled);
          Wave wave;
          double t = 0.0;
          for (int n = 0; n < 4; ++n, t += 0.01) p->step(t, 0.01, wave);
          const std::string what = std::to_string(rows) + "x" + std::to_string(cols) + " mask " + std::to_string(mask) +
                                   (compiled ? " compiled" : " block by block");
          const OutputRef g = p->find_output({"g", "y"});
          ASSERT_EQ(g.width, rows);
          for (std::size_t r = 0; r < rows; ++r) {
            EXPECT_EQ(p->output_derivative_valid(g, r), mask == 0) << what << " row " << r;
            if (mask != 0) continue;
            double expected = 0.0;
            for (std::size_t c = 0; c < cols; ++c)
              expected += k[r][c] * sine_slope(1.0 + static_cast<double>(c), p->time());
            EXPECT_NEAR(p->output_derivative(g)[r], expected, 1e-9) << what << " row " << r;
          }
          const OutputRef after = p->find_output({"after", "y"});
          EXPECT_TRUE(p->output_derivative_valid(after, 0)) << what;
          EXPECT_NEAR(p->output_derivative(after)[0], sine_slope(4.0, p->time()), 1e-9) << what;
          const OutputRef g2 = p->find_output({"g2", "y"});
          for (std::size_t r = 0; r < 3; ++r) {
            EXPECT_TRUE(p->output_derivative_valid(g2, r)) << what;
            EXPECT_EQ(p->output_derivative(g2)[r], 0.0) << what;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace rtcosim::tasks
