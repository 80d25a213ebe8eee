#!/usr/bin/env bash
# Round trip of one data block of 16 signals between two processes: through
# rtcosim's remote link (ring -> bridge thread -> Cyclone DDS -> bridge
# thread -> ring, and back), Cyclone's own ddsperf ping-pong (KS topic,
# payload of the same size, best effort), and a raw UDP ping-pong of the
# same payload; on loopback (one network namespace) and, as root, across a
# veth pair between two namespaces. Prints p50/p99 per kind and the ratios.
#
#   bench/dds_roundtrip.sh [BUILD_DIR] [COUNT]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
count=${2:-2000}
rt=$build/bench/dds_roundtrip
[[ -x $rt ]] || rt=$build/bin/dds_roundtrip
[[ -x $rt ]] || { echo "no dds_roundtrip in $build (needs cyclonedds-dev)" >&2; exit 2; }
size=313   # bytes: the rtcosim sample's header and 16 x (value, derivative, flag)
secs=$(( count / 1000 + 3 ))

# run_pair PREFIX_A PREFIX_B PEER_OF_A: prints the three result lines
run_pair() {
  local a=$1 b=$2 peer=$3
  $b "$rt" rtcosim pong "$count" 0 >/dev/null &
  $a "$rt" rtcosim ping "$count" 0
  wait
  $b "$rt" udp pong "$count" "$4" >/dev/null &
  $a "$rt" udp ping "$count" "$peer"
  wait
  $a "$rt" handoff "$count"
  # ddsperf: pings at 1 kHz, as above; its summary line holds the
  # percentiles of the round trip in microseconds.
  # It prints a line per second; the mean of their p50 and p99.
  $b ddsperf -u -D $((secs + 2)) pong >/dev/null 2>&1 &
  sleep 1
  $a ddsperf -u -D "$secs" ping 1000Hz size "$size" 2>&1 |
    awk '/ 50% / { for (i = 1; i <= NF; i++) { if ($i == "50%") p50 += $(i+1); if ($i == "99%") p99 += $(i+1) } n++ }
         END { if (n) printf "roundtrip ddsperf n=%d p50_us=%.1f p99_us=%.1f\n", n, p50 / n, p99 / n }'
  wait
}

summarise() {
  awk '
    /^roundtrip rtcosim/ { for (i = 1; i <= NF; i++) { split($i, kv, "="); r[kv[1]] = kv[2] } rp50 = r["p50_us"]; rp99 = r["p99_us"] }
    /^roundtrip udp/     { for (i = 1; i <= NF; i++) { split($i, kv, "="); u[kv[1]] = kv[2] } up50 = u["p50_us"]; up99 = u["p99_us"] }
    /^roundtrip ddsperf/ { for (i = 1; i <= NF; i++) { split($i, kv, "="); d[kv[1]] = kv[2] } d50 = d["p50_us"]; d99 = d["p99_us"] }
    /^roundtrip handoff/ { for (i = 1; i <= NF; i++) { split($i, kv, "="); h[kv[1]] = kv[2] } h50 = h["p50_us"] }
    { print }
    END {
      if (rp50 && d50) printf "rtcosim / ddsperf: p50 %.2f, p99 %.2f\n", rp50 / d50, rp99 / d99
      if (rp50 && up50) printf "rtcosim / udp: p50 %.2f, p99 %.2f\n", rp50 / up50, rp99 / up99
      # The design adds four thread hand-offs to a DDS round trip (a sending
      # thread woken by the producer and a consumer woken by the receive
      # thread, on each side); a handoff round trip is two of them.
      if (rp50 && d50 && h50) printf "rtcosim / (ddsperf + 4 hand-offs): p50 %.2f (a hand-off: %.1f us)\n", rp50 / (d50 + 2 * h50), h50 / 2
    }'
}

echo "== loopback (one namespace), $count round trips at 1 kHz"
run_pair "" "" 127.0.0.1 127.0.0.1 | summarise

if [[ $(id -u) -eq 0 ]] && ip netns add rtcbench_a 2>/dev/null; then
  trap 'ip netns del rtcbench_a 2>/dev/null; ip netns del rtcbench_b 2>/dev/null' EXIT
  ip netns add rtcbench_b
  ip link add rtcbench_va type veth peer name rtcbench_vb
  ip link set rtcbench_va netns rtcbench_a
  ip link set rtcbench_vb netns rtcbench_b
  ip -n rtcbench_a addr add 10.215.0.1/24 dev rtcbench_va
  ip -n rtcbench_b addr add 10.215.0.2/24 dev rtcbench_vb
  for n in a b; do ip -n rtcbench_$n link set rtcbench_v$n up; ip -n rtcbench_$n link set lo up; done
  echo "== veth pair between two namespaces"
  run_pair "ip netns exec rtcbench_a" "ip netns exec rtcbench_b" 10.215.0.2 10.215.0.1 | summarise
else
  echo "(veth run skipped: needs root for ip netns)"
fi
