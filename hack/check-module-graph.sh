#!/usr/bin/env bash
# Fails when the requires among this repository's own Go modules form a cycle. Every go.mod under
# the repository is read (workspace members and the GOWORK=off tool modules alike); an edge
# A -> B means A's go.mod requires B. tsort reports a loop and exits non-zero.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=github.com/openhcp/openhcp/
edges=$(git ls-files --cached --others --exclude-standard -- '*go.mod' | while read -r f; do
	mod=$(awk '$1 == "module" {print $2; exit}' "$f")
	# Own modules listed in require lines (block or single), not in replace lines.
	awk -v p="$prefix" '
		$1 == "require" && $2 == "(" {inreq = 1; next}
		inreq && $1 == ")" {inreq = 0; next}
		$1 == "require" && index($2, p) == 1 {print $2; next}
		inreq && index($1, p) == 1 {print $1}
	' "$f" | while read -r dep; do echo "$mod $dep"; done
	echo "$mod $mod"
done)
if ! out=$(tsort <<<"$edges" 2>&1 >/dev/null); then
	echo "module graph has a cycle among our modules:" >&2
	echo "$out" >&2
	exit 1
fi
[ -z "$out" ] || { echo "$out" >&2; exit 1; }
echo "module graph is acyclic ($(sort -u <<<"$edges" | awk '$1 != $2' | wc -l) edges between our modules)"
