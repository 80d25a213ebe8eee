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
#include "runtime/replay_format.hpp"

namespace rtcosim::runtime {

using namespace replay_format;

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
    // At least 2^13 words (64 kB), not more: the thread writes its words
    // round the ring, and a ring far larger than the caches makes every new
    // line a miss the frame waits for (replay_bench with 2^16-word rings,
    // docs/benchmarks.md "What is not met").
    channels_.push_back(std::make_unique<Channel>(std::max<std::size_t>(1u << 13, static_cast<std::size_t>(words))));
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
  if (n > 0 && std::fwrite(data, 1, n, out_) != n) fail();
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
  if (!failed_ && std::fflush(out_) != 0) fail();
  if (failed_) {
    *why = "cannot write the replay log '" + (in_place_ ? path_ : temp_) + "': " + std::strerror(errno_);
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
  if (!failed_ && std::fflush(out_) != 0) fail();
}

void ReplayLog::fail() noexcept {
  if (failed_) return;
  failed_ = true;
  errno_ = errno != 0 ? errno : EIO;
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
  // A temporary is renamed over the target only once its bytes are on
  // disk: a crash after the rename must not leave an empty or cut log where
  // a whole one was (as RecordFile::commit does).
  if (!failed_ && std::fflush(out_) != 0) fail();
  if (!failed_ && !in_place_ && ::fsync(::fileno(out_)) != 0) fail();
  if (std::fclose(out_) != 0) fail();
  out_ = nullptr;
  const std::string& written = in_place_ ? path_ : temp_;
  if (failed_) {
    *why =
        "writing the replay log '" + written + "' failed: " + std::strerror(errno_) + "; what was written stays there";
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

}  // namespace rtcosim::runtime
