#!/usr/bin/env bash
# Installs the named Debian packages if any is missing. Runs apt-get update once per call.
set -euo pipefail
missing=()
for p in "$@"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p"); done
[ ${#missing[@]} -eq 0 ] && exit 0
echo ">> installing Debian packages: ${missing[*]}" >&2
SUDO=; [ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO apt-get update -qq >&2
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
