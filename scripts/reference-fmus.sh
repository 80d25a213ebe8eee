#!/usr/bin/env bash
# Builds the Modelica Association's Reference FMUs (FMI 2.0 and 3.0) from a
# checkout of github.com/modelica/Reference-FMUs and lays them out as the FMI
# Cross-Check repository does, so that scripts/fmi-crosscheck.py runs them
# like any vendor's FMUs:
#
#   OUT/fmus/<2.0|3.0>/<cs|me>/linux64/Reference-FMUs/<version>/<Model>/
#       <Model>.fmu       the built FMU
#       <Model>_ref.csv   SRC/<Model>/<Model>_out.csv (the project's own result)
#       (no <Model>_in.csv: the project's _out.csv files are its default
#       experiment run without inputs, as its fmi-ls-ref.xml says; paired
#       with Feedthrough_in.csv, the inputs would make a correct result fail)
#       <Model>_ref.opt   StartTime/StopTime/StepSize from the <DefaultExperiment>
#                         of SRC/<Model>/FMI<2|3>.xml; RelTol its tolerance, else
#                         1e-4 (what the cross-check's own files mostly give)
#
# <version> is `git -C SRC describe --tags --always`. An FMU goes under cs/
# and/or me/ by the interfaces its modelDescription.xml declares; one that
# declares neither (Clocks: Scheduled Execution only) or that the build did
# not produce is skipped, and the script says so. A DefaultExperiment
# without stepSize gives no StepSize line: the cross-check tools then take
# the reference's own sampling.
#
# Usage: scripts/reference-fmus.sh SRC OUT
#   SRC  a checkout of https://github.com/modelica/Reference-FMUs
#   OUT  where fmus/ is written (created); the builds go to $REFFMU_BUILD
#        (default OUT/build: a second run only rebuilds what changed)
# Environment: REFFMU_BUILD (build directory), REFFMU_JOBS (parallel jobs, 2).
set -euo pipefail

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
}

get_it() {
  echo "Get the sources first, e.g.:" >&2
  echo "  git clone https://github.com/modelica/Reference-FMUs.git /tmp/reffmu-src" >&2
  echo "then: $0 /tmp/reffmu-src OUT" >&2
}

case "${1:-}" in
  -h|--help) usage; exit 0 ;;
esac

if [ $# -lt 1 ] || [ -z "${1:-}" ]; then
  echo "reference-fmus.sh: no SRC given — a checkout of the Reference FMUs is needed" >&2
  get_it
  exit 2
fi
SRC=$1
if [ ! -f "$SRC/CMakeLists.txt" ]; then
  echo "reference-fmus.sh: '$SRC' is not a checkout of the Reference FMUs (no CMakeLists.txt there)" >&2
  get_it
  exit 2
fi
if [ $# -lt 2 ] || [ -z "${2:-}" ]; then
  echo "reference-fmus.sh: no OUT given — usage: $0 SRC OUT" >&2
  exit 2
fi
OUT=$2
BUILD=${REFFMU_BUILD:-$OUT/build}
JOBS=${REFFMU_JOBS:-2}

mkdir -p "$OUT/fmus" "$BUILD" || exit 1

if ! VERSION=$(git -C "$SRC" describe --tags --always 2>/dev/null) || [ -z "$VERSION" ]; then
  # Without git history the layout still needs a version level; say so
  # rather than invent a number.
  VERSION=unknown
  echo "warning: git -C $SRC describe failed; version directory is '$VERSION'" >&2
fi
# A tag is one path component; anything else would nest directories.
VERSION=${VERSION//\//_}

# Prints "interfaces", then "StartTime", "StopTime", "StepSize", "RelTol"
# (empty where not declared), one a line. Python's XML parser because the
# attributes may come in any order and across lines.
describe() {  # describe FMU XML
  python3 - "$1" "$2" <<'PY'
import sys, zipfile, xml.etree.ElementTree as ET
fmu, src_xml = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(fmu) as z:
    md = ET.fromstring(z.read("modelDescription.xml"))
ifaces = []
if md.find("CoSimulation") is not None:
    ifaces.append("cs")
if md.find("ModelExchange") is not None:
    ifaces.append("me")
print(" ".join(ifaces))
de = ET.parse(src_xml).getroot().find("DefaultExperiment")
get = (lambda k: "") if de is None else (lambda k: de.get(k, "").strip())
print(get("startTime") or "0")
print(get("stopTime"))
print(get("stepSize"))
print(get("tolerance") or "1e-4")
PY
}

status=0
laid_out=0
skipped=0
for fmi in 2 3; do
  b="$BUILD/fmi$fmi"
  log="$BUILD/fmi$fmi.log"
  echo "== FMI $fmi.0: building in $b (log: $log)"
  if ! cmake -S "$SRC" -B "$b" -DFMI_VERSION="$fmi" -DCMAKE_BUILD_TYPE=Release \
       -DCMAKE_C_FLAGS=-Wno-stringop-truncation >"$log" 2>&1; then
    echo "error: cmake could not configure FMI $fmi.0 — last lines of $log:" >&2
    tail -n 15 "$log" >&2
    status=1
    continue
  fi
  # -k: one model that does not compile must not cost the others; the
  # missing ones are reported below.
  if ! cmake --build "$b" -j"$JOBS" -- -k >>"$log" 2>&1; then
    echo "warning: the FMI $fmi.0 build had errors (see $log); laying out what it produced" >&2
  fi
  for dir in "$SRC"/*/; do
    model=$(basename "$dir")
    xml="$dir/FMI$fmi.xml"
    [ -f "$xml" ] || continue
    fmu="$b/fmus/$model.fmu"
    if [ ! -f "$fmu" ]; then
      echo "skipped $model (FMI $fmi.0): the build produced no $model.fmu"
      skipped=$((skipped + 1))
      continue
    fi
    if ! info=$(describe "$fmu" "$xml" 2>&1); then
      why=$(printf '%s' "$info" | tail -n 1)
      echo "skipped $model (FMI $fmi.0): cannot read its modelDescription.xml or $xml: $why"
      skipped=$((skipped + 1))
      continue
    fi
    {
      read -r ifaces
      read -r start
      read -r stop
      read -r step
      read -r tol
    } <<<"$info"
    if [ -z "$ifaces" ]; then
      echo "skipped $model (FMI $fmi.0): declares neither <CoSimulation> nor <ModelExchange>"
      skipped=$((skipped + 1))
      continue
    fi
    ref="$dir/${model}_out.csv"
    [ -f "$ref" ] || echo "note: $model has no ${model}_out.csv: laid out without a reference"
    for iface in $ifaces; do
      dest="$OUT/fmus/$fmi.0/$iface/linux64/Reference-FMUs/$VERSION/$model"
      mkdir -p "$dest" || { status=1; continue; }
      cp "$fmu" "$dest/$model.fmu" || status=1
      [ -f "$ref" ] && { cp "$ref" "$dest/${model}_ref.csv" || status=1; }
      {
        echo "StartTime, $start"
        [ -n "$stop" ] && echo "StopTime, $stop"
        [ -n "$step" ] && echo "StepSize, $step"
        echo "RelTol, $tol"
      } >"$dest/${model}_ref.opt"
      echo "laid out $dest"
      laid_out=$((laid_out + 1))
    done
  done
done
echo "laid out $laid_out FMU directories under $OUT/fmus; skipped $skipped model(s)"
exit $status
