# sliceclass developer commands. Each target does its own set-up.
SHELL := /usr/bin/env bash
GO ?= go

.PHONY: all demo test unit integration reliability soak envtest lint vet fmt bench tidy fuzz compat

all: test

## envtest: build kube-apiserver and etcd from source into bin/envtest (only when missing) and
## print the line to export: eval "$(make -s envtest)" sets KUBEBUILDER_ASSETS in your shell.
envtest:
	@assets="$$(hack/envtest.sh)" && echo "export KUBEBUILDER_ASSETS=$$assets"

## demo: the SDK at work on an embedded control plane (no cluster needed).
demo:
	@assets="$$(hack/envtest.sh)" && KUBEBUILDER_ASSETS="$$assets" $(GO) run ./examples/demo

## test: vet, format check, lint, and every test (unit + integration on a real API server) with -race.
test: vet fmt lint
	@assets="$$(hack/envtest.sh)" && KUBEBUILDER_ASSETS="$$assets" SLICECLASS_REQUIRE_ENVTEST=1 \
		$(GO) test -race -count=1 -timeout 30m ./...

## unit: tests that need no control plane.
unit:
	$(GO) test -race -count=1 -short ./...

## integration: the integration suite alone (./test/...) on a real API server, with -race.
integration:
	@assets="$$(hack/envtest.sh)" && KUBEBUILDER_ASSETS="$$assets" SLICECLASS_REQUIRE_ENVTEST=1 \
		$(GO) test -race -count=1 -timeout 30m ./test/...

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

vet:
	$(GO) vet ./...

fmt:
	@out="$$(gofmt -l $$(git ls-files '*.go'))"; if [[ -n "$$out" ]]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

lint:
	@hack/lint.sh

## bench: in-process benchmarks and the control-plane bench table.
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./resourceslice/ ./conditions/
	@assets="$$(hack/envtest.sh)" && KUBEBUILDER_ASSETS="$$assets" $(GO) run ./bench $(BENCH_ARGS)

tidy:
	$(GO) mod tidy

## fuzz: every fuzz target for FUZZTIME each (default 20s); a failing input lands in testdata/fuzz/.
fuzz:
	@hack/fuzz.sh

## compat: build, vet and unit-test a temporary copy of the module against the newest
## controller-runtime v0.23.x, v0.24.x and v0.25.x (go.mod keeps the lowest we support).
compat:
	@hack/compat.sh
