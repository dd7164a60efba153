#!/usr/bin/env bash
# Runs every Fuzz target in the workspace for a short, fixed time each: hack/fuzz.sh [DURATION]
#
# A failing input is written under the package's testdata/fuzz/ and then re-run on its own. If it
# fails again, that is a real bug: the input stays for the developer and the script fails. If it
# passes, the failure came from the fuzzing engine losing its worker process (Go reports "fuzzing
# process hung or terminated unexpectedly", which a loaded 2-core machine can cause), not from
# the code under test: the script says so, removes the input it wrote, and goes on. Inputs that
# were already committed are never removed. A failure that writes no input at all (the engine
# reports "context deadline exceeded" when -fuzztime ends at a bad moment) is run once more and
# fails the script only if it happens again.
set -euo pipefail
cd "$(dirname "$0")/.."
t=${1:-10s}
failed=0
for m in internal cluster-service frontend backend admin tooling dev-infrastructure/mgmtcluster; do
  while read -r dir; do
    [ -n "$dir" ] || continue
    pkg=".${dir#"$m"}" # ./pkg/server, or . for the module's root
    for f in $(grep -h '^func Fuzz' "$dir"/*_test.go | sed 's/func \(Fuzz[A-Za-z0-9_]*\).*/\1/'); do
      echo ">> $dir $f ($t)"
      corpus="$dir/testdata/fuzz/$f"
      before=$(ls "$corpus" 2>/dev/null | sort || true)
      if (cd "$m" && go test "$pkg" -run '^$' -fuzz "^$f\$" -fuzztime "$t"); then
        continue
      fi
      new=$(comm -13 <(echo "$before") <(ls "$corpus" 2>/dev/null | sort || true) | grep -v '^$' || true)
      if [ -z "$new" ]; then
        # No input means no failing case was found: Go's engine itself gave up (it reports
        # "context deadline exceeded" when -fuzztime ends at a bad moment). Run it once more;
        # only a second such failure fails the run.
        echo "!! $f failed without writing an input; running it once more"
        if ! (cd "$m" && go test "$pkg" -run '^$' -fuzz "^$f\$" -fuzztime "$t"); then
          echo "!! $f failed twice"; failed=1
        fi
        continue
      fi
      for input in $new; do
        if (cd "$m" && go test "$pkg" -run "^$f/$input\$" -count=1); then
          echo "!! $f: input $input does not reproduce on its own: the fuzzing engine lost its worker; removing it"
          rm -f "$corpus/$input"
        else
          echo "!! $f: input $input reproduces: see $corpus/$input"; failed=1
        fi
      done
    done
  done < <(grep -rl --include='*_test.go' '^func Fuzz' "$m" 2>/dev/null | xargs -r -n1 dirname | sort -u)
done
exit $failed
