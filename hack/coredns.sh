#!/usr/bin/env bash
# Builds (once, cached by hack/tool.sh) the pinned CoreDNS, the cluster DNS of the local node
# (dev-infrastructure/node), and prints its path: github.com/coredns/coredns v1.14.7 from
# dev-infrastructure/coredns/go.mod. Static (CGO_ENABLED=0): it runs in an image without libc.
# The only place its build flags are written.
set -euo pipefail
cd "$(dirname "$0")/.."
CGO_ENABLED=0 exec hack/tool.sh coredns dev-infrastructure/coredns github.com/coredns/coredns "-s -w"
