#pragma once

#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <unistd.h>

namespace rtcosim::testing {

// A fresh, empty directory for the running test: PREFIX_<pid>_<test name>
// under the system's temporary directory, so that parallel test processes
// and reruns never share files.
inline std::filesystem::path test_scratch_dir(const std::string& prefix) {
  const auto dir =
      std::filesystem::temp_directory_path() /
      (prefix + "_" + std::to_string(getpid()) + "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace rtcosim::testing
