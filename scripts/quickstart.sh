#!/usr/bin/env bash
# Quick start on a fresh Debian 12 machine: install what the main job needs,
# build rtcosim without its optional parts, and run the main job on the
# bundled example.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --quickstart
# Left out (docs/building.md, "Optional parts"): FMUs, the RIM mechanics, SSP
# import, HDF5 and MAT-file recordings, the trace report. scripts/test.sh installs the rest
# and builds every part, the suites and rtcosimd in the same build directory:
# what this build compiled is not compiled again.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DRTCOSIM_WITHOUT="fmi;mechanics;ssp;columns;trace-report" >/dev/null
cmake --build build --parallel --target rtcosim
echo
build/bin/rtcosim run --compare-reference --plot flight_control.svg examples/flight_control.yaml
