#!/usr/bin/env bash
# Wake-up latency of an rtcosim task with an empty partition against
# cyclictest at the same period (1 ms), priority (80) and CPU (1), run back
# to back. Prints p99 and max of both and their ratios. Needs root (SCHED_FIFO)
# and Debian's rt-tests (cyclictest).
#   bench/latency_vs_cyclictest.sh [seconds]    (default 10)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
loops=$((seconds * 1000))
rtcosim=${RTCOSIM:-build/bin/rtcosim}
command -v cyclictest >/dev/null || { echo "cyclictest missing: apt-get install rt-tests" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cyclictest -m -q -p 80 -a 1 -t 1 -i 1000 -l "$loops" -h 100000 > "$work/cyclic.txt"
"$rtcosim" run --duration "${seconds}s" --json "$work/rtcosim.json" --frames "$work/frames.csv" bench/empty_task.yaml \
  > "$work/run.txt"

/usr/bin/python3 - "$work/cyclic.txt" "$work/rtcosim.json" "$work/frames.csv" <<'PY'
import json, sys
counts = {}
for line in open(sys.argv[1]):
    if line.startswith("#") or not line.strip():
        continue
    parts = line.split()
    if len(parts) >= 2 and parts[0].isdigit():
        counts[int(parts[0])] = int(parts[1])
total = sum(counts.values())
def percentile(p):
    seen = 0
    for us in sorted(counts):
        seen += counts[us]
        if seen >= p * total:
            return us * 1000
    return max(counts) * 1000
cyc_p99, cyc_max = percentile(0.99), max(k for k, v in counts.items() if v) * 1000
task = json.load(open(sys.argv[2]))["tasks"][0]
# Exact per-frame latencies from --frames (the summary's histogram buckets are ~19 % wide).
lat = sorted(int(row.split(",")[5]) for row in open(sys.argv[3]).readlines()[1:])
rt_p99, rt_max = lat[min(len(lat) - 1, int(0.99 * len(lat)))], lat[-1]
print(f"cyclictest  p99 {cyc_p99/1000:9.1f} us   max {cyc_max/1000:9.1f} us   ({total} wake-ups)")
print(f"rtcosim     p99 {rt_p99/1000:9.1f} us   max {rt_max/1000:9.1f} us   ({task['frames']} frames, {task['policy']})")
print(f"ratio       p99 {rt_p99/max(cyc_p99,1):9.2f}x     max {rt_max/max(cyc_max,1):9.2f}x")
PY
