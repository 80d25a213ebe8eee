// The name a replay log gives the file it goes on in (issue 45, item 5):
// a file name in the log's own directory and nothing else. A log is read
// from wherever a user was sent it; a next name with a '/' in it ("../x",
// "/etc/x", "d/x") would make the replay open a file outside that
// directory. Refused naming the name, even where that file exists and is a
// valid continuation; the same log naming a plain name reads on.
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "runtime/replay_log.hpp"
#include "tests/support/graphs.hpp"
#include "tests/support/scratch.hpp"

namespace rtcosim::runtime {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSolo = R"(
name: solo
tasks:
  - {name: solo, period: 10ms, integrator: rk4}
blocks:
  - {name: wave, type: sine, task: solo, params: {frequency: 1}}
)";

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void spit(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << bytes;
}

std::string u32(std::uint32_t v) {
  std::string s(4, '\0');
  std::memcpy(s.data(), &v, 4);
  return s;
}

// A log of two files written as the daemon's rotation writes them: `first`
// goes on in `first`'s directory / `second`. Readings of a 10 ms task, a
// few in each file.
void write_chain(const fs::path& first, const std::string& second) {
  auto graph = rtcosim::testing::build_graph(
      rtcosim::testing::checked(config::load_graph_text(kSolo, (first.parent_path() / "solo.yaml").string())));
  ReplayLog log(*graph, first.string(), ReplayLog::Header{"solo.yaml", "sha", 0, "fake", "", {}});
  std::string why;
  ASSERT_TRUE(log.open(&why)) << why;
  std::int64_t t = 0;
  log.put(0, replay_word::time(t));
  for (int i = 0; i < 8; ++i) log.put(0, replay_word::time(t += 10'000'000));
  const fs::path next = first.parent_path() / second;
  const int fd = ::open(next.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0) << next;
  ASSERT_TRUE(log.rotate(fd, next.string(), &why)) << why;
  for (int i = 0; i < 8; ++i) log.put(0, replay_word::time(t += 10'000'000));
  ASSERT_TRUE(log.finish(&why)) << why;
}

// Rewrites the `next` record of `log` (record tag 4, then the name as a
// 32-bit length and its bytes) from `from` to `to`.
void rename_next(const fs::path& log, const std::string& from, const std::string& to) {
  std::string bytes = slurp(log);
  const std::string old_record = u32(4) + u32(static_cast<std::uint32_t>(from.size())) + from;
  const auto at = bytes.find(old_record);
  ASSERT_NE(at, std::string::npos) << "no next record naming " << from << " in " << log;
  ASSERT_EQ(bytes.find(old_record, at + 1), std::string::npos);
  bytes.replace(at, old_record.size(), u32(4) + u32(static_cast<std::uint32_t>(to.size())) + to);
  spit(log, bytes);
}

std::string load_error(const fs::path& log, std::size_t* files = nullptr) {
  try {
    const ReplayRecord r = ReplayRecord::load(log.string());
    if (files) *files = r.files.size();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

struct Scratch {
  fs::path dir = rtcosim::testing::test_scratch_dir("rtcosim_replay_names");
  ~Scratch() { fs::remove_all(dir); }
};

// The control: the chain as written reads both files; renamed to another
// plain name in the same directory, where the second file is, it still does.
TEST(ReplayNames, APlainNextNameInTheSameDirectoryReadsOn) {
  Scratch s;
  const fs::path first = s.dir / "run.rpl";
  write_chain(first, "run.1.rpl");
  std::size_t files = 0;
  EXPECT_EQ(load_error(first, &files), "");
  EXPECT_EQ(files, 2u);
  fs::rename(s.dir / "run.1.rpl", s.dir / "x");
  rename_next(first, "run.1.rpl", "x");
  files = 0;
  EXPECT_EQ(load_error(first, &files), "");
  EXPECT_EQ(files, 2u);
}

// A next name with a '/' is refused, naming the log and the name, though
// the file it names exists and continues the log: "../x" (the parent of
// the log's directory), "d/x" (a subdirectory), "/etc/x" and "/x"
// (absolute), "./x", "x/" and a lone "/".
TEST(ReplayNames, ANextNameWithASlashIsRefusedEvenWhereItsFileContinuesTheLog) {
  for (const std::string name : {"../x", "d/x", "/etc/x", "./x", "x/", "/", "/x", "../../../../../../../etc/x"}) {
    Scratch s;
    const fs::path logs = s.dir / "logs";
    fs::create_directories(logs / "d");
    const fs::path first = logs / "run.rpl";
    write_chain(first, "run.1.rpl");
    // The continuation where the name would lead, if it can be put there.
    if (name == "../x") fs::copy_file(logs / "run.1.rpl", s.dir / "x");
    if (name == "d/x") fs::copy_file(logs / "run.1.rpl", logs / "d" / "x");
    if (name == "./x") fs::copy_file(logs / "run.1.rpl", logs / "x");
    rename_next(first, "run.1.rpl", name);
    const std::string e = load_error(first);
    EXPECT_EQ(e, first.string() + ": not a complete replay log (the next file '" + name + "' is not a file name)")
        << name;
  }
}

// The names that are no file names without a '/': "", "." and "..".
TEST(ReplayNames, AnEmptyDotOrDotDotNextNameIsRefused) {
  for (const std::string name : {"", ".", ".."}) {
    Scratch s;
    const fs::path first = s.dir / "run.rpl";
    write_chain(first, "run.1.rpl");
    rename_next(first, "run.1.rpl", name);
    EXPECT_EQ(load_error(first),
              first.string() + ": not a complete replay log (the next file '" + name + "' is not a file name)")
        << "'" << name << "'";
  }
}

}  // namespace
}  // namespace rtcosim::runtime
