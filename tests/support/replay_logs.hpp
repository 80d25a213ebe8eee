// Replay logs written by hand (runtime/replay_log.hpp), for the tests of
// what a replay makes of a log: the one-task graph they log, the readings of
// its cycles, the log itself, and what reading it threw.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/graph.hpp"
#include "runtime/replay_log.hpp"

namespace rtcosim::testing {

// One task, `period`, of one sine block, recorded: one thread, no links.
inline std::string solo_graph_text(const std::string& period = "10ms") {
  return R"(
name: solo
tasks:
  - {name: solo, period: )" +
         period + R"(, integrator: rk4}
blocks:
  - {name: wave, type: sine, task: solo, params: {frequency: 1}}
record: {signals: [wave.y], file: solo.csv}
)";
}

// The readings of `cycles` cycles of the solo task (10 ms, catch-up) whose
// loop never sleeps: its first reading, then per cycle its frame's start,
// integration point and end and the reading after it, the cycle k's four
// at (k + 1) × `spacing_ns` (each cycle starts after its release: no
// sleep, no reading after one).
inline std::vector<std::int64_t> overrunning_cycles(std::uint64_t cycles, std::int64_t spacing_ns) {
  std::vector<std::int64_t> t{0};
  for (std::uint64_t k = 0; k < cycles; ++k) {
    const std::int64_t at = static_cast<std::int64_t>(k + 1) * spacing_ns;
    for (std::int64_t i = 0; i < 4; ++i) t.push_back(at + i * 1000);
  }
  return t;
}

// The header of a run "until stopped" on a fake clock, of no file.
inline runtime::ReplayLog::Header fake_clock_header() { return {"fake.yaml", "sha", 0, "fake", "", {}}; }

// A log of `graph` at `path` whose first thread read the clock at
// `readings`, then one drain with a batch mark of `batch` (one count per
// recorded task; none: no mark). Returns `path`.
inline std::filesystem::path write_replay_log(runtime::Graph& graph, const std::filesystem::path& path,
                                              const std::vector<std::int64_t>& readings,
                                              const runtime::ReplayLog::Header& header = fake_clock_header(),
                                              std::span<const std::uint64_t> batch = {}) {
  runtime::ReplayLog log(graph, path.string(), header);
  std::string why;
  EXPECT_TRUE(log.open(&why)) << why;
  // Drained as the run's drainer does, every so many words: a thread's ring
  // holds about a second of its words, not the whole of a long log.
  std::size_t since_drain = 0;
  for (const std::int64_t t : readings) {
    log.put(0, runtime::replay_word::time(t));
    if (++since_drain == 1024) {
      log.drain();
      since_drain = 0;
    }
  }
  log.drain(batch);
  EXPECT_TRUE(log.finish(&why)) << why;
  return path;
}

// What `f` threw, or "(nothing thrown)".
inline std::string thrown_by(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(nothing thrown)";
}

}  // namespace rtcosim::testing
