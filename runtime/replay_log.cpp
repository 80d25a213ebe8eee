#include "runtime/replay_log.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace rtcosim::runtime {

namespace {

constexpr char kMagic[8] = {'R', 'T', 'C', 'R', 'P', 'L', '0', '1'};
enum Record : std::uint32_t { kWords = 1, kBatch = 2, kTrailer = 3 };
// Bounds a hostile or damaged file cannot exceed before we allocate.
constexpr std::uint64_t kMaxText = 1u << 20, kMaxUnits = 1u << 20, kMaxChunk = 1u << 26;

}  // namespace

ReplayLog::ReplayLog(Graph& graph, const std::string& path, Header header)
    : path_(path), temp_(path + ".partial"), header_(std::move(header)) {
  for (const auto& u : thread_units(graph)) {
    std::vector<std::string> names;
    std::size_t words_per_cycle = 4;
    for (std::size_t m = 0; m < u.members.size(); ++m) {
      names.push_back(u.members[m]->spec().name);
      words_per_cycle +=
          u.frames_per_cycle[m] * (3 + u.members[m]->inputs().bundles().size() + u.members[m]->outputs_view().size());
    }
    unit_tasks_.push_back(std::move(names));
    unit_links_.emplace_back();
    for (const TaskRuntime* m : u.members) unit_links_.back().push_back(replay_member_links(*m));
    // About a second of the thread's words: the drainer comes every 50 ms.
    const double cycles_per_second = 1.0 / std::max(u.owner().spec().period, 1e-6);
    const double words = std::min(cycles_per_second * static_cast<double>(words_per_cycle), double(1u << 24));
    channels_.push_back(std::make_unique<Channel>(std::max<std::size_t>(1u << 16, static_cast<std::size_t>(words))));
  }
}

ReplayLog::~ReplayLog() {
  if (out_.is_open()) {
    out_.close();
    std::error_code ec;
    std::filesystem::remove(temp_, ec);
  }
}

void ReplayLog::write_raw(const void* data, std::size_t n) {
  if (failed_) return;
  out_.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
  if (!out_) failed_ = true;
  bytes_ += n;
}

void ReplayLog::write_text(const std::string& s) {
  write_u32(static_cast<std::uint32_t>(s.size()));
  write_raw(s.data(), s.size());
}

bool ReplayLog::open(std::string* why) {
  out_.open(temp_, std::ios::binary | std::ios::trunc);
  if (!out_) {
    *why = "cannot create the replay log '" + temp_ + "': " + std::strerror(errno);
    return false;
  }
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
  out_.flush();
  if (failed_ || !out_) {
    *why = "cannot write the replay log '" + temp_ + "'";
    return false;
  }
  return true;
}

void ReplayLog::drain(std::span<const std::uint64_t> recorded, std::span<const std::uint64_t> frame_rows) {
  if (!out_.is_open()) return;
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
  out_.flush();
  if (!out_) failed_ = true;
}

std::uint64_t ReplayLog::dropped() const noexcept {
  std::uint64_t n = 0;
  for (const auto& c : channels_) n += c->dropped.load(std::memory_order_relaxed);
  return n;
}

bool ReplayLog::finish(std::string* why) {
  if (!out_.is_open()) {
    *why = "the replay log '" + path_ + "' was never opened";
    return false;
  }
  drain();
  write_u32(kTrailer);
  write_u32(static_cast<std::uint32_t>(channels_.size()));
  for (const auto& c : channels_) write_u64(c->dropped.load(std::memory_order_relaxed));
  out_.close();
  if (failed_ || out_.fail()) {
    *why = "writing the replay log '" + temp_ + "' failed (disk full?); what was written stays there";
    return false;
  }
  std::error_code ec;
  std::filesystem::rename(temp_, path_, ec);
  if (ec) {
    *why = "cannot put the replay log in place as '" + path_ + "': " + ec.message() + " (it is '" + temp_ + "')";
    return false;
  }
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
  if (const auto remote = graph.remote_links(); !remote.empty()) {
    return "link from " + remote.front()->source + " to task '" + remote.front()->consumer + "' crosses hosts (DDS)";
  }
  for (const auto& b : graph.spec().diagram.blocks) {
    if (b.type != "plant") continue;
    const bool udp = b.params.text(b.name, "source", "csv") == "udp";
    if (udp || b.params.flag(b.name, "follow", false)) {
      return "block '" + b.name + "' is a live plant source (" + (udp ? "UDP" : "a followed CSV file") +
             "): its rows arrive on their own schedule";
    }
  }
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

ReplayRecord ReplayRecord::load(const std::string& path) {
  Reader r{std::ifstream(path, std::ios::binary), path};
  if (!r.in) throw std::runtime_error("cannot open the replay log '" + path + "': " + std::strerror(errno));
  char magic[sizeof kMagic];
  if (!r.raw(magic, sizeof magic) || std::memcmp(magic, kMagic, sizeof kMagic) != 0) {
    throw std::runtime_error(path + ": not a replay log (written by `rtcosim run --replay-log`)");
  }
  ReplayRecord rec;
  rec.header.graph_file = r.text("the graph's name");
  rec.header.graph_sha256 = r.text("the graph's SHA-256");
  rec.header.mode = r.text("the mode");
  rec.header.end_ns = static_cast<std::int64_t>(r.u64("the end"));
  const std::uint32_t units = r.u32("the thread count");
  if (units > kMaxUnits || units > r.left() / 4) r.bad(std::to_string(units) + " threads");
  rec.unit_tasks.resize(units);
  rec.words.resize(units);
  rec.unit_links.resize(units);
  for (std::uint32_t u = 0; u < units; ++u) {
    const std::uint32_t n = r.u32("a thread's tasks");
    if (n == 0 || n > replay_word::kMemberLimit) r.bad("a thread of " + std::to_string(n) + " tasks");
    for (std::uint32_t i = 0; i < n; ++i) {
      rec.unit_tasks[u].push_back(r.text("a task's name"));
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
      rec.unit_links[u].push_back(std::move(l));
    }
  }
  for (;;) {
    std::uint32_t tag = 0;
    if (!r.raw(&tag, 4)) r.bad("no trailer: the run did not end cleanly");
    if (tag == kWords) {
      const std::uint32_t unit = r.u32("a chunk"), n = r.u32("a chunk");
      if (unit >= units) r.bad("a chunk of thread " + std::to_string(unit));
      r.words(rec.words[unit], n, "a chunk");
    } else if (tag == kBatch) {
      Batch b;
      r.words(b.recorded, r.u32("a batch"), "a batch");
      r.words(b.frame_rows, r.u32("a batch"), "a batch");
      rec.batches.push_back(std::move(b));
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
  // The end must lie where the readings are: a damaged one would make a
  // replay's reference solution run for ages.
  std::int64_t last = 0;
  for (const auto& w : rec.words) {
    for (auto it = w.rbegin(); it != w.rend(); ++it) {
      if (replay_word::kind(*it) == replay_word::kTime) {
        last = std::max(last, replay_word::time_of(*it));
        break;
      }
    }
  }
  if (rec.header.end_ns < 0 || (rec.header.end_ns > 0 && rec.header.end_ns > last + 60'000'000'000)) {
    r.bad("an end at " + std::to_string(rec.header.end_ns) + " ns, the last reading at " + std::to_string(last) +
          " ns");
  }
  return rec;
}

}  // namespace rtcosim::runtime
