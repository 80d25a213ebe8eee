// Source blocks: outputs that are functions of time only, each with its
// exact time derivative.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numbers>

#include "tasks/block_registry.hpp"
#include "tasks/kernel.hpp"

namespace rtcosim::tasks {

namespace {

class Constant final : public Block {
 public:
  Constant(const std::string& name, const BlockParams& p) : Block(name, "constant"), value_(p.vector(name, "value")) {
    add_output("y", value_.size());
  }
  void output(const BlockContext& c) const noexcept override {
    for (std::size_t i = 0; i < value_.size(); ++i) c.out(0, i, value_[i]);
  }
  // A scalar constant is tunable (docs/sync.md): a load, an offset.
  std::span<const char* const> tunable_parameters() const noexcept override {
    static constexpr const char* kNames[] = {"value"};
    return value_.size() == 1 ? std::span<const char* const>(kNames) : std::span<const char* const>();
  }
  bool set_tunable(std::size_t index, double value) noexcept override {
    if (value_.size() != 1 || index != 0) return false;
    value_[0] = value;
    return true;
  }
  double tunable(std::size_t index) const noexcept override {
    return value_.size() == 1 && index == 0 ? value_[0] : 0.0;
  }
  void output_derivatives(const BlockContext& c, std::span<const double>) const noexcept override {
    for (std::size_t i = 0; i < value_.size(); ++i) c.out_derivative(0, i, 0.0);
  }
  const KernelFamily* kernel_family() const noexcept override {
    static const Family family;
    return &family;
  }

 private:
  // Every constant of a run: its values read from the block (a tuned value
  // takes effect as it does there), its derivatives known zeros.
  class Kernel final : public tasks::Kernel {
   public:
    struct Entry {
      const Constant* block;
      std::size_t out;
    };
    explicit Kernel(std::vector<Entry> entries) : entries_(std::move(entries)) {}
    void output(const FrameMemory& m, double) noexcept override {
      for (const Entry& e : entries_) std::copy(e.block->value_.begin(), e.block->value_.end(), m.v + e.out);
    }
    void output_derivatives(const FrameMemory& m, double, const double*) noexcept override {
      for (const Entry& e : entries_) {
        std::fill_n(m.dv + e.out, e.block->value_.size(), 0.0);
        std::fill_n(m.known + e.out, e.block->value_.size(), 1);
      }
    }

   private:
    std::vector<Entry> entries_;
  };
  struct Family final : KernelFamily {
    std::unique_ptr<tasks::Kernel> compile(std::span<const KernelSlot> run) const override {
      std::vector<Kernel::Entry> entries;
      for (const KernelSlot& s : run) entries.push_back({static_cast<const Constant*>(s.block), s.out[0]});
      return std::make_unique<Kernel>(std::move(entries));
    }
    bool reads_input_derivatives(const Block&) const noexcept override { return false; }
  };
  Vector value_;
};

// A step from `initial` to `final` at `time`. With `acceleration` it is the
// fastest motion whose |y''| stays within that bound (bang-bang: half the
// way at +a, half at -a), so y and y' are continuous.
class Step final : public Block {
 public:
  Step(const std::string& name, const BlockParams& p)
      : Block(name, "step"),
        start_(p.number(name, "time", 0.0)),
        initial_(p.number(name, "initial", 0.0)),
        final_(p.number(name, "final", 1.0)),
        acceleration_(p.non_negative(name, "acceleration", 0.0)) {
    add_output("y", 1);
    set_time_dependent();
    if (acceleration_ > 0.0) rise_ = 2.0 * std::sqrt(std::fabs(final_ - initial_) / acceleration_);
    // An ideal step jumps; an acceleration-limited one is continuous.
    set_jumps(acceleration_ <= 0.0 && final_ != initial_);
  }
  [[nodiscard]] double branch(const BlockContext& c) const noexcept override { return c.t >= start_ ? 1.0 : 0.0; }
  void output(const BlockContext& c) const noexcept override {
    double y = 0.0, dy = 0.0;
    evaluate(c.t, y, dy);
    c.out(0, 0, y);
  }
  void output_derivatives(const BlockContext& c, std::span<const double>) const noexcept override {
    double y = 0.0, dy = 0.0;
    evaluate(c.t, y, dy);
    c.out_derivative(0, 0, dy);
  }

 private:
  void evaluate(double t, double& y, double& dy) const noexcept {
    const double tau = t - start_;
    if (tau < 0.0) {
      y = initial_;
      dy = 0.0;
    } else if (acceleration_ <= 0.0 || tau >= rise_) {
      y = final_;
      dy = 0.0;
    } else {
      const double a = final_ >= initial_ ? acceleration_ : -acceleration_;
      if (tau < 0.5 * rise_) {
        y = initial_ + 0.5 * a * tau * tau;
        dy = a * tau;
      } else {
        const double rest = rise_ - tau;
        y = final_ - 0.5 * a * rest * rest;
        dy = a * rest;
      }
    }
  }
  double start_, initial_, final_, acceleration_;
  double rise_ = 0.0;
};

class Ramp final : public Block {
 public:
  Ramp(const std::string& name, const BlockParams& p)
      : Block(name, "ramp"),
        slope_(p.number(name, "slope", 1.0)),
        start_(p.number(name, "time", 0.0)),
        initial_(p.number(name, "initial", 0.0)) {
    add_output("y", 1);
    set_time_dependent();
  }
  void output(const BlockContext& c) const noexcept override {
    c.out(0, 0, initial_ + slope_ * std::max(0.0, c.t - start_));
  }
  void output_derivatives(const BlockContext& c, std::span<const double>) const noexcept override {
    c.out_derivative(0, 0, c.t >= start_ ? slope_ : 0.0);
  }

 private:
  double slope_, start_, initial_;
};

// Every sine of a run in one loop. A source is read at few distinct times
// per step (an AB-2 step reads its mid-frame value again in the next step,
// under the previous step's conditions): the kernel keeps the outputs of the
// last kRemembered times and copies them instead of calling sin again,
// which gives the same bits.
class SineKernel final : public Kernel {
 public:
  struct Wave {
    double amplitude, omega, phase, bias;
  };
  SineKernel(std::vector<std::size_t> out, std::vector<Wave> waves) : out_(std::move(out)), waves_(std::move(waves)) {
    for (auto& r : remembered_) r.assign(out_.size(), 0.0);
    times_.fill(std::numeric_limits<double>::quiet_NaN());
  }
  void output(const FrameMemory& m, double t) noexcept override {
    const std::size_t n = out_.size();
    for (std::size_t r = 0; r < kRemembered; ++r) {
      if (times_[r] != t) continue;
      const double* y = remembered_[r].data();
      for (std::size_t k = 0; k < n; ++k) m.v[out_[k]] = y[k];
      return;
    }
    next_ = (next_ + 1) % kRemembered;
    times_[next_] = t;
    double* y = remembered_[next_].data();
    for (std::size_t k = 0; k < n; ++k) {
      const Wave& w = waves_[k];
      y[k] = w.bias + w.amplitude * std::sin(w.omega * t + w.phase);
      m.v[out_[k]] = y[k];
    }
  }
  void output_derivatives(const FrameMemory& m, double t, const double*) noexcept override {
    for (std::size_t k = 0; k < out_.size(); ++k) {
      const Wave& w = waves_[k];
      m.dv[out_[k]] = w.amplitude * w.omega * std::cos(w.omega * t + w.phase);
      m.known[out_[k]] = 1;
    }
  }

 private:
  static constexpr std::size_t kRemembered = 3;
  std::vector<std::size_t> out_;
  std::vector<Wave> waves_;
  std::array<double, kRemembered> times_{};
  std::array<std::vector<double>, kRemembered> remembered_;
  std::size_t next_ = 0;
};

class Sine final : public Block {
 public:
  Sine(const std::string& name, const BlockParams& p)
      : Block(name, "sine"),
        amplitude_(p.number(name, "amplitude", 1.0)),
        omega_(2.0 * std::numbers::pi * p.non_negative(name, "frequency", 1.0)),
        phase_(p.number(name, "phase", 0.0)),
        bias_(p.number(name, "bias", 0.0)) {
    add_output("y", 1);
    set_time_dependent();
  }
  void output(const BlockContext& c) const noexcept override {
    c.out(0, 0, bias_ + amplitude_ * std::sin(omega_ * c.t + phase_));
  }
  void output_derivatives(const BlockContext& c, std::span<const double>) const noexcept override {
    c.out_derivative(0, 0, amplitude_ * omega_ * std::cos(omega_ * c.t + phase_));
  }
  const KernelFamily* kernel_family() const noexcept override {
    static const Family family;
    return &family;
  }

 private:
  struct Family final : KernelFamily {
    std::unique_ptr<Kernel> compile(std::span<const KernelSlot> run) const override {
      std::vector<std::size_t> out;
      std::vector<SineKernel::Wave> waves;
      for (const KernelSlot& s : run) {
        const auto& b = static_cast<const Sine&>(*s.block);
        out.push_back(s.out[0]);
        waves.push_back({b.amplitude_, b.omega_, b.phase_, b.bias_});
      }
      return std::make_unique<SineKernel>(std::move(out), std::move(waves));
    }
  };
  double amplitude_, omega_, phase_, bias_;
};

// Linear chirp: the frequency sweeps from f0 to f1 over `duration`, then
// stays at f1 with a continuous phase.
class Chirp final : public Block {
 public:
  Chirp(const std::string& name, const BlockParams& p)
      : Block(name, "chirp"),
        amplitude_(p.number(name, "amplitude", 1.0)),
        f0_(p.non_negative(name, "f0", 0.1)),
        f1_(p.non_negative(name, "f1", 10.0)),
        duration_(p.positive(name, "duration", 10.0)) {
    add_output("y", 1);
    set_time_dependent();
  }
  void output(const BlockContext& c) const noexcept override { c.out(0, 0, amplitude_ * std::sin(phase(c.t))); }
  void output_derivatives(const BlockContext& c, std::span<const double>) const noexcept override {
    const double t = std::max(0.0, c.t);
    const double f = t < duration_ ? f0_ + (f1_ - f0_) * t / duration_ : f1_;
    c.out_derivative(0, 0, amplitude_ * std::cos(phase(c.t)) * 2.0 * std::numbers::pi * f);
  }

 private:
  double phase(double t) const noexcept {
    t = std::max(0.0, t);
    const double sweep = std::min(t, duration_);
    double cycles = f0_ * sweep + 0.5 * (f1_ - f0_) * sweep * sweep / duration_;
    if (t > duration_) cycles += f1_ * (t - duration_);
    return 2.0 * std::numbers::pi * cycles;
  }
  double amplitude_, f0_, f1_, duration_;
};

}  // namespace

void register_source_blocks(BlockRegistry& r) {
  r.add({"constant",
         "a constant value (a list makes a vector output)",
         {{"value", "number or list of numbers", "", "the output"}},
         make_factory<Constant>()});
  r.add({"step",
         "a step from initial to final at a time, optionally acceleration-limited",
         {{"time", "number", "0", "step time (s)"},
          {"initial", "number", "0", "value before the step"},
          {"final", "number", "1", "value after the step"},
          {"acceleration", "number >= 0", "0", "max |y''|; 0 for an ideal step"}},
         make_factory<Step>()});
  r.add({"ramp",
         "initial + slope * (t - time) after a start time",
         {{"slope", "number", "1", "per second"},
          {"time", "number", "0", "start (s)"},
          {"initial", "number", "0", "value before the start"}},
         make_factory<Ramp>()});
  r.add({"sine",
         "bias + amplitude * sin(2 pi frequency t + phase)",
         {{"amplitude", "number", "1", ""},
          {"frequency", "number >= 0", "1", "Hz"},
          {"phase", "number", "0", "rad"},
          {"bias", "number", "0", ""}},
         make_factory<Sine>()});
  r.add({"chirp",
         "linear frequency sweep from f0 to f1 over a duration",
         {{"amplitude", "number", "1", ""},
          {"f0", "number >= 0", "0.1", "start frequency (Hz)"},
          {"f1", "number >= 0", "10", "end frequency (Hz)"},
          {"duration", "positive number", "10", "sweep time (s)"}},
         make_factory<Chirp>()});
}

}  // namespace rtcosim::tasks
