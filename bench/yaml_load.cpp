// The baseline of bench/scale_virtual.sh: yaml-cpp parsing a task-graph
// file and nothing else, so that `rtcosim check` of the same file is read as
// a ratio to the parse it cannot avoid.
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cstdio>
#include <exception>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: yaml_load FILE.yaml\n");
    return 2;
  }
  try {
    const auto start = std::chrono::steady_clock::now();
    const YAML::Node root = YAML::LoadFile(argv[1]);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%.3f s, %zu top-level keys\n", seconds, root.size());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "yaml_load: %s\n", e.what());
    return 1;
  }
  return 0;
}
