#pragma once
// The replay log's file format, shared by its writer (replay_log.cpp) and
// its reader (replay_record.cpp); docs/replay.md, "The log". Internal to
// runtime/.
#include <cstdint>

namespace rtcosim::runtime::replay_format {

constexpr char kMagic[8] = {'R', 'T', 'C', 'R', 'P', 'L', '0', '1'};
// kNext names the file the log goes on in (a rotation), before the trailer;
// kSegment, after a continued file's header, its place in the chain.
// kSources, after the header (and kSegment), the live plant sources.
// kHost: the host of a run across hosts (after the header).
// kFiles: the data files' SHA-256 (after the header).
enum Record : std::uint32_t {
  kWords = 1,
  kBatch = 2,
  kTrailer = 3,
  kNext = 4,
  kSegment = 5,
  kSources = 6,
  kHost = 7,
  kFiles = 8,
  kRun = 9
};
// Bounds a hostile or damaged file cannot exceed before we allocate.
constexpr std::uint64_t kMaxText = 1u << 20, kMaxUnits = 1u << 20, kMaxChunk = 1u << 26;

}  // namespace rtcosim::runtime::replay_format
