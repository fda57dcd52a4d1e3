# agentd: one binary, two commands. `make run` serves on embedded defaults; `make test` runs
# every check and test, installing what the tests need when it runs as root.

GO      ?= go
BIN     := bin/agentd
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS := -s -w -X main.version=$(VERSION)

.PHONY: all build image run test deps kube check lint vet fmt-check tidy-check unit stress bench openapi clean

all: build

# The agentd binary, carrying the runtime-only build that sandboxes run (see
# docs/architecture.md): built twice from one main package, then packed together. The old
# binary goes first: go build leaves an output it finds up to date as it is, runtime and
# all, and packing it again would append a second runtime.
build:
	rm -f $(BIN)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -tags agentd_runtime_only -o $(BIN)-runtime ./cmd/agentd
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/agentd
	scripts/pack-runtime.sh $(BIN) $(BIN)-runtime
	rm -f $(BIN)-runtime

# agentd's container image (docs/kubernetes.md): an OCI image layout tarball of the binary of
# make build, written without a container engine, with Debian's CA certificates beside it. The
# same commit gives the same digest, which it prints. `ctr images import` loads the tarball;
# `skopeo copy oci-archive:bin/agentd-image.tar docker://REGISTRY/agentd:TAG` pushes it.
IMAGE_NAME ?= localhost/agentd:$(VERSION)
image: build
	$(GO) run ./cmd/agentd-image -binary $(BIN) -o $(BIN)-image.tar -name $(IMAGE_NAME) -version $(VERSION) -revision $(REVISION)

# Serve on the embedded defaults: SQLite in ./.agentd and the best sandbox backend here.
run: build
	./$(BIN) serve $(ARGS)

# Everything CI runs.
test: deps kube check unit

deps:
	@scripts/deps.sh

# The Kubernetes binaries that the kubernetes backend's test cluster runs, at the release
# internal/sandbox/kubernetes/kubetest/kbuild pins, built from the Go module proxy into
# ~/.cache/agentd-kube/<version>/bin once per machine and version: 6 to 17 minutes of 2 cores
# the first time, nothing after. Without them those tests skip (fail under CI).
kube: deps
	@scripts/kube-build.sh

check: fmt-check vet lint tidy-check

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...
	$(GO) vet -tags agentd_runtime_only ./cmd/agentd

lint:
	$(GO) tool staticcheck ./...
	$(GO) tool staticcheck -tags agentd_runtime_only ./cmd/agentd

# go.mod and go.sum hold every module the build and the tests need, on any machine: tidy
# without -e fails on a module it cannot fetch instead of leaving its lines out, so its answer
# does not depend on what this machine's module cache holds; verify checks the cache's copies
# against go.sum.
tidy-check:
	@$(GO) mod tidy -diff || { echo "go.mod or go.sum is not tidy: run go mod tidy"; exit 1; }
	@$(GO) mod verify

unit: build
	CGO_ENABLED=1 $(GO) test -race -count=1 -timeout 30m ./...

# The tests three times over while stress-ng keeps every CPU busy: what a loaded CI machine
# does to them. Tests must wait for conditions, never for the clock, so this passes too.
stress: build
	@scripts/deps.sh stress
	@scripts/stress.sh

# Performance figures, each beside the raw primitive measured in the same run. ARGS passes
# flags: ARGS="-profile prof" writes CPU and heap profiles of the heaviest figures (listings,
# agent steps, streams, the memory curve) into prof/; ARGS="-only listing,agent" measures only those.
bench: build
	$(GO) run ./cmd/agentd-bench $(ARGS)

# Rewrite docs/openapi.json from the code.
openapi:
	$(GO) test ./internal/httpapi -run TestOpenAPIDocument -update

clean:
	rm -rf bin
