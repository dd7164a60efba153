# OpenHCP. `make run` brings up a local region; `make test` runs every test, end to end included.
SHELL := /bin/bash
.DEFAULT_GOAL := help

MODULES := internal cluster-service frontend backend admin dev-infrastructure/mgmtcluster dev-infrastructure/localregion dev-infrastructure/node dev-infrastructure/images dev-infrastructure/chartcheck tooling test
PKGS := $(foreach m,$(MODULES),github.com/openhcp/openhcp/$(m)/...)
# Pinned tool builds are cached outside the checkout and rebuilt only when their inputs change.
export OPENHCP_TOOLS_DIR ?= $(HOME)/.cache/openhcp/tools
# make test starts its own regions: a region file left in the environment (the attached mode of
# test/e2e, docs/deploy.md) would make its e2e tests skip what needs their own region.
unexport OPENHCP_E2E_REGION_FILE
KUBE_VERSION := v1.32.13
KUBE_LDFLAGS := -X k8s.io/component-base/version.gitVersion=$(KUBE_VERSION) -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=32
# go test's timeout per test binary: the end-to-end package is the longest (about 31 min on a busy
# 2-core machine), so this leaves room without letting a hung test run for ever.
TEST_TIMEOUT ?= 50m
FUZZTIME ?= 10s
COSMOS_EMULATOR := internal/docstore/cosmos/emulator

.PHONY: help
help:
	@echo "make run       bring up a local region and print its endpoints (Ctrl-C stops it)"
	@echo "make deploy    the region's charts (service cluster and both management stamps) installed by Helm on a real node (root)"
	@echo "make test-deploy-examples  test/e2e (RUN, default TestEveryExample) against make deploy's region, brought up and stopped around it (root)"
	@echo "make test      unit, integration and end-to-end tests, the alert rules and the module graph"
	@echo "make test-busy make test while stress-ng keeps one core busy (hack/busy.sh)"
	@echo "make chaos     the full chaos run: mixed ARM workload while components are killed (docs/reliability.md); DEPLOY=1 against a make deploy region"
	@echo "make chaos-outages  every dependency outage, those that can still fail on a known defect included"
	@echo "make generate  regenerate committed generated code"
	@echo "make render-config  render config/config.yaml into config/rendered/ (commit the result)"
	@echo "make verify    fail when rendered config, chart values, chart fixtures or generated code are stale, or Go code is not gofmt-formatted"
	@echo "make fuzz      explore every fuzz target for FUZZTIME each (default $(FUZZTIME)); commit what it finds"
	@echo "make fuzz-long every fuzz target of every module to FUZZ_EXECS executions (default 10^6; FUZZ_TIME, FUZZ_MATCH), counts per target"
	@echo "make bench     every benchmark once, JSON and charts to docs/perf-data (each figure in docs/performance.md names its own command)"
	@echo "make bench-load  the whole-path load benchmarks (P1, P3, P4) and their charts"
	@echo "make bench-p4  P4 alone: creates/s through OpenHCP against bare Maestro in one run (SHORT=1: CI size)"
	@echo "make bench-p5  P5 alone: scale to 1,000/2,000/5,000 hosted clusters over 4 management clusters (SHORT=1: 100/200)"
	@echo "make bench-hostedapi  hosted kube-apiservers: RSS and start time, shared hosted etcd vs one per cluster"
	@echo "make bench-monitor  one Monitor pass over 1,000 hosted clusters: wall time and CPU per pass (first, steady, rewrite)"
	@echo "make bench-cost  CPU per ARM operation, per process, against the previous run and the first baseline (SHORT=1: small)"
	@echo "make lint      gofmt and go vet"
	@echo "make images    build the container images into .run/images (no container engine; docs/deploy.md#images)"
	@echo "make tools     build the pinned Kubernetes binaries (kubectl among them), etcd, CoreDNS, the NetworkPolicy agent, maestro, promtool and helm (cached)"

# What `make run` needs, and no more: PostgreSQL, PgBouncer, the broker (and the C toolchain for
# its plugin), curl and jq for the README's commands, and Prometheus. `make deps` adds what the tests,
# `make generate` and `make deploy` need.
.PHONY: deps-run
deps-run:
	@hack/ensure-packages.sh postgresql pgbouncer mosquitto curl jq prometheus
	@# The broker's share_guard plugin (dev-infrastructure/mosquitto-share-guard) is C, built by
	@# hack/mosquitto-plugin.sh against mosquitto's plugin headers.
	@hack/ensure-packages.sh gcc libc6-dev mosquitto-dev libmosquitto-dev

.PHONY: deps
deps: deps-run
	@hack/ensure-packages.sh protobuf-compiler libprotobuf-dev chromium
	@# The real node (dev-infrastructure/node, docs/deploy.md#a-real-node): Debian's containerd, runc,
	@# CNI plugins and the netfilter tools, run with the node's own config inside its network namespace.
	@hack/ensure-packages.sh containerd runc containernetworking-plugins iptables conntrack nftables iproute2
	@# Node runs the Cosmos-compatible server the cosmos store's conformance test starts.
	@command -v npm >/dev/null || hack/ensure-packages.sh nodejs npm
	@[ $(COSMOS_EMULATOR)/node_modules/.package-lock.json -nt $(COSMOS_EMULATOR)/package-lock.json ] || \
		(cd $(COSMOS_EMULATOR) && npm ci --no-audit --no-fund --loglevel=error)

.PHONY: kubectl
# The path of the pinned kubectl (built into the tool cache on first use), for the README's
# `$(make -s kubectl)`.
kubectl:
	@hack/tool.sh kubectl dev-infrastructure/kube-tools k8s.io/kubernetes/cmd/kubectl "$(KUBE_LDFLAGS)"

# The pinned builds `make run` starts (kube-apiserver, kube-controller-manager and etcd for the
# management clusters, Maestro, the broker's plugin, and helm, which renders the charts' RBAC the
# launcher applies). `make tools` adds the real node's binaries, CoreDNS and promtool.
.PHONY: tools-run
tools-run:
	@hack/tool.sh kube-apiserver dev-infrastructure/kube-tools k8s.io/kubernetes/cmd/kube-apiserver "$(KUBE_LDFLAGS)" >/dev/null
	@hack/tool.sh kube-controller-manager dev-infrastructure/kube-tools k8s.io/kubernetes/cmd/kube-controller-manager "$(KUBE_LDFLAGS)" >/dev/null
	@hack/tool.sh etcd dev-infrastructure/kube-tools ./cmd/etcd >/dev/null
	@hack/tool.sh maestro dev-infrastructure/maestro github.com/openhcp/openhcp/dev-infrastructure/maestro/cmd/maestro >/dev/null
	@hack/helm.sh >/dev/null
	@hack/mosquitto-plugin.sh >/dev/null

.PHONY: tools
tools: tools-run
	@# The real node's (dev-infrastructure/node): kubelet, scheduler, kubectl, kube-proxy, CoreDNS.
	@for b in kubelet kube-scheduler kubectl kube-proxy; do hack/tool.sh $$b dev-infrastructure/kube-tools k8s.io/kubernetes/cmd/$$b "$(KUBE_LDFLAGS)" >/dev/null; done
	@hack/coredns.sh >/dev/null
	@# The node's NetworkPolicy agent (dev-infrastructure/kube-network-policies, patched upstream).
	@hack/tool.sh kube-network-policies dev-infrastructure/kube-network-policies sigs.k8s.io/kube-network-policies/cmd >/dev/null
	@hack/promtool.sh >/dev/null

# Container images without a container engine (docs/deploy.md#images): .run/images/<name>.oci.tar
# and .run/images/images.json. Only images whose binary changed are rewritten.
.PHONY: images
images:
	@go run ./tooling/cmd/build-images -out .run/images $(IMAGES)

.PHONY: run
run: deps-run tools-run
	@go build -o bin/openhcp-region ./dev-infrastructure/localregion/cmd/openhcp-region
	@exec bin/openhcp-region $(RUN_ARGS)

# The region's charts (service cluster and both management stamps) installed by Helm onto a real node;
# PostgreSQL and the broker stay on the host (docs/deploy.md#make-deploy).
.PHONY: deploy
deploy: deps tools verify-config
	@go build -o bin/openhcp-deploy ./dev-infrastructure/localregion/cmd/openhcp-deploy
	@exec bin/openhcp-deploy $(DEPLOY_ARGS)

# make deploy's end-to-end test (ARM flow through the Helm-deployed frontend on the node, helm
# upgrade of every chart mid-operation); opt-in: minutes on this machine (docs/deploy.md#make-deploy).
.PHONY: test-deploy
test-deploy: deps tools
	OPENHCP_DEPLOY_E2E=1 go test -count=1 -timeout 60m -run TestDeployedRegion -v ./dev-infrastructure/localregion/deploy

# test/e2e against make deploy's region (docs/deploy.md#the-e2e-tests-against-a-deployed-region):
# brings the region up, runs RUN (default TestEveryExample) with OPENHCP_E2E_REGION_FILE, stops it.
# Root, opt-in: it takes the node like make deploy and make test-deploy.
.PHONY: test-deploy-examples
test-deploy-examples: deps tools verify-config
	RUN='$(or $(RUN),^TestEveryExample$$)' hack/test-deploy-examples.sh

# A rolling upgrade of a local region from a previous commit's frontend, backend and Cluster
# Service to the current build, under ARM traffic (test/upgrade, docs/architecture.md#rolling-upgrades).
# Minutes (a previous-release build, cached by commit, and a region), so not part of make test.
.PHONY: test-upgrade
test-upgrade: deps tools
	OPENHCP_UPGRADE=1 go test -count=1 -timeout 30m -run TestRollingUpgrade -v ./test/upgrade

.PHONY: test
test: deps tools
	@# -count=1: the end-to-end and integration tests run binaries that go test cannot see as inputs,
	@# so a cached result could be stale.
	@# Fuzz targets run here only on their seeds and the committed testdata/fuzz inputs, so the
	@# result is the same on every run; random exploration is `make fuzz`.
	@# Alert rules first (seconds): their checker is a module outside the workspace, because the
	@# PromQL parser's module pins Kubernetes 0.37 (docs/deploy.md#alerts).
	cd dev-infrastructure/alertrules && GOWORK=off ../../hack/gotest.sh -count=1 ./...
	@# The Maestro build's own command (its reconnect backoff, event sync and gRPC guard), also outside the workspace.
	cd dev-infrastructure/maestro && GOWORK=off GOFLAGS=-mod=mod ../../hack/gotest.sh -count=1 ./...
	@# Our modules must not require each other in a cycle (docs/architecture.md#modules).
	hack/check-module-graph.sh
	hack/gotest.sh -count=1 -p 2 -timeout $(TEST_TIMEOUT) $(PKGS)

# make test while stress-ng keeps one core busy, as another job on a shared CI machine would
# (hack/busy.sh; docs/reliability.md#a-busy-machine). BUSY_CPUS=<n> busies more cores.
.PHONY: test-busy
test-busy:
	@hack/ensure-packages.sh stress-ng
	hack/busy.sh $(MAKE) test

# The chaos run at full size (test/chaos, docs/reliability.md): >= 500 cluster creates and deletes
# plus node-pool work through ARM while one component at a time is SIGKILLed; invariants and
# per-component kill table at the end. CHAOS_SEED=<n> replays a run; make test runs the short size.
# Every dependency outage (test/chaos TestDependencyOutage), including those make test skips
# because they can still fail on a defect found and not yet fixed (docs/reliability.md).
.PHONY: chaos-outages
chaos-outages: deps tools
	cd test && CHAOS_KNOWN_DEFECTS=1 go test ./chaos -run '^TestDependencyOutage$$' -count=1 -v -timeout 60m

.PHONY: chaos
# DEPLOY=1: the same scenario against a make deploy region (root; docs/reliability.md,
# "Chaos against a deployed region"): pods deleted, containers SIGKILLed, containerd restarted.
chaos: deps tools
ifeq ($(DEPLOY),1)
	cd test && CHAOS_DEPLOY=1 go test ./chaos -run '^TestChaosDeployed$$' -count=1 -v -timeout 100m
else
	cd test && CHAOS_SIZE=full CHAOS_POSTGRES=1 go test ./chaos -run '^TestChaos$$' -count=1 -v -timeout 60m
endif

.PHONY: fuzz
fuzz:
	@hack/fuzz.sh $(FUZZTIME)

# Every fuzz target of every module until FUZZ_EXECS executions each (default 1,000,000), with
# the count each reached; a crasher stays under its package's testdata/fuzz/ (docs/reliability.md#fuzzing).
.PHONY: fuzz-long
fuzz-long:
	@hack/fuzz-long.sh

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

# Fails when a chart renders differently from its golden fixture for the dev region
# (dev-infrastructure/chartcheck; UPDATE=1 refreshes them, docs/deploy.md#checks-every-chart-gets-make-test).
.PHONY: verify-charts
verify-charts:
	cd dev-infrastructure/chartcheck && go test -count=1 -run '^TestRenderedChartsMatchGolden$$' .

# Everything generated and committed is current: the rendered config and every chart's values,
# the charts' golden renderings, generated code (the charts' values.schema.json included; the same
# check runs in make test: tooling/pkg/valuesschema TestChartValuesSchemasAreCurrent).
.PHONY: verify
verify: verify-config verify-charts verify-generate verify-fmt verify-files

.PHONY: verify-generate
verify-generate: generate
	@git diff --exit-code -- cluster-service/api dev-infrastructure/mgmtcluster/crds ':(glob)**/values.schema.json' ':(glob)frontend/pkg/api/**/zz_generated_*.go' ':(glob)internal/armspec/**/zz_generated_*.go' || (echo "generated code is stale: run make generate and commit" && exit 1)
	@new=$$(git ls-files --others --exclude-standard -- ':(glob)**/values.schema.json' ':(glob)frontend/pkg/api/**/zz_generated_*.go' ':(glob)internal/armspec/**/zz_generated_*.go'); [ -z "$$new" ] || (echo "generated but not committed: $$new" && exit 1)

.PHONY: verify-fmt
verify-fmt:
	@bad=$$(gofmt -l .); [ -z "$$bad" ] || (echo "not gofmt-formatted (run gofmt -w on them): $$bad" && exit 1)

# No tracked file is a build's output: none over 2 MiB (the largest today, a chart's golden
# rendering, is about 0.5 MiB) and none an ELF executable (a stray "go build" in a module folder).
.PHONY: verify-files
verify-files:
	@bad=$$(git ls-files -z | xargs -0 -r sh -c 'for f; do [ -f "$$f" ] || continue; if [ $$(stat -c %s "$$f") -gt 2097152 ] || [ "$$(head -c 4 "$$f" | od -An -c | tr -d " ")" = "177ELF" ]; then echo "$$f"; fi; done' sh); [ -z "$$bad" ] || (echo "tracked files that look like build output (over 2 MiB or an executable): $$bad" && exit 1)

.PHONY: bench
bench: deps tools
	P5_BUDGET=$${P5_BUDGET:-30m} go test -run '^$$' -bench . -benchtime 1x -timeout 60m $(PKGS)
	go run ./tooling/cmd/benchplot -dir docs/perf-data

# The whole-path load benchmarks alone (P1 frontend, P3 PUT → HostedCluster, P4; knobs at the
# top of docs/perf-data/run-log-2026-11.md), then their charts.
.PHONY: bench-load
bench-load: deps tools
	cd test && go test ./e2e -run '^$$' -bench 'P1Frontend|P3CreateToHostedCluster|P4SustainedThroughput' -benchtime 1x -count=1 -timeout 45m
	go run ./tooling/cmd/benchplot -dir docs/perf-data

# P4 alone (test/e2e/p4_bench_test.go): the full size by default (120 creates per phase),
# SHORT=1 for the CI-sized run (30 per phase); knobs P4_CREATES, P4_RATE, P4_SCANS, BENCH_OUT.
.PHONY: bench-p4
bench-p4: deps tools
	cd test && go test ./e2e -run '^$$' -bench P4SustainedThroughput -benchtime 1x -count=1 -timeout 30m $(if $(SHORT),-short)
	go run ./tooling/cmd/benchplot -dir docs/perf-data

# P5 alone (test/scale): its own region of 4 management clusters, filled through ARM up to
# P5_SIZES (default 1000,2000,5000; SHORT=1: 100,200) within P5_BUDGET of creating (default 45m;
# make bench gives it 30m); knobs in test/scale/p5_bench_test.go and docs/performance.md.
.PHONY: bench-p5
bench-p5: deps tools
	cd test && go test ./scale -run '^$$' -bench P5Scale -benchtime 1x -count=1 -timeout 150m $(if $(SHORT),-short)
	go run ./tooling/cmd/benchplot -dir docs/perf-data

# Hosted control planes: memory (RSS) and start time to /readyz per hosted kube-apiserver, with
# one shared hosted etcd against one etcd per hosted cluster (HOSTED_BENCH_CLUSTERS, default 2);
# figures in docs/performance.md.
# CPU per operation (test/e2e/cost_bench_test.go): GET, list, PUT, PATCH, DELETE request paths,
# whole create and delete, and bare Maestro per work, from /proc accounting, in one run; a region
# without hosted kube-apiservers, whose start-up would swamp a create's cost (docs/performance.md).
# The base is measured in the same run as the tree: first a region whose frontend, backend and
# Cluster Service are COST_BASE's (built once, cached by commit), then the tree's own; the second
# run's ratios are against the first (docs/performance.md). COST_BASE=none measures the tree alone.
# COST_BASE is the commit of the page's last figures (the 2026-11-26 tree).
COST_BASE ?= 2420fa0bb2713e6f325abcd887c60e4acdb698a4
COST_RUN = cd test && OPENHCP_E2E_HOSTED_APISERVERS=-1 $(1) go test ./e2e -run '^$$' -bench '^BenchmarkCost$$' -benchtime 1x -count=1 -timeout 30m $(if $(SHORT),-short)
.PHONY: bench-cost
bench-cost: deps tools
	rm -rf .run/bench-cost-base
ifneq ($(COST_BASE),none)
	$(call COST_RUN,OPENHCP_E2E_SERVICES_AT=$(COST_BASE) BENCH_OUT=$(CURDIR)/.run/bench-cost-base)
endif
	$(call COST_RUN,$(if $(filter none,$(COST_BASE)),,COST_BASE_RUN=$(CURDIR)/.run/bench-cost-base/cost.json))
	go run ./tooling/cmd/benchplot -dir docs/perf-data

# The Monitor's pass over 1,000 simulated hosted clusters (backend/pkg/monitor/pass_bench_test.go):
# real Cluster Service API and stores in PostgreSQL; MONITOR_PASSES passes each (default 10),
# MONITOR_PASS_PROFILE=<file> for a CPU profile of the steady passes (docs/performance.md). It
# needs PostgreSQL only, so deps-run.
MONITOR_PASSES ?= 10
.PHONY: bench-monitor
bench-monitor: deps-run
	cd backend && $(if $(MONITOR_PASS_PROFILE),MONITOR_PASS_PROFILE=$(abspath $(MONITOR_PASS_PROFILE))) go test ./pkg/monitor -run '^$$' -bench '^BenchmarkMonitorPass$$' -benchtime $(MONITOR_PASSES)x -count=1 -timeout 30m

.PHONY: bench-hostedapi
bench-hostedapi: deps tools
	cd dev-infrastructure/mgmtcluster && go test ./hypershiftsim -short -run '^$$' -bench 'HostedControlPlane$$' -benchtime 1x -count=1 -timeout 10m

.PHONY: lint
lint:
	@out=$$(gofmt -l $(MODULES)); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	go vet $(PKGS)
