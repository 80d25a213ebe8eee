#include "runtime/realtime.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

namespace rtcosim::runtime {

namespace {

bool can_use_fifo(int priority) {
  // Trying it on a throwaway thread is the only reliable test: capabilities,
  // RLIMIT_RTPRIO and container policies all play a part.
  struct Probe {
    int priority;
    int result = -1;
  } probe{priority};
  pthread_t thread;
  if (pthread_create(
          &thread, nullptr,
          [](void* arg) -> void* {
            auto* p = static_cast<Probe*>(arg);
            sched_param param{};
            param.sched_priority = p->priority;
            p->result = pthread_setschedparam(pthread_self(), SCHED_FIFO, &param);
            return nullptr;
          },
          &probe) != 0) {
    return false;
  }
  pthread_join(thread, nullptr);
  return probe.result == 0;
}

}  // namespace

RealtimeReport prepare_process(config::RealtimeMode mode, int highest_priority) {
  RealtimeReport report;
  if (mode == config::RealtimeMode::kOff) return report;
  const bool required = mode == config::RealtimeMode::kRequired;
  auto problem = [&](std::string text) {
    (required ? report.errors : report.warnings).push_back(std::move(text));
    if (required) report.ok = false;
  };

  if (mlockall(MCL_CURRENT | MCL_FUTURE) != 0) {
    rlimit limit{};
    getrlimit(RLIMIT_MEMLOCK, &limit);
    problem(std::string("cannot lock memory (mlockall: ") + std::strerror(errno) + "; RLIMIT_MEMLOCK is " +
            (limit.rlim_cur == RLIM_INFINITY ? std::string("unlimited") : std::to_string(limit.rlim_cur) + " bytes") +
            ") — grant it with 'ulimit -l unlimited', LimitMEMLOCK=infinity in the unit, or run as root");
  }
  mallopt(M_TRIM_THRESHOLD, -1);
  mallopt(M_MMAP_MAX, 0);

  // PM QoS: while this file is open with 0 written, no CPU enters an idle
  // state whose exit latency is above 0 us, so a task's timer does not wait
  // for a core to wake from a deep C-state (cyclictest does the same). The
  // descriptor stays open for the life of the process.
  static int dma_latency_fd = -1;
  if (dma_latency_fd < 0) {
    dma_latency_fd = open("/dev/cpu_dma_latency", O_WRONLY | O_CLOEXEC);
    const std::int32_t zero = 0;
    ssize_t written = -1;
    if (dma_latency_fd >= 0) {
      while ((written = write(dma_latency_fd, &zero, sizeof zero)) < 0 && errno == EINTR) {
      }
    }
    if (written != static_cast<ssize_t>(sizeof zero)) {
      report.warnings.push_back(std::string("cannot hold /dev/cpu_dma_latency at 0 (") +
                                (dma_latency_fd >= 0 ? "write: " : "open: ") +
                                (written >= 0 ? "a short write" : std::strerror(errno)) +
                                ") — CPUs may sleep deeply between frames and wake late; run as root");
      // Open without the 0 it holds nothing: closed, so that the next
      // preparation (a reload) tries again and warns again instead of
      // taking the open descriptor for success.
      if (dma_latency_fd >= 0) close(dma_latency_fd);
      dma_latency_fd = -1;
    }
  }

  if (highest_priority > 0) {
    report.fifo = can_use_fifo(highest_priority);
    if (!report.fifo) {
      rlimit limit{};
      getrlimit(RLIMIT_RTPRIO, &limit);
      problem("cannot use SCHED_FIFO at priority " + std::to_string(highest_priority) + " (RLIMIT_RTPRIO is " +
              (limit.rlim_cur == RLIM_INFINITY ? std::string("unlimited") : std::to_string(limit.rlim_cur)) +
              ", CAP_SYS_NICE missing) — grant it with 'ulimit -r 99', LimitRTPRIO=99 in the unit, "
              "'setcap cap_sys_nice+ep' on the binary, or run as root" +
              (required ? "" : "; the tasks run SCHED_OTHER"));
    }
  }
  return report;
}

std::vector<int> pin_housekeeping(const std::vector<int>& task_cpus, std::string* problem) {
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> chosen;
  for (int cpu = 0; cpu < online; ++cpu) {
    if (std::find(task_cpus.begin(), task_cpus.end(), cpu) != task_cpus.end()) continue;
    CPU_SET(static_cast<std::size_t>(cpu), &set);
    chosen.push_back(cpu);
  }
  if (chosen.empty()) return {};
  if (const int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set); rc != 0) {
    if (problem != nullptr) *problem = std::string("pthread_setaffinity_np: ") + std::strerror(rc);
    return {};
  }
  return chosen;
}

std::string prepare_thread(int cpu, int priority, bool fifo, std::size_t stack_bytes) {
  // Every step is tried whatever the one before it did, so that a failed
  // pin does not also cost the priority; the problems are reported together.
  std::string problems;
  if (cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (cpu < CPU_SETSIZE) CPU_SET(static_cast<std::size_t>(cpu), &set);
    const long online = sysconf(_SC_NPROCESSORS_CONF);
    const int rc = cpu < CPU_SETSIZE ? pthread_setaffinity_np(pthread_self(), sizeof set, &set) : EINVAL;
    if (rc != 0) {
      problems += "cannot pin to CPU " + std::to_string(cpu) + ": " + std::strerror(rc) +
                  (online > 0 && cpu >= online ? " (this machine has CPUs 0-" + std::to_string(online - 1) + ")" : "");
    }
  }
  if (fifo && priority > 0) {
    sched_param param{};
    param.sched_priority = priority;
    if (const int rc = pthread_setschedparam(pthread_self(), SCHED_FIFO, &param); rc != 0) {
      problems += (problems.empty() ? "" : "; ") + std::string("cannot set SCHED_FIFO ") + std::to_string(priority) +
                  ": " + std::strerror(rc);
    }
  }
  // Timer slack lets the kernel fire a sleeper's timer up to 50 us late to
  // batch wake-ups; a task's deadline must not be batched.
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  // Touch the stack the frames will use, so that its pages are mapped (and,
  // with mlockall, locked) before the first deadline.
  auto* volatile touch = static_cast<volatile unsigned char*>(alloca(stack_bytes));
  for (std::size_t i = 0; i < stack_bytes; i += 4096) touch[i] = 0;
  return problems;
}

std::string policy_text(const ThreadPlacement& p) {
  return p.policy == "fifo" || p.policy == "rr" ? p.policy + " " + std::to_string(p.priority) : p.policy;
}

ThreadPlacement current_placement() {
  ThreadPlacement p;
  int policy = 0;
  sched_param param{};
  if (pthread_getschedparam(pthread_self(), &policy, &param) == 0) {
    p.policy = policy == SCHED_FIFO ? "fifo" : policy == SCHED_RR ? "rr" : "other";
    p.priority = policy == SCHED_FIFO || policy == SCHED_RR ? param.sched_priority : 0;
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  if (pthread_getaffinity_np(pthread_self(), sizeof set, &set) == 0 && CPU_COUNT(&set) == 1) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(static_cast<std::size_t>(c), &set)) p.cpu = c;
    }
  }
  return p;
}

}  // namespace rtcosim::runtime
