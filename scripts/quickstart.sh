#!/usr/bin/env bash
# Quick start on a fresh Debian 12 machine: install what is needed, build,
# and run the main job on the bundled example.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
# Only what the main job runs: rtcosimd, the test suites, benchmarks and test
# FMUs are scripts/test.sh's to build (same build directory, nothing built
# twice).
cmake --build build --parallel --target rtcosim
echo
build/bin/rtcosim run --compare-reference --plot flight_control.svg examples/flight_control.yaml
