#include "tools/rtcosim/preflight_command.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include <sys/resource.h>
#include <sys/timex.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "rt_config/loader.hpp"
#include "tools/common/cli_args.hpp"

namespace rtcosim::tools {

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  std::string text = s.str();
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

// "0-3,6" -> {0,1,2,3,6}
std::set<int> cpu_list(const std::string& text) {
  std::set<int> out;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ',');) {
    const auto dash = part.find('-');
    try {
      if (dash == std::string::npos) {
        if (!part.empty()) out.insert(std::stoi(part));
      } else {
        for (int c = std::stoi(part.substr(0, dash)); c <= std::stoi(part.substr(dash + 1)); ++c) out.insert(c);
      }
    } catch (...) {
    }
  }
  return out;
}

std::string cmdline_value(const std::string& cmdline, const std::string& key) {
  std::stringstream in(cmdline);
  for (std::string word; in >> word;) {
    if (word.rfind(key + "=", 0) == 0) return word.substr(key.size() + 1);
  }
  return {};
}

std::string join(const std::vector<int>& cpus) {
  std::string out;
  for (int c : cpus) out += (out.empty() ? "" : ",") + std::to_string(c);
  return out;
}

// One line of the report: the fix is shown only for what is not ok.
void check(std::vector<PreflightCheck>& out, bool ok, std::string what, std::string fix) {
  out.push_back({ok, std::move(what), ok ? "" : std::move(fix)});
}

// Without PREEMPT_RT no other setting bounds the wake-up latency.
void check_kernel(std::vector<PreflightCheck>& out) {
  utsname u{};
  uname(&u);
  const bool rt =
      read_file("/sys/kernel/realtime") == "1" || std::string(u.version).find("PREEMPT_RT") != std::string::npos;
  check(out, rt, std::string("PREEMPT_RT kernel (running ") + u.release + ")",
        "install a real-time kernel: 'apt-get install linux-image-rt-amd64' and boot it");
}

// The task CPUs must be kept free of the scheduler's other work, its ticks
// and RCU callbacks: each is a boot parameter of its own.
void check_isolation(std::vector<PreflightCheck>& out, const std::vector<int>& task_cpus, const std::string& cpus) {
  const std::string cmdline = read_file("/proc/cmdline");
  for (const char* key : {"isolcpus", "nohz_full", "rcu_nocbs"}) {
    std::string value = cmdline_value(cmdline, key);
    // isolcpus may carry flags first: "isolcpus=managed_irq,domain,2-3".
    if (const auto last_comma = value.find_last_of(','); std::string(key) == "isolcpus" &&
                                                         last_comma != std::string::npos && !value.empty() &&
                                                         !std::isdigit(static_cast<unsigned char>(value[0]))) {
      value = value.substr(last_comma + 1);
    }
    const auto listed = cpu_list(value);
    const bool all = std::all_of(task_cpus.begin(), task_cpus.end(), [&](int c) { return listed.count(c) != 0; });
    check(out, all && !task_cpus.empty(), std::string(key) + " covers the task CPUs (" + cpus + ")",
          std::string("add '") + key + "=" + cpus +
              "' to the kernel command line (GRUB_CMDLINE_LINUX in /etc/default/grub, then update-grub)");
  }
}

// A CPU that changes its clock changes the tasks' execution times with it.
void check_governors(std::vector<PreflightCheck>& out, const std::vector<int>& task_cpus) {
  for (int c : task_cpus) {
    const std::string path = "/sys/devices/system/cpu/cpu" + std::to_string(c) + "/cpufreq/scaling_governor";
    const std::string governor = read_file(path);
    if (governor.empty()) {
      check(out, true, "CPU " + std::to_string(c) + ": no frequency scaling exposed (fixed clock or a VM)", "");
    } else {
      check(out, governor == "performance", "CPU " + std::to_string(c) + " frequency governor is '" + governor + "'",
            "echo performance > " + path + " (or cpupower frequency-set -g performance)");
    }
  }
}

// What this process may do: idle states, RT throttling, locked memory and
// real-time priorities are all refused or capped for an ordinary user.
void check_limits(std::vector<PreflightCheck>& out) {
  const bool dma = access("/dev/cpu_dma_latency", W_OK) == 0;
  check(out, dma, "/dev/cpu_dma_latency is writable (rtcosim holds it at 0 to keep CPUs out of deep idle states)",
        "run rtcosim as root, or give its user write access to /dev/cpu_dma_latency (udev rule)");

  const std::string runtime = read_file("/proc/sys/kernel/sched_rt_runtime_us");
  check(out, runtime == "-1", "RT throttling: sched_rt_runtime_us = " + (runtime.empty() ? std::string("?") : runtime),
        "sysctl -w kernel.sched_rt_runtime_us=-1 (a runaway task can then lock a CPU: isolate the task CPUs)");

  rlimit memlock{}, rtprio{};
  getrlimit(RLIMIT_MEMLOCK, &memlock);
  getrlimit(RLIMIT_RTPRIO, &rtprio);
  const bool root = geteuid() == 0;
  check(
      out, root || memlock.rlim_cur == RLIM_INFINITY,
      "memlock limit: " +
          (memlock.rlim_cur == RLIM_INFINITY ? std::string("unlimited") : std::to_string(memlock.rlim_cur) + " bytes") +
          (root ? " (root)" : ""),
      "'ulimit -l unlimited', or LimitMEMLOCK=infinity in the unit, or memlock unlimited in /etc/security/limits.d/");
  check(out, root || rtprio.rlim_cur >= 99,
        "rtprio limit: " +
            (rtprio.rlim_cur == RLIM_INFINITY ? std::string("unlimited") : std::to_string(rtprio.rlim_cur)) +
            (root ? " (root)" : ""),
        "'ulimit -r 99', or LimitRTPRIO=99 in the unit, or rtprio 99 in /etc/security/limits.d/");
}

// An interrupt served on a task CPU preempts the task, isolated or not.
void check_irqs(std::vector<PreflightCheck>& out, const std::vector<int>& task_cpus, const std::string& cpus) {
  std::size_t on_task_cpus = 0, irqs = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/irq", ec)) {
    const std::string list = read_file((entry.path() / "smp_affinity_list").string());
    if (list.empty()) continue;
    ++irqs;
    const auto affinity = cpu_list(list);
    if (std::any_of(task_cpus.begin(), task_cpus.end(), [&](int c) { return affinity.count(c) != 0; })) ++on_task_cpus;
  }
  check(out, on_task_cpus == 0,
        std::to_string(on_task_cpus) + " of " + std::to_string(irqs) + " IRQs may be served on the task CPUs (" + cpus +
            ")",
        "add 'irqaffinity=<housekeeping CPUs>' to the kernel command line, or write the housekeeping CPUs to "
        "/proc/irq/*/smp_affinity_list (and stop irqbalance)");
}

}  // namespace

std::vector<PreflightCheck> preflight(const std::vector<int>& task_cpus) {
  std::vector<PreflightCheck> out;
  const std::string cpus = join(task_cpus);
  check_kernel(out);
  check_isolation(out, task_cpus, cpus);
  check_governors(out, task_cpus);
  check_limits(out);
  check_irqs(out, task_cpus, cpus);
  return out;
}

ClockDiscipline read_clock_discipline() {
  ClockDiscipline d;
  timex t{};  // modes 0: read only
  d.state = adjtimex(&t);
  d.status = t.status;
  d.esterror_us = t.esterror;
  static const std::set<std::string> known = {"ptp4l", "phc2sys",         "ts2phc",  "chronyd",
                                              "ntpd",  "systemd-timesyn", "openntpd"};
  std::set<std::string> found;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    const std::string comm = read_file((entry.path() / "comm").string());
    if (known.count(comm) != 0) found.insert(comm == "systemd-timesyn" ? "systemd-timesyncd" : comm);
  }
  d.services.assign(found.begin(), found.end());
  return d;
}

PreflightCheck clock_sync_check(const ClockDiscipline& d, double max_clock_offset_s) {
  std::string services;
  for (const auto& s : d.services) services += (services.empty() ? "" : ", ") + s;
  const bool ptp = std::find(d.services.begin(), d.services.end(), "ptp4l") != d.services.end();
  const bool synced = d.state != TIME_ERROR && (d.status & STA_UNSYNC) == 0;
  PreflightCheck c;
  c.ok = synced;
  c.what = std::string("CLOCK_REALTIME ") + (synced ? "synchronised" : "NOT synchronised") +
           " (adjtimex: " + (d.status & STA_UNSYNC ? "STA_UNSYNC set" : "STA_UNSYNC clear") +
           (synced ? ", estimated error " + std::to_string(d.esterror_us) + " us" : std::string()) +
           "; running: " + (services.empty() ? std::string("no PTP or NTP service") : services) +
           ") — the hosts of a graph across hosts start on one CLOCK_REALTIME instant";
  if (synced && !ptp && static_cast<double>(d.esterror_us) * 1e-6 > max_clock_offset_s) {
    c.what += "; the estimated error is above dds: max_clock_offset (PTP would do better)";
  }
  if (!synced) {
    c.fix =
        "synchronise every host's clock: linuxptp ('apt-get install linuxptp', ptp4l -i IFACE on the NIC's PTP "
        "clock, phc2sys -a -r), or at least NTP (chrony); rtcosim run then reports the measured offset between "
        "hosts";
  }
  return c;
}

int run_preflight_command(const std::vector<std::string>& raw_args) {
  try {
    CliArgs args("preflight", {}, {"help"});
    args.parse(raw_args);
    if (args.flag("help")) {
      std::cout << "usage: rtcosim preflight [FILE]\n\nChecks what a real-time PC should have for the CPUs the graph "
                   "in FILE uses\n"
                   "(all CPUs without FILE): PREEMPT_RT, isolcpus/nohz_full/rcu_nocbs, frequency governor,\n"
                   "/dev/cpu_dma_latency, RT throttling, memlock and rtprio limits, IRQ affinity; for a graph\n"
                   "across hosts, that CLOCK_REALTIME is synchronised (adjtimex) by PTP or NTP.\n"
                   "Each line is ok or warn with the fix. Changes nothing. Exit 0 when all is ok, 1 with warnings.\n";
      return 0;
    }
    if (args.positionals().size() > 1) throw UsageError("one file at most");
    std::vector<int> cpus;
    std::vector<PreflightCheck> checks;
    if (args.positionals().size() == 1) {
      const auto loaded = config::load_graph_file(args.positionals().front());
      if (!loaded.ok()) {
        for (const auto& d : loaded.diagnostics) std::cerr << d.str() << '\n';
        return 2;
      }
      for (const auto& t : loaded.graph.tasks) {
        if (t.cpu >= 0 && std::find(cpus.begin(), cpus.end(), t.cpu) == cpus.end()) cpus.push_back(t.cpu);
      }
      std::sort(cpus.begin(), cpus.end());
      if (loaded.graph.hosts.size() > 1)
        checks.push_back(clock_sync_check(read_clock_discipline(), loaded.graph.dds.max_clock_offset));
    } else {
      for (int c = 0; c < static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)); ++c) cpus.push_back(c);
    }
    std::size_t warnings = 0;
    auto all = preflight(cpus);
    all.insert(all.end(), checks.begin(), checks.end());
    for (const auto& c : all) {
      std::cout << (c.ok ? "ok    " : "warn  ") << c.what << '\n';
      if (!c.ok) {
        std::cout << "      fix: " << c.fix << '\n';
        ++warnings;
      }
    }
    std::cout << (warnings == 0 ? "everything a real-time PC needs is in place\n"
                                : std::to_string(warnings) + " warning(s): see the fixes above\n");
    return warnings == 0 ? 0 : 1;
  } catch (const UsageError& e) {
    std::cerr << "rtcosim preflight: " << e.what() << '\n';
    return 2;
  }
}

}  // namespace rtcosim::tools
