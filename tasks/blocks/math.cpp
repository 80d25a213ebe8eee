// Memoryless arithmetic and routing blocks. Each passes time derivatives on
// by the chain rule when its inputs' derivatives are known.
#include <algorithm>
#include <cmath>

#include "tasks/block_registry.hpp"
#include "tasks/kernel.hpp"

namespace rtcosim::tasks {

namespace {

class Gain;

// Every gain of a run: y = K u over the signal memory, the block's own
// arithmetic (Gain::apply) on raw pointers. K is read from the block each
// time, so that a tuned gain (set_tunable) takes effect as it does there.
class GainKernel final : public Kernel {
 public:
  struct Entry {
    const Gain* gain;
    std::size_t in, out, cols, rows;
  };
  explicit GainKernel(std::vector<Entry> entries) : entries_(std::move(entries)) {}
  void output(const FrameMemory& m, double t) noexcept override;
  void output_derivatives(const FrameMemory& m, double t, const double* dx) noexcept override;

 private:
  std::vector<Entry> entries_;
};

// y = K u: K a scalar (any width) or a matrix (rows x cols).
class Gain final : public Block {
 public:
  Gain(const std::string& name, const BlockParams& p) : Block(name, "gain") {
    const Matrix k = p.matrix(name, "gain");
    rows_ = k.size();
    cols_ = k.front().size();
    for (const auto& row : k) gain_.insert(gain_.end(), row.begin(), row.end());
    scalar_ = rows_ == 1 && cols_ == 1;
    const std::size_t width = scalar_ ? p.count(name, "width", 1, 1, 1u << 20) : cols_;
    if (scalar_) rows_ = cols_ = width;
    add_input("u", cols_);
    add_output("y", rows_);
  }
  // A scalar gain is tunable (docs/sync.md); a matrix is not.
  std::span<const char* const> tunable_parameters() const noexcept override {
    static constexpr const char* kNames[] = {"gain"};
    return scalar_ ? std::span<const char* const>(kNames) : std::span<const char* const>();
  }
  bool set_tunable(std::size_t index, double value) noexcept override {
    if (!scalar_ || index != 0) return false;
    gain_[0] = value;
    return true;
  }
  double tunable(std::size_t index) const noexcept override { return scalar_ && index == 0 ? gain_[0] : 0.0; }
  void output(const BlockContext& c) const noexcept override { apply(c.u[0].data(), c.y[0].data()); }
  void output_derivatives(const BlockContext& c, std::span<const double>) const noexcept override {
    apply(c.du[0].data(), c.dy[0].data());
    const bool known = c.in_derivative_known(0);
    for (auto& v : c.dy_valid[0]) v = known ? 1 : 0;
  }
  const KernelFamily* kernel_family() const noexcept override {
    static const Family family;
    return &family;
  }

  void apply(const double* u, double* y) const noexcept {
    if (scalar_) {
      for (std::size_t i = 0; i < rows_; ++i) y[i] = gain_[0] * u[i];
      return;
    }
    for (std::size_t r = 0; r < rows_; ++r) {
      double acc = 0.0;
      for (std::size_t k = 0; k < cols_; ++k) acc += gain_[r * cols_ + k] * u[k];
      y[r] = acc;
    }
  }

 private:
  struct Family final : KernelFamily {
    std::unique_ptr<Kernel> compile(std::span<const KernelSlot> run) const override {
      std::vector<GainKernel::Entry> entries;
      for (const KernelSlot& s : run) {
        const auto& g = static_cast<const Gain&>(*s.block);
        entries.push_back({&g, s.in[0], s.out[0], g.cols_, g.rows_});
      }
      return std::make_unique<GainKernel>(std::move(entries));
    }
  };
  Vector gain_;
  std::size_t rows_ = 1, cols_ = 1;
  bool scalar_ = true;
};

void GainKernel::output(const FrameMemory& m, double) noexcept {
  for (const Entry& e : entries_) e.gain->apply(m.v + e.in, m.v + e.out);
}

void GainKernel::output_derivatives(const FrameMemory& m, double, const double*) noexcept {
  for (const Entry& e : entries_) {
    e.gain->apply(m.dv + e.in, m.dv + e.out);
    bool known = true;
    for (std::size_t i = 0; i < e.cols; ++i) known = known && m.known[e.in + i] != 0;
    for (std::size_t i = 0; i < e.rows; ++i) m.known[e.out + i] = known ? 1 : 0;
  }
}

// y = sum of s_i u_i with signs from a text like "+-+" (default "++").
class Sum final : public Block {
 public:
  Sum(const std::string& name, const BlockParams& p) : Block(name, "sum") {
    const std::string signs = p.text(name, "signs", "++");
    if (signs.empty() || signs.find_first_not_of("+-") != std::string::npos) {
      throw BlockError("block '" + name + "': parameter 'signs' = '" + signs +
                           "' — expected a text of '+' and '-', one per input (e.g. \"+-\")",
                       name, "signs");
    }
    width_ = p.count(name, "width", 1, 1, 1u << 20);
    for (std::size_t i = 0; i < signs.size(); ++i) {
      signs_.push_back(signs[i] == '+' ? 1.0 : -1.0);
      add_input("u" + std::to_string(i + 1), width_);
    }
    add_output("y", width_);
  }
  void output(const BlockContext& c) const noexcept override {
    for (std::size_t i = 0; i < width_; ++i) {
      double acc = 0.0;
      for (std::size_t k = 0; k < signs_.size(); ++k) acc += signs_[k] * c.u[k][i];
      c.out(0, i, acc);
    }
  }
  void output_derivatives(const BlockContext& c, std::span<const double>) const noexcept override {
    for (std::size_t i = 0; i < width_; ++i) {
      double acc = 0.0;
      bool known = true;
      for (std::size_t k = 0; k < signs_.size(); ++k) {
        acc += signs_[k] * c.du[k][i];
        known = known && c.du_valid[k][i] != 0;
      }
      c.out_derivative(0, i, acc, known);
    }
  }
  const KernelFamily* kernel_family() const noexcept override {
    static const Family family;
    return &family;
  }

 private:
  // Every sum of a run, the block's arithmetic over the signal memory: per
  // block its inputs' offsets and signs, flattened.
  class Kernel final : public tasks::Kernel {
   public:
    struct Entry {
      std::size_t first_term, terms, out, width;
    };
    Kernel(std::vector<Entry> entries, std::vector<std::size_t> in, std::vector<double> signs)
        : entries_(std::move(entries)), in_(std::move(in)), signs_(std::move(signs)) {}
    void output(const FrameMemory& m, double) noexcept override {
      for (const Entry& e : entries_) {
        for (std::size_t i = 0; i < e.width; ++i) {
          double acc = 0.0;
          for (std::size_t k = e.first_term; k < e.first_term + e.terms; ++k) acc += signs_[k] * m.v[in_[k] + i];
          m.v[e.out + i] = acc;
        }
      }
    }
    void output_derivatives(const FrameMemory& m, double, const double*) noexcept override {
      for (const Entry& e : entries_) {
        for (std::size_t i = 0; i < e.width; ++i) {
          double acc = 0.0;
          bool known = true;
          for (std::size_t k = e.first_term; k < e.first_term + e.terms; ++k) {
            acc += signs_[k] * m.dv[in_[k] + i];
            known = known && m.known[in_[k] + i] != 0;
          }
          m.dv[e.out + i] = acc;
          m.known[e.out + i] = known ? 1 : 0;
        }
      }
    }

   private:
    std::vector<Entry> entries_;
    std::vector<std::size_t> in_;
    std::vector<double> signs_;
  };
  struct Family final : KernelFamily {
    std::unique_ptr<tasks::Kernel> compile(std::span<const KernelSlot> run) const override {
      std::vector<Kernel::Entry> entries;
      std::vector<std::size_t> in;
      std::vector<double> signs;
      for (const KernelSlot& s : run) {
        const auto& b = static_cast<const Sum&>(*s.block);
        entries.push_back({in.size(), b.signs_.size(), s.out[0], b.width_});
        in.insert(in.end(), s.in.begin(), s.in.end());
        signs.insert(signs.end(), b.signs_.begin(), b.signs_.end());
      }
      return std::make_unique<Kernel>(std::move(entries), std::move(in), std::move(signs));
    }
  };
  Vector signs_;
  std::size_t width_ = 1;
};

// Element-wise product (or quotient, with "*/" style ops) of its inputs.
class Product final : public Block {
 public:
  Product(const std::string& name, const BlockParams& p) : Block(name, "product") {
    const std::string ops = p.text(name, "ops", "**");
    if (ops.empty() || ops.find_first_not_of("*/") != std::string::npos) {
      throw BlockError("block '" + name + "': parameter 'ops' = '" + ops +
                           "' — expected a text of '*' and '/', one per input (e.g. \"**\" or \"*/\")",
                       name, "ops");
    }
    width_ = p.count(name, "width", 1, 1, 1u << 20);
    for (std::size_t i = 0; i < ops.size(); ++i) {
      divide_.push_back(ops[i] == '/');
      add_input("u" + std::to_string(i + 1), width_);
    }
    add_output("y", width_);
  }
  void output(const BlockContext& c) const noexcept override {
    for (std::size_t i = 0; i < width_; ++i) {
      double acc = 1.0;
      for (std::size_t k = 0; k < divide_.size(); ++k) acc = divide_[k] ? acc / c.u[k][i] : acc * c.u[k][i];
      c.out(0, i, acc);
    }
  }
  // d(prod)/dt = prod * sum(+-u_k'/u_k): the logarithmic derivative, valid
  // while no factor is zero; otherwise flagged unknown.
  void output_derivatives(const BlockContext& c, std::span<const double>) const noexcept override {
    for (std::size_t i = 0; i < width_; ++i) {
      double sum = 0.0;
      bool known = true;
      for (std::size_t k = 0; k < divide_.size(); ++k) {
        const double u = c.u[k][i];
        known = known && c.du_valid[k][i] != 0 && u != 0.0;
        if (u != 0.0) sum += (divide_[k] ? -1.0 : 1.0) * c.du[k][i] / u;
      }
      c.out_derivative(0, i, known ? c.y[0][i] * sum : 0.0, known);
    }
  }

 private:
  std::vector<bool> divide_;
  std::size_t width_ = 1;
};

// y = u1 when the control input meets the criterion, else u3 (inputs u1,
// control, u3 as in the usual switch block).
class Switch final : public Block {
 public:
  Switch(const std::string& name, const BlockParams& p) : Block(name, "switch") {
    threshold_ = p.number(name, "threshold", 0.0);
    const std::string criterion = p.text(name, "criterion", ">=");
    if (criterion == ">=") {
      mode_ = 0;
    } else if (criterion == ">") {
      mode_ = 1;
    } else if (criterion == "!=") {
      mode_ = 2;
    } else {
      throw BlockError(
          "block '" + name + "': parameter 'criterion' = '" + criterion + "' — expected \">=\", \">\" or \"!=\"", name,
          "criterion");
    }
    width_ = p.count(name, "width", 1, 1, 1u << 20);
    add_input("u1", width_);
    add_input("control", 1);
    add_input("u3", width_);
    add_output("y", width_);
    set_jumps();
  }
  [[nodiscard]] double branch(const BlockContext& c) const noexcept override { return pass_first(c.in(1)) ? 1.0 : 0.0; }
  void output(const BlockContext& c) const noexcept override {
    const std::size_t port = pass_first(c.in(1)) ? 0 : 2;
    for (std::size_t i = 0; i < width_; ++i) c.out(0, i, c.u[port][i]);
  }
  void output_derivatives(const BlockContext& c, std::span<const double>) const noexcept override {
    const std::size_t port = pass_first(c.in(1)) ? 0 : 2;
    for (std::size_t i = 0; i < width_; ++i) c.out_derivative(0, i, c.du[port][i], c.du_valid[port][i] != 0);
  }

 private:
  bool pass_first(double control) const noexcept {
    switch (mode_) {
      case 0:
        return control >= threshold_;
      case 1:
        return control > threshold_;
      default:
        return control != threshold_;
    }
  }
  double threshold_ = 0.0;
  int mode_ = 0;
  std::size_t width_ = 1;
};

// The `widths` of mux and demux: positive integers, [1, 1] by default.
std::vector<std::size_t> port_widths(const std::string& name, const BlockParams& p) {
  std::vector<std::size_t> out;
  for (double w : p.vector_if(name, "widths").value_or(Vector{1, 1})) {
    if (w < 1 || w != std::floor(w) || w > 1e6) {
      throw BlockError(
          "block '" + name + "': parameter 'widths' holds " + describe(w) + " — expected positive integers", name,
          "widths");
    }
    out.push_back(static_cast<std::size_t>(w));
  }
  return out;
}

// Concatenates its inputs (widths from `widths`, default two scalars).
class Mux final : public Block {
 public:
  Mux(const std::string& name, const BlockParams& p) : Block(name, "mux") {
    std::size_t total = 0;
    const auto widths = port_widths(name, p);
    for (std::size_t i = 0; i < widths.size(); ++i) {
      add_input("u" + std::to_string(i + 1), widths[i]);
      total += widths[i];
    }
    add_output("y", total);
  }
  void output(const BlockContext& c) const noexcept override {
    std::size_t k = 0;
    for (const auto& u : c.u) {
      for (double v : u) c.y[0][k++] = v;
    }
  }
  void output_derivatives(const BlockContext& c, std::span<const double>) const noexcept override {
    std::size_t k = 0;
    for (std::size_t p = 0; p < c.du.size(); ++p) {
      for (std::size_t i = 0; i < c.du[p].size(); ++i, ++k) c.out_derivative(0, k, c.du[p][i], c.du_valid[p][i] != 0);
    }
  }
};

// Splits its input into outputs y1, y2, ... of the given widths.
class Demux final : public Block {
 public:
  Demux(const std::string& name, const BlockParams& p) : Block(name, "demux") {
    std::size_t total = 0;
    const auto widths = port_widths(name, p);
    for (std::size_t i = 0; i < widths.size(); ++i) {
      add_output("y" + std::to_string(i + 1), widths[i]);
      total += widths[i];
    }
    add_input("u", total);
  }
  void output(const BlockContext& c) const noexcept override {
    std::size_t k = 0;
    for (const auto& y : c.y) {
      for (double& v : y) v = c.u[0][k++];
    }
  }
  void output_derivatives(const BlockContext& c, std::span<const double>) const noexcept override {
    std::size_t k = 0;
    for (std::size_t p = 0; p < c.dy.size(); ++p) {
      for (std::size_t i = 0; i < c.dy[p].size(); ++i, ++k) c.out_derivative(p, i, c.du[0][k], c.du_valid[0][k] != 0);
    }
  }
};

}  // namespace

void register_math_blocks(BlockRegistry& r) {
  r.add({"gain",
         "y = K u (K a number, or a matrix of rows)",
         {{"gain", "number or matrix", "", "K"}, {"width", "integer", "1", "signals, for a scalar gain"}},
         make_factory<Gain>()});
  r.add({"sum",
         "y = sum of the inputs with signs",
         {{"signs", "text of + and -", "++", "one per input u1, u2, ..."}, {"width", "integer", "1", "signals"}},
         make_factory<Sum>()});
  r.add({"product",
         "element-wise product or quotient of the inputs",
         {{"ops", "text of * and /", "**", "one per input"}, {"width", "integer", "1", "signals"}},
         make_factory<Product>()});
  r.add({"switch",
         "y = u1 if control meets the criterion against the threshold, else u3",
         {{"threshold", "number", "0", ""},
          {"criterion", "text", ">=", "\">=\", \">\" or \"!=\""},
          {"width", "integer", "1", "signals"}},
         make_factory<Switch>()});
  r.add({"mux",
         "concatenates inputs u1, u2, ... into one vector",
         {{"widths", "list of integers", "[1, 1]", "width of each input"}},
         make_factory<Mux>()});
  r.add({"demux",
         "splits one vector into outputs y1, y2, ...",
         {{"widths", "list of integers", "[1, 1]", "width of each output"}},
         make_factory<Demux>()});
}

}  // namespace rtcosim::tasks
