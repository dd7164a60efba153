#!/usr/bin/env bash
# Builds a pinned tool from its own module (GOWORK=off) into the tool cache, unless the cache
# already holds a build for the same inputs. Prints the binary's path on stdout.
#
#   hack/tool.sh NAME MODULE_DIR PACKAGE [LDFLAGS]
#
# The cache key is the module's go.mod, go.sum and .go files, the Go version and the ldflags, so a
# tool is rebuilt only when one of those changes. The cache lives outside the checkout
# (OPENHCP_TOOLS_DIR, default ~/.cache/openhcp/tools) so fresh clones on this machine reuse it.
set -euo pipefail
name=$1 dir=$2 pkg=$3 ldflags=${4:-}
cache=${OPENHCP_TOOLS_DIR:-$HOME/.cache/openhcp/tools}
key=$( { go version; echo "$pkg $ldflags"; cd "$dir" && find . -name '*.go' -o -name go.mod -o -name go.sum | LC_ALL=C sort | xargs sha256sum; } | sha256sum | cut -c1-16)
out="$cache/$name-$key"
if [ ! -x "$out" ]; then
  mkdir -p "$cache"
  # Two callers building the same tool at once (make run beside make test) take turns: the
  # second waits on the lock and finds the first one's build.
  exec 9>"$out.lock"
  flock 9
fi
if [ ! -x "$out" ]; then
  echo ">> building $name ($pkg) from $dir; first build only, cached as $out" >&2
  start=$(date +%s)
  # A long build is never silent: a heartbeat every 30 s until it ends.
  ( while sleep 30; do echo ">> still building $name: $(( $(date +%s) - start ))s so far" >&2; done ) &
  heartbeat=$!
  trap 'kill $heartbeat 2>/dev/null || true' EXIT
  (cd "$dir" && GOWORK=off GOFLAGS=-mod=mod go build -trimpath -ldflags "$ldflags" -o "$out.tmp.$$" "$pkg") >&2
  kill $heartbeat 2>/dev/null || true
  mv "$out.tmp.$$" "$out"
  echo ">> built $name in $(( $(date +%s) - start ))s" >&2
fi
echo "$out"
