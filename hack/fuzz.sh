#!/usr/bin/env bash
# Runs every Fuzz target in the workspace for a short, fixed time each: hack/fuzz.sh [DURATION]
set -euo pipefail
cd "$(dirname "$0")/.."
t=${1:-10s}
for m in internal cluster-service frontend backend tooling; do
  grep -rl --include='*_test.go' '^func Fuzz' "$m" 2>/dev/null | xargs -r -n1 dirname | sort -u | while read -r dir; do
    for f in $(grep -h '^func Fuzz' "$dir"/*_test.go | sed 's/func \(Fuzz[A-Za-z0-9_]*\).*/\1/'); do
      echo ">> $dir $f ($t)"
      (cd "$m" && go test "./${dir#"$m"/}" -run '^$' -fuzz "^$f\$" -fuzztime "$t")
    done
  done
done
