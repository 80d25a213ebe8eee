#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

namespace rtcosim::tasks {

class Block;

/*
 * FrameMemory: the arrays of one partition that an evaluation reads and
 * writes, as raw pointers (docs/frame-program.md). `v`, `dv` and `known`
 * hold every signal of the partition: the block outputs first, then the
 * external inputs; a wire inside the partition is an offset into them, never
 * a copy. `x` is the continuous state the evaluation sees (an integrator
 * stage's), `xd` the discrete state.
 * Owned by the Partition; valid for the partition's life.
 */
struct FrameMemory {
  double* v = nullptr;
  double* dv = nullptr;
  unsigned char* known = nullptr;
  const double* x = nullptr;
  double* xd = nullptr;
};

/*
 * KernelSlot: where one block of a run lives in the partition's memory, for
 * its family to compile: per input port the offset of the signals that
 * drive it, per output port the offset of its signals, the offsets of its
 * continuous and discrete states. Set-up data; a kernel copies what it needs.
 */
struct KernelSlot {
  const Block* block = nullptr;
  std::vector<std::size_t> in;
  std::vector<std::size_t> out;
  std::size_t x = 0;
  std::size_t xd = 0;
};

/*
 * Kernel: a run of blocks of one type evaluated in one loop over index
 * arrays. Each function does for every block of the run exactly what the
 * block's own Block function does, with the same floating-point operations
 * in the same order, so that a compiled partition's results are bit for bit
 * those of the block-by-block evaluation.
 *
 * RT-safe: every function is noexcept, allocation-free and lock-free; the
 * kernel owns its index and parameter arrays, sized when it is compiled.
 * `output` may be called at any time point in any order (a source kernel may
 * remember recent points, as long as what it returns is what it would have
 * computed).
 */
class Kernel {
 public:
  virtual ~Kernel() = default;
  // Outputs at time t from the inputs and states in `m` (Block::output).
  virtual void output(const FrameMemory& m, double t) noexcept = 0;
  // State derivatives into dx, indexed like the partition's state
  // (Block::derivatives); nothing for a run without states.
  virtual void derivatives(const FrameMemory& m, double t, double* dx) noexcept { (void)m, (void)t, (void)dx; }
  // Output time derivatives and their known flags (Block::output_derivatives).
  virtual void output_derivatives(const FrameMemory& m, double t, const double* dx) noexcept = 0;
};

/*
 * KernelFamily: what a block type offers to be compiled with others of its
 * type (Block::kernel_family). `compile` gets a run of blocks that all
 * returned this family, with their slots, and returns one kernel for the
 * run. Set-up only: may allocate and throw.
 *
 * A block whose family is null, or that has discrete states, a sample time,
 * events, jumps, state-only ports or can fail, is compiled as a kernel of one
 * that calls its virtual functions.
 */
class KernelFamily {
 public:
  virtual ~KernelFamily() = default;
  [[nodiscard]] virtual std::unique_ptr<Kernel> compile(std::span<const KernelSlot> run) const = 0;
  // True when `block`'s kernel reads its inputs' derivatives (`dv`, `known`
  // at its input offsets). A kernel reads them only in output_derivatives,
  // so they are computed only where its own are consumed.
  [[nodiscard]] virtual bool reads_input_derivatives(const Block& block) const noexcept {
    (void)block;
    return true;
  }
};

}  // namespace rtcosim::tasks
