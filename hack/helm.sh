#!/usr/bin/env bash
# Builds (once, cached by hack/tool.sh) the pinned helm and prints its path: helm.sh/helm/v3
# v3.22.0 from dev-infrastructure/helm/go.mod. The ldflags set the Kubernetes version Helm
# assumes for .Capabilities and for lint's deprecation checks to the one the local node runs
# (Helm's built-in default is 1.20). The only place these are written.
set -euo pipefail
cd "$(dirname "$0")/.."
kube_major=1 kube_minor=32
exec hack/tool.sh helm dev-infrastructure/helm helm.sh/helm/v3/cmd/helm \
  "-X helm.sh/helm/v3/internal/version.version=v3.22.0 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=$kube_major -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$kube_minor -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=$kube_major -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$kube_minor"
