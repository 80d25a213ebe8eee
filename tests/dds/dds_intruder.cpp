// A participant that is not one of a graph's hosts, as a process of its own
// (Cyclone DDS takes one security configuration per domain and process, so a
// test cannot hold a secure host and an unsecured intruder side by side).
// For `seconds` it writes, every 20 ms, a start announce claiming to be
// `host` on each of START_TOPICS (comma-separated) with an epoch an hour
// ahead (or START_IN seconds ahead with --start-in=START_IN: what a first
// host would choose), and a link block with sequence numbers from
// 1 000 001 into `link_topic`; then it prints a line "refused TOPIC" for
// each start topic its access control did not let it write, and how many
// readers its writers were ever matched with (summed over the start topics):
//
//   dds_intruder [--start-in=S] DOMAIN START_TOPICS LINK_TOPIC GRAPH_HASH SIGNALS HOST SECONDS
//                [IDENTITY_CA PERMISSIONS_CA GOVERNANCE CERT KEY PERMISSIONS]
//   -> "refused T" ... "matched announce N link M"
//
// With the six files it joins with DDS Security (say, documents of another
// CA, or the certificate of another host of the graph); without them it
// joins unsecured.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <dds/dds.h>

#include "io/dds_security.hpp"
#include "rtcosim_dds.h"

int main(int argc, char** argv) {
  double start_in = 3600.0;
  if (argc > 1 && std::string(argv[1]).rfind("--start-in=", 0) == 0) {
    start_in = std::atof(argv[1] + 11);
    --argc;
    ++argv;
  }
  if (argc != 8 && argc != 14) {
    std::fprintf(stderr,
                 "usage: dds_intruder [--start-in=S] DOMAIN START_TOPICS LINK_TOPIC GRAPH_HASH SIGNALS HOST SECONDS "
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
  std::vector<dds_entity_t> announces;
  std::stringstream topics(argv[2]);
  for (std::string name; std::getline(topics, name, ',');) {
    const dds_entity_t topic = dds_create_topic(participant, &rtcosim_StartAnnounce_desc, name.c_str(), aq, nullptr);
    const dds_entity_t writer = topic < 0 ? topic : dds_create_writer(participant, topic, aq, nullptr);
    if (writer < 0)
      std::printf("refused %s\n", name.c_str());
    else
      announces.push_back(writer);
  }
  dds_delete_qos(aq);
  dds_qos_t* lq = dds_create_qos();
  dds_qset_reliability(lq, DDS_RELIABILITY_BEST_EFFORT, 0);
  dds_qset_history(lq, DDS_HISTORY_KEEP_LAST, 64);
  const dds_entity_t link_topic = dds_create_topic(participant, &rtcosim_LinkBlock_desc, argv[3], lq, nullptr);
  const dds_entity_t link = dds_create_writer(participant, link_topic, lq, nullptr);
  dds_delete_qos(lq);
  if (link < 0) {
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
    a.start_time_ns =
        now.tv_sec * std::int64_t{1'000'000'000} + now.tv_nsec + static_cast<std::int64_t>(start_in * 1e9);
    for (const dds_entity_t w : announces) (void)dds_write(w, &a);
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
  std::uint32_t matched = 0;
  for (const dds_entity_t w : announces) {
    dds_publication_matched_status_t sa{};
    (void)dds_get_publication_matched_status(w, &sa);
    matched += sa.total_count;
  }
  dds_publication_matched_status_t sl{};
  (void)dds_get_publication_matched_status(link, &sl);
  std::printf("matched announce %u link %u\n", matched, sl.total_count);
  dds_delete(participant);
  return 0;
}
