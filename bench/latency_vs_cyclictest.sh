#!/usr/bin/env bash
# Wake-up latency of an rtcosim task with an empty partition against
# cyclictest at the same period (1 ms), priority (80) and CPU (1), with
# build/bin/wake_probe between them: rtcosim's clock calls in a bare loop, no
# frame work (so a difference to cyclictest lies in the clock calls, one to
# rtcosim in the frame's work between wake-ups). The three
# alternate in ROUNDS rounds of SECONDS each, so that drift of the machine
# (a VM's neighbours, thermal state) hits both alike; the per-wake-up
# latencies of all rounds are pooled. Prints p50, p99 and max of both and
# their ratios. Needs root (SCHED_FIFO) and Debian's rt-tests (cyclictest).
#   bench/latency_vs_cyclictest.sh [SECONDS] [ROUNDS]     (default 2 5)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-2}
rounds=${2:-5}
loops=$((seconds * 1000))
rtcosim=${RTCOSIM:-build/bin/rtcosim}
command -v cyclictest >/dev/null || { echo "cyclictest missing: apt-get install rt-tests" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for r in $(seq "$rounds"); do
  # -v prints every wake-up: "thread: loop: latency_us".
  cyclictest -m -q -p 80 -a 1 -t 1 -i 1000 -l "$loops" -v 2>/dev/null | awk '/^ *0:/{print $3 * 1000}' >> "$work/cyclic_ns"
  "${WAKE_PROBE:-build/bin/wake_probe}" 1000 "$loops" 1 80 >> "$work/probe_ns"
  "$rtcosim" run --duration "${seconds}s" --frames "$work/frames.csv" bench/empty_task.yaml > "$work/run.txt"
  tail -n +2 "$work/frames.csv" | cut -d, -f6 >> "$work/rtcosim_ns"
done

/usr/bin/python3 - "$work/cyclic_ns" "$work/rtcosim_ns" "$rounds" "$seconds" "$work/probe_ns" <<'PY'
import sys
def stats(path):
    v = sorted(int(float(x)) for x in open(path) if x.strip())
    pick = lambda p: v[min(len(v) - 1, int(p * len(v)))]
    return len(v), pick(0.5), pick(0.99), v[-1]
cn, c50, c99, cmax = stats(sys.argv[1])
rn, r50, r99, rmax = stats(sys.argv[2])
pn, p50, p99, pmax = stats(sys.argv[5])
print(f"{sys.argv[3]} alternating rounds of {sys.argv[4]} s, period 1 ms, SCHED_FIFO 80, CPU 1")
print(f"cyclictest  p50 {c50/1e3:7.1f} us  p99 {c99/1e3:7.1f} us  max {cmax/1e3:8.1f} us  ({cn} wake-ups)")
print(f"wake_probe  p50 {p50/1e3:7.1f} us  p99 {p99/1e3:7.1f} us  max {pmax/1e3:8.1f} us  ({pn} wake-ups)")
print(f"rtcosim     p50 {r50/1e3:7.1f} us  p99 {r99/1e3:7.1f} us  max {rmax/1e3:8.1f} us  ({rn} frames)")
print(f"ratio       p50 {r50/max(c50,1):7.2f}x     p99 {r99/max(c99,1):7.2f}x     max {rmax/max(cmax,1):8.2f}x   (rtcosim / cyclictest)")
print(f"probe ratio p50 {p50/max(c50,1):7.2f}x     p99 {p99/max(c99,1):7.2f}x     max {pmax/max(cmax,1):8.2f}x   (wake_probe / cyclictest)")
PY
