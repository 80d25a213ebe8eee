#!/usr/bin/env bash
# Whole-process cost of a simulated second (issue 26): `rtcosim run
# --virtual` of a producer of S sines -> S first-order lags (1 ms each, AB-2,
# predictor links, nothing recorded) for DURATION seconds, against
# build/bin/plain_sine_lag doing the same math on plain arrays for as many
# frames. Wall seconds, the best of RUNS runs each, and the ratio.
#   bench/virtual_vs_plain.sh [S] [DURATION_S] [RUNS]      (default 640 20 3)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BIN:-build/bin}
s=${1:-640}
duration=${2:-20}
runs=${3:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 - "$s" "$duration" >"$work/g.yaml" <<'PY'
import sys
s, d = int(sys.argv[1]), sys.argv[2]
print(f"duration: {d}s")
print("tasks:\n  - {name: producer, period: 1ms, integrator: ab2, cpu: 0}\n  - {name: consumer, period: 1ms, integrator: ab2, cpu: 0}")
print("blocks:")
for k in range(s):
    print(f"  - {{name: s{k}, type: sine, task: producer, params: {{frequency: {1 + k % 7}}}}}")
    print(f"  - {{name: l{k}, type: first_order_lag, task: consumer, params: {{time_constant: 0.05}}}}")
print("wires:")
for k in range(s):
    print(f"  - {{from: s{k}.y, to: l{k}.u, coupling: {{method: predictor}}}}")
PY
best() {  # the smallest wall time of $runs runs of the command
  local b=""
  for _ in $(seq "$runs"); do
    local t0 t1
    t0=$(date +%s.%N)
    "$@" >/dev/null
    t1=$(date +%s.%N)
    b=$(python3 -c "t = $t1 - $t0; b = '$b'; print(min(t, float(b)) if b else t)")
  done
  echo "$b"
}
mib=$(( $(stat -c %s "$work/g.yaml") / 1048576 + 1 ))
virtual=$(best "$bin/rtcosim" run --virtual --max-file-size "$mib" "$work/g.yaml")
check=$(best "$bin/rtcosim" check --max-file-size "$mib" "$work/g.yaml")
frames=$(python3 -c "print(int(round($duration * 1000)))")
plain=$(best "$bin/plain_sine_lag" "$s" "$frames")
python3 -c "
v, c, p = $virtual, $check, $plain
print(f'S = $s, $duration s simulated: rtcosim run --virtual {v:.2f} s (of which loading and checking the file {c:.2f} s), plain arrays {p:.3f} s')
print(f'ratio {v / p:.1f}x; without the load {(v - c) / p:.1f}x')"
