#include "runtime/replay_log.hpp"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <stdexcept>

#include <fcntl.h>
#include <unistd.h>

#include "base/sha256.hpp"

namespace rtcosim::runtime {

namespace {

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

}  // namespace

// The logging side of a live source's tap: each row a frame took, and the
// end of each take, as words of the consuming thread.
class ReplayLog::Tap final : public tasks::plant::LiveTap {
 public:
  Tap(ReplayLog& log, std::size_t unit, std::size_t index) : log_(log), unit_(unit), index_(index) {}
  void row(const tasks::plant::LiveRow& row, std::size_t signals) noexcept override {
    log_.put(unit_, replay_word::row(index_, static_cast<std::uint32_t>(signals + 1)));
    log_.put(unit_, std::bit_cast<std::uint64_t>(row.time));
    for (std::size_t s = 0; s < signals; ++s) log_.put(unit_, std::bit_cast<std::uint64_t>(row.values[s]));
  }
  void end() noexcept override { log_.put(unit_, replay_word::taken(index_)); }
  [[nodiscard]] bool replayed() const noexcept override { return false; }
  bool next(tasks::plant::LiveRow&, std::size_t) noexcept override { return false; }

 private:
  ReplayLog& log_;
  std::size_t unit_, index_;
};

// The logging side of a remote input: each block the consumer drained, in
// the consuming thread's words.
class ReplayLog::LinkTap final : public coupling::BlockTap {
 public:
  LinkTap(ReplayLog& log, std::size_t unit, std::size_t member, std::size_t index)
      : log_(log), unit_(unit), member_(member), index_(index) {}
  void block(const coupling::DataBlock& b) noexcept override {
    const auto payload = b.payload();
    log_.put(unit_, replay_word::block(member_, index_, static_cast<std::uint32_t>(4 + payload.size())));
    log_.put(unit_, std::bit_cast<std::uint64_t>(b.tag));
    log_.put(unit_, std::bit_cast<std::uint64_t>(b.producer_step));
    log_.put(unit_, b.sequence);
    log_.put(unit_, b.discontinuity ? 1 : 0);
    for (const double v : payload) log_.put(unit_, std::bit_cast<std::uint64_t>(v));
  }

 private:
  ReplayLog& log_;
  std::size_t unit_, member_, index_;
};

void ReplayLog::tap_sources() noexcept {
  for (std::size_t i = 0; i < sources_.size(); ++i) sources_[i].source->set_tap(taps_[i].get());
}

void ReplayLog::tap_links() noexcept {
  for (std::size_t i = 0; i < tapped_links_.size(); ++i) tapped_links_[i]->set_tap(link_taps_[i].get());
}

std::vector<std::pair<std::string, std::string>> replay_data_files(const tasks::DiagramSpec& diagram,
                                                                   const tasks::BlockRegistry& blocks) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& b : diagram.blocks) {
    const tasks::BlockTypeInfo* info = blocks.find(b.type);
    if (info == nullptr || b.params.flag(b.name, "follow", false)) continue;
    for (const auto& doc : info->params) {
      if (doc.type != "path" || !b.params.has(doc.name)) continue;
      const auto* path = std::get_if<std::string>(&b.params.all().at(doc.name));
      std::error_code ec;
      if (path == nullptr || path->empty() || !std::filesystem::is_regular_file(*path, ec)) continue;
      std::ifstream in(*path, std::ios::binary);
      std::ostringstream bytes;
      bytes << in.rdbuf();
      out.emplace_back(b.name + "." + doc.name,
                       in ? base::sha256_hex(bytes.str()) : "unreadable: " + std::string(std::strerror(errno)));
    }
  }
  return out;
}

std::vector<ReplaySource> replay_sources(Graph& graph) {
  std::vector<ReplaySource> out;
  const auto units = thread_units(graph);
  for (std::size_t u = 0; u < units.size(); ++u) {
    for (TaskRuntime* m : units[u].members) {
      auto& partition = m->partition();
      for (std::size_t i = 0; i < partition.block_count(); ++i) {
        if (auto* source = partition.block(i).live_source()) {
          out.push_back(ReplaySource{u, partition.block(i).name(), source->signals(), source});
        }
      }
    }
  }
  return out;
}

ReplayLog::ReplayLog(Graph& graph, const std::string& path, Header header)
    : path_(path), temp_(path + ".partial"), header_(std::move(header)), sources_(replay_sources(graph)) {
  std::random_device entropy;
  run_id_ = (std::uint64_t{entropy()} << 32) | entropy() | 1;  // never 0
  std::vector<std::size_t> source_words(thread_units(graph).size(), 0);
  for (const ReplaySource& src : sources_) {
    // About a second of rows at up to 20 000 a second, and a take word
    // for each of the frame's evaluations.
    source_words[src.unit] += 20'000 * (src.signals + 2);
  }
  std::size_t unit_index = 0;
  for (const auto& u : thread_units(graph)) {
    std::vector<std::string> names;
    std::size_t words_per_cycle = 4;
    for (std::size_t m = 0; m < u.members.size(); ++m) {
      names.push_back(u.members[m]->spec().name);
      words_per_cycle +=
          u.frames_per_cycle[m] * (3 + u.members[m]->inputs().bundles().size() + u.members[m]->outputs_view().size());
      // A second of blocks from each producer on another host.
      for (const LinkBundle* b : u.members[m]->inputs().bundles()) {
        const GraphLink& w = *b->members.front();
        if (w.producer_local) continue;
        const TaskRuntime* producer = graph.find_task(w.producer);
        const double per_second = 1.0 / std::max(producer ? producer->spec().period : 1e-3, 1e-6);
        source_words[unit_index] +=
            static_cast<std::size_t>(std::min(per_second, 1e6)) * (5 + 3 * b->link->signal_count());
      }
    }
    unit_tasks_.push_back(std::move(names));
    unit_links_.emplace_back();
    for (const TaskRuntime* m : u.members) unit_links_.back().push_back(replay_member_links(*m));
    // About a second of the thread's words: the drainer comes every 50 ms.
    const double cycles_per_second = 1.0 / std::max(u.owner().spec().period, 1e-6);
    if (source_words[unit_index] > 0) words_per_cycle += 16;
    const double words = std::min(
        cycles_per_second * static_cast<double>(words_per_cycle) + static_cast<double>(source_words[unit_index]),
        double(1u << 24));
    ++unit_index;
    channels_.push_back(std::make_unique<Channel>(std::max<std::size_t>(1u << 16, static_cast<std::size_t>(words))));
  }
  for (std::size_t i = 0; i < sources_.size(); ++i) {
    taps_.push_back(std::make_unique<Tap>(*this, sources_[i].unit, i));
  }
  const auto units = thread_units(graph);
  for (std::size_t u = 0; u < units.size(); ++u) {
    for (std::size_t m = 0; m < units[u].members.size(); ++m) {
      const auto& bundles = units[u].members[m]->inputs().bundles();
      for (std::size_t i = 0; i < bundles.size(); ++i) {
        if (bundles[i]->members.front()->producer_local) continue;
        link_taps_.push_back(std::make_unique<LinkTap>(*this, u, m, i));
        tapped_links_.push_back(bundles[i]->link.get());
      }
    }
  }
}

ReplayLog::~ReplayLog() {
  for (const ReplaySource& src : sources_) src.source->set_tap(nullptr);
  for (coupling::Link* l : tapped_links_) l->set_tap(nullptr);
  if (out_ != nullptr) {
    std::fclose(out_);
    std::error_code ec;
    if (!in_place_) std::filesystem::remove(temp_, ec);
  }
}

void ReplayLog::write_raw(const void* data, std::size_t n) {
  if (failed_ || out_ == nullptr) return;
  if (n > 0 && std::fwrite(data, 1, n, out_) != n) failed_ = true;
  bytes_ += n;
}

void ReplayLog::write_text(const std::string& s) {
  write_u32(static_cast<std::uint32_t>(s.size()));
  write_raw(s.data(), s.size());
}

bool ReplayLog::open(std::string* why) {
  const int fd = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    *why = "cannot create the replay log '" + temp_ + "': " + std::strerror(errno);
    return false;
  }
  return attach(fd, path_, false, why);
}

bool ReplayLog::adopt(int fd, std::string path, std::string* why) { return attach(fd, std::move(path), true, why); }

bool ReplayLog::attach(int fd, std::string path, bool in_place, std::string* why) {
  out_ = ::fdopen(fd, "wb");
  if (out_ == nullptr) {
    *why = "cannot write the replay log '" + path + "': " + std::strerror(errno);
    ::close(fd);
    return false;
  }
  path_ = std::move(path);
  in_place_ = in_place;
  return write_header(why);
}

bool ReplayLog::write_header(std::string* why) {
  write_raw(kMagic, sizeof kMagic);
  write_text(header_.graph_file);
  write_text(header_.graph_sha256);
  write_text(header_.mode);
  write_u64(static_cast<std::uint64_t>(header_.end_ns));
  write_u32(static_cast<std::uint32_t>(unit_tasks_.size()));
  for (std::size_t u = 0; u < unit_tasks_.size(); ++u) {
    write_u32(static_cast<std::uint32_t>(unit_tasks_[u].size()));
    for (std::size_t m = 0; m < unit_tasks_[u].size(); ++m) {
      write_text(unit_tasks_[u][m]);
      const ReplayMemberLinks& l = unit_links_[u][m];
      for (const auto* bundles : {&l.inputs, &l.outputs}) {
        write_u32(static_cast<std::uint32_t>(bundles->size()));
        for (const ReplayBundle& b : *bundles) {
          write_text(b.task);
          write_u32(static_cast<std::uint32_t>(b.sources.size()));
          for (const auto& source : b.sources) write_text(source);
        }
      }
    }
  }
  if (segment_ > 0) {
    // A continued file says which one it is: a replay refuses a chain with
    // a file missing or out of order.
    write_u32(kSegment);
    write_u32(segment_);
  }
  // Every file of the log names its run: a chain takes no file of another
  // run of the same graph.
  write_u32(kRun);
  write_u64(run_id_);
  if (!header_.host.empty()) {
    write_u32(kHost);
    write_text(header_.host);
  }
  if (!header_.files.empty()) {
    write_u32(kFiles);
    write_u32(static_cast<std::uint32_t>(header_.files.size()));
    for (const auto& [name, sha] : header_.files) {
      write_text(name);
      write_text(sha);
    }
  }
  if (!sources_.empty()) {
    write_u32(kSources);
    write_u32(static_cast<std::uint32_t>(sources_.size()));
    for (const ReplaySource& src : sources_) {
      write_u32(static_cast<std::uint32_t>(src.unit));
      write_text(src.block);
      write_u32(static_cast<std::uint32_t>(src.signals));
    }
  }
  if (failed_ || std::fflush(out_) != 0) {
    *why = "cannot write the replay log '" + (in_place_ ? path_ : temp_) + "'";
    return false;
  }
  return true;
}

void ReplayLog::drain(std::span<const std::uint64_t> recorded, std::span<const std::uint64_t> frame_rows) {
  if (out_ == nullptr) return;
  for (std::size_t u = 0; u < channels_.size(); ++u) {
    auto& ring = channels_[u]->ring;
    const std::size_t n = ring.read_available();
    if (n == 0) continue;
    scratch_.resize(n);
    const std::size_t got = ring.pop(scratch_.data(), n);
    write_u32(kWords);
    write_u32(static_cast<std::uint32_t>(u));
    write_u32(static_cast<std::uint32_t>(got));
    write_raw(scratch_.data(), got * sizeof(std::uint64_t));
    words_ += got;
  }
  if (!recorded.empty() || !frame_rows.empty()) {
    write_u32(kBatch);
    write_u32(static_cast<std::uint32_t>(recorded.size()));
    write_raw(recorded.data(), recorded.size() * sizeof(std::uint64_t));
    write_u32(static_cast<std::uint32_t>(frame_rows.size()));
    write_raw(frame_rows.data(), frame_rows.size() * sizeof(std::uint64_t));
  }
  if (std::fflush(out_) != 0) failed_ = true;
}

std::uint64_t ReplayLog::dropped() const noexcept {
  std::uint64_t n = 0;
  for (const auto& c : channels_) n += c->dropped.load(std::memory_order_relaxed);
  return n;
}

bool ReplayLog::close_file(std::string* why) {
  write_u32(kTrailer);
  write_u32(static_cast<std::uint32_t>(channels_.size()));
  for (const auto& c : channels_) write_u64(c->dropped.load(std::memory_order_relaxed));
  const bool closed = std::fclose(out_) == 0;
  out_ = nullptr;
  const std::string& written = in_place_ ? path_ : temp_;
  if (failed_ || !closed) {
    *why = "writing the replay log '" + written + "' failed (disk full?); what was written stays there";
    return false;
  }
  if (!in_place_) {
    std::error_code ec;
    std::filesystem::rename(temp_, path_, ec);
    if (ec) {
      *why = "cannot put the replay log in place as '" + path_ + "': " + ec.message() + " (it is '" + temp_ + "')";
      return false;
    }
  }
  return true;
}

bool ReplayLog::rotate(int fd, std::string path, std::string* why) {
  if (out_ == nullptr) {
    ::close(fd);
    *why = "the replay log '" + path_ + "' is not open";
    return false;
  }
  drain();
  write_u32(kNext);
  write_text(std::filesystem::path(path).filename().string());
  if (!close_file(why)) {
    ::close(fd);
    return false;
  }
  ++segment_;
  return adopt(fd, std::move(path), why);
}

bool ReplayLog::finish(std::string* why) {
  if (out_ == nullptr) {
    *why = "the replay log '" + path_ + "' is not open";
    return false;
  }
  drain();
  if (!close_file(why)) return false;
  if (dropped() > 0) {
    *why = "the replay log '" + path_ + "' lost " + std::to_string(dropped()) +
           " word(s) (its rings were full: the drainer fell behind); it cannot be replayed";
    return false;
  }
  return true;
}

ReplayMemberLinks replay_member_links(const TaskRuntime& task) {
  auto bundle = [](const LinkBundle& b, bool input) {
    ReplayBundle r{input ? b.members.front()->producer : b.members.front()->consumer, {}};
    for (const GraphLink* w : b.members) r.sources.push_back(w->source);
    return r;
  };
  ReplayMemberLinks l;
  for (const LinkBundle* b : const_cast<TaskRuntime&>(task).inputs().bundles()) l.inputs.push_back(bundle(*b, true));
  for (const OutputBinding& o : task.outputs_view()) l.outputs.push_back(bundle(*o.bundle, false));
  return l;
}

std::string replay_log_refusal(Graph& graph) {
  if (replay_sources(graph).size() > replay_word::kIndexLimit) return "more than 65536 live plant sources";
  if (graph.spec().sync.optimise.enabled) return "the live synchronisation (sync.optimise) posts parameters as it goes";
  for (const auto& u : thread_units(graph)) {
    if (u.members.size() > replay_word::kMemberLimit) {
      return "rate group '" + u.owner().spec().rate_group + "' has more than 4096 tasks";
    }
  }
  for (const auto& t : graph.tasks()) {
    if (t->inputs().bundles().size() > kReplayMaxBundles || t->outputs_view().size() > kReplayMaxBundles) {
      return "task '" + t->spec().name + "' has more than 256 input or output bundles";
    }
  }
  return {};
}

namespace {

struct Reader {
  std::ifstream in;
  std::string path;
  [[noreturn]] void bad(const std::string& what) const {
    throw std::runtime_error(path + ": not a complete replay log (" + what + ")");
  }
  bool raw(void* data, std::size_t n) {
    in.read(static_cast<char*>(data), static_cast<std::streamsize>(n));
    return static_cast<std::size_t>(in.gcount()) == n;
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
  std::uint64_t left() {
    const auto here = in.tellg();
    in.seekg(0, std::ios::end);
    const auto end = in.tellg();
    in.seekg(here);
    return here < 0 || end < here ? 0 : static_cast<std::uint64_t>(end - here);
  }
  void words(std::vector<std::uint64_t>& out, std::uint64_t n, const char* what) {
    if (n > kMaxChunk || n * 8 > left()) bad(std::string(what) + " of " + std::to_string(n) + " words");
    const std::size_t at = out.size();
    out.resize(at + n);
    if (!raw(out.data() + at, n * 8)) bad(std::string("ends inside ") + what);
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

}  // namespace

ReplayRecord ReplayRecord::load(const std::string& first) {
  ReplayRecord rec;
  std::uint64_t run_id = 0;
  std::string path = first;
  for (std::uint32_t segment = 0;; ++segment) {
    Reader r{std::ifstream(path, std::ios::binary), path};
    if (!r.in) {
      throw std::runtime_error("cannot open the replay log '" + path + "': " + std::strerror(errno) +
                               (segment > 0 ? " (" + rec.files.back() + " goes on in it)" : std::string()));
    }
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
    const std::string previous = segment > 0 ? rec.files.back() : std::string();
    rec.files.push_back(path);
    const std::size_t units = rec.unit_tasks.size();
    std::string next;
    bool sources_read = false, host_read = false, files_read = false, run_read = false;
    for (bool first_record = true;; first_record = false) {
      std::uint32_t tag = 0;
      if (!r.raw(&tag, 4)) r.bad("no trailer: the run did not end cleanly");
      if (segment > 0 && first_record && tag != kSegment) r.bad("a continued file without its place in the chain");
      if (tag == kWords) {
        const std::uint32_t unit = r.u32("a chunk"), n = r.u32("a chunk");
        if (unit >= units) r.bad("a chunk of thread " + std::to_string(unit));
        r.words(rec.words[unit], n, "a chunk");
      } else if (tag == kBatch) {
        Batch b;
        r.words(b.recorded, r.u32("a batch"), "a batch");
        r.words(b.frame_rows, r.u32("a batch"), "a batch");
        rec.batches.push_back(std::move(b));
      } else if (tag == kSegment && first_record) {
        if (const std::uint32_t n = r.u32("the file's place"); n != segment) {
          r.bad("file " + std::to_string(n + 1) + " of its log where file " + std::to_string(segment + 1) +
                " belongs (after " + previous + ")");
        }
      } else if (tag == kSources && !sources_read) {
        sources_read = true;
        std::vector<ReplaySource> sources;
        const std::uint32_t n = r.u32("the live sources");
        if (n > replay_word::kIndexLimit || n > r.left() / 12) r.bad(std::to_string(n) + " live sources");
        for (std::uint32_t i = 0; i < n; ++i) {
          ReplaySource src;
          src.unit = r.u32("a live source");
          src.block = r.text("a live source's block");
          src.signals = r.u32("a live source");
          if (src.unit >= units || src.signals == 0 || src.signals > tasks::plant::kMaxLiveSignals) {
            r.bad("live source '" + src.block + "' of thread " + std::to_string(src.unit) + " with " +
                  std::to_string(src.signals) + " signals");
          }
          sources.push_back(std::move(src));
        }
        if (segment == 0) {
          rec.sources = std::move(sources);
        } else if (sources.size() != rec.sources.size() ||
                   !std::equal(sources.begin(), sources.end(), rec.sources.begin(), [](const auto& a, const auto& b) {
                     return a.unit == b.unit && a.block == b.block && a.signals == b.signals;
                   })) {
          r.bad("it does not continue " + previous + ": other live sources");
        }
      } else if (tag == kRun && !run_read) {
        run_read = true;
        const std::uint64_t run = r.u64("the run's id");
        if (segment == 0) {
          run_id = run;
        } else if (run != run_id) {
          r.bad("it does not continue " + previous + ": another run of the graph");
        }
      } else if (tag == kHost && !host_read) {
        host_read = true;
        const std::string host = r.text("the host");
        if (segment == 0) {
          rec.header.host = host;
        } else if (host != rec.header.host) {
          r.bad("it does not continue " + previous + ": host '" + host + "'");
        }
      } else if (tag == kFiles && !files_read) {
        files_read = true;
        const std::uint32_t n = r.u32("the data files");
        if (n > r.left() / 8) r.bad(std::to_string(n) + " data files");
        std::vector<std::pair<std::string, std::string>> files;
        for (std::uint32_t i = 0; i < n; ++i) {
          std::string name = r.text("a data file's name");
          files.emplace_back(std::move(name), r.text("a data file's SHA-256"));
        }
        if (segment == 0) {
          rec.header.files = std::move(files);
        } else if (files != rec.header.files) {
          r.bad("it does not continue " + previous + ": other data files");
        }
      } else if (tag == kNext && next.empty()) {
        next = r.text("the next file's name");
        // A name in the same directory, nothing else: a log names no path.
        if (next.empty() || next == "." || next == ".." || next.find('/') != std::string::npos) {
          r.bad("the next file '" + next + "' is not a file name");
        }
      } else if (tag == kTrailer) {
        const std::uint32_t n = r.u32("the trailer");
        if (n != units) r.bad("a trailer for " + std::to_string(n) + " threads");
        std::uint64_t lost = 0;
        for (std::uint32_t i = 0; i < n; ++i) lost = std::max(lost, r.u64("the trailer"));
        if (lost > 0) {
          throw std::runtime_error(path + ": the run lost words of its log (full rings; " + std::to_string(lost) +
                                   " in one thread); it cannot be replayed exactly");
        }
        break;
      } else {
        r.bad("a record of type " + std::to_string(tag));
      }
    }
    if (segment > 0 && !sources_read && !rec.sources.empty())
      r.bad("it does not continue " + previous + ": no live sources");
    if (segment > 0 && !run_read) r.bad("it does not continue " + previous + ": no run id");
    if (next.empty()) break;
    if (segment + 1 >= kMaxFiles) r.bad("more than " + std::to_string(kMaxFiles) + " files");
    path = (std::filesystem::path(path).parent_path() / next).string();
  }
  // The readings of a thread never go back (a monotonic clock), and lie on
  // average at most 10 s apart (a real loop reads the clock at least every
  // 100 ms while it sleeps): a damaged or hostile log cannot make a replay,
  // its reference or a what-if run for years. Raw words (rows, blocks) are
  // skipped by their headers' counts.
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
  // A batch counts samples or rows of frames, each of which took three
  // readings: a larger count would only size the replay's rings.
  for (const Batch& b : rec.batches) {
    for (const auto* counts : {&b.recorded, &b.frame_rows}) {
      for (const std::uint64_t n : *counts) {
        if (n > readings) {
          throw std::runtime_error(first + ": not a complete replay log (a batch of " + std::to_string(n) +
                                   " entries, more than the log's " + std::to_string(readings) + " readings)");
        }
      }
    }
  }
  if (rec.header.end_ns < 0 || (rec.header.end_ns > 0 && rec.header.end_ns > last + 60'000'000'000)) {
    throw std::runtime_error(first + ": not a complete replay log (an end at " + std::to_string(rec.header.end_ns) +
                             " ns, the last reading at " + std::to_string(last) + " ns)");
  }
  return rec;
}

}  // namespace rtcosim::runtime
