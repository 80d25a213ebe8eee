#!/usr/bin/env bash
# Writes every example's virtual-time run (recorded signals, frame table) and
# the evaluation table into OUTDIR, with the rtcosim binary BIN, so that two
# builds can be compared byte for byte (docs/frame-program.md):
#   scripts/example-outputs.sh /tmp/before build-old/bin/rtcosim
#   scripts/example-outputs.sh /tmp/after  build/bin/rtcosim
#   diff -r /tmp/before /tmp/after
# A graph that spans hosts (`hosts:`) is left out: it needs its other hosts.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/example-outputs.sh OUTDIR [BIN]}
bin=${2:-build/bin/rtcosim}
mkdir -p "$out"
for f in examples/*.yaml; do
  name=$(basename "$f" .yaml)
  if grep -q '^hosts:' "$f"; then continue; fi
  "$bin" run --virtual "$f" --record "$out/$name.csv" --frames "$out/$name.frames.csv" >"$out/$name.log" 2>&1 ||
    echo "example-outputs: $f exited $? (see $out/$name.log)" >&2
  # The summary's timings are the host's, not the run's: only what is simulated is compared.
  rm -f "$out/$name.log"
done
"$bin" eval --table --format tsv >"$out/eval.tsv"
