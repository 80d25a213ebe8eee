#!/usr/bin/env bash
# The cost of DDS Security per sample: the round trip of one 16-signal block
# between two processes through rtcosim's remote link (bench/dds_roundtrip.cpp,
# 1 kHz, loopback), unsecured and with `dds: security` whose governance
# signs (sign) or encrypts (encrypt) every message (documents made by
# scripts/dds-security-docs.sh). The three run in turn REPS times (the
# machine's noise moves a single run's p50 by tens of microseconds); prints
# each run, then per kind the median of the runs' p50 and p99 and its ratio
# to the unsecured median.
#
#   bench/dds_security.sh [BUILD_DIR] [COUNT] [REPS]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
count=${2:-2000}
reps=${3:-5}
rt=$build/bin/dds_roundtrip
[[ -x $rt ]] || { echo "no dds_roundtrip in $build (needs cyclonedds-dev)" >&2; exit 2; }
docs=$(mktemp -d)
trap 'rm -rf "$docs"' EXIT

run() {  # label [security dir]
  local label=$1 dir=${2:-}
  if [[ -n $dir ]]; then export RTCOSIM_DDS_SECURITY_DIR=$dir; else unset RTCOSIM_DDS_SECURITY_DIR; fi
  "$rt" rtcosim pong "$count" 7 >/dev/null &
  "$rt" rtcosim ping "$count" 7 | sed "s/^roundtrip rtcosim/roundtrip $label/"
  wait
}

for protect in sign encrypt; do
  scripts/dds-security-docs.sh -p "$protect" "$docs/$protect" a b >/dev/null
done
for ((r = 0; r < reps; r++)); do
  run unsecured
  run sign "$docs/sign"
  run encrypt "$docs/encrypt"
done | awk '
  { print }
  /^roundtrip / {
    for (i = 3; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "p50_us") p50[$2] = p50[$2] " " kv[2]; if (kv[1] == "p99_us") p99[$2] = p99[$2] " " kv[2] }
  }
  function median(list,   a, n, i, j, t) {
    n = split(list, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  END {
    u50 = median(p50["unsecured"]); u99 = median(p99["unsecured"])
    printf "median of %d runs: unsecured p50 %.1f us, p99 %.1f us\n", split(p50["unsecured"], x, " "), u50, u99
    for (k = 1; k <= 2; k++) {
      m = k == 1 ? "sign" : "encrypt"
      m50 = median(p50[m]); m99 = median(p99[m])
      printf "median of runs: %s p50 %.1f us (%.2fx, +%.1f us), p99 %.1f us (%.2fx)\n", m, m50, m50 / u50, m50 - u50, m99, m99 / u99
    }
  }'
