#!/usr/bin/env bash
# Builds and runs the test suites.
#   scripts/test.sh           the whole suite (build/)
#   scripts/test.sh asan      the whole suite under AddressSanitizer + UBSan (build-asan/)
#   scripts/test.sh tsan      the threaded tests, and rtcosimd under the daemon tests, under
#                             ThreadSanitizer (build-tsan/)
# Each then fails on a skipped test that tests/allowed_skips.txt does not list
# (scripts/check-skips.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-default}
jobs=$(nproc)
# The sanitizer builds keep line tables only (-g1): their reports name file
# and line, and CI compiles and links them markedly faster than with -g.
tsan_flags=(-DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O3 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O3 -g1 -DNDEBUG")
# The ASan build at -O1 (docs/testing.md: 461 s to build, 124 s for the
# suite on 2 CPUs): ASan's reports need no -O2, which spent minutes more
# compiling the Eigen-heavy units for little faster tests.
asan_flags=(-DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG")
case "$mode" in
  default)
    # Every part (after the quick start, which left some out and installed
    # only what it needed).
    scripts/install-deps.sh
    cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRTCOSIM_WITHOUT= >/dev/null
    cmake --build build --parallel "$jobs"
    ctest --test-dir build --output-on-failure --parallel "$jobs"
    scripts/check-skips.sh build
    ;;
  asan)
    # Without LTTng-UST: the whole suite then runs through the tracepoints
    # compiled to no-ops (the tracing tests skip here, tests/allowed_skips.txt;
    # the default build runs them with LTTng-UST).
    # Left out here: the suites of the mechanics' numerics (flexible_arm,
    # rim_coupling, rim_flexible, mechanics: 190 s of ASan compiler time and
    # minutes of sweeps, about 3 of the CI's 30 minutes), which read no input
    # from outside and run whole in the default build; their code runs under
    # ASan here in the partition and block tests and in the RIM examples
    # (.ci/run). And the two-namespace runs (TwoHosts.*, serial, ~35 s): the
    # same DDS bridge code runs under ASan in DdsBridge.*.
    cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRTCOSIM_SANITIZE=address,undefined \
      -DRTCOSIM_BUILD_BENCH=OFF -DRTCOSIM_LTTNG=OFF "${asan_flags[@]}" \
      -DRTCOSIM_SKIP_TESTS="flexible_arm_test;rim_coupling_test;rim_flexible_test;mechanics_test" >/dev/null
    cmake --build build-asan --parallel "$jobs"
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      ctest --test-dir build-asan --output-on-failure --parallel "$jobs" -E '^TwoHosts\..*$'
    scripts/check-skips.sh build-asan
    ;;
  tsan | tsan-build | tsan-run)
    # tsan-build and tsan-run are the two halves of tsan (.ci/run puts the
    # fuzzer's build beside the second, whose suites mostly wait).
    # At -O3, the Release level: the library and the tools are also compiled
    # here with the optimiser that finds the most warnings (-Werror).
    if [[ "$mode" != tsan-run ]]; then
      cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRTCOSIM_SANITIZE=thread \
        -DRTCOSIM_ONLY_THREADED_TESTS=ON -DRTCOSIM_BUILD_BENCH=OFF "${tsan_flags[@]}" >/dev/null
      cmake --build build-tsan --parallel "$jobs"
    fi
    [[ "$mode" == tsan-build ]] && exit 0
    # Reports go to files so that those of the processes the tests start
    # (rtcosimd under the daemon tests, whose stderr the tests keep to
    # themselves) are seen too; any report fails the run.
    reports=build-tsan/tsan-reports
    rm -rf "$reports"
    mkdir -p "$reports"
    status=0
    TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:log_path=$PWD/$reports/tsan:suppressions=$PWD/scripts/tsan.supp" \
      ctest --test-dir build-tsan --output-on-failure -L threaded || status=$?
    if compgen -G "$reports/tsan.*" >/dev/null; then
      cat "$reports"/tsan.*
      echo "ThreadSanitizer reported the above (one file per process in $reports)" >&2
      status=1
    fi
    scripts/check-skips.sh build-tsan || status=1
    exit "$status"
    ;;
  *)
    echo "usage: scripts/test.sh [default|asan|tsan|tsan-build|tsan-run]" >&2
    exit 2
    ;;
esac
