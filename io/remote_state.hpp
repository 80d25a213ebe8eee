#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "rt_config/hosts.hpp"
#include "runtime/graph.hpp"
#include "runtime/stats.hpp"

namespace rtcosim::io {

// Another host's clock as this host's DDS bridge estimates it (docs/dds.md,
// "Clocks"); written by the bridge thread, read by anyone.
struct HostClock {
  std::string host;
  std::atomic<std::int64_t> offset_ns{0};      // its CLOCK_REALTIME - ours, min-RTT estimate
  std::atomic<std::int64_t> round_trip_ns{0};  // of the exchange that estimate comes from
  std::atomic<std::uint64_t> exchanges{0};     // ping-pongs completed; 0: no estimate
};

/*
 * RemoteLinkStats: a link whose ends run on different hosts, as the DDS
 * bridge of one end saw it (docs/figures.md, "Per remote link"). The
 * producer's host counts `written`, the consumer's host the rest.
 * Written by the bridge thread only; any thread may read.
 */
struct RemoteLinkStats {
  std::atomic<std::uint64_t> written{0};  // samples handed to dds_write (producer's host)
  std::atomic<std::uint64_t> write_errors{0};
  std::atomic<std::uint64_t> received{0};         // samples taken from DDS into the ring (consumer's host)
  std::atomic<std::uint64_t> lost{0};             // sequence numbers skipped between received samples
  std::atomic<std::uint64_t> malformed{0};        // samples of the wrong signal count, dropped
  std::atomic<std::uint64_t> ring_full{0};        // received samples the consumer's ring had no room for
  std::atomic<std::uint64_t> sequence_resets{0};  // sequence numbers beyond max_sequence_gap of the last, either way
  std::atomic<std::uint64_t> deadline_missed{0};  // DDS deadline periods without a sample (this end's count)
  std::atomic<std::uint64_t> last_sequence{0};
  // One-way latency estimate of each received sample, seconds: this host's
  // CLOCK_REALTIME when the sample was taken minus the producer's bridge's
  // at its write, the producer host's clock offset (HostClock) taken out.
  runtime::RunningRange latency;

  void reset() noexcept {
    for (auto* c : {&written, &write_errors, &received, &lost, &malformed, &ring_full, &sequence_resets,
                    &deadline_missed, &last_sequence})
      c->store(0, std::memory_order_relaxed);
    latency.reset();
  }

  // A received sample's sequence number (one thread, the bridge's). The
  // number is foreign input: a step forward of at most `max_gap` counts the
  // numbers skipped as lost; a jump further than `max_gap` either way (a
  // producer that restarted, or a hostile sample) counts one reset and
  // carries on from it, so that no single sample can inflate `lost`. An
  // older number within the window (reordered) changes nothing.
  // Returns what this sample added: lost numbers, or a reset.
  struct SequenceStep {
    std::uint64_t lost = 0;
    bool reset = false;
  };
  SequenceStep account_sequence(std::uint64_t sequence, std::uint64_t max_gap) noexcept {
    const std::uint64_t last = last_sequence.load(std::memory_order_relaxed);
    const std::uint64_t distance = sequence > last ? sequence - last : last - sequence;
    if (distance > max_gap) {
      sequence_resets.fetch_add(1, std::memory_order_relaxed);
      last_sequence.store(sequence, std::memory_order_relaxed);
      return {0, true};
    }
    if (sequence <= last) return {};
    lost.fetch_add(sequence - last - 1, std::memory_order_relaxed);
    last_sequence.store(sequence, std::memory_order_relaxed);
    return {sequence - last - 1, false};
  }
};

/*
 * AtomicText: a short text one thread at a time writes while any thread
 * reads it, without a lock, and without an allocation on the writer's side
 * (a sequence lock over relaxed atomics): a reader sees the whole of one
 * write, retrying while a write is under way. Cut to kCapacity bytes; a
 * byte outside printable ASCII is kept as '?' (the text may quote foreign
 * input, a name in a DDS sample, which must not reach a terminal as an
 * escape sequence).
 */
class AtomicText {
 public:
  static constexpr std::size_t kCapacity = 256;

  // One writer at a time (the caller orders them).
  void store(std::string_view text) noexcept {
    // Without fences (ThreadSanitizer does not model them): each byte is
    // stored with release, so the odd sequence stored before it is visible
    // to a reader whose acquire load sees the byte.
    const std::uint64_t sequence = sequence_.load(std::memory_order_relaxed);
    sequence_.store(sequence + 1, std::memory_order_relaxed);  // odd: a write under way
    const std::size_t n = std::min(text.size(), kCapacity);
    for (std::size_t i = 0; i < n; ++i) {
      const auto c = static_cast<unsigned char>(text[i]);
      bytes_[i].store(c >= 0x20 && c < 0x7f ? text[i] : '?', std::memory_order_release);
    }
    size_.store(n, std::memory_order_release);
    sequence_.store(sequence + 2, std::memory_order_release);
  }

  // Any thread; allocates (not for a frame).
  [[nodiscard]] std::string load() const {
    std::string out;
    for (;;) {
      const std::uint64_t before = sequence_.load(std::memory_order_acquire);
      if ((before & 1) != 0) {
        std::this_thread::yield();
        continue;
      }
      // Acquire loads: the sequence read after them is no older than the
      // write whose bytes they saw.
      out.resize(size_.load(std::memory_order_acquire));
      for (std::size_t i = 0; i < out.size(); ++i) out[i] = bytes_[i].load(std::memory_order_acquire);
      if (sequence_.load(std::memory_order_relaxed) == before) return out;
    }
  }

 private:
  std::atomic<std::uint64_t> sequence_{0};
  std::atomic<std::size_t> size_{0};
  std::array<std::atomic<char>, kCapacity> bytes_{};
};

/*
 * AnnounceStats: what one host's DDS bridge refused of the start announces
 * it took (docs/figures.md, "Per run (DDS)"; docs/dds.md, "What an announce
 * cannot do"), counted from the bridge's making to its stop, the wait for
 * the other hosts included. Written by the thread that takes announces
 * (DdsBridge::coordinate_start's caller, then the bridge thread); any
 * thread may read.
 */
struct AnnounceStats {
  // Announces refused as impersonations of a host (DdsBridge::impersonations):
  // one on host X's start topic naming another host, or one on this host's
  // own topic from another participant. Counted as each is taken from DDS.
  std::atomic<std::uint64_t> impersonations{0};
  // The last one's description (at most one a second is described: the
  // last described); empty while there is none.
  AtomicText last_impersonation;
};

/*
 * RemoteState: what the DDS bridge of one host measures of a run: per
 * remote link with one end here, its topic and its counters; per other
 * host, its clock; the start announces it refused. Made from the graph
 * (after set_host) for each run and owned by whoever starts the run
 * (session::RealtimeRun), so that it outlives the bridge and the summaries
 * read it after the bridge is gone; the bridge only holds a reference. A
 * run without a bridge (virtual, or a build without DDS) reports the zeroes
 * of a fresh one. Built at set-up; the counters are atomics the bridge's
 * threads write and any thread reads.
 */
class RemoteState {
 public:
  struct Link {
    const runtime::GraphLink* link = nullptr;
    std::string topic;  // the DDS topic it crosses as (docs/dds.md, "IDL and topic names")
    RemoteLinkStats stats;
  };

  explicit RemoteState(runtime::Graph& graph) {
    for (const runtime::GraphLink* l : graph.remote_links()) {
      auto e = std::make_unique<Link>();
      e->link = l;
      e->topic = config::dds_topic_name(graph.spec(), l->source, l->consumer);
      links_.push_back(std::move(e));
    }
    for (const auto& h : graph.spec().hosts) {
      if (graph.host().empty() || h.name == graph.host()) continue;
      clocks_.push_back(std::make_unique<HostClock>());
      clocks_.back()->host = h.name;
    }
  }

  // Every link's counters to 0 (the clocks' estimates and the announces'
  // counts stay: they count from the bridge's making, the wait for the
  // other hosts included): just before the run's Graph::reset, which
  // empties the rings those counts were of.
  void reset() noexcept {
    for (const auto& e : links_) e->stats.reset();
  }

  // Graph::remote_links' order.
  [[nodiscard]] const std::vector<std::unique_ptr<Link>>& links() const noexcept { return links_; }
  // With a host: one per other host of the spec.
  [[nodiscard]] const std::vector<std::unique_ptr<HostClock>>& host_clocks() const noexcept { return clocks_; }
  // The start announces this host's bridge refused.
  [[nodiscard]] AnnounceStats& announces() noexcept { return announces_; }
  [[nodiscard]] const AnnounceStats& announces() const noexcept { return announces_; }
  // The entry of `link`, null for a link that does not leave this host.
  [[nodiscard]] Link* find(const runtime::GraphLink* link) const noexcept {
    for (const auto& e : links_)
      if (e->link == link) return e.get();
    return nullptr;
  }

 private:
  std::vector<std::unique_ptr<Link>> links_;
  std::vector<std::unique_ptr<HostClock>> clocks_;
  AnnounceStats announces_;
};

}  // namespace rtcosim::io
