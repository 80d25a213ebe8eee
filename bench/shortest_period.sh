#!/usr/bin/env bash
# The shortest periods each example sustains without an overrun on this
# machine: each example runs in real time for SECONDS with every task period
# scaled by F = 1, 1/2, 1/4, ... until a run overruns; the last clean F is
# reported with the fastest task's period at that scale. Its baseline is
# the example's own nominal periods (F = 1). Needs root for SCHED_FIFO.
#   bench/shortest_period.sh [SECONDS]     (default 2)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-2}
rtcosim=${RTCOSIM:-build/bin/rtcosim}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for example in examples/flight_control.yaml examples/two_task_sine.yaml examples/four_task.yaml; do
  best=""
  for scale in 1 0.5 0.25 0.125 0.0625 0.03125 0.015625 0.0078125; do
    "$rtcosim" run --duration "${seconds}s" --period-scale "$scale" --json "$work/s.json" "$example" >/dev/null 2>&1 || break
    overruns=$(/usr/bin/python3 -c "import json,sys; print(sum(t['overruns'] for t in json.load(open('$work/s.json'))['tasks']))")
    [ "$overruns" -eq 0 ] || break
    best=$scale
  done
  fastest=$(/usr/bin/python3 - "$example" "${best:-1}" <<'PY'
import sys, yaml
tasks = yaml.safe_load(open(sys.argv[1]))["tasks"]
units = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
def secs(text):
    for u in ("ns", "us", "ms", "s"):
        if text.endswith(u):
            return float(text[: -len(u)]) * units[u]
print(f"{min(secs(t['period']) for t in tasks) * float(sys.argv[2]) * 1e6:.1f} us")
PY
)
  echo "$example: sustained down to period scale ${best:-none (overruns at nominal)}; fastest task period $fastest"
done
