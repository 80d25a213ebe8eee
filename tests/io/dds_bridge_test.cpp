// The DDS bridge in one process: two graphs, one per host of
// flight_control_two_hosts.yaml, each with its own participant, agree on a
// start and exchange their remote links; the frames of the tasks with
// remote links allocate nothing (the bridge thread does all DDS calls).
#include "io/dds_bridge.hpp"

#include <atomic>
#include <cctype>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include <dds/dds.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io/dds_security.hpp"
#include "rt_config/hosts.hpp"
#include "rtcosim_dds.h"
#include "runtime/thread_unit.hpp"
#include "runtime/trace.hpp"
#include "runtime/unit_loop.hpp"
#include "session/report/run_summary.hpp"
#include "session/trace_session.hpp"
#include "tests/support/alloc_counter.hpp"
#include "tests/support/graphs.hpp"
#ifdef RTCOSIM_HAVE_BABELTRACE2
#include "session/report/trace/trace_reader.hpp"
#endif

namespace rtcosim::io {
namespace {

// A link's counters in the run state a host's bridge fills.
const RemoteLinkStats& stats_of(const RemoteState& state, const runtime::GraphLink& link) {
  const RemoteState::Link* e = state.find(&link);
  if (e == nullptr)
    throw std::logic_error("link " + link.source + " -> " + link.consumer + " does not leave this host");
  return e->stats;
}

// The two-host example in a DDS domain of the test's own, so that the CLI
// tests and the other tests of this file, which ctest runs at the same time,
// cannot answer it (two tests in one domain saw each other's hosts);
// `from` -> `to` edits the text.
config::GraphSpec two_hosts(int domain, const std::string& from = "", const std::string& to = "") {
  std::ifstream in(std::string(RTCOSIM_EXAMPLES_DIR) + "/flight_control_two_hosts.yaml");
  std::stringstream text;
  text << in.rdbuf();
  std::string yaml = text.str();
  for (const std::string zero = "domain: 0"; yaml.find(zero) != std::string::npos;) {
    yaml.replace(yaml.find(zero), zero.size(), "domain: " + std::to_string(domain));
  }
  if (!from.empty()) yaml.replace(yaml.find(from), from.size(), to);
  return rtcosim::testing::checked(config::load_graph_text(yaml, "two_hosts.yaml"));
}

// The graph as each host's process builds it: (plant-pc's, hil-pc's).
std::pair<std::unique_ptr<runtime::Graph>, std::unique_ptr<runtime::Graph>> both_hosts(const config::GraphSpec& spec) {
  auto plant = rtcosim::testing::build_graph(spec);
  auto hil = rtcosim::testing::build_graph(spec);
  plant->set_host("plant-pc");
  hil->set_host("hil-pc");
  return {std::move(plant), std::move(hil)};
}

// Both hosts' tasks in real time from the agreed `start` for 1.3 s, each
// unit on its own thread, with the bridges running; per task, what its
// frames allocated after the first 0.3 s.
// (The hosts of this process, each graph with its bridge.)
std::vector<std::pair<std::string, std::uint64_t>> run_hosts(
    const std::vector<std::pair<runtime::Graph*, DdsBridge*>>& hosts, std::int64_t start) {
  const std::int64_t epoch = monotonic_from_realtime(start);
  const std::int64_t warm_end = epoch + runtime::seconds_to_ns(0.3);
  const std::int64_t end = epoch + runtime::seconds_to_ns(1.3);
  std::vector<runtime::ThreadUnit> units;
  for (const auto& [graph, bridge] : hosts) {
    graph->reset();
    bridge->start(false);
    for (auto& u : runtime::thread_units(*graph)) units.push_back(std::move(u));
  }
  const std::atomic<bool> running{true};
  std::vector<std::uint64_t> allocations(units.size(), 99);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < units.size(); ++i) {
    threads.emplace_back([&, i] {
      runtime::ThreadUnit& u = units[i];
      u.reset(epoch, end);
      runtime::MonotonicClock clock;
      runtime::run_unit(u, clock, epoch, warm_end, running, runtime::UnitSinks{});
      rtcosim::testing::AllocationScope scope;
      runtime::run_unit(u, clock, epoch, end, running, runtime::UnitSinks{});
      allocations[i] = scope.count();
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& [graph, bridge] : hosts) bridge->stop();
  std::vector<std::pair<std::string, std::uint64_t>> out;
  for (std::size_t i = 0; i < units.size(); ++i) out.emplace_back(units[i].owner().spec().name, allocations[i]);
  return out;
}

std::vector<std::pair<std::string, std::uint64_t>> run_both(runtime::Graph& plant, runtime::Graph& hil,
                                                            DdsBridge& plant_bridge, DdsBridge& hil_bridge,
                                                            std::int64_t start) {
  return run_hosts({{&plant, &plant_bridge}, {&hil, &hil_bridge}}, start);
}

TEST(DdsBridge, RemoteLinksFlowAndTheirFramesAllocateNothing) {
  const config::GraphSpec spec = two_hosts(42);
  auto [plant, hil] = both_hosts(spec);
  ASSERT_EQ(plant->remote_links().size(), 2u);
  ASSERT_EQ(hil->remote_links().size(), 2u);
  RemoteState plant_state(*plant);
  DdsBridge plant_bridge(*plant, plant_state);
  RemoteState hil_state(*hil);
  DdsBridge hil_bridge(*hil, hil_state);
  auto hil_start = std::async(std::launch::async, [&] { return hil_bridge.coordinate_start(10.0, 0.2); });
  const std::int64_t start = plant_bridge.coordinate_start(10.0, 0.2);
  ASSERT_EQ(hil_start.get(), start);  // one epoch for both

  const auto allocations = run_both(*plant, *hil, plant_bridge, hil_bridge, start);
  ASSERT_EQ(allocations.size(), 3u);  // actuator, airframe on plant-pc; the controller on hil-pc
  for (const auto& [task, count] : allocations) EXPECT_EQ(count, 0u) << task;
  // 1.3 s of frames crossed the bridge both ways: every block a producer's
  // frame published was written (the sending thread flushes at stop), about
  // the airframe's 65 (20 ms) and the controller's 130 (10 ms) when every
  // period ran (a loaded machine misses some: they are not published).
  auto remote = [](runtime::Graph& g, const std::string& producer) -> const runtime::GraphLink& {
    for (auto* l : g.remote_links()) {
      if (l->producer == producer) return *l;
    }
    throw std::logic_error("no remote link from " + producer);
  };
  auto stats = [&](runtime::Graph& g, const RemoteState& state, const std::string& producer) -> const RemoteLinkStats& {
    return stats_of(state, remote(g, producer));
  };
  const auto& airframe_out = stats(*plant, plant_state, "airframe");
  const auto& airframe_in = stats(*hil, hil_state, "airframe");
  const auto& controller_out = stats(*hil, hil_state, "controller");
  const auto& controller_in = stats(*plant, plant_state, "controller");
  const std::uint64_t airframe_frames = plant->find_task("airframe")->stats().frames.load();
  const std::uint64_t controller_frames = hil->find_task("controller")->stats().frames.load();
  // Each frame's block is published into the ring (or dropped when the
  // sending thread fell a ring behind), and so is the initial block at the
  // start, which is not sent (the consumer's host computes its own); every
  // other published block is written.
  const coupling::Link& airframe_link = *remote(*plant, "airframe").link;
  const coupling::Link& controller_link = *remote(*hil, "controller").link;
  EXPECT_EQ(airframe_link.published() + airframe_link.dropped(), airframe_frames + 1);
  EXPECT_EQ(controller_link.published() + controller_link.dropped(), controller_frames + 1);
  EXPECT_EQ(airframe_out.written.load() + airframe_out.write_errors.load() + 1, airframe_link.published());
  EXPECT_EQ(controller_out.written.load() + controller_out.write_errors.load() + 1, controller_link.published());
  EXPECT_GE(airframe_frames, 40u);
  EXPECT_GE(controller_frames, 80u);
  EXPECT_GE(airframe_in.received.load() + 2, airframe_out.written.load());
  EXPECT_GE(controller_in.received.load() + 2, controller_out.written.load());
  EXPECT_EQ(airframe_in.lost.load() + controller_in.lost.load(), 0u);   // in-process: nothing lost
  EXPECT_EQ(airframe_in.latency.count(), airframe_in.received.load());  // one estimate per sample taken
  EXPECT_EQ(controller_in.latency.count(), controller_in.received.load());
  EXPECT_EQ(airframe_in.malformed.load() + controller_in.malformed.load(), 0u);
}

TEST(DdsBridge, AMissingHostIsNamedAfterTheTimeout) {
  auto plant = rtcosim::testing::build_graph(two_hosts(43));
  plant->set_host("plant-pc");
  RemoteState state(*plant);
  DdsBridge bridge(*plant, state);
  try {
    (void)bridge.coordinate_start(0.3, 0.2);
    FAIL() << "no error without hil-pc";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no answer from host(s) 'hil-pc'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("within 300 ms"), std::string::npos) << e.what();
  }
}

TEST(DdsBridge, HostsOfAnotherGraphTextAreRefused) {
  auto plant = rtcosim::testing::build_graph(two_hosts(44));
  // Same graph name and topics, one comment more: another file.
  auto hil = rtcosim::testing::build_graph(
      two_hosts(44, "name: flight_control_two_hosts", "name: flight_control_two_hosts # v2"));
  plant->set_host("plant-pc");
  hil->set_host("hil-pc");
  RemoteState plant_state(*plant);
  DdsBridge plant_bridge(*plant, plant_state);
  RemoteState hil_state(*hil);
  DdsBridge hil_bridge(*hil, hil_state);
  auto other = std::async(std::launch::async, [&] {
    try {
      (void)hil_bridge.coordinate_start(1.0, 0.2);
    } catch (const std::runtime_error&) {
    }
  });
  try {
    (void)plant_bridge.coordinate_start(1.0, 0.2);
    FAIL() << "agreed with another graph";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("host 'hil-pc' runs another task-graph file"), std::string::npos) << e.what();
  }
  other.get();
}

// Without DDS Security anyone in the domain can write on a host's start
// topic: on plant-pc's, one claiming to be plant-pc (the first host) with
// a start an hour ahead, one of another graph text, one under a name that
// is not the topic's host. None may hold the run asleep or stop it: the
// hosts agree on the first host's real start, and each spoof is counted
// (the last as an impersonation, and all of them by plant-pc, whose own
// topic they are written on).
TEST(DdsBridge, SpoofedStartAnnouncesArePassedOverAndCounted) {
  const int domain = 51;
  const config::GraphSpec spec = two_hosts(domain);
  auto [plant, hil] = both_hosts(spec);
  const dds_entity_t participant = dds_create_participant(static_cast<dds_domainid_t>(domain), nullptr, nullptr);
  ASSERT_GT(participant, 0);
  dds_qos_t* q = dds_create_qos();
  dds_qset_reliability(q, DDS_RELIABILITY_RELIABLE, DDS_SECS(1));
  dds_qset_durability(q, DDS_DURABILITY_TRANSIENT_LOCAL);
  dds_qset_history(q, DDS_HISTORY_KEEP_LAST, 1);
  const dds_entity_t topic = dds_create_topic(participant, &rtcosim_StartAnnounce_desc,
                                              dds_host_start_topic_name(spec, "plant-pc").c_str(), q, nullptr);
  const dds_entity_t writer = dds_create_writer(participant, topic, q, nullptr);
  dds_delete_qos(q);
  ASSERT_GT(writer, 0);
  auto spoof = [&](const char* host, std::uint64_t hash, std::int64_t start_ns) {
    rtcosim_StartAnnounce a{};
    std::snprintf(a.host, sizeof a.host, "%s", host);
    a.graph_hash = hash;
    a.ready = true;
    a.start_time_ns = start_ns;
    (void)dds_write(writer, &a);
  };
  std::atomic<bool> spoofing{true};
  std::thread spoofer([&] {
    while (spoofing.load()) {
      timespec now{};
      clock_gettime(CLOCK_REALTIME, &now);
      const std::int64_t wall = now.tv_sec * std::int64_t{1'000'000'000} + now.tv_nsec;
      spoof("plant-pc", spec.text_hash, wall + 3600 * std::int64_t{1'000'000'000});
      spoof("plant-pc", spec.text_hash + 1, 0);
      spoof("intruder", spec.text_hash, wall);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  RemoteState plant_state(*plant);
  DdsBridge plant_bridge(*plant, plant_state);
  RemoteState hil_state(*hil);
  DdsBridge hil_bridge(*hil, hil_state);
  // The follower listens alone first: the spoofs reach it before the first host exists.
  auto follower = std::async(std::launch::async, [&] { return hil_bridge.coordinate_start(10.0, 0.2); });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const std::int64_t leader_epoch = plant_bridge.coordinate_start(10.0, 0.2);
  std::int64_t follower_epoch = 0;
  EXPECT_NO_THROW(follower_epoch = follower.get());
  spoofing = false;
  spoofer.join();
  dds_delete(participant);
  EXPECT_EQ(follower_epoch, leader_epoch);
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  EXPECT_LT(leader_epoch - (now.tv_sec * std::int64_t{1'000'000'000} + now.tv_nsec), 1'000'000'000);
  EXPECT_GT(hil_bridge.ignored_announces(), 2u);
  EXPECT_GT(plant_bridge.ignored_announces(), 1u);
  // "intruder" on plant-pc's topic: an impersonation for both; every spoof
  // on plant-pc's own topic is one for plant-pc.
  EXPECT_GT(hil_bridge.impersonations(), 0u);
  EXPECT_NE(hil_bridge.last_impersonation().find("on host 'plant-pc''s start topic naming itself 'intruder'"),
            std::string::npos)
      << hil_bridge.last_impersonation();
  EXPECT_GT(plant_bridge.impersonations(), 2u);
}

// A participant that is not a host: it writes samples of its choosing into
// one link's topic, as anyone in the domain could.
class ForeignWriter {
 public:
  // `deadline_s`: the offered deadline (at most the link's, or the reader
  // does not match).
  ForeignWriter(int domain, const config::GraphSpec& spec, const runtime::GraphLink& link, double deadline_s) {
    participant_ = dds_create_participant(static_cast<dds_domainid_t>(domain), nullptr, nullptr);
    dds_qos_t* q = dds_create_qos();
    dds_qset_reliability(q, DDS_RELIABILITY_BEST_EFFORT, 0);
    dds_qset_history(q, DDS_HISTORY_KEEP_LAST, 64);
    dds_qset_deadline(q, static_cast<dds_duration_t>(deadline_s * 1e9));
    topic_ = dds_create_topic(participant_, &rtcosim_LinkBlock_desc,
                              config::dds_topic_name(spec, link.source, link.consumer).c_str(), q, nullptr);
    writer_ = dds_create_writer(participant_, topic_, q, nullptr);
    dds_delete_qos(q);
    values_.assign(link.link->signal_count(), 0.5);
    known_ = std::make_unique<bool[]>(values_.size());
  }
  ~ForeignWriter() { dds_delete(participant_); }
  [[nodiscard]] bool matched(double timeout_s) const {
    for (double waited = 0.0; waited < timeout_s; waited += 0.01) {
      dds_publication_matched_status_t st{};
      if (dds_get_publication_matched_status(writer_, &st) == 0 && st.current_count > 0) return true;
      dds_sleepfor(DDS_MSECS(10));
    }
    return false;
  }
  void write(std::uint64_t hash, std::uint64_t sequence) {
    rtcosim_LinkBlock s{};
    s.graph_hash = hash;
    s.tag = 0.01 * static_cast<double>(sequence % 1000);
    s.producer_step = 0.01;
    s.sequence_number = sequence;
    const auto n = static_cast<uint32_t>(values_.size());
    s.values = {n, n, values_.data(), false};
    s.derivatives = {n, n, values_.data(), false};
    s.derivative_known = {n, n, known_.get(), false};
    ASSERT_EQ(dds_write(writer_, &s), 0);
  }

 private:
  dds_entity_t participant_ = 0, topic_ = 0, writer_ = 0;
  std::vector<double> values_;
  std::unique_ptr<bool[]> known_;
};

runtime::GraphLink& consumed_here(runtime::Graph& g) {
  for (auto* l : g.remote_links()) {
    if (!l->producer_local) return *l;
  }
  throw std::logic_error("no remote link consumed here");
}

// Waits until `count` samples were received (or 5 s passed).
void await_received(const RemoteLinkStats& st, std::uint64_t count) {
  for (int i = 0; i < 500 && st.received.load() < count; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

// The hil-pc host's bridge, started, and a foreign writer on the topic of
// the link it consumes (from the airframe, period 20 ms: deadline 40 ms).
struct HilEnd {
  explicit HilEnd(int domain)
      : spec(two_hosts(domain)),
        hil(host_graph(spec)),
        state(*hil),
        bridge(*hil, state),
        link(consumed_here(*hil)),
        foreign(domain, spec, link, 0.040) {
    hil->reset();
    bridge.start(false);
  }
  static std::unique_ptr<runtime::Graph> host_graph(const config::GraphSpec& s) {
    auto g = rtcosim::testing::build_graph(s);
    g->set_host("hil-pc");
    return g;
  }
  const config::GraphSpec spec;
  std::unique_ptr<runtime::Graph> hil;
  RemoteState state;
  DdsBridge bridge;
  runtime::GraphLink& link;
  ForeignWriter foreign;
};

// A process that runs tests/dds/dds_intruder.cpp with `args`; its output.
class Intruder {
 public:
  explicit Intruder(const std::vector<std::string>& args) {
    std::string command = RTCOSIM_DDS_INTRUDER;
    for (const auto& a : args) command += " '" + a + "'";
    pipe_ = ::popen(command.c_str(), "r");
  }
  std::string output() {
    std::string out;
    char buf[256];
    while (pipe_ && std::fgets(buf, sizeof buf, pipe_)) out += buf;
    if (pipe_) status_ = ::pclose(pipe_);
    pipe_ = nullptr;
    return out;
  }
  ~Intruder() { (void)output(); }
  [[nodiscard]] int status() const { return status_; }

 private:
  FILE* pipe_ = nullptr;
  int status_ = -1;
};

// `rtcosim ARGS` (this build's, beside this test's executable in build/bin)
// as a process of its own, in `dir`, its stdout and stderr to files there;
// sent SIGINT once `stop` (when given) holds, killed after `limit_s`.
struct CliRun {
  int code = -1;  // exit status, or minus the signal that ended it
  std::string out, err;
  [[nodiscard]] std::string said() const { return "exit " + std::to_string(code) + "\n" + out + err; }
};

CliRun run_cli(std::vector<std::string> args, const std::filesystem::path& dir, double limit_s,
               const std::atomic<bool>* stop = nullptr) {
  CliRun r;
  const std::string binary = (std::filesystem::read_symlink("/proc/self/exe").parent_path() / "rtcosim").string();
  if (!std::filesystem::exists(binary)) {
    ADD_FAILURE() << binary << " is not built (cmake --build build --target rtcosim)";
    return r;
  }
  // Everything the child needs is made before the fork (this process has threads).
  args.insert(args.begin(), binary);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string out = (dir / "out.txt").string(), err = (dir / "err.txt").string(), cwd = dir.string();
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (o < 0 || e < 0 || ::dup2(o, 1) < 0 || ::dup2(e, 2) < 0 || ::chdir(cwd.c_str()) != 0) ::_exit(126);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  EXPECT_GT(pid, 0) << "fork failed";
  if (pid <= 0) return r;
  int status = 0;
  bool signalled = false;
  for (double waited = 0.0;; waited += 0.01) {
    if (::waitpid(pid, &status, WNOHANG) == pid) break;
    if (stop != nullptr && stop->load() && !signalled) {
      ::kill(pid, SIGINT);
      signalled = true;
    }
    if (waited > limit_s) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      ADD_FAILURE() << "rtcosim " << args.at(1) << " did not end within " << limit_s << " s";
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? -WTERMSIG(status) : -1;
  const auto slurp = [](const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  };
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

// The two-host example in DDS domain `domain` with `dds: security` on, its
// documents in `docs` (made by scripts/dds-security-docs.sh): every host's
// certificate and key from DOCS/HOST/, the one permissions document.
std::string secure_two_hosts_text(int domain, const std::string& d) {
  std::ifstream in(std::string(RTCOSIM_EXAMPLES_DIR) + "/flight_control_two_hosts.yaml");
  std::stringstream text;
  text << in.rdbuf();
  std::string yaml = text.str();
  const auto edit = [&](const std::string& from, const std::string& to) {
    EXPECT_NE(yaml.find(from), std::string::npos) << from;
    if (yaml.find(from) != std::string::npos) yaml.replace(yaml.find(from), from.size(), to);
  };
  edit("dds: {discovery_timeout: 10s, start_delay: 500ms}",
       "dds: {discovery_timeout: 10s, start_delay: 500ms, security: {identity_ca: " + d + "/ca.pem, governance: " + d +
           "/governance.p7s}}");
  for (const std::string host : {"plant-pc", "hil-pc"}) {
    const std::string from = "{name: " + host + ",";
    edit(from, "{certificate: " + d + "/" + host + "/cert.pem, private_key: " + d + "/" + host +
                   "/key.pem, permissions: " + d + "/permissions.p7s, name: " + host + ",");
  }
  while (yaml.find("domain: 0") != std::string::npos) edit("domain: 0", "domain: " + std::to_string(domain));
  return yaml;
}

config::GraphSpec secure_two_hosts(int domain, const std::string& d) {
  return rtcosim::testing::checked(config::load_graph_text(secure_two_hosts_text(domain, d), "secure.yaml"));
}

// The documents of scripts/dds-security-docs.sh for `hosts` in DIR/NAME.
std::string make_security_docs(const std::filesystem::path& dir, const std::string& name, const std::string& hosts) {
  const std::string make = std::string(RTCOSIM_SOURCE_DIR) + "/scripts/dds-security-docs.sh ";
  EXPECT_EQ(std::system((make + (dir / name).string() + " " + hosts + " >/dev/null").c_str()), 0) << hosts;
  return (dir / name).string();
}

// DDS Security, made by scripts/dds-security-docs.sh in the test: both hosts
// authenticate, agree on a start and exchange their remote links, every
// topic encrypted. plant-pc is the rtcosim CLI, a process of its own:
// Cyclone DDS applies the first participant's security configuration to
// every participant of a process in one domain (a second host's
// participant here would publish with plant-pc's permissions, and be
// refused its own start topic). Two intruders write announces claiming to
// be plant-pc with an epoch an hour ahead on plant-pc's start topic, and
// link samples into the link hil-pc consumes: one without security, one
// with a certificate for 'plant-pc' from another CA (its own documents
// signed by that CA). Cyclone matches neither writer with anything (their
// matched counts stay 0); hil-pc passes over no announce (none reaches it)
// and receives none of their samples (numbered from 1 000 001: one would
// count a sequence reset).
TEST(DdsBridge, WithSecurityOnlyTheFilesHostsTalk) {
  const auto dir = std::filesystem::temp_directory_path() / ("rtcosim_dds_security_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  const std::string d = make_security_docs(dir, "docs", "plant-pc hil-pc");
  const std::string f = make_security_docs(dir, "foreign", "plant-pc");
  const int domain = 52;
  const config::GraphSpec spec = secure_two_hosts(domain, d);
  ASSERT_TRUE(spec.dds.security.enabled());
  std::filesystem::create_directories(dir / "plant");
  std::ofstream(dir / "plant" / "secure.yaml") << secure_two_hosts_text(domain, d);
  auto hil = rtcosim::testing::build_graph(spec);
  hil->set_host("hil-pc");
  RemoteState hil_state(*hil);
  DdsBridge hil_bridge(*hil, hil_state);
  const runtime::GraphLink& consumed = consumed_here(*hil);
  const std::vector<std::string> common = {std::to_string(domain),
                                           dds_host_start_topic_name(spec, "plant-pc"),
                                           config::dds_topic_name(spec, consumed.source, consumed.consumer),
                                           std::to_string(spec.text_hash),
                                           std::to_string(consumed.link->signal_count()),
                                           "plant-pc",
                                           "3"};
  auto forged_args = common;
  for (const std::string& file : {f + "/ca.pem", f + "/ca.pem", f + "/governance.p7s", f + "/plant-pc/cert.pem",
                                  f + "/plant-pc/key.pem", f + "/permissions.p7s"}) {
    forged_args.push_back(file);
  }
  Intruder plain(common), forged(forged_args);
  std::atomic<bool> done{false};
  auto plant = std::async(std::launch::async, [&] {
    return run_cli({"run", "secure.yaml", "--host", "plant-pc"}, dir / "plant", 40.0, &done);
  });

  std::int64_t start = 0;
  EXPECT_NO_THROW(start = hil_bridge.coordinate_start(10.0, 0.5));
  if (start != 0) {
    const auto allocations = run_hosts({{hil.get(), &hil_bridge}}, start);
    for (const auto& [task, count] : allocations) EXPECT_EQ(count, 0u) << task;
  }
  done = true;
  const CliRun r = plant.get();
  EXPECT_NE(r.out.find("DDS Security on: identity CA"), std::string::npos) << r.said();
  EXPECT_TRUE(r.code == 0 || r.code == 130 || r.code == -SIGINT) << r.said();
  EXPECT_EQ(plain.output(), "matched announce 0 link 0\n");
  EXPECT_EQ(forged.output(), "matched announce 0 link 0\n");
  EXPECT_EQ(plain.status(), 0);
  EXPECT_EQ(forged.status(), 0);
  EXPECT_EQ(hil_bridge.ignored_announces(), 0u) << hil_bridge.last_ignored_announce();
  const auto& stats = stats_of(hil_state, consumed);
  EXPECT_GT(stats.received.load(), 20u);  // the airframe's blocks, authenticated and decrypted
  EXPECT_EQ(stats.sequence_resets.load(), 0u);
  EXPECT_EQ(stats.malformed.load(), 0u);
  std::filesystem::remove_all(dir);
}

// Three certified hosts (plant-pc, hil-pc, monitor-pc: one CA, one
// permissions document, as scripts/dds-security-docs.sh makes them); the
// graph runs plant-pc and hil-pc, and plant-pc never starts. Two intruders
// announce themselves as plant-pc, ready, with a start 0.3 s ahead (what
// plant-pc, the first host, would choose), on every start topic they can:
// one holds monitor-pc's certificate, the other hil-pc's own. DDS Security
// refuses each a writer on any host's start topic but its own; what the
// one with hil-pc's certificate writes on hil-pc's topic under plant-pc's
// name is refused and counted by hil-pc. So hil-pc never starts alone, and
// once running it reports plant-pc lost: the spoofs do not keep it alive.
// The count, and the last one's description, are in what a user reads
// after the run: the run's RemoteState, the summary's table and JSON.
TEST(DdsBridge, ACertifiedHostCannotAnnounceItselfAsAnother) {
  const auto dir = std::filesystem::temp_directory_path() / ("rtcosim_dds_spoof_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  const std::string d = make_security_docs(dir, "docs", "plant-pc hil-pc monitor-pc");
  const int domain = 53;
  const config::GraphSpec spec = secure_two_hosts(domain, d);
  ASSERT_TRUE(spec.dds.security.enabled());
  auto hil = rtcosim::testing::build_graph(spec);
  hil->set_host("hil-pc");
  RemoteState hil_state(*hil);
  DdsBridge hil_bridge(*hil, hil_state);
  const std::string plant_topic = dds_host_start_topic_name(spec, "plant-pc"),
                    hil_topic = dds_host_start_topic_name(spec, "hil-pc"),
                    monitor_topic = dds_host_start_topic_name(spec, "monitor-pc");
  // What scripts/dds-security-docs.sh grants: the name's bytes outside [A-Za-z0-9] as _xx.
  EXPECT_EQ(plant_topic, "rtcosim_flight_control_two_hosts__start/plant_2dpc");
  const std::vector<std::string> common = {
      "--start-in=0.3",
      std::to_string(domain),
      config::dds_start_topic_name(spec) + "," + plant_topic + "," + hil_topic + "," + monitor_topic,
      "rtcosim_no_link_of_this_graph",
      std::to_string(spec.text_hash),
      "1",
      "plant-pc",
      "8"};
  const auto certified = [&](const std::string& whose) {
    auto args = common;
    for (const std::string& file : {d + "/ca.pem", d + "/ca.pem", d + "/governance.p7s", d + "/" + whose + "/cert.pem",
                                    d + "/" + whose + "/key.pem", d + "/permissions.p7s"}) {
      args.push_back(file);
    }
    return args;
  };
  Intruder monitor(certified("monitor-pc")), hil_copy(certified("hil-pc"));

  std::int64_t start = 0;
  std::string error;
  try {
    start = hil_bridge.coordinate_start(3.0, 0.2);
  } catch (const std::runtime_error& e) {
    error = e.what();
  }
  EXPECT_EQ(start, 0) << "hil-pc took a start that plant-pc never chose";
  EXPECT_NE(error.find("no answer from host(s) 'plant-pc'"), std::string::npos) << error;
  EXPECT_NE(error.find("impersonations of a host, the last an announce on this host's own start topic from another "
                       "participant, naming 'plant-pc'"),
            std::string::npos)
      << error;
  const std::uint64_t refused = hil_bridge.impersonations();
  EXPECT_GT(refused, 10u);  // one per 20 ms from the intruder with hil-pc's certificate
  EXPECT_GE(hil_bridge.ignored_announces(), refused);
  // Running: plant-pc, silent, is lost after 0.5 s whatever the spoofs say.
  hil->reset();
  hil_bridge.start(false);
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  const std::vector<std::string> lost = hil_bridge.take_lost_hosts();
  hil_bridge.stop();
  EXPECT_EQ(lost, std::vector<std::string>{"plant-pc"});
  EXPECT_GT(hil_bridge.impersonations(), refused);  // still refused and counted during the run
  const std::uint64_t counted = hil_bridge.impersonations();
  EXPECT_EQ(hil_state.announces().impersonations.load(), counted);
  const std::string last =
      "an announce on this host's own start topic from another participant, naming 'plant-pc' "
      "(a second process with --host hil-pc, or this host's certificate used elsewhere)";
  EXPECT_EQ(hil_state.announces().last_impersonation.load(), last);
  const std::string json = rtcosim::session::summary_json(*hil, {}, "other", {}, &hil_state);
  EXPECT_NE(json.find("],\"impersonations\":" + std::to_string(counted) + ",\"last_impersonation\":\"" + last + "\"}"),
            std::string::npos)
      << json;
  const std::string table = rtcosim::session::run_summary(*hil, &hil_state);
  EXPECT_NE(table.find("\nimpersonations: " + rtcosim::session::format_count(counted) + " (start announces refused"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("\n  the last: " + last + "\n"), std::string::npos) << table;
  // Each may write its own host's start topic only.
  const std::string by_monitor = monitor.output(), by_hil = hil_copy.output();
  EXPECT_NE(by_monitor.find("refused " + plant_topic + "\n"), std::string::npos) << by_monitor;
  EXPECT_NE(by_monitor.find("refused " + hil_topic + "\n"), std::string::npos) << by_monitor;
  EXPECT_EQ(by_monitor.find("refused " + monitor_topic + "\n"), std::string::npos) << by_monitor;
  EXPECT_NE(by_hil.find("refused " + plant_topic + "\n"), std::string::npos) << by_hil;
  EXPECT_EQ(by_hil.find("refused " + hil_topic + "\n"), std::string::npos) << by_hil;
  EXPECT_EQ(monitor.status(), 0);
  EXPECT_EQ(hil_copy.status(), 0);
  std::filesystem::remove_all(dir);
}

// hil-pc with DDS Security, plant-pc (the rtcosim CLI, a process of its
// own) without: neither hears the other, and each says why it most likely
// did not, from the other's participant seen in the domain.
TEST(DdsBridge, ASecurityMismatchIsNamedInTheTimeout) {
  const auto dir = std::filesystem::temp_directory_path() / ("rtcosim_dds_mismatch_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  const std::string d = make_security_docs(dir, "docs", "plant-pc hil-pc");
  const int domain = 54;
  const config::GraphSpec spec = secure_two_hosts(domain, d);
  auto hil = rtcosim::testing::build_graph(spec);
  hil->set_host("hil-pc");
  RemoteState hil_state(*hil);
  DdsBridge hil_bridge(*hil, hil_state);
  // The plain file: the example in this domain, waiting 3 s.
  std::ifstream in(std::string(RTCOSIM_EXAMPLES_DIR) + "/flight_control_two_hosts.yaml");
  std::stringstream text;
  text << in.rdbuf();
  std::string yaml = text.str();
  yaml.replace(yaml.find("discovery_timeout: 10s"), 22, "discovery_timeout: 3s");
  while (yaml.find("domain: 0") != std::string::npos)
    yaml.replace(yaml.find("domain: 0"), 9, "domain: " + std::to_string(domain));
  std::filesystem::create_directories(dir / "plain");
  std::ofstream(dir / "plain" / "plain.yaml") << yaml;
  auto plain = std::async(std::launch::async, [&] {
    return run_cli({"run", "plain.yaml", "--host", "plant-pc"}, dir / "plain", 30.0);
  });
  std::string error;
  try {
    (void)hil_bridge.coordinate_start(4.0, 0.2);
  } catch (const std::runtime_error& e) {
    error = e.what();
  }
  const CliRun r = plain.get();
  EXPECT_NE(error.find("no answer from host(s) 'plant-pc'"), std::string::npos) << error;
  EXPECT_NE(error.find("'plant-pc' runs without DDS Security while this host requires it (dds.security)"),
            std::string::npos)
      << error;
  EXPECT_NE(r.code, 0) << r.said();
  EXPECT_NE(r.err.find("no answer from host(s) 'hil-pc'"), std::string::npos) << r.said();
  EXPECT_NE(r.err.find("'hil-pc' runs with DDS Security (dds.security) while this host does not"), std::string::npos)
      << r.said();
  std::filesystem::remove_all(dir);
}

TEST(DdsBridge, AHostileSequenceNumberIsOneResetNotBillionsLost) {
  HilEnd end(45);
  auto& [spec, hil, state, bridge, link, foreign] = end;
  ASSERT_TRUE(foreign.matched(5.0));
  // The producer's frames 2, 3, 5 (4 lost), one sample claiming 2^62, then
  // the producer goes on with 6 and 7.
  std::uint64_t n = 0;
  for (const std::uint64_t seq : {std::uint64_t{2}, std::uint64_t{3}, std::uint64_t{5}, std::uint64_t{1} << 62,
                                  std::uint64_t{6}, std::uint64_t{7}}) {
    foreign.write(spec.text_hash, seq);
    await_received(stats_of(state, link), ++n);  // one at a time: best effort keeps their order then
  }
  bridge.stop();
  EXPECT_EQ(stats_of(state, link).received.load(), 6u);
  EXPECT_EQ(stats_of(state, link).lost.load(), 1u);
  EXPECT_EQ(stats_of(state, link).sequence_resets.load(), 2u);  // to 2^62 and back
}

// stop() keeps the listener out of every consumer's ring; a start after it
// lets it in again (a bridge that once stopped took nothing more).
TEST(DdsBridge, ABridgeStartedAgainAfterItsStopReceivesAgain) {
  HilEnd end(50);
  auto& [spec, hil, state, bridge, link, foreign] = end;
  ASSERT_TRUE(foreign.matched(5.0));
  foreign.write(spec.text_hash, 2);
  await_received(stats_of(state, link), 1);
  bridge.stop();
  ASSERT_EQ(stats_of(state, link).received.load(), 1u);
  bridge.start(false);
  foreign.write(spec.text_hash, 3);
  await_received(stats_of(state, link), 2);
  bridge.stop();
  EXPECT_EQ(stats_of(state, link).received.load(), 2u);
}

TEST(DdsBridge, ASilentProducerMissesTheLinksDeadlineOncePerTwoPeriods) {
  HilEnd end(46);
  auto& [spec, hil, state, bridge, link, producer] = end;
  ASSERT_EQ(link.producer, "airframe");
  ASSERT_TRUE(producer.matched(5.0));
  producer.write(spec.text_hash, 2);
  await_received(stats_of(state, link), 1);
  const auto from = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  bridge.stop();
  const double silent = std::chrono::duration<double>(std::chrono::steady_clock::now() - from).count();
  // One miss per 40 ms without a sample since the one received; the count
  // is read every 100 ms and once more when the bridge stops.
  const double expected = std::floor(silent / 0.040);
  EXPECT_GE(static_cast<double>(stats_of(state, link).deadline_missed.load()), expected - 3) << silent;
  EXPECT_LE(static_cast<double>(stats_of(state, link).deadline_missed.load()), expected + 1) << silent;
  EXPECT_EQ(stats_of(state, link).received.load(), 1u);
}

// hil-pc's clock 5 ms ahead (a shift of its ping-pong's CLOCK_REALTIME):
// each side finds the other's offset within half the round trip of the
// exchange it keeps (the estimate's exact error bound), and warns, the
// offset being above the default max_clock_offset of 1 ms.
TEST(DdsBridge, TheClockPingPongFindsAFakeOffsetBetweenHosts) {
  const config::GraphSpec spec = two_hosts(49);
  auto [plant, hil] = both_hosts(spec);
  constexpr std::int64_t kAhead = 50'000'000;
  RemoteState plant_state(*plant);
  DdsBridge plant_bridge(*plant, plant_state);
  RemoteState hil_state(*hil);
  DdsBridge hil_bridge(*hil, hil_state, kAhead);
  plant->reset();
  hil->reset();
  plant_bridge.start(false);
  hil_bridge.start(false);
  ASSERT_EQ(plant_state.host_clocks().size(), 1u);
  ASSERT_EQ(hil_state.host_clocks().size(), 1u);
  const HostClock& of_hil = *plant_state.host_clocks()[0];
  const HostClock& of_plant = *hil_state.host_clocks()[0];
  EXPECT_EQ(of_hil.host, "hil-pc");
  for (int i = 0; i < 500 && (of_hil.exchanges.load() < 10 || of_plant.exchanges.load() < 10); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // Three airframe blocks from the plant host (its clock behind) to the hil
  // host: their one-way latency has the estimated offset taken out, so it
  // is the hand-over's, not the 50 ms the clocks differ by.
  runtime::GraphLink* out = nullptr;
  for (auto* l : plant->remote_links()) {
    if (l->producer_local) out = l;
  }
  ASSERT_NE(out, nullptr);
  const runtime::GraphLink* in = nullptr;
  for (auto* l : hil->remote_links()) {
    if (l->producer == out->producer) in = l;
  }
  ASSERT_NE(in, nullptr);
  coupling::DataBlock block(out->link->signal_count());
  for (std::uint64_t seq = 2; seq <= 4; ++seq) {
    block.sequence = seq;
    block.tag = 0.02 * static_cast<double>(seq - 1);
    ASSERT_TRUE(out->link->publish(block));
  }
  await_received(stats_of(hil_state, *in), 3);
  plant_bridge.stop();
  hil_bridge.stop();
  const auto& latency = stats_of(hil_state, *in).latency;
  EXPECT_EQ(latency.count(), stats_of(hil_state, *in).received.load());
  EXPECT_GE(latency.count(), 3u);
  EXPECT_LT(std::abs(latency.mean()), 0.5 * static_cast<double>(kAhead) * 1e-9) << latency.mean();
  EXPECT_LT(std::abs(latency.max()), 0.5 * static_cast<double>(kAhead) * 1e-9) << latency.max();
  ASSERT_GE(of_hil.exchanges.load(), 10u);  // one per 100 ms each way
  ASSERT_GE(of_plant.exchanges.load(), 10u);
  EXPECT_LE(std::llabs(of_hil.offset_ns.load() - kAhead), of_hil.round_trip_ns.load() / 2 + 1)
      << of_hil.offset_ns.load() << " round trip " << of_hil.round_trip_ns.load();
  EXPECT_LE(std::llabs(of_plant.offset_ns.load() + kAhead), of_plant.round_trip_ns.load() / 2 + 1)
      << of_plant.offset_ns.load() << " round trip " << of_plant.round_trip_ns.load();
  const auto warnings = plant_bridge.take_clock_warnings();
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].rfind("the clock of host 'hil-pc' is ", 0), 0u) << warnings[0];
  EXPECT_NE(warnings[0].find(" ahead of this host's (plant-pc;"), std::string::npos) << warnings[0];
  EXPECT_NE(hil_bridge.take_clock_warnings().at(0).find("the clock of host 'plant-pc' is "), std::string::npos);
  EXPECT_TRUE(plant_bridge.take_clock_warnings().empty());  // once per run
}

#ifdef RTCOSIM_HAVE_BABELTRACE2
// The bridge's events under a real session daemon: one remote_send per
// sample written, one remote_receive per sample taken, remote_lost for the
// gaps and resets, agreeing with the link's counters.
TEST(DdsBridge, RemoteLinkEventsAreTracedAndAgreeWithTheCounters) {
  std::string why;
  if (!runtime::trace::available()) GTEST_SKIP() << "built without LTTng-UST";
  if (session::run_command({"lttng", "--version"}, &why) != 0) GTEST_SKIP() << "lttng-tools is not installed";
  const auto dir = std::filesystem::temp_directory_path() / ("rtcosim_dds_trace_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  auto session = session::TraceSession::start(dir.string(), 3000.0, &why);
  if (!session) GTEST_SKIP() << "lttng cannot run here: " << why;

  const config::GraphSpec spec = two_hosts(48);
  auto plant = rtcosim::testing::build_graph(spec);
  plant->set_host("plant-pc");
  RemoteState state(*plant);
  DdsBridge bridge(*plant, state);
  runtime::GraphLink& in = consumed_here(*plant);  // controller -> actuator, 10 ms: deadline 20 ms
  runtime::GraphLink* out = nullptr;               // airframe -> controller
  for (auto* l : plant->remote_links()) {
    if (l->producer_local) out = l;
  }
  ASSERT_NE(out, nullptr);
  ForeignWriter foreign(48, spec, in, 0.020);
  plant->reset();
  bridge.start(false);
  ASSERT_TRUE(foreign.matched(5.0));
  // Three frames of the airframe, pushed into its ring as its task would.
  coupling::DataBlock block(out->link->signal_count());
  for (std::uint64_t seq = 2; seq <= 4; ++seq) {
    block.sequence = seq;
    block.tag = 0.02 * static_cast<double>(seq - 1);
    ASSERT_TRUE(out->link->publish(block));
  }
  std::uint64_t n = 0;
  for (const std::uint64_t seq :
       {std::uint64_t{2}, std::uint64_t{3}, std::uint64_t{5}, std::uint64_t{1} << 62, std::uint64_t{6}}) {
    foreign.write(spec.text_hash, seq);
    await_received(stats_of(state, in), ++n);
  }
  for (int i = 0; i < 100 && stats_of(state, *out).written.load() < 3; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  bridge.stop();
  (void)session->stop();

  trace_report::TraceData d;
  ASSERT_TRUE(trace_report::read_trace((dir / "ust" / "uid" / std::to_string(::geteuid())).string(), d, &why)) << why;
  EXPECT_EQ(d.discarded_events, 0u);
  const auto& sent = d.links[out->id].remote;
  const auto& got = d.links[in.id].remote;
  EXPECT_EQ(sent.sent, 3u);
  EXPECT_EQ(sent.sent, stats_of(state, *out).written.load());
  EXPECT_EQ(got.received, 5u);
  EXPECT_EQ(got.lost, 1u);    // 4
  EXPECT_EQ(got.resets, 2u);  // to 2^62 and back
  EXPECT_EQ(got.received, stats_of(state, in).received.load());
  EXPECT_EQ(got.lost, stats_of(state, in).lost.load());
  std::filesystem::remove_all(dir);
}
#endif

}  // namespace
}  // namespace rtcosim::io
