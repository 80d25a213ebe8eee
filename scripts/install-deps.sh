#!/usr/bin/env bash
# Installs exactly the Debian 12 packages rtcosim needs to build, test and
# benchmark. Idempotent: packages already present are left as they are.
set -euo pipefail

# What the quick start's build needs (scripts/quickstart.sh: rtcosim without
# the optional parts, docs/building.md); --quickstart installs only these.
main_job=(
  build-essential cmake ninja-build pkg-config   # toolchain
  lld                                            # the linker (three times faster than ld.bfd on the suites)
  libboost-dev                                   # Boost.Lockfree (header-only)
  libeigen3-dev                                  # linear algebra
  libyaml-cpp-dev                                # task-graph files
  liblttng-ust-dev                               # tracepoints
  libnlopt-cxx-dev                               # state synchronisation optimisers (docs/sync.md)
  cyclonedds-dev cyclonedds-tools                # DDS bridge of graphs across hosts (idlc; ddsperf for bench/)
)
packages=(
  "${main_job[@]}"
  libgtest-dev libgmock-dev                      # tests
  libbenchmark-dev                               # bench/
  lttng-tools                                    # tracing sessions (rtcosim run --trace)
  strace                                         # the test that traced frames make no system call
  libbabeltrace2-dev                             # rtcosim trace report
  systemd                                        # systemd-analyze verify in CI
  rt-tests                                       # cyclictest, the baseline of bench/latency_vs_cyclictest.sh
  clang libclang-rt-14-dev                       # libFuzzer target of the config loader
  python3-yaml python3-jsonschema                # JSON Schema check of the examples
  libzip-dev libpugixml-dev                      # FMUs: unzip the archive, read modelDescription.xml
  libhdf5-dev hdf5-tools                         # HDF5 recordings (record: {file: run.h5}); h5dump, h5clear
  libmatio-dev                                   # MAT-file recordings (v7.3 and v5)
  python3-h5py python3-scipy                     # tests read recordings back with h5py and scipy.io
  openssl                                        # DDS Security documents (scripts/dds-security-docs.sh, its test)
  iproute2 iptables                              # two-host tests: ip netns, veth, tc netem; loss without netem
  libnetfilter-queue-dev                         # two-host tests: the 2 ms +- 1 ms delay without netem (NFQUEUE)
  chromium                                       # the live view's test loads the page headless (tests/tools/live_view_test.cpp)
  graphviz                                       # rtcosimd lays out the live view's graph with dot (docs/live.md)
)

if [[ "${1:-}" == --quickstart ]]; then
  packages=("${main_job[@]}")
elif [[ $# -gt 0 ]]; then
  echo "usage: scripts/install-deps.sh [--quickstart]" >&2
  exit 2
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
echo "install-deps: installing ${missing[*]}"
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
