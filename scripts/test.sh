#!/usr/bin/env bash
# Builds and runs the test suites.
#   scripts/test.sh           the whole suite (build/)
#   scripts/test.sh asan      the whole suite under AddressSanitizer + UBSan (build-asan/)
#   scripts/test.sh tsan      the threaded tests under ThreadSanitizer (build-tsan/)
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-default}
jobs=$(nproc)
case "$mode" in
  default)
    cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build build --parallel "$jobs"
    ctest --test-dir build --output-on-failure --parallel "$jobs"
    ;;
  asan)
    cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRTCOSIM_SANITIZE=address,undefined \
      -DRTCOSIM_BUILD_BENCH=OFF >/dev/null
    cmake --build build-asan --parallel "$jobs"
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      ctest --test-dir build-asan --output-on-failure --parallel "$jobs"
    ;;
  tsan)
    cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRTCOSIM_SANITIZE=thread \
      -DRTCOSIM_ONLY_THREADED_TESTS=ON -DRTCOSIM_BUILD_BENCH=OFF >/dev/null
    cmake --build build-tsan --parallel "$jobs"
    TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
      ctest --test-dir build-tsan --output-on-failure -L threaded
    ;;
  *)
    echo "usage: scripts/test.sh [default|asan|tsan]" >&2
    exit 2
    ;;
esac
