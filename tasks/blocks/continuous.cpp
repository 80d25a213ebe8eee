// Continuous blocks: integrator with limits and the linear family built on
// StateSpace.
#include <algorithm>
#include <cmath>
#include <limits>

#include "tasks/block_registry.hpp"
#include "tasks/blocks/state_space.hpp"
#include "tasks/kernel.hpp"

namespace rtcosim::tasks {

namespace {

Eigen::MatrixXd to_eigen(const Matrix& m) {
  Eigen::MatrixXd out(static_cast<Eigen::Index>(m.size()), static_cast<Eigen::Index>(m.front().size()));
  for (std::size_t r = 0; r < m.size(); ++r) {
    for (std::size_t c = 0; c < m[r].size(); ++c)
      out(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(c)) = m[r][c];
  }
  return out;
}

Eigen::VectorXd initial_state(const std::string& block, const BlockParams& p, Eigen::Index n) {
  Eigen::VectorXd x0 = Eigen::VectorXd::Zero(n);
  if (const auto v = p.vector_if(block, "initial")) {
    if (static_cast<Eigen::Index>(v->size()) != n) {
      throw BlockError("block '" + block + "': parameter 'initial' has " + std::to_string(v->size()) +
                           " values — expected " + std::to_string(n) + " (one per state)",
                       block, "initial");
    }
    for (Eigen::Index i = 0; i < n; ++i) x0(i) = (*v)[static_cast<std::size_t>(i)];
  }
  return x0;
}

// Integrator: y = x, x' = u, with optional limits. At a limit the state
// stops (its derivative is zeroed while the input pushes outward).
class Integrator final : public Block {
 public:
  Integrator(const std::string& name, const BlockParams& p) : Block(name, "integrator") {
    const auto init = p.vector_if(name, "initial");
    width_ = p.count(name, "width", init ? init->size() : 1, 1, 1u << 20);
    initial_ = init ? *init : Vector(width_, 0.0);
    if (initial_.size() == 1 && width_ > 1) initial_.assign(width_, initial_.front());
    if (initial_.size() != width_) {
      throw BlockError("block '" + name + "': parameter 'initial' has " + std::to_string(initial_.size()) +
                           " values — expected 1 or " + std::to_string(width_) + " (the width)",
                       name, "initial");
    }
    lower_ = p.number(name, "lower", -std::numeric_limits<double>::infinity());
    upper_ = p.number(name, "upper", std::numeric_limits<double>::infinity());
    if (!(lower_ < upper_)) {
      throw BlockError("block '" + name + "': lower limit must be below upper limit", name, "lower");
    }
    for (double& v : initial_) v = std::clamp(v, lower_, upper_);
    add_input("u", width_, false);
    add_output("y", width_);
    set_continuous_states(width_);
  }
  void initialize(std::span<double> x, std::span<double>) const noexcept override {
    std::copy(initial_.begin(), initial_.end(), x.begin());
  }
  void output(const BlockContext& c) const noexcept override {
    for (std::size_t i = 0; i < width_; ++i) c.out(0, i, std::clamp(c.x[i], lower_, upper_));
  }
  void derivatives(const BlockContext& c, std::span<double> dx) const noexcept override {
    for (std::size_t i = 0; i < width_; ++i) {
      const double u = c.in(0, i);
      const bool held = (c.x[i] >= upper_ && u > 0.0) || (c.x[i] <= lower_ && u < 0.0);
      dx[i] = held ? 0.0 : u;
    }
  }
  void output_derivatives(const BlockContext& c, std::span<const double> dx) const noexcept override {
    for (std::size_t i = 0; i < width_; ++i) c.out_derivative(0, i, dx[i]);
  }
  const KernelFamily* kernel_family() const noexcept override {
    static const Family family;
    return &family;
  }

 private:
  // Every integrator signal of a run, flattened: its input, output and
  // state offsets and its block's limits.
  class Kernel final : public tasks::Kernel {
   public:
    struct Signal {
      std::size_t in, out, x;
      double lower, upper;
    };
    explicit Kernel(std::vector<Signal> signals) : signals_(std::move(signals)) {}
    void output(const FrameMemory& m, double) noexcept override {
      for (const Signal& s : signals_) m.v[s.out] = std::clamp(m.x[s.x], s.lower, s.upper);
    }
    void derivatives(const FrameMemory& m, double, double* dx) noexcept override {
      for (const Signal& s : signals_) {
        const double u = m.v[s.in];
        const double x = m.x[s.x];
        const bool held = (x >= s.upper && u > 0.0) || (x <= s.lower && u < 0.0);
        dx[s.x] = held ? 0.0 : u;
      }
    }
    void output_derivatives(const FrameMemory& m, double, const double* dx) noexcept override {
      for (const Signal& s : signals_) {
        m.dv[s.out] = dx[s.x];
        m.known[s.out] = 1;
      }
    }

   private:
    std::vector<Signal> signals_;
  };
  struct Family final : KernelFamily {
    std::unique_ptr<tasks::Kernel> compile(std::span<const KernelSlot> run) const override {
      std::vector<Kernel::Signal> signals;
      for (const KernelSlot& s : run) {
        const auto& b = static_cast<const Integrator&>(*s.block);
        for (std::size_t i = 0; i < b.width_; ++i)
          signals.push_back({s.in[0] + i, s.out[0] + i, s.x + i, b.lower_, b.upper_});
      }
      return std::make_unique<Kernel>(std::move(signals));
    }
    bool reads_input_derivatives(const Block&) const noexcept override { return false; }
  };
  std::size_t width_ = 1;
  Vector initial_;
  double lower_ = 0.0, upper_ = 0.0;
};

std::unique_ptr<Block> make_state_space(const std::string& name, const BlockParams& p) {
  Eigen::MatrixXd a = to_eigen(p.matrix(name, "A"));
  const Eigen::Index n = a.rows();
  if (a.cols() != n) throw BlockError("block '" + name + "': A must be square", name, "A");
  Eigen::MatrixXd b = to_eigen(p.matrix(name, "B"));
  Eigen::MatrixXd c = to_eigen(p.matrix(name, "C"));
  Eigen::MatrixXd d;
  if (auto dm = p.matrix_if(name, "D")) {
    d = to_eigen(*dm);
  } else {
    d = Eigen::MatrixXd::Zero(c.rows(), b.cols());
  }
  auto expect = [&](const char* what, const Eigen::MatrixXd& m, Eigen::Index rows, Eigen::Index cols) {
    if (m.rows() != rows || m.cols() != cols) {
      throw BlockError("block '" + name + "': " + what + " is " + std::to_string(m.rows()) + "x" +
                           std::to_string(m.cols()) + " — expected " + std::to_string(rows) + "x" +
                           std::to_string(cols),
                       name, what);
    }
  };
  expect("B", b, n, b.cols());
  expect("C", c, c.rows(), n);
  expect("D", d, c.rows(), b.cols());
  return std::make_unique<StateSpace>(name, "state_space", a, b, c, d, initial_state(name, p, n));
}

std::unique_ptr<Block> make_transfer_function(const std::string& name, const BlockParams& p) {
  Eigen::MatrixXd a, b, c, d;
  transfer_function_to_state_space(name, p.vector(name, "num"), p.vector(name, "den"), a, b, c, d);
  return std::make_unique<StateSpace>(name, "transfer_function", a, b, c, d, Eigen::VectorXd::Zero(a.rows()));
}

// K / (tau s + 1): x' = (K u - x) / tau, y = x.
std::unique_ptr<Block> make_first_order_lag(const std::string& name, const BlockParams& p) {
  const double k = p.number(name, "gain", 1.0);
  const double tau = p.positive(name, "time_constant");
  Eigen::MatrixXd a(1, 1), b(1, 1), c(1, 1), d(1, 1);
  a << -1.0 / tau;
  b << k / tau;
  c << 1.0;
  d << 0.0;
  return std::make_unique<StateSpace>(name, "first_order_lag", a, b, c, d, initial_state(name, p, 1));
}

// K wn^2 / (s^2 + 2 zeta wn s + wn^2), states [y, y'].
std::unique_ptr<Block> make_second_order(const std::string& name, const BlockParams& p) {
  const double k = p.number(name, "gain", 1.0);
  const double wn = p.positive(name, "wn");
  const double zeta = p.non_negative(name, "zeta", 0.7);
  Eigen::MatrixXd a(2, 2), b(2, 1), c(1, 2), d(1, 1);
  a << 0.0, 1.0, -wn * wn, -2.0 * zeta * wn;
  b << 0.0, k * wn * wn;
  c << 1.0, 0.0;
  d << 0.0;
  return std::make_unique<StateSpace>(name, "second_order", a, b, c, d, initial_state(name, p, 2));
}

}  // namespace

StateSpace::StateSpace(const std::string& name, const std::string& type, Eigen::MatrixXd a, Eigen::MatrixXd b,
                       Eigen::MatrixXd c, Eigen::MatrixXd d, Eigen::VectorXd x0)
    : Block(name, type), a_(std::move(a)), b_(std::move(b)), c_(std::move(c)), d_(std::move(d)), x0_(std::move(x0)) {
  has_d_ = !d_.isZero(0.0);
  scalar_ = a_.rows() == 1 && b_.cols() == 1 && c_.rows() == 1;
  if (scalar_) abcd_ = {a_(0, 0), b_(0, 0), c_(0, 0), d_(0, 0)};
  add_input("u", static_cast<std::size_t>(b_.cols()), has_d_);
  add_output("y", static_cast<std::size_t>(c_.rows()));
  set_continuous_states(static_cast<std::size_t>(a_.rows()));
}

void StateSpace::initialize(std::span<double> x, std::span<double>) const noexcept {
  for (Eigen::Index i = 0; i < x0_.size(); ++i) x[static_cast<std::size_t>(i)] = x0_(i);
}

namespace {

// out (+)= m v. Small systems (the scalar lags and second-order blocks a
// large graph is made of) in plain loops: Eigen's dynamic-size product costs
// tens of nanoseconds of dispatch for a 1x1 matrix. Larger ones go to
// Eigen's vectorised kernel.
constexpr Eigen::Index kSmall = 8;

void multiply(const Eigen::MatrixXd& m, const double* v, double* out, bool accumulate) noexcept {
  const Eigen::Index rows = m.rows(), cols = m.cols();
  if (rows <= kSmall && cols <= kSmall) {
    const double* col = m.data();  // column-major
    if (!accumulate) std::fill(out, out + rows, 0.0);
    for (Eigen::Index j = 0; j < cols; ++j, col += rows) {
      const double vj = v[j];
      for (Eigen::Index i = 0; i < rows; ++i) out[i] += col[i] * vj;
    }
    return;
  }
  Eigen::Map<const Eigen::VectorXd> in(v, cols);
  Eigen::Map<Eigen::VectorXd> result(out, rows);
  if (accumulate) {
    result.noalias() += m * in;
  } else {
    result.noalias() = m * in;
  }
}

}  // namespace

namespace {

// Every single-state, single-input, single-output system of a run (the
// first-order lags a large plant is made of), the block's scalar
// arithmetic over the signal memory.
class ScalarStateSpaceKernel final : public Kernel {
 public:
  struct System {
    std::size_t in, out, x;
    double a, b, c, d;
    bool has_d;
  };
  explicit ScalarStateSpaceKernel(std::vector<System> systems) : systems_(std::move(systems)) {
    // The common case of a generated plant: no direct term, inputs, outputs
    // and states each consecutive. Then the loops run over plain arrays
    // (the same operations, in the same order per system).
    dense_ = !systems_.empty();
    for (std::size_t k = 0; k < systems_.size() && dense_; ++k) {
      const System& s = systems_[k];
      const System& first = systems_.front();
      dense_ = !s.has_d && s.in == first.in + k && s.out == first.out + k && s.x == first.x + k;
    }
    if (dense_) {
      for (const System& s : systems_) {
        a_.push_back(s.a);
        b_.push_back(s.b);
        c_.push_back(s.c);
      }
    }
  }
  void output(const FrameMemory& m, double) noexcept override {
    if (dense_) {
      const System& f = systems_.front();
      const double* x = m.x + f.x;
      double* y = m.v + f.out;
      for (std::size_t k = 0; k < c_.size(); ++k) y[k] = c_[k] * x[k];
      return;
    }
    for (const System& s : systems_) {
      double y = s.c * m.x[s.x];
      if (s.has_d) y += s.d * m.v[s.in];
      m.v[s.out] = y;
    }
  }
  void derivatives(const FrameMemory& m, double, double* dx) noexcept override {
    if (dense_) {
      const System& f = systems_.front();
      const double* x = m.x + f.x;
      const double* u = m.v + f.in;
      double* d = dx + f.x;
      for (std::size_t k = 0; k < a_.size(); ++k) d[k] = a_[k] * x[k] + b_[k] * u[k];
      return;
    }
    for (const System& s : systems_) dx[s.x] = s.a * m.x[s.x] + s.b * m.v[s.in];
  }
  void output_derivatives(const FrameMemory& m, double, const double* dx) noexcept override {
    if (dense_) {
      const System& f = systems_.front();
      const double* d = dx + f.x;
      double* dy = m.dv + f.out;
      unsigned char* known = m.known + f.out;
      for (std::size_t k = 0; k < c_.size(); ++k) {
        dy[k] = c_[k] * d[k];
        known[k] = 1;
      }
      return;
    }
    for (const System& s : systems_) {
      bool known = true;
      double dy = s.c * dx[s.x];
      if (s.has_d) {
        known = m.known[s.in] != 0;
        dy += s.d * m.dv[s.in];
      }
      m.dv[s.out] = dy;
      m.known[s.out] = known ? 1 : 0;
    }
  }

 private:
  std::vector<System> systems_;
  bool dense_ = false;
  std::vector<double> a_, b_, c_;  // per system, when dense_
};

// Every other state-space system of a run, through the block's own matrix
// products on raw pointers.
class StateSpaceKernel final : public Kernel {
 public:
  struct System {
    const StateSpace* block;
    std::size_t in, out, x;
    bool has_d;
  };
  explicit StateSpaceKernel(std::vector<System> systems) : systems_(std::move(systems)) {}
  void output(const FrameMemory& m, double) noexcept override {
    for (const System& s : systems_) {
      multiply(s.block->c(), m.x + s.x, m.v + s.out, false);
      if (s.has_d) multiply(s.block->d(), m.v + s.in, m.v + s.out, true);
    }
  }
  void derivatives(const FrameMemory& m, double, double* dx) noexcept override {
    for (const System& s : systems_) {
      multiply(s.block->a(), m.x + s.x, dx + s.x, false);
      multiply(s.block->b(), m.v + s.in, dx + s.x, true);
    }
  }
  void output_derivatives(const FrameMemory& m, double, const double* dx) noexcept override {
    for (const System& s : systems_) {
      bool known = true;
      multiply(s.block->c(), dx + s.x, m.dv + s.out, false);
      if (s.has_d) {
        for (Eigen::Index i = 0; i < s.block->d().cols(); ++i)
          known = known && m.known[s.in + static_cast<std::size_t>(i)] != 0;
        multiply(s.block->d(), m.dv + s.in, m.dv + s.out, true);
      }
      for (Eigen::Index i = 0; i < s.block->c().rows(); ++i)
        m.known[s.out + static_cast<std::size_t>(i)] = known ? 1 : 0;
    }
  }

 private:
  std::vector<System> systems_;
};

struct ScalarStateSpaceFamily final : KernelFamily {
  std::unique_ptr<Kernel> compile(std::span<const KernelSlot> run) const override {
    std::vector<ScalarStateSpaceKernel::System> systems;
    for (const KernelSlot& s : run) {
      const auto& b = static_cast<const StateSpace&>(*s.block);
      systems.push_back({s.in[0], s.out[0], s.x, b.a()(0, 0), b.b()(0, 0), b.c()(0, 0), b.d()(0, 0), b.has_d()});
    }
    return std::make_unique<ScalarStateSpaceKernel>(std::move(systems));
  }
  bool reads_input_derivatives(const Block& b) const noexcept override {
    return static_cast<const StateSpace&>(b).has_d();
  }
};

struct StateSpaceFamily final : KernelFamily {
  std::unique_ptr<Kernel> compile(std::span<const KernelSlot> run) const override {
    std::vector<StateSpaceKernel::System> systems;
    for (const KernelSlot& s : run) {
      const auto& b = static_cast<const StateSpace&>(*s.block);
      systems.push_back({&b, s.in[0], s.out[0], s.x, b.has_d()});
    }
    return std::make_unique<StateSpaceKernel>(std::move(systems));
  }
  bool reads_input_derivatives(const Block& b) const noexcept override {
    return static_cast<const StateSpace&>(b).has_d();
  }
};

}  // namespace

const KernelFamily* StateSpace::kernel_family() const noexcept {
  static const ScalarStateSpaceFamily scalar;
  static const StateSpaceFamily general;
  return scalar_ ? static_cast<const KernelFamily*>(&scalar) : &general;
}

void StateSpace::output(const BlockContext& c) const noexcept {
  if (scalar_) {
    c.y[0][0] = abcd_[2] * c.x[0];
    if (has_d_) c.y[0][0] += abcd_[3] * c.u[0][0];
    return;
  }
  multiply(c_, c.x.data(), c.y[0].data(), false);
  if (has_d_) multiply(d_, c.u[0].data(), c.y[0].data(), true);
}

void StateSpace::derivatives(const BlockContext& c, std::span<double> dx) const noexcept {
  if (scalar_) {
    dx[0] = abcd_[0] * c.x[0] + abcd_[1] * c.u[0][0];
    return;
  }
  multiply(a_, c.x.data(), dx.data(), false);
  multiply(b_, c.u[0].data(), dx.data(), true);
}

void StateSpace::output_derivatives(const BlockContext& c, std::span<const double> dx) const noexcept {
  bool known = true;
  if (scalar_) {
    c.dy[0][0] = abcd_[2] * dx[0];
    if (has_d_) {
      known = c.in_derivative_known(0);
      c.dy[0][0] += abcd_[3] * c.du[0][0];
    }
  } else {
    multiply(c_, dx.data(), c.dy[0].data(), false);
    if (has_d_) {
      known = c.in_derivative_known(0);
      multiply(d_, c.du[0].data(), c.dy[0].data(), true);
    }
  }
  for (auto& v : c.dy_valid[0]) v = known ? 1 : 0;
}

void transfer_function_to_state_space(const std::string& block, const Vector& num_in, const Vector& den_in,
                                      Eigen::MatrixXd& a, Eigen::MatrixXd& b, Eigen::MatrixXd& c, Eigen::MatrixXd& d) {
  // Leading zeros carry no information and would fake a higher order.
  auto strip = [](const Vector& v) {
    std::size_t first = 0;
    while (first + 1 < v.size() && v[first] == 0.0) ++first;
    return Vector(v.begin() + static_cast<std::ptrdiff_t>(first), v.end());
  };
  const Vector num = strip(num_in);
  const Vector den = strip(den_in);
  if (den.front() == 0.0)
    throw BlockError("block '" + block + "': den is zero — expected a non-zero polynomial", block, "den");
  if (num.size() > den.size()) {
    throw BlockError("block '" + block + "': the transfer function is improper (numerator degree " +
                         std::to_string(num.size() - 1) + " > denominator degree " + std::to_string(den.size() - 1) +
                         ") — expected deg(num) <= deg(den)",
                     block, "num");
  }
  const std::size_t n = den.size() - 1;
  Vector an(n + 1), bn(n + 1, 0.0);
  for (std::size_t i = 0; i <= n; ++i) an[i] = den[i] / den[0];
  for (std::size_t i = 0; i < num.size(); ++i) bn[n + 1 - num.size() + i] = num[i] / den[0];
  const auto N = static_cast<Eigen::Index>(n);
  a = Eigen::MatrixXd::Zero(N, N);
  b = Eigen::MatrixXd::Zero(N, 1);
  c = Eigen::MatrixXd::Zero(1, N);
  d = Eigen::MatrixXd::Constant(1, 1, bn[0]);
  for (Eigen::Index i = 0; i + 1 < N; ++i) a(i, i + 1) = 1.0;
  for (Eigen::Index j = 0; j < N; ++j) {
    // x_1 is the lowest derivative: last row holds -a_n ... -a_1.
    const auto k = static_cast<std::size_t>(N - j);
    if (N > 0) a(N - 1, j) = -an[k];
    c(0, j) = bn[k] - an[k] * bn[0];
  }
  if (N > 0) b(N - 1, 0) = 1.0;
}

void register_continuous_blocks(BlockRegistry& r) {
  r.add({"integrator",
         "y = integral of u, optionally between limits",
         {{"width", "integer", "1", "signals"},
          {"initial", "number or list", "0", "initial state"},
          {"lower", "number", "-inf", "lower limit"},
          {"upper", "number", "+inf", "upper limit"}},
         make_factory<Integrator>()});
  r.add({"state_space",
         "x' = A x + B u, y = C x + D u",
         {{"A", "matrix", "", "n x n"},
          {"B", "matrix", "", "n x m"},
          {"C", "matrix", "", "p x n"},
          {"D", "matrix", "zeros", "p x m"},
          {"initial", "list", "zeros", "x(0)"}},
         make_state_space});
  r.add({"transfer_function",
         "num(s)/den(s), coefficients in descending powers of s (proper)",
         {{"num", "list of numbers", "", "numerator"}, {"den", "list of numbers", "", "denominator"}},
         make_transfer_function});
  r.add(
      {"first_order_lag",
       "gain / (time_constant s + 1)",
       {{"gain", "number", "1", ""}, {"time_constant", "positive number", "", "s"}, {"initial", "number", "0", "y(0)"}},
       make_first_order_lag});
  r.add({"second_order",
         "gain wn^2 / (s^2 + 2 zeta wn s + wn^2)",
         {{"wn", "positive number", "", "natural frequency (rad/s)"},
          {"zeta", "number >= 0", "0.7", "damping"},
          {"gain", "number", "1", "static gain"},
          {"initial", "list of 2", "0, 0", "[y(0), y'(0)]"}},
         make_second_order});
}

}  // namespace rtcosim::tasks
