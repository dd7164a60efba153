#!/usr/bin/env bash
# Builds the broker's share_guard plugin (dev-infrastructure/mosquitto-share-guard) into the tool
# cache, unless the cache already holds a build of the same source with the same compiler and
# mosquitto headers. Prints the plugin's path on stdout. Needs a C compiler and Debian's
# mosquitto-dev (make deps).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
src=$root/dev-infrastructure/mosquitto-share-guard/share_guard.c
cache=${OPENHCP_TOOLS_DIR:-$HOME/.cache/openhcp/tools}
cc=${CC:-cc}
header=/usr/include/mosquitto_broker.h
if [ ! -f "$header" ]; then
  echo "mosquitto-share-guard: $header is missing; install Debian's mosquitto-dev (make deps)" >&2
  exit 1
fi
key=$( { "$cc" --version | head -1; sha256sum "$src" /usr/include/mosquitto*.h; } | sha256sum | cut -c1-16)
out="$cache/mosquitto-share-guard-$key.so"
if [ ! -f "$out" ]; then
  mkdir -p "$cache"
  "$cc" -std=c11 -D_POSIX_C_SOURCE=200809L -O2 -Wall -Wextra -Werror -fPIC -shared -o "$out.tmp.$$" "$src" >&2
  mv "$out.tmp.$$" "$out"
fi
echo "$out"
