// Reading a replay log back (ReplayRecord::load): every count checked
// against the bytes left before anything is allocated, a rotated log's
// files followed in order, impossible readings refused.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <stdexcept>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/replay_format.hpp"
#include "runtime/replay_log.hpp"

namespace rtcosim::runtime {

using namespace replay_format;

namespace {

// What a file that is not a regular one is, for the refusal.
const char* file_kind(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

// One file of the log, read through its descriptor with a buffer of its
// own. Only a regular file is read: a FIFO would block the read (or, with
// O_NONBLOCK, end it early) and a device can be endless, so anything else
// is refused by what it is, before it is opened (stat) and again once it
// is (fstat: the name may have been swapped in between; O_NONBLOCK keeps
// that open from waiting for a FIFO's writer). A chain's next file is one
// the writer made in its directory, never a symbolic link (O_NOFOLLOW);
// the first one, given by hand, may be one.
struct Reader {
  int fd = -1;
  std::string path;
  std::uint64_t size = 0, pos = 0;  // the file's bytes when opened; the bytes read so far
  std::vector<char> buffer;
  std::size_t at = 0, end = 0;  // the unread bytes of `buffer`

  Reader(std::string p, bool chained, const std::string& previous) : path(std::move(p)) {
    const std::string goes_on = chained ? " (" + previous + " goes on in it)" : std::string();
    auto refuse = [&](const std::string& what) {
      throw std::runtime_error("cannot open the replay log '" + path + "': " + what + goes_on);
    };
    struct stat st {};
    if ((chained ? ::lstat(path.c_str(), &st) : ::stat(path.c_str(), &st)) == 0 && !S_ISREG(st.st_mode)) {
      refuse(std::string(file_kind(st.st_mode)) + ", not a regular file");
    }
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | (chained ? O_NOFOLLOW : 0));
    if (fd < 0) refuse(errno == ELOOP && chained ? "a symbolic link, not a regular file" : std::strerror(errno));
    if (::fstat(fd, &st) != 0) {
      const int e = errno;
      ::close(fd);
      refuse(std::strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(fd);
      refuse(std::string(file_kind(st.st_mode)) + ", not a regular file");
    }
    size = static_cast<std::uint64_t>(st.st_size);
    buffer.resize(1u << 16);
  }
  ~Reader() { ::close(fd); }
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  [[noreturn]] void bad(const std::string& what) const {
    throw std::runtime_error(path + ": not a complete replay log (" + what + ")");
  }
  bool raw(void* data, std::size_t n) {
    char* out = static_cast<char*>(data);
    while (n > 0) {
      if (at == end) {
        // A large read goes straight into its place.
        if (n >= buffer.size()) {
          const ssize_t got = ::read(fd, out, n);
          if (got < 0 && errno == EINTR) continue;
          if (got <= 0) return false;
          out += got;
          n -= static_cast<std::size_t>(got);
          pos += static_cast<std::uint64_t>(got);
          continue;
        }
        const ssize_t got = ::read(fd, buffer.data(), buffer.size());
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return false;
        at = 0;
        end = static_cast<std::size_t>(got);
      }
      const std::size_t k = std::min(n, end - at);
      std::memcpy(out, buffer.data() + at, k);
      at += k;
      out += k;
      n -= k;
      pos += k;
    }
    return true;
  }
  std::uint32_t u32(const char* what) {
    std::uint32_t v = 0;
    if (!raw(&v, 4)) bad(std::string("ends inside ") + what);
    return v;
  }
  std::uint64_t u64(const char* what) {
    std::uint64_t v = 0;
    if (!raw(&v, 8)) bad(std::string("ends inside ") + what);
    return v;
  }
  std::string text(const char* what) {
    const std::uint32_t n = u32(what);
    if (n > kMaxText || n > left()) bad(std::string(what) + " of " + std::to_string(n) + " bytes");
    std::string s(n, '\0');
    if (!raw(s.data(), n)) bad(std::string("ends inside ") + what);
    return s;
  }
  // Bytes left in the file: a count is checked against it before anything
  // is allocated for it, so a damaged or hostile header cannot ask for more
  // memory than the file could fill.
  [[nodiscard]] std::uint64_t left() const noexcept { return size > pos ? size - pos : 0; }
  void words(std::vector<std::uint64_t>& out, std::uint64_t n, const char* what) {
    if (n > kMaxChunk || n * 8 > left()) bad(std::string(what) + " of " + std::to_string(n) + " words");
    const std::size_t at_end = out.size();
    out.resize(at_end + n);
    if (!raw(out.data() + at_end, n * 8)) bad(std::string("ends inside ") + what);
  }
};

}  // namespace

namespace {

// One file's header: the graph, the threads and their bundles.
struct FileHeader {
  ReplayLog::Header header;
  std::vector<std::vector<std::string>> unit_tasks;
  std::vector<std::vector<ReplayMemberLinks>> unit_links;
};

FileHeader read_header(Reader& r) {
  char magic[sizeof kMagic];
  if (!r.raw(magic, sizeof magic) || std::memcmp(magic, kMagic, sizeof kMagic) != 0) {
    throw std::runtime_error(r.path + ": not a replay log (written by `rtcosim run --replay-log`)");
  }
  FileHeader h;
  h.header.graph_file = r.text("the graph's name");
  h.header.graph_sha256 = r.text("the graph's SHA-256");
  h.header.mode = r.text("the mode");
  h.header.end_ns = static_cast<std::int64_t>(r.u64("the end"));
  const std::uint32_t units = r.u32("the thread count");
  if (units > kMaxUnits || units > r.left() / 4) r.bad(std::to_string(units) + " threads");
  h.unit_tasks.resize(units);
  h.unit_links.resize(units);
  for (std::uint32_t u = 0; u < units; ++u) {
    const std::uint32_t n = r.u32("a thread's tasks");
    if (n == 0 || n > replay_word::kMemberLimit) r.bad("a thread of " + std::to_string(n) + " tasks");
    for (std::uint32_t i = 0; i < n; ++i) {
      h.unit_tasks[u].push_back(r.text("a task's name"));
      ReplayMemberLinks l;
      for (auto* bundles : {&l.inputs, &l.outputs}) {
        const std::uint32_t k = r.u32("a task's links");
        if (k > kReplayMaxBundles) r.bad("a task of " + std::to_string(k) + " bundles");
        for (std::uint32_t j = 0; j < k; ++j) {
          ReplayBundle b;
          b.task = r.text("a link's task");
          const std::uint32_t wires = r.u32("a link's wires");
          if (wires == 0 || wires > r.left() / 4) r.bad("a link of " + std::to_string(wires) + " wires");
          for (std::uint32_t w = 0; w < wires; ++w) b.sources.push_back(r.text("a wire's source"));
          bundles->push_back(std::move(b));
        }
      }
      h.unit_links[u].push_back(std::move(l));
    }
  }
  return h;
}

bool same_links(const std::vector<std::vector<ReplayMemberLinks>>& a,
                const std::vector<std::vector<ReplayMemberLinks>>& b) {
  auto same = [](const std::vector<ReplayBundle>& x, const std::vector<ReplayBundle>& y) {
    if (x.size() != y.size()) return false;
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (x[i].task != y[i].task || x[i].sources != y[i].sources) return false;
    }
    return true;
  };
  if (a.size() != b.size()) return false;
  for (std::size_t u = 0; u < a.size(); ++u) {
    if (a[u].size() != b[u].size()) return false;
    for (std::size_t m = 0; m < a[u].size(); ++m) {
      if (!same(a[u][m].inputs, b[u][m].inputs) || !same(a[u][m].outputs, b[u][m].outputs)) return false;
    }
  }
  return true;
}

// A rotated log is at most this many files (a chain naming itself again
// would otherwise be read for ever).
constexpr std::uint32_t kMaxFiles = 1u << 20;

// What load knows of one file while it reads its records: a record that
// comes once per file is read once, and a continued file is checked
// against the one before it.
struct Segment {
  std::uint32_t index = 0;  // the file's place in the chain
  std::string path;
  std::string previous;  // the file before it ("" for the first)
  std::size_t units = 0;
  std::string next;  // the file after it, as its kNext record names it
  bool sources_read = false, host_read = false, files_read = false, run_read = false;
};

// The first file's header is the log's; a later one must repeat it, or the
// chain joins two runs.
void take_header(ReplayRecord& rec, Reader& r, std::uint32_t segment) {
  FileHeader h = read_header(r);
  if (segment == 0) {
    rec.header = h.header;
    rec.unit_tasks = std::move(h.unit_tasks);
    rec.unit_links = std::move(h.unit_links);
    rec.words.resize(rec.unit_tasks.size());
  } else if (h.header.graph_sha256 != rec.header.graph_sha256 || h.header.mode != rec.header.mode ||
             h.unit_tasks != rec.unit_tasks || !same_links(h.unit_links, rec.unit_links)) {
    r.bad("it does not continue " + rec.files.back() + ": another graph or other threads");
  }
}

// Apart from the record loop: the sources' count is checked against the
// bytes left and each source against the threads before the log keeps it.
void read_sources(ReplayRecord& rec, Reader& r, const Segment& s) {
  std::vector<ReplaySource> sources;
  const std::uint32_t n = r.u32("the live sources");
  if (n > replay_word::kIndexLimit || n > r.left() / 12) r.bad(std::to_string(n) + " live sources");
  for (std::uint32_t i = 0; i < n; ++i) {
    ReplaySource src;
    src.unit = r.u32("a live source");
    src.block = r.text("a live source's block");
    src.signals = r.u32("a live source");
    if (src.unit >= s.units || src.signals == 0 || src.signals > tasks::plant::kMaxLiveSignals) {
      r.bad("live source '" + src.block + "' of thread " + std::to_string(src.unit) + " with " +
            std::to_string(src.signals) + " signals");
    }
    sources.push_back(std::move(src));
  }
  if (s.index == 0) {
    rec.sources = std::move(sources);
  } else if (sources.size() != rec.sources.size() ||
             !std::equal(sources.begin(), sources.end(), rec.sources.begin(), [](const auto& a, const auto& b) {
               return a.unit == b.unit && a.block == b.block && a.signals == b.signals;
             })) {
    r.bad("it does not continue " + s.previous + ": other live sources");
  }
}

// Apart from the record loop, as the sources: the data files' count is
// checked against the bytes left, a continued file must name the same.
void read_data_files(ReplayRecord& rec, Reader& r, const Segment& s) {
  const std::uint32_t n = r.u32("the data files");
  if (n > r.left() / 8) r.bad(std::to_string(n) + " data files");
  std::vector<std::pair<std::string, std::string>> files;
  for (std::uint32_t i = 0; i < n; ++i) {
    std::string name = r.text("a data file's name");
    files.emplace_back(std::move(name), r.text("a data file's SHA-256"));
  }
  if (s.index == 0) {
    rec.header.files = std::move(files);
  } else if (files != rec.header.files) {
    r.bad("it does not continue " + s.previous + ": other data files");
  }
}

// The trailer ends a file; a run that lost words of its log cannot be
// replayed exactly, whatever else the log holds.
void read_trailer(Reader& r, const Segment& s) {
  const std::uint32_t n = r.u32("the trailer");
  if (n != s.units) r.bad("a trailer for " + std::to_string(n) + " threads");
  std::uint64_t lost = 0;
  for (std::uint32_t i = 0; i < n; ++i) lost = std::max(lost, r.u64("the trailer"));
  if (lost > 0) {
    throw std::runtime_error(s.path + ": the run lost words of its log (full rings; " + std::to_string(lost) +
                             " in one thread); it cannot be replayed exactly");
  }
}

// One file's records up to its trailer, dispatched by tag: every tag a
// file may hold, in the order the writer may put them.
void read_records(ReplayRecord& rec, Reader& r, Segment& s, std::uint64_t& run_id) {
  const std::uint32_t segment = s.index;
  for (bool first_record = true;; first_record = false) {
    std::uint32_t tag = 0;
    if (!r.raw(&tag, 4)) r.bad("no trailer: the run did not end cleanly");
    if (segment > 0 && first_record && tag != kSegment) r.bad("a continued file without its place in the chain");
    if (tag == kWords) {
      const std::uint32_t unit = r.u32("a chunk"), n = r.u32("a chunk");
      if (unit >= s.units) r.bad("a chunk of thread " + std::to_string(unit));
      r.words(rec.words[unit], n, "a chunk");
    } else if (tag == kBatch) {
      ReplayRecord::Batch b;
      r.words(b.recorded, r.u32("a batch"), "a batch");
      r.words(b.frame_rows, r.u32("a batch"), "a batch");
      rec.batches.push_back(std::move(b));
    } else if (tag == kSegment && first_record) {
      if (const std::uint32_t n = r.u32("the file's place"); n != segment) {
        r.bad("file " + std::to_string(n + 1) + " of its log where file " + std::to_string(segment + 1) +
              " belongs (after " + s.previous + ")");
      }
    } else if (tag == kSources && !s.sources_read) {
      s.sources_read = true;
      read_sources(rec, r, s);
    } else if (tag == kRun && !s.run_read) {
      s.run_read = true;
      const std::uint64_t run = r.u64("the run's id");
      if (segment == 0) {
        run_id = run;
      } else if (run != run_id) {
        r.bad("it does not continue " + s.previous + ": another run of the graph");
      }
    } else if (tag == kHost && !s.host_read) {
      s.host_read = true;
      const std::string host = r.text("the host");
      if (segment == 0) {
        rec.header.host = host;
      } else if (host != rec.header.host) {
        r.bad("it does not continue " + s.previous + ": host '" + host + "'");
      }
    } else if (tag == kFiles && !s.files_read) {
      s.files_read = true;
      read_data_files(rec, r, s);
    } else if (tag == kNext && s.next.empty()) {
      s.next = r.text("the next file's name");
      // A name in the same directory, nothing else: a log names no path.
      const std::string& next = s.next;
      if (next.empty() || next == "." || next == ".." || next.find('/') != std::string::npos) {
        r.bad("the next file '" + next + "' is not a file name");
      }
    } else if (tag == kTrailer) {
      read_trailer(r, s);
      break;
    } else {
      r.bad("a record of type " + std::to_string(tag));
    }
  }
}

// The readings of a thread never go back (a monotonic clock), and lie on
// average at most 10 s apart (a real loop reads the clock at least every
// 100 ms while it sleeps): a damaged or hostile log cannot make a replay,
// its reference or a what-if run for years. Raw words (rows, blocks) are
// skipped by their headers' counts. The graph's periods bound the claim
// further (ReplayExecutor::claim_refusal: ten periods a cycle). Sets
// `rec.last_ns`; returns the log's readings, which bound its batches.
std::uint64_t check_readings(ReplayRecord& rec, const std::string& first) {
  std::int64_t last = 0;
  std::uint64_t readings = 0;
  for (std::size_t u = 0; u < rec.words.size(); ++u) {
    const auto& w = rec.words[u];
    std::int64_t previous = std::numeric_limits<std::int64_t>::min();
    std::uint64_t here = 0;
    for (std::size_t i = 0; i < w.size(); ++i) {
      const auto kind = replay_word::kind(w[i]);
      if (kind == replay_word::kRow || kind == replay_word::kBlock) {
        i += replay_word::count_of(w[i]);
        continue;
      }
      if (kind != replay_word::kTime) continue;
      const std::int64_t t = replay_word::time_of(w[i]);
      if (t < previous) {
        throw std::runtime_error(first + ": not a replay log of a run (thread " + std::to_string(u + 1) +
                                 "'s readings go back in time at word " + std::to_string(i) + ")");
      }
      previous = t;
      ++here;
    }
    if (here > 0 && previous > 0 && static_cast<double>(previous) > 1e10 * static_cast<double>(here)) {
      throw std::runtime_error(first + ": not a replay log of a run (thread " + std::to_string(u + 1) + "'s " +
                               std::to_string(here) + " readings span " + std::to_string(previous / 1'000'000'000) +
                               " s: more than 10 s apart on average)");
    }
    if (here > 0) last = std::max(last, previous);
    readings += here;
  }
  rec.last_ns = last;
  return readings;
}

// A batch counts samples or rows of frames, each of which took three
// readings: a larger count would only size the replay's rings.
void check_batches(const ReplayRecord& rec, const std::string& first, std::uint64_t readings) {
  for (const ReplayRecord::Batch& b : rec.batches) {
    for (const auto* counts : {&b.recorded, &b.frame_rows}) {
      for (const std::uint64_t n : *counts) {
        if (n > readings) {
          throw std::runtime_error(first + ": not a complete replay log (a batch of " + std::to_string(n) +
                                   " entries, more than the log's " + std::to_string(readings) + " readings)");
        }
      }
    }
  }
}

}  // namespace

ReplayRecord ReplayRecord::load(const std::string& first) {
  ReplayRecord rec;
  std::uint64_t run_id = 0;
  std::string path = first;
  for (std::uint32_t segment = 0;; ++segment) {
    Reader r(path, segment > 0, segment > 0 ? rec.files.back() : std::string());
    take_header(rec, r, segment);
    Segment s;
    s.index = segment;
    s.path = path;
    s.previous = segment > 0 ? rec.files.back() : std::string();
    rec.files.push_back(path);
    s.units = rec.unit_tasks.size();
    read_records(rec, r, s, run_id);
    const std::string& previous = s.previous;
    if (segment > 0 && !s.sources_read && !rec.sources.empty())
      r.bad("it does not continue " + previous + ": no live sources");
    if (segment > 0 && !s.run_read) r.bad("it does not continue " + previous + ": no run id");
    if (s.next.empty()) break;
    if (segment + 1 >= kMaxFiles) r.bad("more than " + std::to_string(kMaxFiles) + " files");
    path = (std::filesystem::path(path).parent_path() / s.next).string();
  }
  const std::uint64_t readings = check_readings(rec, first);
  check_batches(rec, first, readings);
  const std::int64_t last = rec.last_ns;
  if (rec.header.end_ns < 0 || (rec.header.end_ns > 0 && rec.header.end_ns > last + 60'000'000'000)) {
    throw std::runtime_error(first + ": not a complete replay log (an end at " + std::to_string(rec.header.end_ns) +
                             " ns, the last reading at " + std::to_string(last) + " ns)");
  }
  return rec;
}

}  // namespace rtcosim::runtime
