// Blocks for testing and benchmarking the runtime rather than modelling.
#include <time.h>

#include "tasks/block_registry.hpp"

namespace rtcosim::tasks {

namespace {

/*
 * cpu_load: burns `time` seconds of CPU (busy-waiting on CLOCK_MONOTONIC)
 * in every major step from simulation time `start` on, to give a task a
 * known execution time or, with a huge `time`, to make it hang (the
 * daemon's watchdog test). It has no ports. Busy-waiting is its purpose:
 * it never sleeps, locks or allocates.
 */
class CpuLoad final : public Block {
 public:
  CpuLoad(const std::string& name, const BlockParams& p)
      : Block(name, "cpu_load"), time_(p.non_negative(name, "time", 0.001)), start_(p.number(name, "start", 0.0)) {
    set_discrete_states(0);
    set_sample_time(kEveryMajorStep);
  }
  void output(const BlockContext&) const noexcept override {}
  void update(const BlockContext& c) const noexcept override {
    if (c.t < start_) return;
    const std::int64_t until = now_ns() + static_cast<std::int64_t>(time_ * 1e9);
    while (now_ns() < until) {
    }
  }

 private:
  static std::int64_t now_ns() noexcept {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
  }
  double time_, start_;
};

}  // namespace

void register_utility_blocks(BlockRegistry& r) {
  r.add({"cpu_load", "burns CPU time in every step (for tests and load benchmarks); no ports",
         {{"time", "number >= 0", "0.001", "seconds of CPU per step"},
          {"start", "number", "0", "simulation time from which it burns"}},
         make_factory<CpuLoad>()});
}

}  // namespace rtcosim::tasks
