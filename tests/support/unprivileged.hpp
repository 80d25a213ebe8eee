#pragma once

#include <functional>
#include <string>

namespace rtcosim::testing {

/*
 * Runs a check as an unprivileged user. Root passes every permission check
 * and CI runs as root, so a test of "permission denied" would otherwise never
 * run where it matters. When this process is root, `body` runs in a forked
 * child that has dropped to nobody:nogroup with no supplementary groups
 * (setgroups, setresgid, setresuid; the child checks that it cannot become
 * root again); otherwise it runs in this process. Returns what `body`
 * returned, or a line starting "child: " that says why the child did not
 * deliver it. `body` must not use GoogleTest assertions: a child's failures
 * would die with it; return what the test should compare instead.
 */
std::string run_unprivileged(const std::function<std::string()>& body);

}  // namespace rtcosim::testing
