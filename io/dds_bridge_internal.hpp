#pragma once

// Private to DdsBridge (io/dds_bridge.hpp): its Impl and the types it holds,
// shared by its three files: dds_bridge.cpp (set-up, DDS Security, the
// accessors), dds_bridge_start.cpp (the start coordination: announces and
// the epoch agreement) and dds_bridge_run.cpp (the bridge's threads during a
// run: the sample paths, the clock ping-pong, the watch over the hosts).
// Not installed, not for other code.

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <dds/dds.h>
#include <time.h>

#include "base/wake_word.hpp"
#include "io/clock_offset.hpp"
#include "io/dds_bridge.hpp"
#include "rtcosim_dds.h"

namespace rtcosim::io {

// Named, not anonymous: DdsBridge::Impl, which has linkage, holds these as
// fields (g++ -Wsubobject-linkage).
namespace dds_detail {

inline std::int64_t clock_ns(clockid_t id) noexcept {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

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

// One host's start topic, as this bridge reads it.
struct StartTopic {
  std::string host;  // whose topic it is: the only name an announce on it may carry
  std::string name;
  dds_entity_t topic = 0, reader = 0;
};

// What every bridge's participant says of itself in its user data
// (dds_bridge_start.cpp, beside the parser the start's error reads it with).
std::string participant_user_data(bool secure, const std::string& start_topic, const std::string& host);

}  // namespace dds_detail

struct DdsBridge::Impl {
  using RemoteEnd = dds_detail::RemoteEnd;
  using Peer = dds_detail::Peer;
  using StartTopic = dds_detail::StartTopic;

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
  std::int64_t last_ignored_ns = 0, last_impersonation_ns = 0;  // the thread that takes announces

  explicit Impl(runtime::Graph& g)
      : graph(g), host(g.host()), hash(g.spec().text_hash), max_sequence_gap(g.spec().dds.max_sequence_gap) {}
  ~Impl();

  // Set-up (dds_bridge.cpp): the constructor's steps, in its order of DDS calls.
  void add_peers(const RemoteState& remote);
  void open_participant(const config::HostSpec& me);
  void open_start_topics(const config::HostSpec& me);
  void open_clock_topic();
  void open_remote_ends(RemoteState& remote);

  // The start (dds_bridge_start.cpp).
  void announce();
  template <class Describe>
  void ignore(Describe&& describe, bool impersonation = false);
  void hear_participants();
  void hear_announces();
  void hear_announces(const StartTopic& topic);
  bool links_matched() const;
  std::int64_t start_round(bool leader);
  void refuse_other_graph() const;
  std::string start_timeout_error(double timeout) const;
  std::string silent_hosts_causes() const;
  std::string passed_over_announces() const;

  // The run's threads (dds_bridge_run.cpp).
  void write_out(RemoteEnd& e) noexcept;
  void read_in(RemoteEnd& e) noexcept;
  void count_deadlines() noexcept;
  std::int64_t realtime_now() const noexcept;
  void ping_peers() noexcept;
  void hear_pings() noexcept;
  std::string clock_warning(const std::string& other, double offset_s, double round_trip_s) const;
  void check_peers(std::int64_t now);
  void place(bool fifo, bool report) noexcept;
  void send(bool fifo) noexcept;
  void pump(RemoteEnd& e) noexcept;
  static void on_data_available(dds_entity_t, void* arg);
  void run(bool fifo) noexcept;
};

}  // namespace rtcosim::io
