#!/usr/bin/env bash
# Runs every Fuzz target of every module in go.work until it has made FUZZ_EXECS executions
# (default 1,000,000), then prints each target's execution count: make fuzz-long.
#
#   FUZZ_EXECS=1000000   executions per target (go test -fuzztime <N>x)
#   FUZZ_TIME=10m        a duration per target instead of a count (for the slow handler fuzzers:
#                        the summary says when a target stopped short of FUZZ_EXECS)
#   FUZZ_MATCH=regex     only targets whose "dir/FuzzName" matches (e.g. 'mgmtcluster|Wire$')
#   FUZZ_PARALLEL=n      fuzzing workers per target (go test -parallel; default GOMAXPROCS)
#   FUZZ_MINIMIZE=5s     time to shrink each new input (go test -fuzzminimizetime). Go's default,
#                        60s, is spent on every input that finds new coverage and its executions
#                        are not counted: the handler fuzzers then spend almost all their time
#                        there (10 counted executions in 60 s, against about 1,400 with 2 s).
#                        0 turns shrinking off (a failing input is still kept, unshrunk). The
#                        ARM handler fuzzers of frontend/pkg/frontend need it: they find new
#                        coverage several times a second, so even 5s leaves them about 30
#                        counted executions a second, against about 200-280 with 0.
#
# Fuzzing builds use -tags fuzzlean: test files that link much code no fuzz target runs (Cluster
# Service's server and the Azure SDK, in frontend/pkg/frontend) carry //go:build !fuzzlean. Every
# execution clears, copies and compares the coverage counters of the whole binary, one per
# instrumented block of everything linked: without those files frontend/pkg/frontend's fuzz
# binary has 146,273 counters instead of 275,842, and FuzzPutClusterBody makes about 1.7 times
# the executions a second (docs/reliability.md, Fuzzing). make test builds without the tag.
#
# A failing input is written by go test under <package>/testdata/fuzz/<FuzzName>/ and is never
# removed here: the summary names its path. Re-run it with the command printed beside it; once
# the bug is fixed, commit the input, and make test runs it from then on as a regression input.
# Exit status 1 when any target failed.
set -uo pipefail
cd "$(dirname "$0")/.."
execs=${FUZZ_EXECS:-1000000}
fuzztime=${FUZZ_TIME:-${execs}x}
match=${FUZZ_MATCH:-.}
minimize=${FUZZ_MINIMIZE:-5s}
par=()
[ -n "${FUZZ_PARALLEL:-}" ] && par=(-parallel "$FUZZ_PARALLEL")
logdir=$(mktemp -d)
summary=()
failed=0
modules=$(sed -n '/^use (/,/^)/{s/^[[:space:]]*\.\///p}' go.work)
for m in $modules; do
  while read -r dir; do
    [ -n "$dir" ] || continue
    pkg=".${dir#"$m"}" # ./pkg/server, or . for the module's root
    for f in $(grep -h '^func Fuzz' "$dir"/*_test.go | sed 's/func \(Fuzz[A-Za-z0-9_]*\).*/\1/' | sort -u); do
      grep -Eq "$match" <<<"$dir/$f" || continue
      corpus="$dir/testdata/fuzz/$f"
      before=$(ls "$corpus" 2>/dev/null | sort || true)
      log="$logdir/$(echo "$dir/$f" | tr / _).log"
      echo ">> $dir $f (-fuzztime $fuzztime)"
      start=$(date +%s)
      (cd "$m" && go test "$pkg" -tags fuzzlean -run '^$' -fuzz "^$f\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimize" "${par[@]}") >"$log" 2>&1
      rc=$?
      secs=$(( $(date +%s) - start ))
      # go test prints "fuzz: elapsed: 3m0s, execs: 1234567 (6858/sec), ..." as it goes; the last
      # such line is the count the run reached.
      n=$(grep -o 'execs: [0-9]*' "$log" | tail -1 | awk '{print $2}')
      n=${n:-0}
      short=""
      [ "$n" -lt "$execs" ] && short=" (short of $execs)"
      if [ $rc -eq 0 ]; then
        summary+=("$(printf '%-60s %12s execs %6ss ok%s' "$dir/$f" "$n" "$secs" "$short")")
        continue
      fi
      failed=1
      tail -n 30 "$log"
      new=$(comm -13 <(echo "$before") <(ls "$corpus" 2>/dev/null | sort || true) | grep -v '^$' || true)
      if [ -z "$new" ]; then
        summary+=("$(printf '%-60s %12s execs %6ss FAILED without an input (log: %s)' "$dir/$f" "$n" "$secs" "$log")")
      fi
      for input in $new; do
        summary+=("$(printf '%-60s %12s execs %6ss FAILED: crasher kept at %s (re-run: cd %s && go test %s -run %s/%s)' \
          "$dir/$f" "$n" "$secs" "$corpus/$input" "$m" "$pkg" "$f" "$input")")
      done
    done
  done < <(grep -rl --include='*_test.go' '^func Fuzz' "$m" 2>/dev/null | xargs -r -n1 dirname | sort -u)
done
echo
echo "== fuzz-long: executions per target (logs in $logdir)"
printf '%s\n' "${summary[@]}"
exit $failed
