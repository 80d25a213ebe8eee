#!/usr/bin/env bash
# Capacity of one core (issue 13, goal 3): the largest S for which 4 tasks of
# S first_order_lag signals each (periods 1, 2, 5 and 10 ms, all pinned to
# one CPU, predictor links, bench/scale_graph.py) run SECONDS in real time
# without an overrun. S doubles from 16 until a run overruns, then a
# bisection narrows it to within 10 %. Prints each trial and the result as
# signals and signal updates per second. Needs root (SCHED_FIFO); the
# baseline is the same script's S = 16, which must run clean.
#   bench/capacity.sh [SECONDS] [CPU]          (default 10 s on CPU 1)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
cpu=${2:-1}
rtcosim=${RTCOSIM:-build/bin/rtcosim}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# signal updates per second per signal of each task: 1000 + 500 + 200 + 100
updates_per_s=1800
trial() {  # prints overruns of S; exit 1 when the run itself failed
  local s=$1
  bench/scale_graph.py --tasks 4 --signals "$s" --periods 1,2,5,10 --cpus 1 --first-cpu "$cpu" \
    --duration "${seconds}s" >"$work/g.yaml"
  "$rtcosim" run --max-file-size 256 --json "$work/s.json" "$work/g.yaml" >"$work/out" 2>&1 || { cat "$work/out" >&2; return 1; }
  python3 -c "
import json
d = json.load(open('$work/s.json'))
periods = {'t0': 1e-3, 't1': 2e-3, 't2': 5e-3, 't3': 10e-3}
load = sum(t['exec_ns']['p50'] * 1e-9 / periods[t['name']] for t in d['tasks'])
print(sum(t['overruns'] for t in d['tasks']), max(t['exec_ns']['p99'] for t in d['tasks'] if t['name'] == 't0'), f'{load:.3f}')"
}
good=0
good_load=1
bad=0
s=16
while :; do
  read -r overruns p99 load < <(trial "$s")
  echo "S = $s per task ($((4 * s)) signals): $overruns overrun(s), 1 ms task execution p99 $p99 ns, CPU load (p50) $load"
  if [ "$overruns" -eq 0 ]; then good=$s; good_load=$load; s=$((s * 2)); else bad=$s; break; fi
  [ "$s" -le 65536 ] || break
done
[ "$good" -gt 0 ] || { echo "even S = 16 overran: the machine cannot hold the baseline"; exit 1; }
while [ "$bad" -gt 0 ] && [ $((bad - good)) -gt $((good / 10)) ]; do
  s=$(((good + bad) / 2))
  read -r overruns p99 load < <(trial "$s")
  echo "S = $s per task ($((4 * s)) signals): $overruns overrun(s), 1 ms task execution p99 $p99 ns, CPU load (p50) $load"
  if [ "$overruns" -eq 0 ]; then good=$s; good_load=$load; else bad=$s; fi
done
# On a VM one wake-up spike of milliseconds overruns a run whatever its load;
# the load of the last clean run, extrapolated linearly to 100 %, says what
# the model math and the runtime would allow on a quiet core.
echo "load estimate: $(python3 -c "print(int(4 * $good / $good_load))") signals at 100 % load (p50 execution, linear from S = $good at load $good_load)"
echo "capacity of CPU $cpu: $((4 * good)) signals in 4 tasks (1/2/5/10 ms), $((good * updates_per_s)) signal updates/s, ${seconds} s without an overrun"
