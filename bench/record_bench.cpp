// How fast the recording writer turns samples into each format, beside
// writing the same number of bytes to a plain file, and the file size per
// sample. One task records 4 signals (sines of different frequencies) for
// N frames in virtual time; the writer drains every 4096 frames, as
// `rtcosim run --virtual` does.
//
//   build/bin/record_bench [frames] [directory]     (default 1000000, /tmp)
//
// writer s = (run with the file) - (the same run draining into no file);
// samples/s = frames / writer s; raw s = write(2) of the file's size in
// 64 KiB blocks plus fsync; ratio = writer s / raw s; bytes/sample = file
// size / frames (a sample: the time and the 4 values, 40 bytes of doubles).
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include "rt_config/loader.hpp"
#include "runtime/column_file.hpp"
#include "runtime/graph.hpp"
#include "runtime/record_file.hpp"
#include "runtime/recorder.hpp"
#include "runtime/virtual_executor.hpp"
#include "tasks/block_registry.hpp"

namespace {

using namespace rtcosim;
namespace fs = std::filesystem;

constexpr const char* kGraph = R"(name: record_bench
realtime: off
tasks:
  - {name: a, period: 1ms, step: fixed, integrator: euler}
blocks:
  - {name: s1, type: sine, task: a, params: {frequency: 1}}
  - {name: s2, type: sine, task: a, params: {frequency: 3}}
  - {name: s3, type: sine, task: a, params: {frequency: 7}}
  - {name: s4, type: sine, task: a, params: {frequency: 13}}
wires: []
record: {signals: [s1.y, s2.y, s3.y, s4.y], file: unused.csv}
)";

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct Result {
  double writer_s = 0.0;
  std::uintmax_t bytes = 0;
};

// One run of `frames` frames writing into `format` (nullopt: no file).
Result run(std::optional<runtime::RecordFormat> format, std::uint64_t frames, const fs::path& path) {
  const auto loaded = config::load_graph_text(kGraph, "record_bench.yaml");
  const auto blocks = tasks::BlockRegistry::with_builtins();
  const auto methods = coupling::MethodRegistry::with_builtins();
  auto graph = runtime::Graph::build(loaded.graph, blocks, methods);
  runtime::Recorder recorder(*graph);
  std::string why;
  std::unique_ptr<runtime::RecordFile> csv;
  std::unique_ptr<runtime::ColumnFile> columns;
  if (format == runtime::RecordFormat::kCsv) {
    csv = runtime::RecordFile::create(path.string(), &why);
    recorder.write_header(*csv);
  } else if (format) {
    columns = runtime::ColumnFile::create(*format, path.string(),
                                          runtime::record_layout(*graph, recorder, kGraph, false), &why);
  }
  if (format && !csv && !columns) {
    std::fprintf(stderr, "record_bench: %s\n", why.c_str());
    std::exit(1);
  }
  runtime::VirtualExecutor executor(*graph);
  std::uint64_t n = 0;
  const auto drain = [&] {
    if (columns) {
      recorder.drain(*columns);
    } else {
      recorder.drain(csv.get());
    }
  };
  const auto t0 = std::chrono::steady_clock::now();
  executor.run(static_cast<double>(frames) * 1e-3, [&](runtime::TaskRuntime& t, const runtime::FrameRecord&) {
    recorder.sample(t);
    if (++n % 4096 == 0) drain();
  });
  if (columns) {
    recorder.finish(*columns);
  } else {
    recorder.finish(csv.get());
  }
  runtime::RecordTarget* file = columns ? static_cast<runtime::RecordTarget*>(columns.get()) : csv.get();
  if (file && !file->commit()) {
    std::fprintf(stderr, "record_bench: %s\n", file->error().c_str());
    std::exit(1);
  }
  Result r;
  r.writer_s = seconds_since(t0);
  if (file) r.bytes = fs::file_size(path);
  return r;
}

// write(2) of `bytes` in 64 KiB blocks, then fsync, as the writers' commit does.
double raw_write(std::uintmax_t bytes, const fs::path& path) {
  std::vector<char> block(64 << 10, 'x');
  const auto t0 = std::chrono::steady_clock::now();
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  for (std::uintmax_t done = 0; done < bytes;) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uintmax_t>(block.size(), bytes - done));
    if (::write(fd, block.data(), n) != static_cast<ssize_t>(n)) std::exit(1);
    done += n;
  }
  (void)::fsync(fd);
  ::close(fd);
  const double s = seconds_since(t0);
  fs::remove(path);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const std::uint64_t frames = argc > 1 ? std::stoull(argv[1]) : 1000000;
  const fs::path dir = argc > 2 ? argv[2] : "/tmp";
  const double none = run(std::nullopt, frames, {}).writer_s;
  std::printf("%llu frames of one task recording 4 signals; the run without a file: %.3f s\n",
              static_cast<unsigned long long>(frames), none);
  std::printf("%-6s %10s %14s %10s %8s %14s\n", "format", "writer s", "samples/s", "raw s", "ratio", "bytes/sample");
  for (const auto format : {runtime::RecordFormat::kCsv, runtime::RecordFormat::kHdf5, runtime::RecordFormat::kMat73,
                            runtime::RecordFormat::kMat5}) {
    const char* ext = format == runtime::RecordFormat::kCsv    ? ".csv"
                      : format == runtime::RecordFormat::kHdf5 ? ".h5"
                                                               : ".mat";
    const fs::path path = dir / (std::string("record_bench_") + runtime::to_string(format) + ext);
    const Result r = run(format, frames, path);
    const double writer = std::max(r.writer_s - none, 1e-9);
    const double raw = raw_write(r.bytes, dir / "record_bench_raw");
    std::printf("%-6s %10.3f %14.0f %10.3f %8.1f %14.2f\n", runtime::to_string(format), writer,
                static_cast<double>(frames) / writer, raw, writer / raw,
                static_cast<double>(r.bytes) / static_cast<double>(frames));
    fs::remove(path);
  }
  return 0;
}
