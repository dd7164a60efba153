#!/usr/bin/env bash
# Builds (once, cached by hack/tool.sh) the pinned promtool and prints its path. The only place
# its module, package and version stamp are written: `make tools` and the alert-rule tests
# (dev-infrastructure/alertrules) both call this.
set -euo pipefail
cd "$(dirname "$0")/.."
# dev-infrastructure/promtool/go.mod pins github.com/prometheus/prometheus v0.315.0, which is
# Prometheus 3.15.0 (the Go module's v0.3XX.Y numbering); the stamp makes `promtool --version` say so.
exec hack/tool.sh promtool dev-infrastructure/promtool github.com/prometheus/prometheus/cmd/promtool \
  "-X github.com/prometheus/common/version.Version=3.15.0 -X github.com/prometheus/common/version.Revision=v0.315.0"
