#!/usr/bin/env bash
# Regenerates committed generated code: the Cluster Service protobuf/gRPC stubs.
# protoc comes from Debian's protobuf-compiler (+ libprotobuf-dev for the well-known types);
# the Go plugins are pinned as tools in cluster-service/go.mod.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v protoc >/dev/null || hack/ensure-packages.sh protobuf-compiler libprotobuf-dev
bin=$(mktemp -d); trap 'rm -rf "$bin"' EXIT
(cd cluster-service && go build -o "$bin/protoc-gen-go" google.golang.org/protobuf/cmd/protoc-gen-go \
  && go build -o "$bin/protoc-gen-go-grpc" google.golang.org/grpc/cmd/protoc-gen-go-grpc)
PATH="$bin:$PATH" protoc -I cluster-service/api -I /usr/include \
  --go_out=cluster-service/api --go_opt=paths=source_relative \
  --go-grpc_out=cluster-service/api --go-grpc_opt=paths=source_relative \
  cluster-service/api/v1/*.proto

# Management-cluster CRDs (HostedCluster, NodePool, ManifestWork, AppliedManifestWork), copied and
# cleaned from the API modules pinned in tooling/go.mod; and Istio's PeerAuthentication and
# AuthorizationPolicy CRDs from the pinned istio.io/api (docs/deploy.md#mesh-policy).
go run ./tooling/cmd/gen-crds -module-dir tooling -out dev-infrastructure/mgmtcluster/crds/manifests \
  -istio-out dev-infrastructure/mgmtcluster/crds/istio

# Every Helm chart's values.schema.json, from its values.yaml and config/config.schema.json's $defs
# (docs/deploy.md#values-schemas).
go run ./tooling/cmd/gen-values-schema -root .

# The frontend's versioned ARM types and their structural validation, from the vendored OpenAPI
# specification (docs/api.md#adding-an-api-version).
go run ./tooling/cmd/gen-armtypes -root .
