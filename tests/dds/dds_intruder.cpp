// A participant that is not one of a graph's hosts, as a process of its own
// (Cyclone DDS takes one security configuration per domain and process, so a
// test cannot hold a secure host and an unsecured intruder side by side).
// For `seconds` it writes, every 20 ms, a start announce claiming to be
// `host` with an epoch an hour ahead and a link block with sequence numbers
// from 1 000 001 into `link_topic`; then it prints how many readers each of
// its writers was ever matched with:
//
//   dds_intruder DOMAIN START_TOPIC LINK_TOPIC GRAPH_HASH SIGNALS HOST SECONDS
//                [IDENTITY_CA PERMISSIONS_CA GOVERNANCE CERT KEY PERMISSIONS]
//   -> "matched announce N link M"
//
// With the six files it joins with DDS Security (say, documents of another
// CA); without them it joins unsecured.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include <dds/dds.h>

#include "io/dds_security.hpp"
#include "rtcosim_dds.h"

int main(int argc, char** argv) {
  if (argc != 8 && argc != 14) {
    std::fprintf(stderr,
                 "usage: dds_intruder DOMAIN START_TOPIC LINK_TOPIC GRAPH_HASH SIGNALS HOST SECONDS "
                 "[IDENTITY_CA PERMISSIONS_CA GOVERNANCE CERT KEY PERMISSIONS]\n");
    return 2;
  }
  const auto domain = static_cast<dds_domainid_t>(std::atoi(argv[1]));
  const std::uint64_t hash = std::strtoull(argv[4], nullptr, 10);
  const auto signals = static_cast<std::uint32_t>(std::atoi(argv[5]));
  const double seconds = std::atof(argv[7]);
  dds_qos_t* pq = dds_create_qos();
  if (argc == 14) {
    rtcosim::config::DdsSecuritySpec sec{argv[8], argv[9], argv[10], {}};
    rtcosim::config::HostSpec me{argv[6], 0, argv[11], argv[12], argv[13], {}};
    rtcosim::io::set_security_qos(pq, sec, me);
  }
  const dds_entity_t participant = dds_create_participant(domain, pq, nullptr);
  dds_delete_qos(pq);
  if (participant < 0) {
    std::fprintf(stderr, "dds_intruder: no participant: %s\n", dds_strretcode(participant));
    return 1;
  }
  dds_qos_t* aq = dds_create_qos();
  dds_qset_reliability(aq, DDS_RELIABILITY_RELIABLE, DDS_SECS(1));
  dds_qset_durability(aq, DDS_DURABILITY_TRANSIENT_LOCAL);
  dds_qset_history(aq, DDS_HISTORY_KEEP_LAST, 1);
  const dds_entity_t announce_topic = dds_create_topic(participant, &rtcosim_StartAnnounce_desc, argv[2], aq, nullptr);
  const dds_entity_t announce = dds_create_writer(participant, announce_topic, aq, nullptr);
  dds_delete_qos(aq);
  dds_qos_t* lq = dds_create_qos();
  dds_qset_reliability(lq, DDS_RELIABILITY_BEST_EFFORT, 0);
  dds_qset_history(lq, DDS_HISTORY_KEEP_LAST, 64);
  const dds_entity_t link_topic = dds_create_topic(participant, &rtcosim_LinkBlock_desc, argv[3], lq, nullptr);
  const dds_entity_t link = dds_create_writer(participant, link_topic, lq, nullptr);
  dds_delete_qos(lq);
  if (announce < 0 || link < 0) {
    std::fprintf(stderr, "dds_intruder: no writers\n");
    return 1;
  }
  std::vector<double> values(signals, 0.5);
  const auto known = std::make_unique<bool[]>(signals);
  std::uint64_t sequence = 1'000'000;
  for (double t = 0.0; t < seconds; t += 0.02) {
    timespec now{};
    clock_gettime(CLOCK_REALTIME, &now);
    rtcosim_StartAnnounce a{};
    std::snprintf(a.host, sizeof a.host, "%s", argv[6]);
    a.graph_hash = hash;
    a.ready = true;
    a.start_time_ns = now.tv_sec * std::int64_t{1'000'000'000} + now.tv_nsec + 3600 * std::int64_t{1'000'000'000};
    (void)dds_write(announce, &a);
    rtcosim_LinkBlock b{};
    b.graph_hash = hash;
    b.tag = 0.01;
    b.producer_step = 0.01;
    b.sequence_number = ++sequence;
    b.values = {signals, signals, values.data(), false};
    b.derivatives = {signals, signals, values.data(), false};
    b.derivative_known = {signals, signals, known.get(), false};
    (void)dds_write(link, &b);
    dds_sleepfor(DDS_MSECS(20));
  }
  dds_publication_matched_status_t sa{}, sl{};
  (void)dds_get_publication_matched_status(announce, &sa);
  (void)dds_get_publication_matched_status(link, &sl);
  std::printf("matched announce %u link %u\n", sa.total_count, sl.total_count);
  dds_delete(participant);
  return 0;
}
