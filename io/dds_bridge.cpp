#include "io/dds_bridge.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string_view>
#include <tuple>

#include <dds/dds.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "base/duration.hpp"
#include "base/wake_word.hpp"
#include "io/clock_offset.hpp"
#include "io/dds_security.hpp"
#include "rt_config/hosts.hpp"
#include "rtcosim_dds.h"
#include "runtime/realtime.hpp"
#include "runtime/trace.hpp"

namespace rtcosim::io {

namespace {

std::int64_t clock_ns(clockid_t id) noexcept {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::string dds_error(const char* what, dds_return_t rc) {
  return std::string(what) + " failed: " + dds_strretcode(rc);
}

dds_entity_t check(dds_entity_t e, const char* what) {
  if (e < 0) throw std::runtime_error(std::string("DDS: ") + dds_error(what, e));
  return e;
}

// A QoS object that is deleted however set-up ends.
class Qos {
 public:
  Qos() : qos_(dds_create_qos()) {}
  ~Qos() { dds_delete_qos(qos_); }
  Qos(const Qos&) = delete;
  Qos& operator=(const Qos&) = delete;
  [[nodiscard]] dds_qos_t* get() const noexcept { return qos_; }

 private:
  dds_qos_t* qos_;
};

// A topic with a writer and a reader of one QoS (the reader's history
// `reader_depth` deep when given): (topic, writer, reader); throws naming
// `what` and the entity that failed.
std::tuple<dds_entity_t, dds_entity_t, dds_entity_t> open_topic(dds_entity_t participant,
                                                                const dds_topic_descriptor_t* type,
                                                                const std::string& name, const Qos& qos,
                                                                const std::string& what, int32_t reader_depth = 0) {
  const dds_entity_t topic = check(dds_create_topic(participant, type, name.c_str(), qos.get(), nullptr),
                                   ("creating the " + what + " topic").c_str());
  const dds_entity_t writer =
      check(dds_create_writer(participant, topic, qos.get(), nullptr), ("creating the " + what + " writer").c_str());
  const Qos rq;
  dds_copy_qos(rq.get(), qos.get());
  if (reader_depth > 0) dds_qset_history(rq.get(), DDS_HISTORY_KEEP_LAST, reader_depth);
  const dds_entity_t reader =
      check(dds_create_reader(participant, topic, rq.get(), nullptr), ("creating the " + what + " reader").c_str());
  return {topic, writer, reader};
}

// A sample for `reader` wakes the bridge's wait on `waitset`.
void attach(dds_entity_t waitset, dds_entity_t reader) {
  const dds_entity_t cond = check(dds_create_readcondition(reader, DDS_ANY_STATE), "creating a read condition");
  if (const dds_return_t rc = dds_waitset_attach(waitset, cond, 0); rc < 0) {
    throw std::runtime_error("DDS: " + dds_error("attaching a read condition", rc));
  }
}

constexpr dds_duration_t kAnnouncePeriod = DDS_MSECS(100);
constexpr int32_t kAnnounceDepth = 64;  // start announces kept per host name until taken
// A remote link's DDS deadline, in producer periods (docs/dds.md).
constexpr double kDeadlinePeriods = 2.0;
// The sequence of a task's initial outputs (TaskRuntime::publish_initial);
// frames count on from it.
constexpr std::uint64_t kInitialSequence = 1;

// One remote link as the bridge sees it.
struct RemoteEnd {
  runtime::GraphLink* link = nullptr;
  RemoteState::Link* state = nullptr;  // its topic and counters (the run's RemoteState)
  dds_entity_t topic = 0;
  dds_entity_t writer = 0;  // producer here
  dds_entity_t reader = 0;  // consumer here
  // Producer side: the sample's buffers, sized once.
  std::vector<double> values, derivatives;
  std::unique_ptr<bool[]> known;
  // Consumer side: the block pushed into the ring.
  coupling::DataBlock block;
  // Consumer side: whoever takes samples (the reader's listener in
  // Cyclone's receive thread, or the catch-up at start) holds `busy`;
  // `pending` makes the holder look again for samples that arrived while
  // it held it (DdsBridge::Impl::pump).
  std::atomic_flag busy;
  std::atomic<std::uint32_t> pending{0};
  void* owner = nullptr;  // the DdsBridge::Impl
  bool held = false;      // stop() holds `busy` for good
  bool seen_any = false;
  const HostClock* producer_clock = nullptr;  // consumer side: the producer host's, for latency
  std::uint32_t deadline_base = 0;            // DDS's missed-deadline count when the run started
};

// This end's missed deadlines so far (DDS counts them per reader / writer).
std::uint32_t deadline_count(const RemoteEnd& e) noexcept {
  if (e.writer) {
    dds_offered_deadline_missed_status_t st{};
    return dds_get_offered_deadline_missed_status(e.writer, &st) == 0 ? st.total_count : 0;
  }
  dds_requested_deadline_missed_status_t st{};
  return dds_get_requested_deadline_missed_status(e.reader, &st) == 0 ? st.total_count : 0;
}

struct Peer {
  std::uint64_t hash = 0;
  bool ready = false;
  std::int64_t start_ns = 0;
  std::int64_t heard_ns = 0;  // CLOCK_MONOTONIC
  bool lost = false;
  bool other_graph = false;  // its last announce named another graph text
  // Its participant seen in the domain (DCPSParticipant, by the user data
  // every bridge's participant carries): with DDS Security, without.
  bool seen_secure = false, seen_plain = false;
  // The clock ping-pong with this host: the t1 of our last pings by
  // sequence, so that a reply is only taken for a ping we sent.
  static constexpr std::size_t kPending = 16;
  std::array<std::int64_t, kPending> sent_t1{};
  std::uint64_t next_ping = 1;
  ClockOffsetFilter filter;
  HostClock* clock = nullptr;  // the run's RemoteState's
  bool clock_warned = false;
};

void copy_name(char (&to)[65], const std::string& from) noexcept { std::snprintf(to, sizeof to, "%s", from.c_str()); }

// What every bridge's participant says of itself in its user data (seen by
// every participant of the domain, secured or not, in DCPSParticipant):
// "rtcosim-host security=on|off start=START_TOPIC host=NAME". Only a claim:
// it names a likely cause in an error, never decides anything.
constexpr std::string_view kUserDataTag = "rtcosim-host security=";

std::string participant_user_data(bool secure, const std::string& start_topic, const std::string& host) {
  return std::string(kUserDataTag) + (secure ? "on" : "off") + " start=" + start_topic + " host=" + host;
}

struct ParticipantClaim {
  bool secure = false;
  std::string start_topic, host;
};

// Parses what participant_user_data wrote; false for anything else.
bool parse_user_data(std::string_view text, ParticipantClaim& out) {
  if (text.substr(0, kUserDataTag.size()) != kUserDataTag) return false;
  text.remove_prefix(kUserDataTag.size());
  if (text.substr(0, 3) == "on ") {
    out.secure = true;
    text.remove_prefix(3);
  } else if (text.substr(0, 4) == "off ") {
    out.secure = false;
    text.remove_prefix(4);
  } else {
    return false;
  }
  constexpr std::string_view start = "start=", name = " host=";
  const std::size_t at = text.find(name);
  if (text.substr(0, start.size()) != start || at == std::string_view::npos) return false;
  out.start_topic = std::string(text.substr(start.size(), at - start.size()));
  out.host = std::string(text.substr(at + name.size()));
  return true;
}

// One host's start topic, as this bridge reads it.
struct StartTopic {
  std::string host;  // whose topic it is: the only name an announce on it may carry
  std::string name;
  dds_entity_t topic = 0, reader = 0;
};

}  // namespace

std::string dds_host_start_topic_name(const config::GraphSpec& graph, const std::string& host) {
  std::string part;
  for (const char ch : host) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
      part += ch;
    } else {
      constexpr char kHex[] = "0123456789abcdef";
      part += '_';
      part += kHex[c >> 4];
      part += kHex[c & 15];
    }
  }
  return config::dds_start_topic_name(graph) + "/" + part;
}

struct DdsBridge::Impl {
  runtime::Graph& graph;
  std::string host;
  std::uint64_t hash;
  dds_entity_t participant = 0;
  bool secure = false;  // dds: security on
  // Every host's start topic, this host's among them (read too: another
  // participant announcing on it is an impersonation), and this host's
  // writer on its own.
  std::vector<StartTopic> start_topics;
  dds_entity_t announce_writer = 0;
  dds_instance_handle_t announce_handle = 0;  // the writer's: its own samples on its own topic
  dds_entity_t participants_reader = 0;       // DCPSParticipant: who is in the domain, for the timeout's error
  dds_entity_t clock_topic = 0, clock_writer = 0, clock_reader = 0;
  dds_entity_t waitset = 0;         // the reader of pings: a ping wakes the receiving thread
  std::int64_t clock_shift_ns = 0;  // added to CLOCK_REALTIME in the ping-pong (tests: a host whose clock is off)
  std::vector<std::unique_ptr<RemoteEnd>> ends;
  std::map<std::string, Peer> peers;  // every other host of the graph
  rtcosim_StartAnnounce self{};
  std::thread thread;  // receives, announces, answers pings
  std::atomic<bool> cancel_start{false};
  std::thread sender;       // sends what producers publish, woken by them
  base::WakeWord produced;  // every producer-side remote link notifies it
  std::atomic<bool> running{false};
  std::uint64_t max_sequence_gap;
  mutable std::mutex mutex;  // lost_hosts and placement; never on a task's path
  std::vector<std::string> lost_hosts;
  std::vector<std::string> clock_warnings;
  std::string placement;
  // Announces not taken: impersonations (a name other than its topic's
  // host, or another participant on this host's own topic), of another
  // graph text, or with a start time outside [now, now + start_delay +
  // kStartMargin]. Without DDS Security anyone in the domain can write on
  // any host's topic (a host's name is only a claim); with it, only the
  // certificate the permissions grant that host's topic. Each is counted
  // and passed over, never a reason to stop or to wait. The
  // impersonations among them are counted (and the last described) in the
  // run's RemoteState, where the summaries read them.
  std::atomic<std::uint64_t> ignored{0};  // all of them
  AnnounceStats* announces = nullptr;     // the run's RemoteState's
  std::string last_ignored;               // under `mutex`: the last described
  std::string last_other;                 // under `mutex`: the last described that was no impersonation
  std::string last_impersonation;         // under `mutex`
  double start_delay = 0.0;               // what coordinate_start was given

  explicit Impl(runtime::Graph& g)
      : graph(g), host(g.host()), hash(g.spec().text_hash), max_sequence_gap(g.spec().dds.max_sequence_gap) {}

  ~Impl() {
    // Here, not in ~DdsBridge: a constructor that throws half-way has
    // already pointed some links' wake-ups at `produced`.
    for (auto& e : ends) {
      if (e->writer) e->link->link->set_wake(nullptr);
    }
    if (participant > 0) dds_delete(participant);
  }

  void announce() {
    if (dds_return_t rc = dds_write(announce_writer, &self); rc < 0) (void)rc;  // the next period retries
  }

  // Counts every announce passed over; describes one a second at most of
  // each kind (a flood of spoofs must not keep the bridge thread formatting
  // strings).
  template <class Describe>
  void ignore(Describe&& describe, bool impersonation = false) {
    ignored.fetch_add(1, std::memory_order_relaxed);
    if (impersonation) announces->impersonations.fetch_add(1, std::memory_order_relaxed);
    const std::int64_t now = clock_ns(CLOCK_MONOTONIC);
    std::int64_t& last_ns = impersonation ? last_impersonation_ns : last_ignored_ns;
    if (now - last_ns < 1'000'000'000 && last_ns != 0) return;
    last_ns = now;
    std::string what = describe();
    if (impersonation) announces->last_impersonation.store(what);
    std::lock_guard lock(mutex);
    last_ignored = what;
    (impersonation ? last_impersonation : last_other) = std::move(what);
  }
  std::int64_t last_ignored_ns = 0, last_impersonation_ns = 0;  // the thread that takes announces

  // Notes which hosts' participants are in the domain, secured or not (by
  // the user data each bridge gives its participant): what the timeout's
  // error names as a likely cause. Set-up only (coordinate_start).
  void hear_participants() {
    if (participants_reader <= 0) return;
    const std::string start_topic = config::dds_start_topic_name(graph.spec());
    void* samples[16] = {};
    dds_sample_info_t infos[16];
    for (;;) {
      const dds_return_t n = dds_take(participants_reader, samples, infos, 16, 16);
      if (n <= 0) break;
      for (dds_return_t i = 0; i < n; ++i) {
        if (!infos[i].valid_data) continue;
        const auto* p = static_cast<const dds_builtintopic_participant_t*>(samples[i]);
        void* data = nullptr;
        std::size_t size = 0;
        if (p->qos == nullptr || !dds_qget_userdata(p->qos, &data, &size) || data == nullptr) continue;
        ParticipantClaim claim;
        const bool ours = size <= 512 && parse_user_data({static_cast<const char*>(data), size}, claim) &&
                          claim.start_topic == start_topic;
        dds_free(data);
        if (!ours) continue;
        const auto it = peers.find(claim.host);
        if (it == peers.end()) continue;
        (claim.secure ? it->second.seen_secure : it->second.seen_plain) = true;
      }
      dds_return_loan(participants_reader, samples, n);
    }
  }

  // Takes every waiting announce; passes over (and counts) what it must not take.
  void hear_announces() {
    for (const StartTopic& topic : start_topics) hear_announces(topic);
  }

  void hear_announces(const StartTopic& topic) {
    void* samples[16] = {};
    dds_sample_info_t infos[16];
    for (;;) {
      const dds_return_t n = dds_take(topic.reader, samples, infos, 16, 16);
      if (n <= 0) break;
      const std::int64_t now = clock_ns(CLOCK_MONOTONIC);
      const std::int64_t wall = clock_ns(CLOCK_REALTIME);
      const std::int64_t latest = wall + static_cast<std::int64_t>((start_delay + kStartMargin) * 1e9);
      for (dds_return_t i = 0; i < n; ++i) {
        if (!infos[i].valid_data) continue;
        const auto* a = static_cast<const rtcosim_StartAnnounce*>(samples[i]);
        const std::string name(a->host, strnlen(a->host, sizeof a->host));
        // The topic names the host: with DDS Security only that host's
        // certificate may publish on it (the permissions), so the name in
        // the sample is taken only when it is the topic's.
        if (topic.host == host) {
          if (infos[i].publication_handle == announce_handle) continue;  // our own
          ignore(
              [&] {
                return "an announce on this host's own start topic from another participant, naming '" + name +
                       "' (a second process with --host " + host + ", or this host's certificate used elsewhere)";
              },
              true);
          continue;
        }
        if (name != topic.host) {
          ignore([&] { return "an announce on host '" + topic.host + "''s start topic naming itself '" + name + "'"; },
                 true);
          continue;
        }
        const auto it = peers.find(name);
        if (it == peers.end()) continue;  // not a topic this bridge reads
        if (a->graph_hash != hash) {
          it->second.other_graph = true;
          ignore([&] { return "an announce from '" + name + "' of another task-graph file"; });
          continue;
        }
        // Only a start still to come, and no further ahead than the file's
        // start_delay (plus a margin for the hosts' clocks), is one the first
        // host can have chosen: one an hour ahead would hold every task
        // asleep for that hour.
        // The first start taken is kept: the first host chooses once per run.
        Peer& p = it->second;
        if (a->start_time_ns != 0 && p.start_ns == 0 && (a->start_time_ns < wall || a->start_time_ns > latest)) {
          const std::int64_t start = a->start_time_ns;
          ignore([&] {
            // In double: a hostile tag of INT64_MIN must not overflow the difference.
            return "an announce from '" + name + "' with a start " +
                   base::format_duration((static_cast<double>(start) - static_cast<double>(wall)) * 1e-9) +
                   " from now — expected between now and start_delay + " + base::format_duration(kStartMargin);
          });
          continue;
        }
        p.other_graph = false;
        p.hash = a->graph_hash;
        p.ready = a->ready;
        p.heard_ns = now;  // heard, whatever start it names: the host is alive
        if (a->start_time_ns != 0 && p.start_ns != 0 && a->start_time_ns != p.start_ns) {
          ignore([&] { return "an announce from '" + name + "' with a start other than the one it announced first"; });
          continue;
        }
        if (a->start_time_ns != 0) p.start_ns = a->start_time_ns;
      }
      dds_return_loan(topic.reader, samples, n);
    }
  }

  bool links_matched() const {
    for (const auto& e : ends) {
      if (e->writer) {
        dds_publication_matched_status_t st{};
        if (dds_get_publication_matched_status(e->writer, &st) < 0 || st.current_count == 0) return false;
      } else {
        dds_subscription_matched_status_t st{};
        if (dds_get_subscription_matched_status(e->reader, &st) < 0 || st.current_count == 0) return false;
      }
    }
    return true;
  }

  // Producer side: every block the producer left in the ring, as samples.
  void write_out(RemoteEnd& e) noexcept {
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
  void read_in(RemoteEnd& e) noexcept {
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

  void count_deadlines() noexcept {
    for (auto& e : ends) {
      e->state->stats.deadline_missed.store(deadline_count(*e) - e->deadline_base, std::memory_order_relaxed);
    }
  }

  std::int64_t realtime_now() const noexcept { return clock_ns(CLOCK_REALTIME) + clock_shift_ns; }

  void ping_peers() noexcept {
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
  void hear_pings() noexcept {
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

  std::string clock_warning(const std::string& other, double offset_s, double round_trip_s) const {
    return "the clock of host '" + other + "' is " + base::format_duration(std::fabs(offset_s)) +
           (offset_s > 0 ? " ahead of" : " behind") + " this host's (" + host +
           "; estimated from the DDS ping-pong, round trip " + base::format_duration(round_trip_s) +
           "), more than dds: max_clock_offset " + base::format_duration(graph.spec().dds.max_clock_offset) +
           " — the hosts' common epoch is only as common as their clocks: synchronise them (linuxptp ptp4l/phc2sys, "
           "or chrony/NTP)";
  }

  void check_peers(std::int64_t now) {
    for (auto& [name, p] : peers) {
      if (p.lost || now - p.heard_ns < static_cast<std::int64_t>(kSilence * 1e9)) continue;
      p.lost = true;
      std::lock_guard lock(mutex);
      lost_hosts.push_back(name);
    }
  }

  // Both bridge threads run at the configured CPU and priority; the first
  // one's placement is reported.
  void place(bool fifo, bool report) noexcept {
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
  void send(bool fifo) noexcept {
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
  void pump(RemoteEnd& e) noexcept {
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
  static void on_data_available(dds_entity_t, void* arg) {
    auto* e = static_cast<RemoteEnd*>(arg);
    static_cast<Impl*>(e->owner)->pump(*e);
  }

  void run(bool fifo) noexcept {
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
};

std::int64_t monotonic_from_realtime(std::int64_t realtime_ns) noexcept {
  return clock_ns(CLOCK_MONOTONIC) + (realtime_ns - clock_ns(CLOCK_REALTIME));
}

DdsBridge::DdsBridge(runtime::Graph& graph, RemoteState& remote, std::int64_t clock_shift_ns)
    : impl_(std::make_unique<Impl>(graph)) {
  Impl& m = *impl_;
  m.announces = &remote.announces();
  m.clock_shift_ns = clock_shift_ns;
  const config::GraphSpec& spec = graph.spec();
  const config::HostSpec* me = spec.find_host(m.host);
  if (!me) throw std::runtime_error("the DDS bridge needs --host: one of the graph's 'hosts:'");
  for (const auto& h : spec.hosts) {
    if (h.name != m.host) m.peers.emplace(h.name, Peer{});
  }
  for (const auto& c : remote.host_clocks()) {
    if (auto it = m.peers.find(c->host); it != m.peers.end()) it->second.clock = c.get();
  }
  m.secure = spec.dds.security.enabled();
  {
    // Every participant says who it is and whether it is secured (its user
    // data, seen by every participant of the domain): what names a
    // mismatch of dds.security between hosts in the timeout's error.
    const Qos pq;
    const std::string user_data = participant_user_data(m.secure, config::dds_start_topic_name(spec), m.host);
    dds_qset_userdata(pq.get(), user_data.data(), user_data.size());
    if (m.secure) set_security_qos(pq.get(), spec.dds.security, *me);
    m.participant = dds_create_participant(static_cast<dds_domainid_t>(me->domain), pq.get(), nullptr);
  }
  if (m.participant < 0 && m.secure) {
    throw std::runtime_error(
        "DDS Security: host '" + m.host + "' cannot create its participant (" + dds_strretcode(m.participant) +
        ") — a certificate not signed by the identity CA, a document not S/MIME-signed by the permissions CA, "
        "permissions whose subject is not the certificate's, or dates outside their validity; Cyclone logs which "
        "with CYCLONEDDS_URI='<Tracing><Verbosity>warning</Verbosity><OutputFile>stderr</OutputFile></Tracing>'");
  }
  check(m.participant, "creating the participant");
  // Announces: reliable, the latest per host, kept for late joiners; one
  // topic per host, written by that host only (the permissions' grants
  // under DDS Security), read by every host.
  const Qos qos;
  dds_qset_reliability(qos.get(), DDS_RELIABILITY_RELIABLE, DDS_SECS(1));
  dds_qset_durability(qos.get(), DDS_DURABILITY_TRANSIENT_LOCAL);
  dds_qset_history(qos.get(), DDS_HISTORY_KEEP_LAST, 1);
  // Its readers keep more than the latest per host: without DDS Security
  // anyone may write under a host's name, and with one sample per name a
  // stream of spoofs would replace the real host's announce before it is
  // taken.
  const Qos rq;
  dds_copy_qos(rq.get(), qos.get());
  dds_qset_history(rq.get(), DDS_HISTORY_KEEP_LAST, kAnnounceDepth);
  for (const auto& h : spec.hosts) {
    StartTopic t;
    t.host = h.name;
    t.name = dds_host_start_topic_name(spec, h.name);
    t.topic = check(dds_create_topic(m.participant, &rtcosim_StartAnnounce_desc, t.name.c_str(), qos.get(), nullptr),
                    "creating a start topic");
    t.reader = check(dds_create_reader(m.participant, t.topic, rq.get(), nullptr), "creating a start reader");
    if (h.name == m.host) {
      m.announce_writer = dds_create_writer(m.participant, t.topic, qos.get(), nullptr);
      if (m.announce_writer < 0 && m.secure) {
        throw std::runtime_error(
            "DDS Security: host '" + m.host + "' may not publish its own start topic " + t.name + " (" +
            dds_strretcode(m.announce_writer) + ") — its permissions (" + me->permissions +
            ") do not grant its certificate's subject that topic (scripts/dds-security-docs.sh grants each host "
            "its own; docs/dds.md, Security), or another secured participant of this process in the same domain "
            "holds another host's identity (Cyclone DDS applies one security configuration per domain and process)");
      }
      check(m.announce_writer, "creating the start writer");
      check(dds_get_instance_handle(m.announce_writer, &m.announce_handle), "reading the start writer's handle");
    } else if (m.secure) {
      // The binding of a host to its certificate is the permissions': a
      // document that lets this host publish another host's start topic
      // lets any certified participant announce itself as any host.
      const dds_entity_t probe = dds_create_writer(m.participant, t.topic, qos.get(), nullptr);
      if (probe > 0) {
        dds_delete(probe);
        throw std::runtime_error(
            "DDS Security: the permissions of host '" + m.host + "' (" + me->permissions +
            ") let it publish the start topic of host '" + h.name + "' (" + t.name +
            "), so any certified host could announce itself as another — grant each subject publish on its own "
            "host's start topic only (scripts/dds-security-docs.sh writes such permissions; docs/dds.md, Security)");
      }
    }
    m.start_topics.push_back(std::move(t));
  }
  m.participants_reader = dds_create_reader(m.participant, DDS_BUILTIN_TOPIC_DCPSPARTICIPANT, nullptr, nullptr);
  std::snprintf(m.self.host, sizeof m.self.host, "%s", m.host.c_str());
  m.self.graph_hash = m.hash;

  // The clock ping-pong: best effort (a lost ping is one exchange fewer),
  // its reader in the waitset so that a ping is answered the moment it
  // arrives (the wait would add to the round trip).
  const Qos cq;
  dds_qset_reliability(cq.get(), DDS_RELIABILITY_BEST_EFFORT, 0);
  dds_qset_history(cq.get(), DDS_HISTORY_KEEP_LAST, 32);
  std::tie(m.clock_topic, m.clock_writer, m.clock_reader) =
      open_topic(m.participant, &rtcosim_ClockPing_desc, config::dds_clock_topic_name(spec), cq, "clock");
  m.waitset = check(dds_create_waitset(m.participant), "creating the waitset");
  attach(m.waitset, m.clock_reader);

  for (runtime::GraphLink* l : graph.remote_links()) {
    auto e = std::make_unique<RemoteEnd>();
    e->link = l;
    e->state = remote.find(l);
    if (e->state == nullptr) throw std::logic_error("the DDS bridge's RemoteState is of another graph or host");
    const std::string& topic_name = e->state->topic;
    const std::size_t n = l->link->signal_count();
    // Best effort, the newest blocks as deep as the link's ring: a late
    // block is worth less than the next one. A deadline of two producer
    // periods: each period of that length without a sample is a missed
    // deadline, counted at both ends.
    dds_qos_t* q = dds_create_qos();
    dds_qset_reliability(q, DDS_RELIABILITY_BEST_EFFORT, 0);
    dds_qset_history(q, DDS_HISTORY_KEEP_LAST, static_cast<int32_t>(l->link->capacity_blocks()));
    const config::TaskSpec* producer = spec.find_task(l->producer);
    if (producer) dds_qset_deadline(q, static_cast<dds_duration_t>(kDeadlinePeriods * producer->period * 1e9));
    e->topic = dds_create_topic(m.participant, &rtcosim_LinkBlock_desc, topic_name.c_str(), q, nullptr);
    if (e->topic < 0) {
      dds_delete_qos(q);
      check(e->topic, ("creating topic " + topic_name).c_str());
    }
    if (l->producer_local) {
      e->writer = dds_create_writer(m.participant, e->topic, q, nullptr);
      e->values.assign(n, 0.0);
      e->derivatives.assign(n, 0.0);
      e->known = std::make_unique<bool[]>(n);
    } else {
      e->block = coupling::DataBlock(n);
      e->owner = &m;
      if (producer) {
        for (const auto& c : remote.host_clocks()) {
          if (c->host == producer->host) e->producer_clock = c.get();
        }
      }
      dds_listener_t* listener = dds_create_listener(nullptr);
      dds_lset_data_available_arg(listener, &Impl::on_data_available, e.get(), true);
      e->reader = dds_create_reader(m.participant, e->topic, q, listener);
      dds_delete_listener(listener);
    }
    dds_delete_qos(q);
    check(e->writer ? e->writer : e->reader, ("creating the endpoint of topic " + topic_name).c_str());
    if (e->writer) l->link->set_wake(&m.produced);
    m.ends.push_back(std::move(e));
  }
}

// The graph outlives the bridge and may publish again (a restart): ~Impl
// takes the links' wake-ups back.
DdsBridge::~DdsBridge() { stop(); }

std::int64_t DdsBridge::coordinate_start(double timeout, double start_delay) {
  Impl& m = *impl_;
  const bool leader = m.graph.spec().hosts.front().name == m.host;
  const std::int64_t deadline = clock_ns(CLOCK_MONOTONIC) + static_cast<std::int64_t>(timeout * 1e9);
  m.start_delay = start_delay;
  for (auto& [name, p] : m.peers) p.start_ns = 0;  // a new run: a new agreement
  // Heard before anything is checked: a host that finds a mismatch still
  // tells the other who it is.
  m.announce();
  for (;;) {
    if (m.cancel_start.load(std::memory_order_relaxed)) throw std::runtime_error("the start was cancelled");
    const std::int64_t now = clock_ns(CLOCK_MONOTONIC);
    m.hear_announces();
    m.hear_participants();
    bool all_heard = true, all_ready = true;
    for (const auto& [name, p] : m.peers) {
      all_heard = all_heard && p.heard_ns > 0;
      all_ready = all_ready && p.ready;
    }
    m.self.ready = all_heard && m.links_matched();
    if (leader && m.self.ready && all_ready && m.self.start_time_ns == 0) {
      m.self.start_time_ns = clock_ns(CLOCK_REALTIME) + static_cast<std::int64_t>(start_delay * 1e9);
    }
    m.announce();
    if (leader && m.self.start_time_ns != 0) return m.self.start_time_ns;
    if (!leader) {
      const Peer& lead = m.peers.at(m.graph.spec().hosts.front().name);
      if (lead.start_ns != 0) {
        // hear_announces took it only while it was still to come.
        return lead.start_ns;
      }
    }
    if (now >= deadline) {
      for (const auto& [name, p] : m.peers) {
        if (p.other_graph && p.heard_ns == 0) {
          throw std::runtime_error("host '" + name + "' runs another task-graph file than " + m.graph.spec().file +
                                   " (its text differs) — expected the same file on every host");
        }
      }
      std::string silent, unready;
      for (const auto& [name, p] : m.peers) {
        if (p.heard_ns == 0)
          silent += (silent.empty() ? "'" : ", '") + name + "'";
        else if (!p.ready)
          unready += (unready.empty() ? "'" : ", '") + name + "'";
      }
      std::string text =
          "the hosts did not agree on a start within " + base::format_duration(timeout) + " (dds: discovery_timeout):";
      if (!silent.empty()) {
        text += " no answer from host(s) " + silent + " — start `rtcosim run " + m.graph.spec().file +
                " --host NAME` there, in DDS domain " + std::to_string(m.graph.spec().find_host(m.host)->domain) +
                ", on a network that carries multicast (or name the peers in CYCLONEDDS_URI)";
        // What the silent hosts' participants said of themselves, if they
        // are in the domain at all: the likely cause.
        bool named = false;
        for (const auto& [name, p] : m.peers) {
          if (p.heard_ns != 0) continue;
          if (m.secure && p.seen_plain) {
            text += "; host '" + name +
                    "' runs without DDS Security while this host requires it (dds.security): its participant is in "
                    "the domain unsecured, and a secured host hears no unsecured one — give every host the same file";
            named = true;
          } else if (!m.secure && p.seen_secure) {
            text += "; host '" + name +
                    "' runs with DDS Security (dds.security) while this host does not: its participant is in the "
                    "domain secured, and a secured host hears no unsecured one — give every host the same file";
            named = true;
          } else if (m.secure && p.seen_secure) {
            text += "; host '" + name +
                    "' has a secured participant in the domain but nothing it announced reached this host: it did "
                    "not authenticate (a certificate of another identity CA, documents signed by another "
                    "permissions CA) or its permissions do not let it publish its start topic — Cyclone logs which "
                    "with CYCLONEDDS_URI='<Tracing><Verbosity>warning</Verbosity><OutputFile>stderr</OutputFile>"
                    "</Tracing>'";
            named = true;
          }
        }
        if (m.secure && !named) {
          text +=
              " (with dds.security on, a host that runs without it, or with another CA's documents, is not "
              "heard either)";
        }
      }
      if (!unready.empty())
        text += (silent.empty() ? "" : ";") + std::string(" host(s) ") + unready +
                " answered but did not see every host or match every remote link";
      if (silent.empty() && unready.empty()) {
        text += m.self.ready ? " the first host never chose a start time"
                             : " this host's remote links found no other end (a firewall?)";
      }
      const std::uint64_t impersonations = m.announces->impersonations.load();
      if (impersonations > 0) {
        std::lock_guard lock(m.mutex);
        text += "; " + std::to_string(impersonations) + " announce(s) refused as impersonations of a host, the last " +
                m.last_impersonation;
      }
      if (const auto n = m.ignored.load() - impersonations; n > 0) {
        std::lock_guard lock(m.mutex);
        text += "; " + std::to_string(n) + " announce(s) passed over, the last " + m.last_other +
                " (a host started too late for the first host's start time, or another participant in the domain)";
      }
      throw std::runtime_error(text);
    }
    dds_sleepfor(DDS_MSECS(20));
  }
}

void DdsBridge::cancel_start() noexcept { impl_->cancel_start.store(true, std::memory_order_relaxed); }

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

std::vector<std::string> DdsBridge::take_lost_hosts() {
  std::lock_guard lock(impl_->mutex);
  return std::exchange(impl_->lost_hosts, {});
}

std::uint64_t DdsBridge::ignored_announces() const noexcept { return impl_->ignored.load(std::memory_order_relaxed); }

std::string DdsBridge::last_ignored_announce() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->last_ignored;
}

std::uint64_t DdsBridge::impersonations() const noexcept {
  return impl_->announces->impersonations.load(std::memory_order_relaxed);
}

std::string DdsBridge::last_impersonation() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->last_impersonation;
}

std::vector<std::string> DdsBridge::take_clock_warnings() {
  std::lock_guard lock(impl_->mutex);
  return std::exchange(impl_->clock_warnings, {});
}

std::string DdsBridge::placement() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->placement;
}

}  // namespace rtcosim::io
