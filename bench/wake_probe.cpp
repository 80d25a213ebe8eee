// The middle column of bench/latency_vs_cyclictest.sh: rtcosim's own clock
// (MonotonicClock: clock_nanosleep TIMER_ABSTIME, then clock_gettime) in a
// bare periodic loop under the same real-time set-up as a run (mlockall,
// /dev/cpu_dma_latency held at 0, SCHED_FIFO, pinned), with no frame work.
// Between cyclictest and rtcosim it tells whether extra wake-up latency
// comes from the clock calls or from the work a frame does between
// wake-ups. Prints one latency (ns) per wake-up.
//   wake_probe PERIOD_US LOOPS CPU PRIORITY
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include "runtime/unit_loop.hpp"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: wake_probe PERIOD_US LOOPS CPU PRIORITY\n");
    return 2;
  }
  const std::int64_t period_ns = std::atoll(argv[1]) * 1000;
  const long loops = std::atol(argv[2]);
  const int cpu = std::atoi(argv[3]);
  sched_param param{};
  param.sched_priority = std::atoi(argv[4]);
  if (period_ns <= 0 || loops <= 0) {
    std::fprintf(stderr, "wake_probe: PERIOD_US and LOOPS must be positive\n");
    return 2;
  }
  std::vector<std::int64_t> latency(static_cast<std::size_t>(loops));
  if (mlockall(MCL_CURRENT | MCL_FUTURE) != 0) std::perror("wake_probe: mlockall");
  const int dma = open("/dev/cpu_dma_latency", O_WRONLY | O_CLOEXEC);
  const std::int32_t zero = 0;
  if (dma < 0 || write(dma, &zero, sizeof zero) != sizeof zero) std::perror("wake_probe: /dev/cpu_dma_latency");
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0) std::fprintf(stderr, "wake_probe: cannot pin\n");
  if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &param) != 0) {
    std::fprintf(stderr, "wake_probe: cannot set SCHED_FIFO (run as root)\n");
    return 1;
  }
  rtcosim::runtime::MonotonicClock clock;
  std::int64_t release = clock.now() + period_ns;
  for (auto& l : latency) {
    clock.sleep_until(release);
    l = clock.now() - release;
    release += period_ns;
  }
  for (const auto l : latency) std::printf("%lld\n", static_cast<long long>(l));
  return 0;
}
