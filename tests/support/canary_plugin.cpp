// A "plugin" that does harm the moment it is loaded: its constructor runs
// before any entry point is looked up and writes the file named by
// RTCOSIM_CANARY. Tests use it to prove that a task-graph file cannot make
// rtcosim or rtcosimd load code from where it likes.
#include <cstdio>
#include <cstdlib>

namespace {

__attribute__((constructor)) void sing() {
  const char* path = std::getenv("RTCOSIM_CANARY");
  if (path == nullptr) return;
  if (std::FILE* f = std::fopen(path, "w")) {
    std::fputs("loaded\n", f);
    std::fclose(f);
  }
}

}  // namespace
