#pragma once

#include <string>
#include <vector>

namespace rtcosim::tools {

// One finding of `rtcosim preflight`: ok, or a warning with its fix.
struct PreflightCheck {
  bool ok = true;
  std::string what;
  std::string fix;  // empty when ok
};

// What a real-time PC should have, for the CPUs the tasks use. Reads /proc,
// /sys and the process limits; never changes anything.
std::vector<PreflightCheck> preflight(const std::vector<int>& task_cpus);

// The kernel's clock-discipline state as adjtimex(2) reports it, and the
// clock services found running (ptp4l, phc2sys, chronyd, ntpd,
// systemd-timesyncd, ...).
struct ClockDiscipline {
  int state = 0;         // adjtimex's return: TIME_OK .. TIME_ERROR (5: not synchronised)
  int status = 0;        // timex.status (STA_UNSYNC = 0x40)
  long esterror_us = 0;  // timex.esterror
  std::vector<std::string> services;
};
ClockDiscipline read_clock_discipline();

// For a graph across hosts: is CLOCK_REALTIME disciplined (the common epoch
// is a CLOCK_REALTIME instant)? ok when the kernel reports it synchronised;
// the text names the services and the estimated error, the fix how to get
// PTP (or at least NTP) running.
PreflightCheck clock_sync_check(const ClockDiscipline& d, double max_clock_offset_s);

// `rtcosim preflight [FILE]`: exit 0 when everything is ok, 1 with warnings,
// 2 for a usage error.
int run_preflight_command(const std::vector<std::string>& args);

}  // namespace rtcosim::tools
