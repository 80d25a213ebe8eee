#!/usr/bin/env bash
# A compiler launcher that appends each build step's CPU time (user + system
# seconds) and its output to $RTCOSIM_STEP_LOG: a build's compiler time
# that other work on the machine does not inflate, as the ninja log's wall
# times (scripts/build-cost.py) are. Needs /usr/bin/time (Debian's `time`).
#   cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
#     -DCMAKE_CXX_COMPILER_LAUNCHER=$PWD/scripts/step-cpu-time.sh \
#     -DCMAKE_C_COMPILER_LAUNCHER=$PWD/scripts/step-cpu-time.sh
#   RTCOSIM_STEP_LOG=/tmp/steps.txt cmake --build /tmp/b --target rtcosim
#   awk '{s += $1} END {print s " s in " NR " steps"}' /tmp/steps.txt
set -u
out=""
prev=""
for a in "$@"; do
  [[ "$prev" == "-o" ]] && out="$a"
  prev="$a"
done
times=$(mktemp)
/usr/bin/time -f "%U %S" -o "$times" "$@"
status=$?
if [[ -n "${RTCOSIM_STEP_LOG:-}" ]]; then
  read -r user sys < <(tail -n 1 "$times")
  echo "$(awk -v u="$user" -v s="$sys" 'BEGIN {printf "%.2f", u + s}') $out" >>"$RTCOSIM_STEP_LOG"
fi
rm -f "$times"
exit "$status"
