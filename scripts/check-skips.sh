#!/usr/bin/env bash
# Lists the tests that the last ctest run in BUILD_DIR skipped, with the
# message each gave, and fails when a skip is not allowed by
# tests/allowed_skips.txt (a test that silently stops running is a test
# lost; a legitimate skip is listed there with its reason).
#
#   scripts/check-skips.sh BUILD_DIR
#
# It reads BUILD_DIR/Testing/Temporary/LastTest.log, which ctest writes on
# every run, so call it right after the ctest run it should judge.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: scripts/check-skips.sh BUILD_DIR}
log=$build/Testing/Temporary/LastTest.log
allowed=tests/allowed_skips.txt
[[ -f "$log" ]] || { echo "check-skips: no ctest log at $log (run ctest first)" >&2; exit 2; }

# "name<TAB>message" for each skipped test: GoogleTest prints
# "file:line: Skipped" and then the message given to GTEST_SKIP().
skips=$(awk '
  / Testing: / { name = $3; msg = ""; want = 0; next }
  want == 1 { msg = $0; want = 0; next }
  /: Skipped$/ { want = 1; next }
  /^Skip regular expression found in output/ { printf "%s\t%s\n", name, msg }
' "$log")

if [[ -z "$skips" ]]; then
  echo "check-skips ($build): no test skipped"
  exit 0
fi
echo "check-skips ($build): $(wc -l <<<"$skips") test(s) skipped:"
status=0
while IFS=$'\t' read -r name message; do
  reason=""
  while IFS= read -r rule; do
    [[ "$rule" =~ ^[[:space:]]*(#|$) ]] && continue
    pattern=$(awk -F ' [|] ' '{ print $1 }' <<<"$rule")
    text=$(awk -F ' [|] ' '{ print $2 }' <<<"$rule")
    when=$(awk -F ' [|] ' '{ print $3 }' <<<"$rule")
    [[ "$when" == non-root && $(id -u) -eq 0 ]] && continue
    [[ "$when" == no-lttng ]] && grep -q '^LTTNG_UST_FOUND:INTERNAL=1' "$build/CMakeCache.txt" 2>/dev/null &&
      ! grep -q '^RTCOSIM_LTTNG:BOOL=OFF' "$build/CMakeCache.txt" 2>/dev/null && continue
    [[ "$when" == tsan ]] && ! grep -q '^RTCOSIM_SANITIZE:STRING=thread$' "$build/CMakeCache.txt" 2>/dev/null && continue
    if [[ "$name" =~ ^($pattern)$ && "$message" == *"$text"* ]]; then
      reason=$(awk -F ' [|] ' '{ print $4 }' <<<"$rule")
      break
    fi
  done <"$allowed"
  if [[ -n "$reason" ]]; then
    echo "  $name: $message (allowed: $reason)"
  else
    echo "  $name: $message (NOT ALLOWED: fix the test or list it in $allowed with its reason)"
    status=1
  fi
done <<<"$skips"
exit $status
