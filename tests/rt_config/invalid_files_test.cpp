// Every file under tests/rt_config/invalid/ is a task graph with one mistake
// and, in its first lines, the diagnostics the loader must give for it:
//
//   # expect: 7:12: error: task 'fast': 'period' = 40 has no unit — expected ...
//
// i.e. Diagnostic::str() without the file name. Each expected line must be
// reported exactly; an error the file does not expect is a failure too (one
// mistake, one message), warnings it does not list are allowed. A file that
// expects only warnings must load (ok()). "{block types}" stands for the
// built-in block types as the registry lists them, so the file does not go
// stale when a block type is added.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "rt_config/loader.hpp"
#include "tasks/block_registry.hpp"

#ifndef RTCOSIM_INVALID_DIR
#error "RTCOSIM_INVALID_DIR must name tests/rt_config/invalid"
#endif

namespace rtcosim::config {
namespace {

namespace fs = std::filesystem;

constexpr const char* kExpectPrefix = "# expect: ";

std::vector<std::string> invalid_files() {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(RTCOSIM_INVALID_DIR, ec)) {
    if (entry.is_regular_file() && entry.path().extension() == ".yaml") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string block_type_list() {
  std::string list;
  for (const auto& t : tasks::BlockRegistry::with_builtins().types()) list += (list.empty() ? "" : ", ") + t;
  return list;
}

// The leading "# expect: " lines of a file, placeholders expanded.
std::vector<std::string> expectations(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  std::string line;
  const std::string types = block_type_list();
  while (std::getline(in, line) && line.rfind(kExpectPrefix, 0) == 0) {
    std::string e = line.substr(std::string(kExpectPrefix).size());
    if (const auto at = e.find("{block types}"); at != std::string::npos) e.replace(at, 13, types);
    out.push_back(e);
  }
  return out;
}

// Diagnostic::str() without the leading "file:".
std::string without_file(const Diagnostic& d) {
  std::string s = d.str().substr(d.file.size());
  const auto start = s.find_first_not_of(": ");
  return start == std::string::npos ? std::string() : s.substr(start);
}

bool is_error(const std::string& shown) {
  return shown.rfind("error: ", 0) == 0 || shown.find(": error: ") != std::string::npos;
}

class InvalidFile : public ::testing::TestWithParam<std::string> {};

TEST_P(InvalidFile, GivesItsExpectedDiagnostic) {
  const std::string& path = GetParam();
  const auto expected = expectations(path);
  ASSERT_FALSE(expected.empty()) << path << " has no leading '" << kExpectPrefix << "' line";

  const LoadResult result = load_graph_file(path, LoadOptions{.cpu_count = 2});
  std::vector<std::string> shown;
  std::string all;
  for (const auto& d : result.diagnostics) {
    EXPECT_EQ(d.file, path);
    shown.push_back(without_file(d));
    all += "\n  " + shown.back();
  }
  const auto contains = [](const std::vector<std::string>& list, const std::string& item) {
    return std::find(list.begin(), list.end(), item) != list.end();
  };
  for (const auto& e : expected) {
    EXPECT_TRUE(contains(shown, e)) << "expected:\n  " << e << "\ngot:" << (all.empty() ? "\n  (nothing)" : all);
  }
  for (const auto& s : shown) {
    if (!is_error(s)) continue;
    EXPECT_TRUE(contains(expected, s)) << "an error the file does not expect:\n  " << s;
  }
  const bool expects_error = std::any_of(expected.begin(), expected.end(), is_error);
  EXPECT_EQ(result.ok(), !expects_error) << "diagnostics:" << all;
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = fs::path(info.param).stem().string();
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Files, InvalidFile, ::testing::ValuesIn(invalid_files()), test_name);

TEST(InvalidFiles, AtLeastFortyFiles) { EXPECT_GE(invalid_files().size(), 40u); }

TEST(InvalidFiles, AtLeastFortyOfThemAreErrors) {
  std::size_t errors = 0;
  for (const auto& path : invalid_files()) {
    const auto expected = expectations(path);
    if (std::any_of(expected.begin(), expected.end(), is_error)) ++errors;
  }
  EXPECT_GE(errors, 40u);
}

}  // namespace
}  // namespace rtcosim::config
