#!/usr/bin/env bash
# Builds the libFuzzer target of the task-graph loader with clang, ASan and
# UBSan, and fuzzes it for N seconds (default 60) from the examples and the
# invalid test files. A crash, hang or leak fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
cmake -S . -B build-fuzz -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DRTCOSIM_FUZZ=ON \
  -DRTCOSIM_SANITIZE=address,undefined -DRTCOSIM_BUILD_TESTS=OFF -DRTCOSIM_BUILD_BENCH=OFF -DRTCOSIM_WERROR=OFF >/dev/null
cmake --build build-fuzz --parallel "$(nproc)" --target config_loader_fuzz
corpus=build-fuzz/corpus
mkdir -p "$corpus"
seeds=(examples)
[ -d tests/rt_config/invalid ] && seeds+=(tests/rt_config/invalid)
[ -d tests/fuzz/regressions ] && seeds+=(tests/fuzz/regressions)
build-fuzz/bin/config_loader_fuzz -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  "$corpus" "${seeds[@]}" 2>&1 | tail -n 12
