# freshcache: build, run and test a kube-apiserver whose watch cache serves
# consistent reads. `make help` lists the targets.

SHELL := /usr/bin/env bash -o pipefail
GO ?= go
OUT ?= _output
BIN := $(OUT)/bin
LIB := staging/src/github.com/freshcache/watchcache
GOLANGCI_LINT_VERSION ?= v2.15.0
GOLANGCI_LINT := $(OUT)/tools/golangci-lint
# Extra arguments for `make run`, e.g. RUN_ARGS="--apiservers=2 --etcd-members=3".
RUN_ARGS ?=
TEST_TIMEOUT ?= 30m

.PHONY: help build run test test-lib test-root test-e2e verify fmt lint clean

help: ## Show this help.
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  %-14s %s\n", $$1, $$2}'

build: ## Build kube-apiserver, local-up and kubectl into _output/bin.
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/ ./cmd/kube-apiserver ./cmd/local-up
	$(GO) build -o $(BIN)/kubectl k8s.io/kubernetes/cmd/kubectl

run: build ## Run etcd + kube-apiserver locally (the README's run command).
	$(BIN)/local-up $(RUN_ARGS)

test: test-lib test-root ## Run every default test: library, root module and e2e.

test-lib: ## Test the watchcache library module (with invariant checks compiled in).
	cd $(LIB) && $(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./...
	cd $(LIB) && $(GO) test -count=1 -tags invariants -timeout $(TEST_TIMEOUT) ./...

test-root: build ## Test the root module, including the e2e test against the built binaries.
	FRESHCACHE_BIN_DIR=$(abspath $(BIN)) $(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./...

test-e2e: build ## Run only the end-to-end test.
	FRESHCACHE_BIN_DIR=$(abspath $(BIN)) $(GO) test -count=1 -timeout $(TEST_TIMEOUT) -v ./test/e2e/...

verify: fmt lint ## gofmt, go vet and golangci-lint on both modules.

fmt:
	@out=$$(gofmt -l cmd pkg test hack $(LIB) 2>/dev/null); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	cd $(LIB) && $(GO) vet ./...

$(GOLANGCI_LINT):
	GOBIN=$(abspath $(OUT)/tools) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)

lint: $(GOLANGCI_LINT)
	$(GOLANGCI_LINT) run ./...
	cd $(LIB) && $(abspath $(GOLANGCI_LINT)) run ./...

clean: ## Remove build output (keeps nothing under _output).
	rm -rf $(OUT)
