// DdsBridge's set-up: its participant (with DDS Security's checks), its
// topics and endpoints, and the accessors. The start coordination is in
// dds_bridge_start.cpp, the run's threads in dds_bridge_run.cpp.
#include "io/dds_bridge.hpp"

#include <cstdio>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

#include <dds/dds.h>

#include "io/dds_bridge_internal.hpp"
#include "io/dds_security.hpp"
#include "rt_config/hosts.hpp"
#include "rtcosim_dds.h"

namespace rtcosim::io {

using namespace dds_detail;

namespace {

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

constexpr int32_t kAnnounceDepth = 64;  // start announces kept per host name until taken
// A remote link's DDS deadline, in producer periods (docs/dds.md).
constexpr double kDeadlinePeriods = 2.0;

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

DdsBridge::Impl::~Impl() {
  // Here, not in ~DdsBridge: a constructor that throws half-way has
  // already pointed some links' wake-ups at `produced`.
  for (auto& e : ends) {
    if (e->writer) e->link->link->set_wake(nullptr);
  }
  if (participant > 0) dds_delete(participant);
}

DdsBridge::DdsBridge(runtime::Graph& graph, RemoteState& remote, std::int64_t clock_shift_ns)
    : impl_(std::make_unique<Impl>(graph)) {
  Impl& m = *impl_;
  m.announces = &remote.announces();
  m.clock_shift_ns = clock_shift_ns;
  const config::GraphSpec& spec = graph.spec();
  const config::HostSpec* me = spec.find_host(m.host);
  if (!me) throw std::runtime_error("the DDS bridge needs --host: one of the graph's 'hosts:'");
  m.add_peers(remote);
  m.secure = spec.dds.security.enabled();
  m.open_participant(*me);
  m.open_start_topics(*me);
  m.participants_reader = dds_create_reader(m.participant, DDS_BUILTIN_TOPIC_DCPSPARTICIPANT, nullptr, nullptr);
  std::snprintf(m.self.host, sizeof m.self.host, "%s", m.host.c_str());
  m.self.graph_hash = m.hash;
  m.open_clock_topic();
  m.open_remote_ends(remote);
}

// Every other host is a peer from the start: the start waits for each, and
// each one's clock estimate goes to the run's RemoteState.
void DdsBridge::Impl::add_peers(const RemoteState& remote) {
  for (const auto& h : graph.spec().hosts) {
    if (h.name != host) peers.emplace(h.name, Peer{});
  }
  for (const auto& c : remote.host_clocks()) {
    if (auto it = peers.find(c->host); it != peers.end()) it->second.clock = c.get();
  }
}

// The participant alone, because its failure under DDS Security has causes
// of its own to name (certificates, signatures, dates).
void DdsBridge::Impl::open_participant(const config::HostSpec& me) {
  const config::GraphSpec& spec = graph.spec();
  {
    // Every participant says who it is and whether it is secured (its user
    // data, seen by every participant of the domain): what names a
    // mismatch of dds.security between hosts in the timeout's error.
    const Qos pq;
    const std::string user_data = participant_user_data(secure, config::dds_start_topic_name(spec), host);
    dds_qset_userdata(pq.get(), user_data.data(), user_data.size());
    if (secure) set_security_qos(pq.get(), spec.dds.security, me);
    participant = dds_create_participant(static_cast<dds_domainid_t>(me.domain), pq.get(), nullptr);
  }
  if (participant < 0 && secure) {
    throw std::runtime_error(
        "DDS Security: host '" + host + "' cannot create its participant (" + dds_strretcode(participant) +
        ") — a certificate not signed by the identity CA, a document not S/MIME-signed by the permissions CA, "
        "permissions whose subject is not the certificate's, or dates outside their validity; Cyclone logs which "
        "with CYCLONEDDS_URI='<Tracing><Verbosity>warning</Verbosity><OutputFile>stderr</OutputFile></Tracing>'");
  }
  check(participant, "creating the participant");
}

// The start topics in one step: each host's binding to its own topic is
// checked here, where the permissions show it, before anything is announced.
void DdsBridge::Impl::open_start_topics(const config::HostSpec& me) {
  const config::GraphSpec& spec = graph.spec();
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
    t.topic = check(dds_create_topic(participant, &rtcosim_StartAnnounce_desc, t.name.c_str(), qos.get(), nullptr),
                    "creating a start topic");
    t.reader = check(dds_create_reader(participant, t.topic, rq.get(), nullptr), "creating a start reader");
    if (h.name == host) {
      announce_writer = dds_create_writer(participant, t.topic, qos.get(), nullptr);
      if (announce_writer < 0 && secure) {
        throw std::runtime_error(
            "DDS Security: host '" + host + "' may not publish its own start topic " + t.name + " (" +
            dds_strretcode(announce_writer) + ") — its permissions (" + me.permissions +
            ") do not grant its certificate's subject that topic (scripts/dds-security-docs.sh grants each host "
            "its own; docs/dds.md, Security), or another secured participant of this process in the same domain "
            "holds another host's identity (Cyclone DDS applies one security configuration per domain and process)");
      }
      check(announce_writer, "creating the start writer");
      check(dds_get_instance_handle(announce_writer, &announce_handle), "reading the start writer's handle");
    } else if (secure) {
      // The binding of a host to its certificate is the permissions': a
      // document that lets this host publish another host's start topic
      // lets any certified participant announce itself as any host.
      const dds_entity_t probe = dds_create_writer(participant, t.topic, qos.get(), nullptr);
      if (probe > 0) {
        dds_delete(probe);
        throw std::runtime_error(
            "DDS Security: the permissions of host '" + host + "' (" + me.permissions +
            ") let it publish the start topic of host '" + h.name + "' (" + t.name +
            "), so any certified host could announce itself as another — grant each subject publish on its own "
            "host's start topic only (scripts/dds-security-docs.sh writes such permissions; docs/dds.md, Security)");
      }
    }
    start_topics.push_back(std::move(t));
  }
}

// The clock topic has a QoS and a waitset of its own: a ping is answered
// the moment it arrives.
void DdsBridge::Impl::open_clock_topic() {
  // The clock ping-pong: best effort (a lost ping is one exchange fewer),
  // its reader in the waitset so that a ping is answered the moment it
  // arrives (the wait would add to the round trip).
  const Qos cq;
  dds_qset_reliability(cq.get(), DDS_RELIABILITY_BEST_EFFORT, 0);
  dds_qset_history(cq.get(), DDS_HISTORY_KEEP_LAST, 32);
  std::tie(clock_topic, clock_writer, clock_reader) =
      open_topic(participant, &rtcosim_ClockPing_desc, config::dds_clock_topic_name(graph.spec()), cq, "clock");
  waitset = check(dds_create_waitset(participant), "creating the waitset");
  attach(waitset, clock_reader);
}

// The remote links last: a producer's link wakes the sender from here on,
// and a consumer's listener may take samples at once.
void DdsBridge::Impl::open_remote_ends(RemoteState& remote) {
  const config::GraphSpec& spec = graph.spec();
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
    e->topic = dds_create_topic(participant, &rtcosim_LinkBlock_desc, topic_name.c_str(), q, nullptr);
    if (e->topic < 0) {
      dds_delete_qos(q);
      check(e->topic, ("creating topic " + topic_name).c_str());
    }
    if (l->producer_local) {
      e->writer = dds_create_writer(participant, e->topic, q, nullptr);
      e->values.assign(n, 0.0);
      e->derivatives.assign(n, 0.0);
      e->known = std::make_unique<bool[]>(n);
    } else {
      e->block = coupling::DataBlock(n);
      e->owner = this;
      if (producer) {
        for (const auto& c : remote.host_clocks()) {
          if (c->host == producer->host) e->producer_clock = c.get();
        }
      }
      dds_listener_t* listener = dds_create_listener(nullptr);
      dds_lset_data_available_arg(listener, &Impl::on_data_available, e.get(), true);
      e->reader = dds_create_reader(participant, e->topic, q, listener);
      dds_delete_listener(listener);
    }
    dds_delete_qos(q);
    check(e->writer ? e->writer : e->reader, ("creating the endpoint of topic " + topic_name).c_str());
    if (e->writer) l->link->set_wake(&produced);
    ends.push_back(std::move(e));
  }
}

// The graph outlives the bridge and may publish again (a restart): ~Impl
// takes the links' wake-ups back.
DdsBridge::~DdsBridge() { stop(); }

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
