#!/usr/bin/env bash
# Scale of the loader and the virtual executor (issue 13, goals 6 and 7):
# graphs of T unpinned tasks x 1 first_order_lag signal, periods 1/2/5/10 ms,
# each linked to the previous task (bench/scale_graph.py). For each T:
#   parse     the bare yaml-cpp parse of the file (bench/yaml_load): the baseline
#   check     `rtcosim check` of the same file: time, peak RSS, ratio to the parse
#   virtual   `rtcosim run --virtual` of 0.1 s of virtual time: time, peak RSS,
#             frames run, wall time per frame, peak RSS per task; marginal: the wall time a frame adds
#             (a 0.3 s run less the 0.1 s one, over the frames it added)
# Times are wall seconds of one run on this machine (not a test: no thresholds).
#   bench/scale_virtual.sh [T ...]        (default 1000 10000 100000)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BIN:-build/bin}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1000 10000 100000)
measure() {  # prints "seconds kB" of the command
  /usr/bin/time -f "%e %M" -o "$work/time" "$@" >"$work/out" 2>"$work/err" || { cat "$work/err" >&2; return 1; }
  cat "$work/time"
}
printf "%8s  %9s  %9s %9s %7s  %9s %9s %10s %9s %9s %9s\n" tasks "parse s" "check s" "check MB" "ratio" \
  "virtual s" "virt MB" frames "us/frame" "marginal" "kB/task"
for n in "${sizes[@]}"; do
  graph="$work/g$n.yaml"
  bench/scale_graph.py --tasks "$n" --signals 1 --cpus 0 --duration 0.1s >"$graph"
  mib=$(( $(stat -c %s "$graph") / 1048576 + 1 ))
  read -r parse _ < <(measure "$bin/yaml_load" "$graph")
  read -r check check_kb < <(measure "$bin/rtcosim" check --max-file-size "$mib" "$graph")
  read -r virt virt_kb < <(measure "$bin/rtcosim" run --virtual --max-file-size "$mib" --duration 0.1 --json "$work/s.json" "$graph")
  frames=$(python3 -c "import json; print(sum(t['frames'] for t in json.load(open('$work/s.json'))['tasks']))")
  # The marginal cost of a frame: a run three times as long, less the first, over the frames it added (the
  # load, the build and the summary drop out).
  read -r virt3 _ < <(measure "$bin/rtcosim" run --virtual --max-file-size "$mib" --duration 0.3 --json "$work/s3.json" "$graph")
  frames3=$(python3 -c "import json; print(sum(t['frames'] for t in json.load(open('$work/s3.json'))['tasks']))")
  python3 - "$n" "$parse" "$check" "$check_kb" "$virt" "$virt_kb" "$frames" "$virt3" "$frames3" <<'PY'
import sys
n, parse, check, check_kb, virt, virt_kb, frames, virt3, frames3 = sys.argv[1:]
n, parse, check, virt, virt3 = int(n), float(parse), float(check), float(virt), float(virt3)
check_kb, virt_kb, frames, frames3 = int(check_kb), int(virt_kb), int(frames), int(frames3)
ratio = f"{check / parse:.1f}x" if parse > 0 else "-"
print(f"{n:8d}  {parse:9.2f}  {check:9.2f} {check_kb / 1024:9.0f} {ratio:>7}  {virt:9.2f} {virt_kb / 1024:9.0f} "
      f"{frames:10d} {virt / frames * 1e6:9.2f} {(virt3 - virt) / (frames3 - frames) * 1e6:9.2f} {virt_kb / n:9.1f}")
PY
done

# Memory per signal: 16 tasks (1/2/5/10 ms on 2 CPUs) x S first_order_lag signals. A signal's share is the
# peak above the same graph with one signal per task (the process, its libraries and 16 tasks), over the
# signals added: what each further signal costs, the file's load included (docs/benchmarks.md, "Scale").
echo
printf "%8s  %9s %9s %12s  %9s %9s %12s\n" signals "check s" "check MB" "check kB/sig" "virtual s" "virt MB" "virt kB/sig"
base="$work/s1.yaml"
bench/scale_graph.py --tasks 16 --signals 1 --cpus 2 --duration 0.1s >"$base"
read -r _ check_base < <(measure "$bin/rtcosim" check "$base")
read -r _ virt_base < <(measure "$bin/rtcosim" run --virtual --duration 0.1 "$base")
printf "%8d  %9s %9.0f %12s  %9s %9.0f %12s   (the base)\n" 16 - "$((check_base / 1024))" - - "$((virt_base / 1024))" -
for s in ${SIGNALS:-64 640 6400}; do
  graph="$work/s$s.yaml"
  bench/scale_graph.py --tasks 16 --signals "$s" --cpus 2 --duration 0.1s >"$graph"
  read -r check check_kb < <(measure "$bin/rtcosim" check --max-file-size 64 "$graph")
  read -r virt virt_kb < <(measure "$bin/rtcosim" run --virtual --max-file-size 64 --duration 0.1 "$graph")
  n=$((16 * s))
  python3 -c "print(f'{$n:8d}  {$check:9.2f} {$check_kb/1024:9.0f} {($check_kb-$check_base)/($n-16):12.2f}  {$virt:9.2f} {$virt_kb/1024:9.0f} {($virt_kb-$virt_base)/($n-16):12.2f}')"
done
