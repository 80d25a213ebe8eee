// DdsBridge's start coordination: every host announces itself on its own
// start topic until all have heard each other and matched their remote
// links, and the first host of `hosts:` chooses the common epoch. What an
// announce may claim is checked here (impersonations, another graph text,
// a start too far ahead), and so is the timeout's error, which names the
// likely cause.
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>

#include <dds/dds.h>

#include "base/duration.hpp"
#include "io/dds_bridge.hpp"
#include "io/dds_bridge_internal.hpp"
#include "rt_config/hosts.hpp"
#include "rtcosim_dds.h"

namespace rtcosim::io {

using namespace dds_detail;

namespace {

// What every bridge's participant says of itself in its user data (seen by
// every participant of the domain, secured or not, in DCPSParticipant):
// "rtcosim-host security=on|off start=START_TOPIC host=NAME". Only a claim:
// it names a likely cause in an error, never decides anything.
constexpr std::string_view kUserDataTag = "rtcosim-host security=";

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

}  // namespace

std::string dds_detail::participant_user_data(bool secure, const std::string& start_topic, const std::string& host) {
  return std::string(kUserDataTag) + (secure ? "on" : "off") + " start=" + start_topic + " host=" + host;
}

void DdsBridge::Impl::announce() {
  if (dds_return_t rc = dds_write(announce_writer, &self); rc < 0) (void)rc;  // the next period retries
}

// Counts every announce passed over; describes one a second at most of
// each kind (a flood of spoofs must not keep the bridge thread formatting
// strings).
template <class Describe>
void DdsBridge::Impl::ignore(Describe&& describe, bool impersonation) {
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

// Notes which hosts' participants are in the domain, secured or not (by
// the user data each bridge gives its participant): what the timeout's
// error names as a likely cause. Set-up only (coordinate_start).
void DdsBridge::Impl::hear_participants() {
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
void DdsBridge::Impl::hear_announces() {
  for (const StartTopic& topic : start_topics) hear_announces(topic);
}

void DdsBridge::Impl::hear_announces(const StartTopic& topic) {
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

bool DdsBridge::Impl::links_matched() const {
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
    if (const std::int64_t epoch = m.start_round(leader); epoch != 0) return epoch;
    if (now >= deadline) {
      m.refuse_other_graph();
      throw std::runtime_error(m.start_timeout_error(timeout));
    }
    dds_sleepfor(DDS_MSECS(20));
  }
}

// One round of hearing and announcing apart from the wait around it: the
// epoch once agreed (the first host's choice), 0 until then.
std::int64_t DdsBridge::Impl::start_round(bool leader) {
  hear_announces();
  hear_participants();
  bool all_heard = true, all_ready = true;
  for (const auto& [name, p] : peers) {
    all_heard = all_heard && p.heard_ns > 0;
    all_ready = all_ready && p.ready;
  }
  self.ready = all_heard && links_matched();
  if (leader && self.ready && all_ready && self.start_time_ns == 0) {
    self.start_time_ns = clock_ns(CLOCK_REALTIME) + static_cast<std::int64_t>(start_delay * 1e9);
  }
  announce();
  if (leader && self.start_time_ns != 0) return self.start_time_ns;
  if (!leader) {
    const Peer& lead = peers.at(graph.spec().hosts.front().name);
    if (lead.start_ns != 0) {
      // hear_announces took it only while it was still to come.
      return lead.start_ns;
    }
  }
  return 0;
}

// Another graph text is the one cause the timeout names alone: with it,
// nothing else about the silent host matters.
void DdsBridge::Impl::refuse_other_graph() const {
  for (const auto& [name, p] : peers) {
    if (p.other_graph && p.heard_ns == 0) {
      throw std::runtime_error("host '" + name + "' runs another task-graph file than " + graph.spec().file +
                               " (its text differs) — expected the same file on every host");
    }
  }
}

// The timeout's error names the hosts by what they did (silent, unready),
// so that the user knows where to look.
std::string DdsBridge::Impl::start_timeout_error(double timeout) const {
  std::string silent, unready;
  for (const auto& [name, p] : peers) {
    if (p.heard_ns == 0)
      silent += (silent.empty() ? "'" : ", '") + name + "'";
    else if (!p.ready)
      unready += (unready.empty() ? "'" : ", '") + name + "'";
  }
  std::string text =
      "the hosts did not agree on a start within " + base::format_duration(timeout) + " (dds: discovery_timeout):";
  if (!silent.empty()) {
    text += " no answer from host(s) " + silent + " — start `rtcosim run " + graph.spec().file +
            " --host NAME` there, in DDS domain " + std::to_string(graph.spec().find_host(host)->domain) +
            ", on a network that carries multicast (or name the peers in CYCLONEDDS_URI)";
    text += silent_hosts_causes();
  }
  if (!unready.empty())
    text += (silent.empty() ? "" : ";") + std::string(" host(s) ") + unready +
            " answered but did not see every host or match every remote link";
  if (silent.empty() && unready.empty()) {
    text += self.ready ? " the first host never chose a start time"
                       : " this host's remote links found no other end (a firewall?)";
  }
  return text + passed_over_announces();
}

// What the silent hosts' participants said of themselves, if they are in
// the domain at all: the likely cause, most often a dds.security mismatch.
std::string DdsBridge::Impl::silent_hosts_causes() const {
  std::string text;
  bool named = false;
  for (const auto& [name, p] : peers) {
    if (p.heard_ns != 0) continue;
    if (secure && p.seen_plain) {
      text += "; host '" + name +
              "' runs without DDS Security while this host requires it (dds.security): its participant is in "
              "the domain unsecured, and a secured host hears no unsecured one — give every host the same file";
      named = true;
    } else if (!secure && p.seen_secure) {
      text += "; host '" + name +
              "' runs with DDS Security (dds.security) while this host does not: its participant is in the "
              "domain secured, and a secured host hears no unsecured one — give every host the same file";
      named = true;
    } else if (secure && p.seen_secure) {
      text += "; host '" + name +
              "' has a secured participant in the domain but nothing it announced reached this host: it did "
              "not authenticate (a certificate of another identity CA, documents signed by another "
              "permissions CA) or its permissions do not let it publish its start topic — Cyclone logs which "
              "with CYCLONEDDS_URI='<Tracing><Verbosity>warning</Verbosity><OutputFile>stderr</OutputFile>"
              "</Tracing>'";
      named = true;
    }
  }
  if (secure && !named) {
    text +=
        " (with dds.security on, a host that runs without it, or with another CA's documents, is not "
        "heard either)";
  }
  return text;
}

// Announces passed over may explain a silence (a spoof, a late host), so
// the timeout's error ends with them.
std::string DdsBridge::Impl::passed_over_announces() const {
  std::string text;
  const std::uint64_t impersonations = announces->impersonations.load();
  if (impersonations > 0) {
    std::lock_guard lock(mutex);
    text += "; " + std::to_string(impersonations) + " announce(s) refused as impersonations of a host, the last " +
            last_impersonation;
  }
  if (const auto n = ignored.load() - impersonations; n > 0) {
    std::lock_guard lock(mutex);
    text += "; " + std::to_string(n) + " announce(s) passed over, the last " + last_other +
            " (a host started too late for the first host's start time, or another participant in the domain)";
  }
  return text;
}

void DdsBridge::cancel_start() noexcept { impl_->cancel_start.store(true, std::memory_order_relaxed); }

std::int64_t monotonic_from_realtime(std::int64_t realtime_ns) noexcept {
  return clock_ns(CLOCK_MONOTONIC) + (realtime_ns - clock_ns(CLOCK_REALTIME));
}

}  // namespace rtcosim::io
