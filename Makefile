# OpenHCP. `make run` brings up a local region; `make test` runs every test, end to end included.
SHELL := /bin/bash
.DEFAULT_GOAL := help

MODULES := internal cluster-service frontend backend admin tooling test
PKGS := $(foreach m,$(MODULES),github.com/openhcp/openhcp/$(m)/...)
# Pinned tool builds are cached outside the checkout and rebuilt only when their inputs change.
export OPENHCP_TOOLS_DIR ?= $(HOME)/.cache/openhcp/tools
KUBE_VERSION := v1.32.13
KUBE_LDFLAGS := -X k8s.io/component-base/version.gitVersion=$(KUBE_VERSION) -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=32
TEST_TIMEOUT ?= 40m
FUZZTIME ?= 10s
COSMOS_EMULATOR := internal/store/cosmos/emulator

.PHONY: help
help:
	@echo "make run       bring up a local region and print its endpoints (Ctrl-C stops it)"
	@echo "make test      unit, integration and end-to-end tests"
	@echo "make generate  regenerate committed generated code"
	@echo "make render-config  render config/config.yaml into config/rendered/ (commit the result)"
	@echo "make fuzz      explore every fuzz target for FUZZTIME each (default $(FUZZTIME)); commit what it finds"
	@echo "make bench     benchmarks; results go to docs/performance.md"
	@echo "make lint      gofmt and go vet"
	@echo "make tools     build the pinned kube-apiserver, etcd and maestro (cached)"

.PHONY: deps
deps:
	@hack/ensure-packages.sh postgresql mosquitto protobuf-compiler libprotobuf-dev jq chromium
	@# Node runs the Cosmos-compatible server the cosmos store's conformance test starts.
	@command -v npm >/dev/null || hack/ensure-packages.sh nodejs npm
	@[ $(COSMOS_EMULATOR)/node_modules/.package-lock.json -nt $(COSMOS_EMULATOR)/package-lock.json ] || \
		(cd $(COSMOS_EMULATOR) && npm ci --no-audit --no-fund --loglevel=error)

.PHONY: tools
tools:
	@hack/tool.sh kube-apiserver dev-infrastructure/kube-tools k8s.io/kubernetes/cmd/kube-apiserver "$(KUBE_LDFLAGS)" >/dev/null
	@hack/tool.sh kube-controller-manager dev-infrastructure/kube-tools k8s.io/kubernetes/cmd/kube-controller-manager "$(KUBE_LDFLAGS)" >/dev/null
	@hack/tool.sh etcd dev-infrastructure/kube-tools ./cmd/etcd >/dev/null
	@hack/tool.sh maestro maestro github.com/openshift-online/maestro/cmd/maestro >/dev/null

.PHONY: run
run: deps tools
	@go build -o bin/openhcp-region ./tooling/cmd/openhcp-region
	@exec bin/openhcp-region $(RUN_ARGS)

.PHONY: test
test: deps tools
	@# -count=1: the end-to-end and integration tests run binaries that go test cannot see as inputs,
	@# so a cached result could be stale.
	@# Fuzz targets run here only on their seeds and the committed testdata/fuzz inputs, so the
	@# result is the same on every run; random exploration is `make fuzz`.
	hack/gotest.sh -count=1 -p 2 -timeout $(TEST_TIMEOUT) $(PKGS)

.PHONY: fuzz
fuzz:
	@hack/fuzz.sh $(FUZZTIME)

.PHONY: generate
generate:
	hack/generate.sh

.PHONY: render-config
render-config:
	go run ./tooling/cmd/render-config -config-dir config

# Fails when config/rendered/ does not match a fresh render of config/config.yaml. The same check
# runs in make test (tooling/pkg/regionconfig TestRenderedConfigIsCurrent).
.PHONY: verify-config
verify-config:
	go run ./tooling/cmd/render-config -config-dir config -check

.PHONY: verify-generate
verify-generate: generate
	@git diff --exit-code -- cluster-service/api tooling/pkg/crds || (echo "generated code is stale: run make generate and commit" && exit 1)

.PHONY: bench
bench: deps tools
	go test -run '^$$' -bench . -benchtime 1x -timeout 60m $(PKGS)

.PHONY: lint
lint:
	@out=$$(gofmt -l $(MODULES)); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	go vet $(PKGS)
