// DdsBridge's threads during a run: the sending thread (the rings of links
// produced here out as samples), the reader's listener (samples of links
// consumed here into their rings), and the bridge thread (announces, the
// clock ping-pong, the watch over the other hosts); start and stop.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include <dds/dds.h>
#include <sys/prctl.h>

#include "base/duration.hpp"
#include "io/dds_bridge.hpp"
#include "io/dds_bridge_internal.hpp"
#include "rtcosim_dds.h"
#include "runtime/realtime.hpp"
#include "runtime/trace.hpp"

namespace rtcosim::io {

using namespace dds_detail;

namespace {

constexpr dds_duration_t kAnnouncePeriod = DDS_MSECS(100);
// The sequence of a task's initial outputs (TaskRuntime::publish_initial);
// frames count on from it.
constexpr std::uint64_t kInitialSequence = 1;

// This end's missed deadlines so far (DDS counts them per reader / writer).
std::uint32_t deadline_count(const RemoteEnd& e) noexcept {
  if (e.writer) {
    dds_offered_deadline_missed_status_t st{};
    return dds_get_offered_deadline_missed_status(e.writer, &st) == 0 ? st.total_count : 0;
  }
  dds_requested_deadline_missed_status_t st{};
  return dds_get_requested_deadline_missed_status(e.reader, &st) == 0 ? st.total_count : 0;
}

void copy_name(char (&to)[65], const std::string& from) noexcept { std::snprintf(to, sizeof to, "%s", from.c_str()); }

}  // namespace

// Producer side: every block the producer left in the ring, as samples.
void DdsBridge::Impl::write_out(RemoteEnd& e) noexcept {
  e.link->link->drain_to([&](const coupling::DataBlock& b) noexcept {
    // The initial block: the consumer's host computes its own from the
    // same file.
    if (b.sequence <= kInitialSequence) return;
    const std::size_t n = b.signal_count();
    rtcosim_LinkBlock s{};
    s.graph_hash = hash;
    s.tag = b.tag;
    s.producer_step = b.producer_step;
    s.sequence_number = b.sequence;
    s.discontinuity = b.discontinuity;
    s.write_time_ns = realtime_now();
    const auto v = b.values();
    const auto d = b.derivatives();
    for (std::size_t i = 0; i < n; ++i) {
      e.values[i] = v[i];
      e.derivatives[i] = d[i];
      e.known[i] = b.derivative_valid(i);
    }
    const auto len = static_cast<uint32_t>(n);
    s.values = {len, len, e.values.data(), false};
    s.derivatives = {len, len, e.derivatives.data(), false};
    s.derivative_known = {len, len, e.known.get(), false};
    const bool ok = dds_write(e.writer, &s) >= 0;
    (ok ? e.state->stats.written : e.state->stats.write_errors).fetch_add(1, std::memory_order_relaxed);
    runtime::trace::remote_send(e.link->id, b.sequence, b.tag, ok);
  });
}

// Consumer side: every waiting sample into the consumer's ring. Samples
// are foreign input: a wrong signal count or another graph is dropped.
void DdsBridge::Impl::read_in(RemoteEnd& e) noexcept {
  void* samples[32] = {};
  dds_sample_info_t infos[32];
  RemoteLinkStats& st = e.state->stats;
  for (;;) {
    const dds_return_t n = dds_take(e.reader, samples, infos, 32, 32);
    if (n <= 0) return;
    const std::int64_t taken = realtime_now();
    for (dds_return_t i = 0; i < n; ++i) {
      if (!infos[i].valid_data) continue;
      const auto* s = static_cast<const rtcosim_LinkBlock*>(samples[i]);
      const std::size_t count = e.block.signal_count();
      if (s->graph_hash != hash || s->values._length != count || s->derivatives._length != count ||
          s->derivative_known._length != count) {
        st.malformed.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      // Gaps from the first frame on: the initial block is not sent.
      const auto step = st.account_sequence(s->sequence_number, max_sequence_gap);
      if (step.lost > 0 || step.reset)
        runtime::trace::remote_lost(e.link->id, s->sequence_number, step.lost, step.reset);
      st.received.fetch_add(1, std::memory_order_relaxed);
      // Their clock minus ours taken out of their write time: the sample's
      // age in our clock. Without an estimate yet (no ping-pong done) the
      // clocks count as equal.
      // The write time is foreign input: one that would overflow the
      // difference is left out of the figure.
      const std::int64_t offset = e.producer_clock && e.producer_clock->exchanges.load(std::memory_order_relaxed) > 0
                                      ? e.producer_clock->offset_ns.load(std::memory_order_relaxed)
                                      : 0;
      std::int64_t age = 0;
      if (!__builtin_sub_overflow(taken, s->write_time_ns, &age) && !__builtin_add_overflow(age, offset, &age))
        st.latency.add(static_cast<double>(age) * 1e-9);
      e.block.tag = s->tag;
      e.block.producer_step = s->producer_step;
      e.block.sequence = s->sequence_number;
      e.block.discontinuity = s->discontinuity;
      for (std::size_t k = 0; k < count; ++k) {
        e.block.set(k, s->values._buffer[k], s->derivatives._buffer[k], s->derivative_known._buffer[k]);
      }
      const bool full = !e.link->link->publish(e.block);
      if (full) st.ring_full.fetch_add(1, std::memory_order_relaxed);
      runtime::trace::remote_receive(e.link->id, s->sequence_number, s->tag, full);
    }
    dds_return_loan(e.reader, samples, n);
  }
}

void DdsBridge::Impl::count_deadlines() noexcept {
  for (auto& e : ends) {
    e->state->stats.deadline_missed.store(deadline_count(*e) - e->deadline_base, std::memory_order_relaxed);
  }
}

std::int64_t DdsBridge::Impl::realtime_now() const noexcept { return clock_ns(CLOCK_REALTIME) + clock_shift_ns; }

void DdsBridge::Impl::ping_peers() noexcept {
  for (auto& [name, p] : peers) {
    rtcosim_ClockPing ping{};
    copy_name(ping.sender, host);
    copy_name(ping.receiver, name);
    ping.graph_hash = hash;
    ping.ping_number = p.next_ping++;
    ping.t1_ns = realtime_now();
    p.sent_t1[ping.ping_number % Peer::kPending] = ping.t1_ns;
    (void)dds_write(clock_writer, &ping);  // a lost ping is one exchange fewer
  }
}

// Answers pings to this host at once and takes the replies to ours. The
// samples are foreign input: another graph, an unknown host, a reply to a
// ping we did not send (sequence or t1) are passed over.
void DdsBridge::Impl::hear_pings() noexcept {
  void* samples[16] = {};
  dds_sample_info_t infos[16];
  for (;;) {
    const dds_return_t n = dds_take(clock_reader, samples, infos, 16, 16);
    if (n <= 0) return;
    const std::int64_t arrived = realtime_now();
    for (dds_return_t i = 0; i < n; ++i) {
      if (!infos[i].valid_data) continue;
      const auto* s = static_cast<const rtcosim_ClockPing*>(samples[i]);
      const std::string from(s->sender, strnlen(s->sender, sizeof s->sender));
      const auto it = peers.find(from);
      if (s->graph_hash != hash || it == peers.end() || strncmp(s->receiver, host.c_str(), sizeof s->receiver) != 0)
        continue;
      Peer& p = it->second;
      if (!s->reply) {
        rtcosim_ClockPing reply = *s;
        copy_name(reply.sender, host);
        copy_name(reply.receiver, from);
        reply.reply = true;
        reply.t2_ns = arrived;
        reply.t3_ns = realtime_now();
        (void)dds_write(clock_writer, &reply);
        continue;
      }
      const bool ours = s->ping_number < p.next_ping && p.next_ping - s->ping_number <= Peer::kPending &&
                        p.sent_t1[s->ping_number % Peer::kPending] == s->t1_ns;
      if (!ours || !p.filter.add(s->t1_ns, s->t2_ns, s->t3_ns, arrived)) continue;
      if (p.clock) {
        p.clock->offset_ns.store(p.filter.offset_ns(), std::memory_order_relaxed);
        p.clock->round_trip_ns.store(p.filter.round_trip_ns(), std::memory_order_relaxed);
        p.clock->exchanges.store(p.filter.exchanges(), std::memory_order_relaxed);
      }
      const double offset_s = static_cast<double>(p.filter.offset_ns()) * 1e-9;
      if (!p.clock_warned && p.filter.exchanges() >= ClockOffsetFilter::kWindow &&
          std::fabs(offset_s) > graph.spec().dds.max_clock_offset) {
        p.clock_warned = true;
        std::lock_guard lock(mutex);
        clock_warnings.push_back(clock_warning(from, offset_s, static_cast<double>(p.filter.round_trip_ns()) * 1e-9));
      }
    }
    dds_return_loan(clock_reader, samples, n);
  }
}

std::string DdsBridge::Impl::clock_warning(const std::string& other, double offset_s, double round_trip_s) const {
  return "the clock of host '" + other + "' is " + base::format_duration(std::fabs(offset_s)) +
         (offset_s > 0 ? " ahead of" : " behind") + " this host's (" + host +
         "; estimated from the DDS ping-pong, round trip " + base::format_duration(round_trip_s) +
         "), more than dds: max_clock_offset " + base::format_duration(graph.spec().dds.max_clock_offset) +
         " — the hosts' common epoch is only as common as their clocks: synchronise them (linuxptp ptp4l/phc2sys, "
         "or chrony/NTP)";
}

void DdsBridge::Impl::check_peers(std::int64_t now) {
  for (auto& [name, p] : peers) {
    if (p.lost || now - p.heard_ns < static_cast<std::int64_t>(kSilence * 1e9)) continue;
    p.lost = true;
    std::lock_guard lock(mutex);
    lost_hosts.push_back(name);
  }
}

// Both bridge threads run at the configured CPU and priority; the first
// one's placement is reported.
void DdsBridge::Impl::place(bool fifo, bool report) noexcept {
  const auto& dds = graph.spec().dds;
  try {
    const std::string problem =
        runtime::prepare_thread(dds.bridge_cpu, dds.bridge_priority, fifo && dds.bridge_priority > 0);
    const runtime::ThreadPlacement p = runtime::current_placement();
    if (report) {
      std::lock_guard lock(mutex);
      placement = runtime::policy_text(p) + (p.cpu >= 0 ? " cpu " + std::to_string(p.cpu) : std::string()) +
                  (problem.empty() ? "" : " (" + problem + ")");
    }
  } catch (...) {
  }
  // Sleeps end when asked, not up to 50 us later (the default slack).
  (void)prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
}

// The sending thread: asleep until a producer's frame publishes into a
// remote link (its one FUTEX_WAKE), then every waiting block out as a
// sample. The timeout only bounds the wait at stop.
void DdsBridge::Impl::send(bool fifo) noexcept {
  place(fifo, false);
  while (running.load(std::memory_order_relaxed)) {
    const std::uint32_t seen = produced.value();
    for (auto& e : ends) {
      if (e->writer) write_out(*e);
    }
    // stop() clears `running` before its notify: either this sees it, or
    // the notify changes the word after `seen` was read and the wait
    // returns at once.
    if (!running.load(std::memory_order_seq_cst)) break;
    produced.wait(seen, kAnnouncePeriod);
  }
  for (auto& e : ends) {
    if (e->writer) write_out(*e);
  }
}

// Takes every waiting sample of a consumer-side end into its ring, from
// whichever thread asks, one thread at a time: the ring has one producer.
void DdsBridge::Impl::pump(RemoteEnd& e) noexcept {
  e.pending.fetch_add(1, std::memory_order_seq_cst);
  while (running.load(std::memory_order_acquire)) {
    // All four in one total order: a caller that finds `busy` held has
    // raised `pending` before the holder's clear, so the holder's load
    // after its clear sees it (with release/acquire both could miss).
    if (e.busy.test_and_set(std::memory_order_seq_cst)) return;  // the holder looks again
    e.pending.store(0, std::memory_order_seq_cst);
    read_in(e);
    e.busy.clear(std::memory_order_seq_cst);
    if (e.pending.load(std::memory_order_seq_cst) == 0) return;
  }
}

// A sample arrived (Cyclone's receive thread): into the consumer's ring at
// once, without waking another thread (docs/dds.md).
void DdsBridge::Impl::on_data_available(dds_entity_t, void* arg) {
  auto* e = static_cast<RemoteEnd*>(arg);
  static_cast<Impl*>(e->owner)->pump(*e);
}

void DdsBridge::Impl::run(bool fifo) noexcept {
  place(fifo, true);
  std::int64_t next_announce = 0;
  while (running.load(std::memory_order_relaxed)) {
    hear_pings();
    const std::int64_t now = clock_ns(CLOCK_MONOTONIC);
    if (now >= next_announce) {
      next_announce = now + kAnnouncePeriod;
      announce();
      ping_peers();
      try {
        hear_announces();
      } catch (...) {
        // Another graph mid-run: its samples are already dropped by hash.
      }
      check_peers(now);
      count_deadlines();
    }
    // Samples arriving wake the wait at once.
    const dds_duration_t wait = std::max<dds_duration_t>(0, next_announce - clock_ns(CLOCK_MONOTONIC));
    (void)dds_waitset_wait(waitset, nullptr, 0, wait);
  }
  count_deadlines();
}

void DdsBridge::start(bool fifo) {
  Impl& m = *impl_;
  const std::int64_t now = clock_ns(CLOCK_MONOTONIC);
  for (auto& [name, p] : m.peers) p.heard_ns = std::max(p.heard_ns, now);
  // After RemoteState::reset and Graph::reset (session::RealtimeRun::start),
  // which cleared the counters.
  for (auto& e : m.ends) {
    e->state->stats.last_sequence.store(kInitialSequence, std::memory_order_relaxed);
    e->deadline_base = deadline_count(*e);
  }
  // A start after a stop: the ends stop() held are free again.
  for (auto& e : m.ends) {
    if (e->held) {
      e->held = false;
      e->busy.clear(std::memory_order_seq_cst);
    }
  }
  (void)dds_waitset_set_trigger(m.waitset, false);
  m.running.store(true);
  // What arrived before the start waited in the readers: the listener only
  // takes samples while the bridge runs.
  for (auto& e : m.ends) {
    if (!e->writer) m.pump(*e);
  }
  m.thread = std::thread([this, fifo] { impl_->run(fifo); });
  m.sender = std::thread([this, fifo] { impl_->send(fifo); });
}

void DdsBridge::stop() {
  Impl& m = *impl_;
  m.running.store(false);
  m.produced.notify();
  // Ends the receiving thread's wait now, not at its timeout (up to an
  // announce period).
  if (m.waitset > 0) (void)dds_waitset_set_trigger(m.waitset, true);
  if (m.sender.joinable()) m.sender.join();
  if (m.thread.joinable()) m.thread.join();
  // A listener call that saw the bridge running may still be pushing:
  // wait for it and keep every end busy, so that none pushes after stop.
  for (auto& e : m.ends) {
    if (e->writer || e->held) continue;
    while (e->busy.test_and_set(std::memory_order_acquire)) std::this_thread::yield();
    e->held = true;
  }
}

}  // namespace rtcosim::io
