// Instructions and cache misses per signal per frame pair, for cachegrind
// (perf has no counters in this VM): runs FRAMES frame pairs of the
// signal_bench graph of S sines -> S lags after 20 warm-up pairs. Two runs
// with different FRAMES, subtracted, leave the frames' cost alone
// (bench/frame_cost.sh does that):
//   valgrind --tool=cachegrind build/bin/frame_cost 640 200 [block-by-block]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

#include "bench/frames.hpp"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: frame_cost S FRAMES [block-by-block]\n");
    return 2;
  }
  const int signals = std::atoi(argv[1]);
  const int frames = std::atoi(argv[2]);
  const bool compiled = !(argc > 3 && std::strcmp(argv[3], "block-by-block") == 0);
  try {
    auto g = rtcosim::bench::make_graph(rtcosim::bench::sine_lag_graph(signals), compiled);
    auto& producer = *g->find_task("producer");
    auto& consumer = *g->find_task("consumer");
    for (int n = 0; n < 20 + frames; ++n) rtcosim::bench::frame_pair(producer, consumer, 1e-3);
    std::printf("%d frame pairs of %d signals, state[0] %.17g\n", frames, signals, consumer.partition().state()[0]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "frame_cost: %s\n", e.what());
    return 1;
  }
  return 0;
}
