// Inputs the loader's fuzzer once found a crash, hang or leak with, kept
// under tests/fuzz/regressions/ (and fed back to the fuzzer as seeds): each
// must load to diagnostics, quickly (ctest's timeout catches a hang).
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "rt_config/loader.hpp"

namespace rtcosim::config {
namespace {

TEST(FuzzRegressions, EveryInputLoadsToDiagnostics) {
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(RTCOSIM_FUZZ_REGRESSIONS_DIR)) {
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    const auto loaded = load_graph_text(text.str(), entry.path().filename().string());
    EXPECT_FALSE(loaded.ok()) << entry.path();
    EXPECT_FALSE(loaded.diagnostics.empty()) << entry.path();
    ++files;
  }
  EXPECT_GE(files, 1u);
}

}  // namespace
}  // namespace rtcosim::config
