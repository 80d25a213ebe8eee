#!/usr/bin/env bash
# Mutation check: applies each mutation of tests/mutations.txt, one at a
# time, to a scratch copy of this working tree, rebuilds only the tests the
# line names, runs them, and reports KILLED (a named test failed) or
# SURVIVED (all passed: a bug of that kind would go unnoticed).
#
#   scripts/mutate.sh [-l LIST] [-o RESULTS.md] [REGEX]
#
# REGEX selects lines of the list (grep -E on the whole line). The working
# tree is never modified: the copy lives in $RTCOSIM_MUTATE_DIR (default
# /tmp/rtcosim-mutate-$UID) and is refreshed from the tree at each start, so
# its build directory is reused; with ccache the unmutated files come from
# the cache (CCACHE_BASEDIR makes the copy's paths match the tree's). Slow
# on a small machine (minutes per mutation): not part of CI; docs/testing.md
# holds the last result.
#
# Other outcomes: UNBUILT (the mutant does not compile: rewrite the
# mutation), NOT-FOUND / AMBIGUOUS (the pattern occurs 0 or >1 times: the
# code changed under the list), BASELINE-FAILS (the named tests fail without
# any mutation). The exit status is 0 only when every line is KILLED.
set -euo pipefail
cd "$(dirname "$0")/.."
tree=$PWD
list=tests/mutations.txt
results=""
while getopts "l:o:h" opt; do
  case "$opt" in
    l) list=$OPTARG ;;
    o) results=$OPTARG ;;
    *) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
select=${1:-.}
[[ "$list" = /* ]] || list=$tree/$list
[[ -z "$results" || "$results" = /* ]] || results=$tree/$results

work=${RTCOSIM_MUTATE_DIR:-/tmp/rtcosim-mutate-$(id -u)}
src=$work/src
jobs=${MUTATE_JOBS:-2}
mkdir -p "$src" "$work/logs"
export CCACHE_BASEDIR=$src CCACHE_NOHASHDIR=true

# The copy: tracked and untracked-but-not-ignored files of the tree as they
# are now (so uncommitted tests count), nothing else. A file whose content
# changed since the last copy gets the time of now: with the tree's own
# time, older than an object the copy's build made from the previous
# content, ninja would keep that stale object (and a static library would
# link it: a split file's old object still defined the moved functions,
# and mutations of them survived). Unchanged files keep their time, so
# nothing rebuilds for them.
incoming=$work/incoming
rm -rf "$incoming"
mkdir -p "$incoming"
(cd "$tree" && git ls-files -z --cached --others --exclude-standard |
  tar --null --ignore-failed-read -T - -cf - 2>/dev/null) | tar -xpf - -C "$incoming"
(cd "$src" && find . -path ./build -prune -o \( -type f -o -type l \) -print0) |
  while IFS= read -r -d '' f; do [[ -e "$incoming/$f" || -L "$incoming/$f" ]] || rm -f "$src/$f"; done
(cd "$incoming" && find . \( -type f -o -type l \) -print0) |
  while IFS= read -r -d '' f; do
    if ! cmp -s "$incoming/$f" "$src/$f"; then
      mkdir -p "$(dirname "$src/$f")"
      rm -f "$src/$f"
      cp -P "$incoming/$f" "$src/$f"
      [[ -L "$src/$f" ]] || touch "$src/$f"
    fi
  done
rm -rf "$incoming"
# What was copied, for the summary: the tree may change while the list runs.
copied="$(git -C "$tree" rev-parse --short HEAD)$(git -C "$tree" diff --quiet HEAD || echo '+changes')"

# One mutation applied at a time; `restore` puts the file back whatever
# happens (error, Ctrl-C, kill).
backup=""
target_file=""
# The restored file gets a new modification time: with its old one, ninja
# would keep the mutant's object file (it only rebuilds what is older than
# its sources).
restore() {
  if [[ -n "$backup" && -f "$backup" ]]; then
    cp "$backup" "$target_file"
    touch "$target_file"
    rm -f "$backup"
    backup=""
  fi
}
trap restore EXIT
trap 'restore; exit 130' INT TERM

# Literal search and replace; prints how often the pattern occurs, and
# replaces only when it occurs exactly once.
apply() {
  python3 - "$1" "$2" "$3" <<'EOF'
import sys
path, pattern, replacement = sys.argv[1], sys.argv[2].replace("\\n", "\n"), sys.argv[3].replace("\\n", "\n")
text = open(path, encoding="utf-8").read()
n = text.count(pattern)
if n == 1:
    open(path, "w", encoding="utf-8").write(text.replace(pattern, replacement))
print(n)
EOF
}

# "`before` → `after`" for the table, markdown-safe; a long common start or
# end of the two is elided, so that the change itself shows.
change() {
  python3 - "$1" "$2" <<'EOF'
import os, sys
a, b = sys.argv[1], sys.argv[2]
p = len(os.path.commonprefix([a, b]))
q = len(os.path.commonprefix([a[p:][::-1], b[p:][::-1]]))
def cut(s):
    head = p - 20 if p > 30 else 0
    tail = len(s) - q + 20 if q > 30 else len(s)
    text = ("…" if head else "") + s[head:tail] + ("…" if tail < len(s) else "")
    return "`" + text.replace("|", "\\|").replace("\\n", "⏎") + "`"
print(cut(a) + " → " + cut(b))
EOF
}

# Lines of the list: "file @@ pattern @@ replacement @@ tests".
mapfile -t lines < <(grep -v '^[[:space:]]*\(#\|$\)' "$list" | grep -E -- "$select" || true)
if [[ ${#lines[@]} -eq 0 ]]; then
  echo "no mutation in $list matches '$select'" >&2
  exit 2
fi
field() { awk -F ' @@ ' -v n="$2" '{ print $n }' <<<"$1"; }

# The copy carries the tree's modification times; every file the list
# mutates (selected or not) is touched so that no mutant object of an
# earlier or interrupted run survives in the build (ccache makes their
# rebuild cheap).
grep -v '^[[:space:]]*\(#\|$\)' "$list" | awk -F ' @@ ' '{ print $1 }' | sort -u |
  while read -r f; do if [[ -f "$src/$f" ]]; then touch "$src/$f"; fi; done

if [[ ! -f "$src/build/build.ninja" ]]; then
  # ccache (Debian's `ccache`) when installed; without it every mutant
  # rebuilds its file and relinks, which is slower but the same.
  launcher=()
  if command -v ccache >/dev/null; then
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  fi
  # One unit per source (no unity batches): a mutant then recompiles its
  # own file, not the seven others of its batch.
  cmake -S "$src" -B "$src/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRTCOSIM_BUILD_BENCH=OFF -DRTCOSIM_UNITY=OFF \
    "${launcher[@]}" >"$work/logs/configure.log"
fi

# Runs "exe[:filter] ..." from the copy's build; prints the first failing
# one, or nothing when all pass.
run_tests() {
  local spec exe filter log=$2
  : >"$log"
  for spec in $1; do
    exe=${spec%%:*}
    filter='*'
    [[ "$spec" == *:* ]] && filter=${spec#*:}
    if ! (cd "$src/build" && timeout 900 "bin/$exe" --gtest_filter="$filter" --gtest_brief=1) >>"$log" 2>&1; then
      echo "$spec"
      return
    fi
  done
}

targets_of() {
  local spec
  for spec in $1; do echo "${spec%%:*}"; done | sort -u | tr '\n' ' '
}

# Baseline: every named test builds and passes on the unmutated copy.
all_tests=$(for l in "${lines[@]}"; do field "$l" 4; done | tr ' ' '\n' | sed '/^$/d' | sort -u | tr '\n' ' ')
echo "baseline: building and running $all_tests"
# shellcheck disable=SC2046
nice cmake --build "$src/build" --parallel "$jobs" --target $(targets_of "$all_tests") >"$work/logs/baseline-build.log" 2>&1 ||
  { tail -n 30 "$work/logs/baseline-build.log"; echo "the unmutated copy does not build" >&2; exit 2; }
baseline_fail=" "
for spec in $all_tests; do
  if [[ -n "$(run_tests "$spec" "$work/logs/baseline-$spec.log")" ]]; then baseline_fail+="$spec "; fi
done

table=$(mktemp)
killed=0 survived=0 other=0 n=0
printf '| # | file | mutation | outcome | caught by |\n|---|---|---|---|---|\n' >"$table"
for line in "${lines[@]}"; do
  n=$((n + 1))
  file=$(field "$line" 1)
  pattern=$(field "$line" 2)
  replacement=$(field "$line" 3)
  tests=$(field "$line" 4)
  outcome="" by=""
  for spec in $tests; do
    [[ "$baseline_fail" == *" $spec "* ]] && { outcome=BASELINE-FAILS; by=$spec; }
  done
  if [[ -z "$outcome" ]]; then
    target_file=$src/$file
    backup=$(mktemp "$work/backup.XXXXXX")
    cp -p "$target_file" "$backup"
    count=$(apply "$target_file" "$pattern" "$replacement")
    if [[ "$count" == 0 ]]; then
      outcome=NOT-FOUND
    elif [[ "$count" != 1 ]]; then
      outcome=AMBIGUOUS by="$count occurrences"
    else
      log=$work/logs/mutant-$n
      # shellcheck disable=SC2046
      if ! nice cmake --build "$src/build" --parallel "$jobs" --target $(targets_of "$tests") >"$log.build" 2>&1; then
        outcome=UNBUILT
      else
        by=$(run_tests "$tests" "$log.test")
        if [[ -n "$by" ]]; then outcome=KILLED; else outcome=SURVIVED; fi
      fi
    fi
    restore
  fi
  case "$outcome" in
    KILLED) killed=$((killed + 1)) ;;
    SURVIVED) survived=$((survived + 1)) ;;
    *) other=$((other + 1)) ;;
  esac
  short() { sed -e 's/|/\\|/g' -e 's/\\n/⏎/g' <<<"$1" | cut -c1-90; }
  printf '| %d | %s | %s | %s | %s |\n' "$n" "$file" "$(change "$pattern" "$replacement")" \
    "$outcome" "$by" >>"$table"
  printf '%-14s %s: %s\n' "$outcome" "$file" "$(short "$pattern")"
done
summary="$n mutations: $killed killed, $survived survived, $other other ($copied, $(date -u +%Y-%m-%d))"
echo "$summary" >>"$table"
echo
cat "$table"
[[ -n "$results" ]] && cp "$table" "$results"
rm -f "$table"
[[ $survived -eq 0 && $other -eq 0 ]]
