#!/usr/bin/env bash
# Runs go test with the given arguments, streaming its output, and when it fails prints a short
# summary of the failing tests and their messages at the very end, after any log dumps the tests
# printed, so the reason is the last thing a CI log shows.
set -uo pipefail
out=$(mktemp)
trap 'rm -f "$out"' EXIT
go test "$@" 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
if [ "$rc" -ne 0 ]; then
  echo
  echo "===== go test failed (exit $rc): failing tests and their messages ====="
  # A failing test prints "--- FAIL: Name (time)" followed by its indented t.Error/t.Fatal lines.
  awk '/^[[:space:]]*--- FAIL/ {show=1; n=0; print; next}
       show && /^[[:space:]]+[^[:space:]]/ && n < 40 {print; n++; next}
       {show=0}
       /^(FAIL|panic:|fatal error:)/ {print}' "$out" | cut -c1-600
fi
exit "$rc"
