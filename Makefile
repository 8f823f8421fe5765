# sliceclass developer commands. Each target does its own set-up.
SHELL := /usr/bin/env bash
GO ?= go

.PHONY: all demo dev-controlplane crds crds-check test test-oldest unit integration reliability soak long envtest lint vet fmt bench bench-metering tidy fuzz compat chart-test image image-check print-image api-check

all: test

## envtest: build kube-apiserver and etcd from source into bin/envtest (only when missing) and
## print the line to export: eval "$(make -s envtest)" sets KUBEBUILDER_ASSETS in your shell.
envtest:
	@assets="$$(hack/envtest.sh)" && echo "export KUBEBUILDER_ASSETS=$$assets"

## demo: the SDK at work on an embedded control plane (no cluster needed).
demo:
	@assets="$$(hack/envtest.sh)" && KUBEBUILDER_ASSETS="$$assets" $(GO) run ./examples/demo

## dev-controlplane: a local control plane (kube-apiserver, etcd, Liqo's CRDs) to run your own manager
## against, until Ctrl-C: writes dev-controlplane.kubeconfig (DEV_ARGS="-kubeconfig PATH" moves it) and
## prints how to point a manager at it and create a slice. Builds the envtest binaries first if missing.
dev-controlplane:
	@assets="$$(hack/envtest.sh)" && KUBEBUILDER_ASSETS="$$assets" $(GO) run ./testing/controlplane/dev-controlplane $(DEV_ARGS)

## crds: regenerate the API's CRD (config/crd/, copied into the chart's crds/) and deep-copy
## functions from the Go types in api/ (hack/crdgen.sh, controller-gen built from source);
## crds-check: fail, with the diff, when the committed files (the chart's copy included) differ
## from what the types generate.
crds:
	@hack/crdgen.sh

crds-check:
	@hack/crdgen.sh --check

## api-check: fail, with the diff, when hack/api.txt (the SDK's exported surface, one line per
## exported name) differs from the code; go run ./hack/apitxt -w regenerates it (docs/api.md).
api-check:
	@$(GO) run ./hack/apitxt -check

## test: vet, format check, lint, and every test (unit + integration on a real API server) with -race,
## then the Helm chart's tests (chart-test). hack/test.sh is go test -race -count=1 ./..., sized to the
## machine: it builds every test binary first, then runs them TEST_JOBS at a time (default nproc + 1),
## the integration suite split into TEST_SHARDS runs (default TEST_JOBS), each on a control plane of its own.
test: vet fmt lint api-check
	@kubectl_later="$$([[ -z "$${KUBEBUILDER_ASSETS:-}" ]] && echo 1 || true)" && assets="$$(ENVTEST_KUBECTL=0 hack/envtest.sh)" && \
		KUBEBUILDER_ASSETS="$$assets" SLICECLASS_REQUIRE_ENVTEST=1 TEST_BUILD_KUBECTL="$$kubectl_later" hack/test.sh ./...
	@$(MAKE) --no-print-directory chart-test

## chart-test: the Helm chart's tests, a module of their own (charts/sliceclass-manager/test): render
## the chart with helm's engine, apply it to a real API server, check its args, RBAC, image and dashboard.
chart-test:
	@assets="$$(hack/envtest.sh)" && cd charts/sliceclass-manager/test && $(GO) vet ./... && \
		KUBEBUILDER_ASSETS="$$assets" SLICECLASS_REQUIRE_ENVTEST=1 $(GO) test -count=1 -timeout 10m ./...

## image: the example manager (IMAGE_PKG) as an OCI image tarball, $(IMAGE_TAR), tagged $(IMAGE) (the Helm chart's
## default image), loadable with docker/podman load or kind load image-archive. A static binary packed by
## hack/image (its own module): no container daemon, no network beyond the Go module proxy, fixed
## timestamps (SOURCE_DATE_EPOCH, default 0), so one source tree gives one digest. Prints "IMAGE DIGEST".
IMAGE ?= sliceclass-manager:dev
IMAGE_TAR ?= bin/sliceclass-manager.tar
IMAGE_BIN ?= bin/image/manager
IMAGE_ARCH ?= $(shell $(GO) env GOARCH)
## IMAGE_PKG is the main package packed (default: the example manager). Your own manager, from your
## module's root, the same way: go run github.com/sliceclass/sliceclass/hack/image@latest -build ./cmd/manager
## -tag my-manager:v1 -out my-manager.tar (docs/deploying.md).
IMAGE_PKG ?= ./examples/manager
image:
	@mkdir -p $(dir $(abspath $(IMAGE_BIN))) $(dir $(abspath $(IMAGE_TAR)))
	@cd hack/image && $(GO) run . -build $(IMAGE_PKG) -dir $(CURDIR) -binary $(abspath $(IMAGE_BIN)) \
		-arch $(IMAGE_ARCH) -tag $(IMAGE) -out $(abspath $(IMAGE_TAR))

## image-check: the image packer's tests, then two builds of the image (binary and all) that must give
## one digest and byte-identical tarballs.
image-check:
	@cd hack/image && $(GO) vet ./... && $(GO) test -count=1 ./...
	@a="$$($(MAKE) -s --no-print-directory image IMAGE_BIN=bin/image/check-a IMAGE_TAR=bin/image/check-a.tar)" && \
		b="$$($(MAKE) -s --no-print-directory image IMAGE_BIN=bin/image/check-b IMAGE_TAR=bin/image/check-b.tar)" && \
		echo "image-check: $$a" && echo "image-check: $$b" && \
		if [[ "$$a" != "$$b" ]] || ! cmp -s bin/image/check-a.tar bin/image/check-b.tar; then \
			echo "image-check: two builds, two images"; exit 1; fi

## print-image: the image reference `make image` writes (the chart's tests compare it with the chart's default).
print-image:
	@echo $(IMAGE)

## test-oldest: the SliceBudget CRD's tests (api/v1alpha1) and SliceBudget's integration tests (every test in
## test/integration/slicebudget*_test.go) on the oldest Kubernetes we support, 1.33 (Liqo v1.2.0 supports
## the last three minor releases, 1.33 to 1.35): builds kube-apiserver OLDEST_KUBE_VERSION (default v1.33.13)
## into the envtest cache beside the default binaries (once; as long as the default build), then runs the
## tests on it with -race (hack/test-oldest.sh). Not part of make test or CI: run it after changing the CRD.
OLDEST_KUBE_VERSION ?= v1.33.13
test-oldest:
	@OLDEST_KUBE_VERSION=$(OLDEST_KUBE_VERSION) hack/test-oldest.sh

## unit: tests that need no control plane.
unit:
	$(GO) test -race -count=1 -short ./...

## integration: the integration and reliability suites alone (./test/...) on a real API server, with
## -race, sharded as in make test.
integration:
	@assets="$$(hack/envtest.sh)" && KUBEBUILDER_ASSETS="$$assets" SLICECLASS_REQUIRE_ENVTEST=1 hack/test.sh ./test/...

## reliability: the reliability suite alone (./test/reliability/...: API faults, API server
## restart, leader failover, least privilege) with -race, printing its figures (RELIABILITY: lines).
## `make test` runs it too.
reliability:
	@set -o pipefail; assets="$$(hack/envtest.sh)" && KUBEBUILDER_ASSETS="$$assets" SLICECLASS_REQUIRE_ENVTEST=1 \
		$(GO) test -race -count=1 -timeout 30m -v ./test/reliability/... | grep -E '^(=== RUN|--- |\s+.*RELIABILITY:|ok|FAIL|PASS)'

## soak: 10000 slices under churn for SLICECLASS_SOAK_DURATION (default 3m), without -race so that
## heap figures are the program's own; reports heap, goroutines and the decision backlog.
soak:
	@assets="$$(hack/envtest.sh)" && KUBEBUILDER_ASSETS="$$assets" SLICECLASS_REQUIRE_ENVTEST=1 SLICECLASS_SOAK=1 \
		$(GO) test -count=1 -timeout 20m -v ./test/soak/

## long: what CI (.ci/run) runs shorter, at full length, and what it leaves to this target; run it
## before a release and after touching restarts, reclaim, failover or memory: the restart rounds of
## TestRestartAsAVictimsPodEnds with -race (LONG_RESTART_ROUNDS, default 3; CI runs 1), the failover
## warm-up at full size (SLICECLASS_RELIABILITY_FULL=1: 2,000 slices, three rounds per setting; CI runs
## the small version), then the soak at full size (10,000 slices, SLICECLASS_SOAK_DURATION of churn,
## default 3m; CI does not run it); the soak alone takes about 5 minutes; then make compat (CI does
## not run it: two more cold builds of the module).
LONG_RESTART_ROUNDS ?= 3
long:
	@assets="$$(hack/envtest.sh)" && KUBEBUILDER_ASSETS="$$assets" SLICECLASS_REQUIRE_ENVTEST=1 \
		SLICECLASS_RESTART_ROUNDS=$(LONG_RESTART_ROUNDS) $(GO) test -race -count=1 -timeout 30m -v \
		-run '^TestRestartAsAVictimsPodEnds$$' ./test/integration/
	@assets="$$(hack/envtest.sh)" && KUBEBUILDER_ASSETS="$$assets" SLICECLASS_REQUIRE_ENVTEST=1 \
		SLICECLASS_RELIABILITY_FULL=1 $(GO) test -count=1 -timeout 30m -v -run '^TestLeaderFailoverWarmup$$' \
		./test/reliability/failover/
	@$(MAKE) --no-print-directory soak SLICECLASS_SOAK_SLICES=10000
	@$(MAKE) --no-print-directory compat

vet:
	$(GO) vet ./...

fmt:
	@out="$$(gofmt -l $$(git ls-files '*.go'))"; if [[ -n "$$out" ]]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

lint:
	@hack/lint.sh

## bench: in-process benchmarks, then the control-plane bench table (bench/main.go). Its defaults,
## -n 1000 -rounds 3 -rate 20 -latency-n 600 -mem-n 2000,10000 -sbs-n 2000 -settle 1m, take about 6
## minutes on a quiet 2-core machine: medians of 3 rounds (the fewest that drop an outlier round) of
## backlogs of 1,000 slices, the p99 at the 20 slices/s its target is stated at, memory at the 10,000
## slices its target is stated at, and the example manager, a template-shaped controller and a plain
## client side by side at 2,000 slices, each its own process. Exit status 3: the figures were printed
## without a verdict (a round started with the load above the cores, or fewer than 3 rounds): rerun
## on a quieter machine. The binary is built first so that make sees the bench's own exit status.
## The scale phase is opt-in: BENCH_ARGS='-scale-n 50000' adds one replica holding 50,000 slices
## (10 classes, 500 tenants) and standbys taking over from it, with and without EnableWarmup;
## '-scale-n 10000,50000' compares two sizes per slice, -scale-only skips the other phases. Creating
## the slices alone takes minutes: run it on a quiet machine, not as part of the 10-minute default.
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./resourceslice/ ./conditions/
	@mkdir -p bin && $(GO) build -o bin/bench ./bench
	@assets="$$(hack/envtest.sh)" && KUBEBUILDER_ASSETS="$$assets" bin/bench $(BENCH_ARGS)

## bench-metering: what metering costs (docs/metering.md, "What it costs"), apart from bench: the
## meter's live heap per consumer series at 1,000 and 10,000 consumers, then the budget variant's
## backlog (-n 1000 slices, 4 classes, 4 workers) decided by two builds of the bench, with metering
## and without (-tags sliceclass_nometering), each run a process of its own, the two alternating
## first for -rounds rounds (default 3; BENCH_ARGS='-rounds 5' narrows the range). The table has
## each one's median decisions/s and CPU per decision and the ratios on / off, with the rounds'
## range. About 2 minutes of runs on a quiet 2-core machine, plus the builds and up to -settle per
## round for the load to fall; exit status 3 as for bench (fewer than 3 rounds, or a busy machine).
bench-metering:
	$(GO) test -run '^$$' -bench HeapPerConsumerSeries -benchtime 5x ./internal/metering/
	@mkdir -p bin && $(GO) build -o bin/bench ./bench
	@assets="$$(hack/envtest.sh)" && KUBEBUILDER_ASSETS="$$assets" bin/bench -metering-only $(BENCH_ARGS)

tidy:
	$(GO) mod tidy

## fuzz: every fuzz target for FUZZTIME each (default 20s); a failing input lands in testdata/fuzz/.
fuzz:
	@hack/fuzz.sh

## compat: build, vet and unit-test a temporary copy of the module against the newest
## controller-runtime v0.23.x, v0.24.x and v0.25.x (go.mod keeps the lowest we support).
compat:
	@hack/compat.sh
