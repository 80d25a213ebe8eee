#!/usr/bin/env bash
# Instructions, data references, D1 and last-level misses per signal per
# frame pair (issue 26,
# item 3), compiled and block by block, from cachegrind: two runs of
# build/bin/frame_cost per S with 100 and 300 frame pairs, subtracted, so
# that building the graph drops out.
#   bench/frame_cost.sh [S ...]        (default 640 10000)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BIN:-build/bin}
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(640 10000)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
count() {  # prints "Ir Dr+Dw D1mr+D1mw DLmr+DLmw" of one run
  valgrind --tool=cachegrind --cache-sim=yes --cachegrind-out-file="$work/cg" "$@" >/dev/null 2>"$work/err" ||
    { cat "$work/err" >&2; return 1; }
  # summary: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw
  awk '/^summary:/ {print $2, $5 + $8, $6 + $9, $7 + $10}' "$work/cg"
}
printf "%8s  %-15s %12s %12s %12s %12s\n" S mode "instr/sig" "data refs" "D1 misses" "LL misses"
for s in "${sizes[@]}"; do
  for mode in compiled block-by-block; do
    extra=()
    [ "$mode" = compiled ] || extra=(block-by-block)
    read -r i1 r1 d1 l1 < <(count "$bin/frame_cost" "$s" 100 "${extra[@]}")
    read -r i2 r2 d2 l2 < <(count "$bin/frame_cost" "$s" 300 "${extra[@]}")
    python3 -c "
s, n = $s, 200
print(f'{s:8d}  {\"$mode\":<15} {($i2 - $i1) / n / s:12.1f} {($r2 - $r1) / n / s:12.1f} {($d2 - $d1) / n / s:12.2f} {($l2 - $l1) / n / s:12.3f}')"
  done
done
