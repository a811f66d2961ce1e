# freshcache: build, run and test a kube-apiserver whose watch cache serves
# consistent reads. `make help` lists the everyday targets, `make help-all`
# the rest.

SHELL := /usr/bin/env bash -o pipefail
GO ?= go
OUT ?= _output
BIN := $(OUT)/bin
LIB := staging/src/github.com/freshcache/watchcache
# The lab: local-up, the real and simulated nodes, kind's files and the
# end-to-end tests, a module of its own (lab/go.mod) so that the product's
# go.mod carries none of their requirements.
LAB := lab
GOLANGCI_LINT_VERSION ?= v2.15.0
GOLANGCI_LINT := $(OUT)/tools/golangci-lint
# Extra arguments for `make run`, e.g. RUN_ARGS="--apiservers=2 --etcd-members=3".
RUN_ARGS ?=
TEST_TIMEOUT ?= 30m

.PHONY: help help-all build run test test-lib test-root test-bench test-bench-compare bench-compare test-e2e test-robustness test-robustness-replay test-robustness-long test-robustness-apiserver test-fault-heal test-fault-heal-short verify verify-docs figures fmt lint clean bench bench-full bench-targets bench-external-etcd bench-etcd-own-core bench-netpoll-floor bench-apiserver bench-trace bench-cpu-split bench-hollow-nodes bench-cluster bench-cluster-short bench-cluster-light bench-scale bench-scale-short bench-kep-2340 bench-kep-2340-short bench-watchlist bench-watchlist-short bench-stall bench-stall-short test-real-nodes build-coredns build-kwok demo-59848 demo-59848-short build-e2e-suite test-conformance test-kind test-kind-upgrade test-e2e-conformance

# A rule line ending in "## <text>" is an everyday target, which make help
# lists; one ending in "### <text>" is listed by make help-all (diagnostics,
# short and long variants, build steps). internal/repotools/makehelp (make
# verify) holds the Makefile to it: every .PHONY target in exactly one of
# the two lists, at most 15 in make help, every printed line under 100
# characters. HELP_LIST prints the rules with the mark $(1), in two columns.
define HELP_LIST
awk -v mark='$(1) ' '$$0 ~ "^[a-zA-Z0-9_-]+:[^#]*" mark {n[++c] = substr($$0, 1, index($$0, ":") - 1); h[c] = $$0; sub("^[^#]*" mark, "", h[c]); if (length(n[c]) > w) w = length(n[c])} END {for (i = 1; i <= c; i++) printf "  %-" w "s  %s\n", n[i], h[i]}' $(MAKEFILE_LIST)
endef
help: ### Show the everyday targets.
	@$(call HELP_LIST,##)
	@echo "make help-all lists the rest: diagnostics, short and long variants, build steps."

help-all: ### Show the other targets: this list.
	@$(call HELP_LIST,###)

# Every Kubernetes binary says it is v1.37.2, the module it is built from,
# instead of v0.0.0-master+$$Format:%H$$: nodes, `kubectl version` and
# /version report what a real cluster of that release would. The commit and
# build date are this repository's HEAD and its commit time, so a rebuild of
# the same commit links the same binary (no relink for a changed date).
KUBE_VERSION := v1.37.2
KUBE_GIT_COMMIT := $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
KUBE_GIT_TREE_STATE := $(shell git diff --quiet HEAD -- 2>/dev/null && echo clean || echo dirty)
KUBE_BUILD_DATE := $(shell TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null || echo 1970-01-01T00:00:00Z)
KUBE_VERSION_PKGS := k8s.io/component-base/version k8s.io/client-go/pkg/version
KUBE_LDFLAGS := $(foreach p,$(KUBE_VERSION_PKGS),-X $(p).gitVersion=$(KUBE_VERSION) -X $(p).gitMajor=1 -X $(p).gitMinor=37 -X $(p).gitCommit=$(KUBE_GIT_COMMIT) -X $(p).gitTreeState=$(KUBE_GIT_TREE_STATE) -X $(p).buildDate=$(KUBE_BUILD_DATE))
# The upstream components local-up runs beside our kube-apiserver, built
# from the same k8s.io/kubernetes module with no source changes (the lab's
# go.mod's tool block keeps their requirements).
# kubelet and kube-proxy are for local-up --real-nodes.
UPSTREAM_CMDS := kube-controller-manager kube-scheduler kubemark kubectl kubelet kube-proxy

# Build kube-apiserver, local-up, kube-controller-manager, kube-scheduler,
# kubemark, kubectl, kubelet, kube-proxy and freshcache-pause into
# _output/bin (~1 min with Go's build cache warm; a cold first build 10-20
# min).
build: ## Our kube-apiserver, local-up and upstream's binaries (~1 min; cold 10-20 min)
	@mkdir -p $(BIN)
	$(GO) build -ldflags "$(KUBE_LDFLAGS)" -o $(BIN)/ ./cmd/kube-apiserver
	$(GO) -C $(LAB) build -ldflags "$(KUBE_LDFLAGS)" -o $(abspath $(BIN))/ ./cmd/local-up ./cmd/kubemark-watchlist-off $(addprefix k8s.io/kubernetes/cmd/,$(UPSTREAM_CMDS))
	CGO_ENABLED=0 $(GO) -C $(LAB) build -o $(abspath $(BIN))/ ./cmd/freshcache-pause

# CoreDNS (tools/coredns, a module of its own) is only for real nodes: it
# is built when RUN_ARGS ask for them.
run: build $(if $(findstring --real-nodes,$(RUN_ARGS)),build-coredns) $(if $(findstring --kwok-nodes,$(RUN_ARGS)),build-kwok) ## A local cluster: etcd, our kube-apiserver, controllers, hollow nodes [RUN_ARGS]
	$(BIN)/local-up $(RUN_ARGS)

# make test runs every test in the repository, each through the target
# that sets what it needs. A plain `go test ./...` skips the tests that need
# more than their package: each checks an environment variable, which the
# targets in parentheses set. make test runs all of those targets but the
# ones that need root (test-real-nodes, demo-59848, test-conformance) and
# the long runs whose short modes it runs (test-robustness-long,
# test-fault-heal, bench-compare).
#
#   FRESHCACHE_BIN_DIR=<dir>      the built binaries (make build), for the tests that start
#                                 kube-apiserver, local-up or kubemark: lab/test/e2e (test-root,
#                                 test-e2e), the HTTP and fault-heal robustness runs,
#                                 tools/bench/watchlist's smoke run (test-bench), lab/test/demo59848,
#                                 lab/test/realnode and lab/test/upstreame2e (their targets below)
#   FRESHCACHE_ROBUSTNESS=1       lab/test/robustness's etcd-backed runs, minutes each (test-robustness,
#                                 test-robustness-apiserver with FRESHCACHE_BIN_DIR,
#                                 test-fault-heal-short; test-robustness-long, test-fault-heal)
#   ROBUSTNESS_REPLAY=<file>      the history.json TestReplayReport re-checks offline
#                                 (test-robustness replays its negative control's;
#                                 test-robustness-replay REPLAY=<file>)
#   FRESHCACHE_BENCH=1            tools/bench's TestCompare, the side-by-side cache comparison
#                                 (test-bench-compare at 2,000 pods; bench-compare at 20,000)
#   FRESHCACHE_VERIFY_DOCS=1      the repository checks: links, figures, make help (verify-docs)
#   FRESHCACHE_E2E_SUITE=<dir>    upstream's e2e.test and ginkgo (test-e2e-conformance;
#                                 test-conformance)
#   FRESHCACHE_E2E_REAL_NODE=1    upstream's e2e tests on a real node, as root (test-conformance)
#   FRESHCACHE_DEMO_59848=1       the kubernetes#59848 replay (demo-59848-short; demo-59848, root)
#   FRESHCACHE_REAL_NODES=1       a real node that changes the host, as root (test-real-nodes)
#
# The other variables the tests read choose how a run goes, not whether
# it runs: ROBUSTNESS_SEED, _DURATION, _REPORT_DIR, _KLOG; HEAL_*;
# DEMO_59848_*; FRESHCACHE_E2E_IMPLEMENTATIONS, _OUT, _PROCS, _TIMEOUT,
# _REPORT, _COMMAND; FRESHCACHE_BENCH_PODS, _NODES, _REPEATS,
# _LIST_SECONDS; FRESHCACHE_SEED (the library's randomized tests).
# Run every test but the root-only and long runs: make verify, library, root
# module and e2e, the benchmark tools and a short TestCompare, the short
# robustness runs in process (then a replay of the negative control) and
# over HTTP, the short fault-heal run, the discriminating kubernetes#59848
# pair and upstream's e2e tests on freshcache+FreshResourceVersionZero (~38
# min here; what .ci/run runs).
test: verify test-lib test-root test-bench test-bench-compare test-robustness test-robustness-apiserver test-fault-heal-short demo-59848-short test-e2e-conformance ## Every test but root-only and long runs; what .ci/run runs (~38 min)

# Test the watchcache library module, again with invariant checks
# compiled in (~7 min).
test-lib: ### The library, also with invariants (~7 min)
	cd $(LIB) && $(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./...
	cd $(LIB) && $(GO) test -count=1 -tags invariants -timeout $(TEST_TIMEOUT) ./...

# Test the root module (the product) and the lab module, the e2e test
# against the built binaries included (~4 min after make build).
test-root: build build-kwok ### The product and lab modules, e2e against the built binaries (~4 min)
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./...
	FRESHCACHE_BIN_DIR=$(abspath $(BIN)) $(GO) -C $(LAB) test -count=1 -timeout $(TEST_TIMEOUT) ./...

BENCH_MOD := tools/bench

# Test the benchmark tools' module (tools/bench: harness, diagnostics,
# reports, the WatchList smoke run) (~1.5 min after make build).
test-bench: build build-kwok ### The benchmark tools' module (tools/bench) (~1.5 min after make build)
	cd $(BENCH_MOD) && FRESHCACHE_BIN_DIR=$(abspath $(BIN)) $(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./...

# TestCompare (tools/bench/storage) builds upstream's cacher and freshcache
# over one embedded etcd and compares heap per object, rv=0 LIST by node
# and watch dispatch to 1,000 watchers, failing on any error, wrong count
# or undelivered event. test-bench-compare runs it small and once, for
# make test; bench-compare at its own shape (20,000 pods, 3 repeats), whose
# table means something on a quiet machine only.
COMPARE_SHORT := FRESHCACHE_BENCH_PODS=2000 FRESHCACHE_BENCH_NODES=20 FRESHCACHE_BENCH_REPEATS=1 FRESHCACHE_BENCH_LIST_SECONDS=1
# tools/bench's TestCompare at 2,000 pods, one repeat: both caches answer
# and deliver everything (~20 s; part of make test).
test-bench-compare: ### TestCompare at 2,000 pods, once: both caches answer everything (~20 s)
	cd $(BENCH_MOD) && FRESHCACHE_BENCH=1 $(COMPARE_SHORT) $(GO) test -count=1 -timeout 15m -v -run '^TestCompare$$' ./storage/

# tools/bench's TestCompare at 20,000 pods on 200 nodes, 3 repeats: heap per
# object, rv=0 LIST by node, watch dispatch, upstream's cacher vs freshcache
# (~1.5 min).
bench-compare: ### TestCompare at 20k pods x3: heap, rv=0 LIST, watch dispatch (~1.5 min)
	cd $(BENCH_MOD) && FRESHCACHE_BENCH=1 $(GO) test -count=1 -timeout 60m -v -run '^TestCompare$$' ./storage/

# test-real-nodes runs local-up --real-nodes=1 (containerd, a real kubelet
# and kube-proxy; lab/pkg/localup/realnode) as root: a busybox pod with kubectl
# logs and exec, a Service, a SIGKILL of local-up and a start that undoes its leftovers,
# then checks the host is as before (lab/test/realnode). It installs the
# Debian packages it needs when they are missing and changes the host
# while it runs, so make test leaves it out.
# Build CoreDNS v1.14.6 with the plugins local-up --real-nodes uses
# (tools/coredns) into _output/bin (~8 min the first time on a busy 2-core
# machine).
build-coredns: ### CoreDNS v1.14.6 with local-up's plugins into _output/bin (~8 min cold)
	@mkdir -p $(BIN)
	cd tools/coredns && CGO_ENABLED=0 $(GO) build -ldflags "-s -w" -o $(abspath $(BIN))/coredns .

# kwok (tools/kwok, a module of its own: kwok v0.8.0 builds against the
# k8s.io libraries of v0.36) simulates nodes for local-up --kwok-nodes:
# one controller keeps thousands of Node objects Ready and plays their
# pods' lifecycle (lab/pkg/localup/kwoknode).
build-kwok: ### kwok v0.8.0's controller, unchanged, into _output/bin (~1.5 min cold)
	@mkdir -p $(BIN)
	cd tools/kwok && CGO_ENABLED=0 $(GO) build -ldflags "-s -w" -o $(abspath $(BIN))/kwok sigs.k8s.io/kwok/cmd/kwok

# Real node end to end as root: containerd + kubelet + kube-proxy + CoreDNS,
# a pod's logs and exec, a Service by name, the apiserver from a pod through
# the kubernetes Service, crash recovery, host restored; hollow nodes leave
# iptables alone (~1 min, plus make build; the first make build-coredns takes ~8
# min on a busy 2-core machine).
test-real-nodes: build build-coredns ### (root) A real node end to end: containerd, kubelet, CoreDNS (~1 min)
	FRESHCACHE_REAL_NODES=1 FRESHCACHE_BIN_DIR=$(abspath $(BIN)) $(GO) -C $(LAB) test -count=1 -timeout 15m -v ./test/realnode/

test-e2e: build build-kwok ### Run only the end-to-end test (~3.5 min after make build).
	FRESHCACHE_BIN_DIR=$(abspath $(BIN)) $(GO) -C $(LAB) test -count=1 -timeout $(TEST_TIMEOUT) -v ./test/e2e/...

# Robustness (lab/test/robustness): 3-member etcd behind fault proxies, two
# caches, Kubernetes-shaped traffic, porcupine and watch-guarantee checks.
# The etcd-backed runs only run with FRESHCACHE_ROBUSTNESS=1, so `go test
# ./...` in test-root runs just the checker unit tests; the runs over HTTP
# also need FRESHCACHE_BIN_DIR (test-robustness-apiserver). A failing run
# prints its seed (replay: ROBUSTNESS_SEED=<seed>) and a report directory
# under ROBUSTNESS_REPORT_DIR.
ROBUSTNESS_REPORTS := $(abspath $(OUT))/robustness
ROBUSTNESS_ENV := FRESHCACHE_ROBUSTNESS=1 ETCD_CLIENT_DEBUG=error ROBUSTNESS_REPORT_DIR=$(ROBUSTNESS_REPORTS)
DURATION ?= 30m
# Which variants the long run covers (a go test -run pattern).
ROBUSTNESS_RUN ?= .

# Short robustness run in process: checker unit tests, upstream negative
# control, freshcache (rv="", FreshResourceVersionZero),
# then test-robustness-replay of the negative control's history (~5 min).
test-robustness: ## Short robustness run in process, negative control and its replay (~5 min)
	$(ROBUSTNESS_ENV) $(GO) -C $(LAB) test -count=1 -timeout 15m -v ./test/robustness/... 2>&1 | grep -vE '^(\{"level"|[IWE][0-9]{4} )'
	$(MAKE) --no-print-directory -f $(firstword $(MAKEFILE_LIST)) test-robustness-replay REPLAY=

# test-robustness-replay re-checks a dumped run offline (TestReplayReport,
# lab/test/robustness/checker): every checker and porcupine again, and for each
# key porcupine rejects, the shortest failing prefix of its operations.
# REPLAY is a report's history.json; by default the newest negative-control
# report (upstream-rv0-<seed>) under ROBUSTNESS_REPORT_DIR, which
# test-robustness has just written.
REPLAY ?=
# Re-check a dumped robustness history offline: make test-robustness-replay
# [REPLAY=<report>/history.json], by default the newest negative control's
# (seconds; test-robustness ends with it).
test-robustness-replay: ### Re-check a robustness history offline [REPLAY=<dir>/history.json]
	@h='$(REPLAY)'; h=$${h:-$$(ls -t $(ROBUSTNESS_REPORTS)/upstream-rv0-*/history.json 2>/dev/null | head -1)}; \
	if [ -z "$$h" ]; then echo "no $(ROBUSTNESS_REPORTS)/upstream-rv0-*/history.json: run make test-robustness, or pass REPLAY=<report>/history.json" >&2; exit 1; fi; \
	echo "replaying $$h"; \
	ROBUSTNESS_REPLAY="$$h" $(GO) -C $(LAB) test -count=1 -v -run '^TestReplayReport$$' ./test/robustness/checker/

# Long robustness run: make test-robustness-long DURATION=30m
# [ROBUSTNESS_RUN=Freshcache]; DURATION per in-process variant, four in turn
# (~2 h at the default).
test-robustness-long: ### Long robustness run, DURATION=30m per variant [ROBUSTNESS_RUN] (~2 h)
	$(ROBUSTNESS_ENV) ROBUSTNESS_DURATION=$(DURATION) $(GO) -C $(LAB) test -count=1 -timeout 0 -v -run '$(ROBUSTNESS_RUN)' ./test/robustness/ 2>&1 | grep -vE '^(\{"level"|[IWE][0-9]{4} )'

# Robustness over HTTP: two real kube-apiservers (upstream control,
# freshcache+FreshResourceVersionZero), client-go traffic (~3 min after make
# build; part of make test).
test-robustness-apiserver: build ### Robustness over HTTP through two real kube-apiservers (~3 min)
	$(ROBUSTNESS_ENV) FRESHCACHE_BIN_DIR=$(abspath $(BIN)) $(GO) -C $(LAB) test -count=1 -timeout 30m -v -run 'TestKubeAPIServer' ./test/robustness/ 2>&1 | grep -vE '^(\{"level"|[IWE][0-9]{4} )'

# Fault heal (lab/test/robustness TestFaultHeal): for upstream's cacher,
# freshcache with FreshResourceVersionZero off and on, one after the other,
# a fresh 3-member etcd with apiserver W on member 0 (a writer bumps a
# counter ConfigMap every 20 ms) and R on member 1 (GET/LIST rv="" and
# rv="0", raw HTTPS, no client retries); member 1 is cut off for 7 s every
# 15 s. Counts stale reads, 429s, late 429s (after a heal), 5xx and errors
# per read kind into docs/results/fault-heal.md; the apiservers' logs and
# the recording (recording.json) stay in $(HEAL_LOG_DIR)/<implementation>.
# HEAL_DURATION is the traffic per implementation; HEAL_STRICT=1 also fails
# on the availability targets (no late 429, no more 5xx or errors than
# upstream). `make test` runs test-fault-heal-short: one cut per
# implementation, the report under _output, the correctness assertions
# only (no stale consistent read; none at all with FreshResourceVersionZero).
HEAL_DURATION ?= 80s
HEAL_STRICT ?=
HEAL_LOG_DIR ?= $(abspath $(OUT))/fault-heal
# Fault heal: member 1 cut off and healed under reads, upstream vs
# freshcache (two variants); writes docs/results/fault-heal.md (~6 min).
test-fault-heal: build ### An etcd member cut off and healed under reads; docs/results (~6 min)
	$(ROBUSTNESS_ENV) FRESHCACHE_BIN_DIR=$(abspath $(BIN)) HEAL_DURATION=$(HEAL_DURATION) HEAL_STRICT=$(HEAL_STRICT) \
		HEAL_REPORT=$(abspath docs/results/fault-heal.md) HEAL_LOG_DIR=$(HEAL_LOG_DIR) \
		$(GO) -C $(LAB) test -count=1 -timeout 30m -v -run '^TestFaultHeal$$' ./test/robustness/ 2>&1 | grep -vE '^(\{"level"|[IWE][0-9]{4} )'

# Fault heal with one cut per implementation, report in _output (~2 min
# after make build; part of make test).
test-fault-heal-short: build ### Fault heal, one cut per implementation; report in _output (~2 min)
	$(ROBUSTNESS_ENV) FRESHCACHE_BIN_DIR=$(abspath $(BIN)) HEAL_DURATION=20s \
		HEAL_REPORT=$(abspath $(OUT))/fault-heal-short.md HEAL_LOG_DIR=$(HEAL_LOG_DIR)-short \
		$(GO) -C $(LAB) test -count=1 -timeout 15m -v -run '^TestFaultHeal$$' ./test/robustness/ 2>&1 | grep -vE '^(\{"level"|[IWE][0-9]{4} )'

# demo-59848 replays kubernetes#59848: a 3-member etcd behind peer fault
# proxies, apiserver A on member 0 with the controllers, apiserver B on
# member 1; member 1 is isolated, a pod is deleted through A and a kubelet
# restarts on B. By default (DEMO_59848_NODE=real, needs root) the kubelet
# is the real one on containerd (local-up --real-nodes=1): a StatefulSet's
# web-0 runs on it, is deleted and re-created on a hollow node, and the
# question is containerd's own record: a container of the old web-0
# created after the restart, while the new one runs. DEMO_59848_NODE=hollow
# replays it with a hollow kubelet (kubemark) instead. Every implementation
# (upstream, freshcache with its default gates, and freshcache-rv0-off) with the
# kubelet's client in both modes a fleet has: WatchListClient on (1.35+) and
# off (1.34 and older: it lists first; the real kubelet gets
# --feature-gates=WatchListClient=false, the hollow one is
# kubemark-watchlist-off). Logs and B's audit log stay in
# $(OUT)/demo-59848/<configuration>/<trial>. DEMO_59848_RUN=<implementation,...>,
# DEMO_59848_WATCHLIST=on|off and DEMO_59848_TRIALS=n select runs, and
# DEMO_59848_OBSERVE (default 60s) is how long the restarted kubelet is
# watched (a watch-list kubelet falls back to rv=0 only when its watch
# times out, after 5-10 min). The
# full run's report goes to docs/results/demo-59848.md, a selection's to
# $(OUT)/demo-59848/report.md.
DEMO_59848_RUN ?=
DEMO_59848_WATCHLIST ?=
DEMO_59848_TRIALS ?= 3
DEMO_59848_NODE ?= real
DEMO_59848_OBSERVE ?= 60s
DEMO_59848_REPORT ?= $(if $(DEMO_59848_RUN)$(DEMO_59848_WATCHLIST),$(abspath $(OUT))/demo-59848/report.md,$(abspath docs/results/demo-59848.md))
DEMO_59848_ENV = FRESHCACHE_DEMO_59848=1 FRESHCACHE_BIN_DIR=$(abspath $(BIN)) DEMO_59848_OUT=$(abspath $(OUT))/demo-59848
# kubernetes#59848 on a real kubelet and containerd (root), watch-list on
# and off, upstream, freshcache (default gates) and freshcache with FreshResourceVersionZero=false, 3 trials
# each (~30 min; writes docs/results/demo-59848.md).
demo-59848: build ## (root) kubernetes#59848 replayed on a real kubelet; docs/results (~30 min)
	$(DEMO_59848_ENV) DEMO_59848_NODE=$(DEMO_59848_NODE) DEMO_59848_REPORT=$(DEMO_59848_REPORT) DEMO_59848_OBSERVE=$(DEMO_59848_OBSERVE) DEMO_59848_RUN=$(DEMO_59848_RUN) DEMO_59848_WATCHLIST=$(DEMO_59848_WATCHLIST) DEMO_59848_TRIALS=$(DEMO_59848_TRIALS) \
		$(GO) -C $(LAB) test -count=1 -timeout 120m -v -run TestDemo59848 ./test/demo59848/ 2>&1 | grep -vE '^(\{"level"|[IWE][0-9]{4} )'

# The discriminating pair on a hollow kubelet: a listing kubelet on upstream
# (must start the deleted pod) and on freshcache with its default gates
# (must not) (~3.5 min after make build; part of make test).
demo-59848-short: build ### The discriminating #59848 pair on a hollow kubelet (~3.5 min)
	$(DEMO_59848_ENV) DEMO_59848_NODE=hollow DEMO_59848_REPORT=$(abspath $(OUT))/demo-59848-short.md DEMO_59848_RUN=upstream,freshcache DEMO_59848_WATCHLIST=off DEMO_59848_TRIALS=1 \
		$(GO) -C $(LAB) test -count=1 -timeout 20m -v -run TestDemo59848 ./test/demo59848/ 2>&1 | grep -vE '^(\{"level"|[IWE][0-9]{4} )'

# Upstream's e2e tests (lab/test/upstreame2e): e2e.test and ginkgo built from
# k8s.io/kubernetes v1.37.2 with no source changes; tools/e2esuite is the
# nested module that holds their requirements. lab/test/upstreame2e/tests.txt
# is the selection. Each run starts a fresh local-up cluster
# (controller-manager, scheduler, 2 hollow nodes).
E2E_SUITE_MOD := tools/e2esuite
E2E_OUT := $(abspath $(OUT))/e2e-conformance
E2E_PROCS ?= 4
# E2E_CONFORMANCE_IMPLEMENTATIONS picks test-conformance's runs; a subset
# writes its report under _output, not over docs/results.
COMMA := ,
E2E_CONFORMANCE_IMPLEMENTATIONS ?= upstream,freshcache,freshcache-fresh-rv0
E2E_CONFORMANCE_REPORT ?= $(if $(filter upstream$(COMMA)freshcache$(COMMA)freshcache-fresh-rv0,$(E2E_CONFORMANCE_IMPLEMENTATIONS)),$(abspath docs/results/e2e-conformance.md),$(E2E_OUT)/report.md)
E2E_ENV = FRESHCACHE_BIN_DIR=$(abspath $(BIN)) FRESHCACHE_E2E_SUITE=$(abspath $(BIN)) FRESHCACHE_E2E_OUT=$(E2E_OUT) FRESHCACHE_E2E_PROCS=$(E2E_PROCS)

# Build upstream's e2e.test and the ginkgo runner (k8s.io/kubernetes
# v1.37.2, unchanged) into _output/bin (~30 s with Go's build cache warm).
build-e2e-suite: ### Upstream's e2e.test, ginkgo and agnhost into _output/bin (~30 s warm)
	@mkdir -p $(BIN)
	cd $(E2E_SUITE_MOD) && $(GO) test -c -ldflags "$(KUBE_LDFLAGS)" -o $(abspath $(BIN))/e2e.test k8s.io/kubernetes/test/e2e
	cd $(E2E_SUITE_MOD) && $(GO) build -o $(abspath $(BIN))/ginkgo github.com/onsi/ginkgo/v2/ginkgo
	cd $(E2E_SUITE_MOD) && CGO_ENABLED=0 $(GO) build -ldflags "-s -w" -o $(abspath $(BIN))/agnhost k8s.io/kubernetes/test/images/agnhost

# (root) Upstream's e2e tests, the API-only ones and those that need
# containers, on one real node, for upstream, freshcache and
# freshcache+FreshResourceVersionZero; writes
# docs/results/e2e-conformance.md (~80 min: about 25 min per implementation,
# 460 tests, 4 ginkgo processes).
test-conformance: build build-coredns build-e2e-suite ## (root) Upstream's 460 e2e tests, a real node, 3 caches; docs/results (~80 min)
	$(E2E_ENV) FRESHCACHE_E2E_REAL_NODE=1 FRESHCACHE_E2E_TIMEOUT=150m FRESHCACHE_E2E_IMPLEMENTATIONS=$(E2E_CONFORMANCE_IMPLEMENTATIONS) FRESHCACHE_E2E_REPORT=$(E2E_CONFORMANCE_REPORT) \
		$(GO) -C $(LAB) test -count=1 -timeout 8h -v -run TestUpstreamConformance ./test/upstreame2e/

# (root) The same selection on a kind cluster (make kind-up's 1+1, offline
# images), once with upstream's cacher and once with freshcache on its
# default gates (rv=0 fresh); the e2e test images are built here and loaded
# into the nodes; kubectl is build-kind-bins' (make build is not needed).
# Writes docs/results/e2e-kind.md. Needs make kind-images.
E2E_KIND_IMPLEMENTATIONS ?= upstream,freshcache-fresh-rv0
# Our kube-apiserver in a kind node image carries the version stamp (e2e
# tests parse the server version); make kind-up and the kind tests pass it.
KIND_APISERVER_ENV = APISERVER_LDFLAGS="-s -w $(KUBE_LDFLAGS)"
test-kind: build-kind-bins build-coredns build-e2e-suite ### (root) test-conformance's selection on kind, 2 caches (~35 min each)
	$(E2E_ENV) FRESHCACHE_E2E_OUT=$(abspath $(OUT))/e2e-kind FRESHCACHE_E2E_KIND=1 FRESHCACHE_E2E_TIMEOUT=150m \
		FRESHCACHE_E2E_KUBECTL=$(abspath $(KIND_BIN))/kubectl $(KIND_APISERVER_ENV) \
		FRESHCACHE_E2E_IMPLEMENTATIONS=$(E2E_KIND_IMPLEMENTATIONS) FRESHCACHE_E2E_COMMAND="make test-kind" \
		FRESHCACHE_E2E_REPORT=$(if $(filter upstream$(COMMA)freshcache-fresh-rv0,$(E2E_KIND_IMPLEMENTATIONS)),$(abspath docs/results/e2e-kind.md),$(abspath $(OUT))/e2e-kind/report.md) \
		$(GO) -C $(LAB) test -count=1 -timeout 6h -v -run TestUpstreamConformance ./test/upstreame2e/

# (root) The rolling upgrade and rollback on make kind-up's --ha cluster
# (lab/test/kindupgrade): under steady traffic the three kube-apiservers are
# restarted in turn on upstream's cacher (the control), moved to freshcache in
# turn, and moved back; writes docs/results/kind-upgrade.md. Needs make kind-images.
test-kind-upgrade: ### (root) kind --ha apiservers to freshcache and back (~18 min)
	$(KIND_APISERVER_ENV) FRESHCACHE_BIN_DIR=$(abspath $(BIN)) FRESHCACHE_KIND_UPGRADE=1 FRESHCACHE_KIND_UPGRADE_OUT=$(abspath $(OUT))/kind-upgrade \
		FRESHCACHE_KIND_UPGRADE_REPORT=$(abspath docs/results/kind-upgrade.md) \
		$(GO) -C $(LAB) test -count=1 -timeout 90m -v -run TestKindUpgrade ./test/kindupgrade/

# E2E_IMPLEMENTATIONS picks test-e2e-conformance's runs (lab/test/upstreame2e
# Implementations), e.g. upstream,freshcache-fresh-rv0 for both.
E2E_IMPLEMENTATIONS ?= freshcache-fresh-rv0
# Upstream's e2e tests on freshcache+FreshResourceVersionZero only (~10 min
# after make build and build-e2e-suite; part of make test).
test-e2e-conformance: build build-e2e-suite ### Upstream's e2e on freshcache-fresh-rv0 and hollow nodes (~10 min)
	$(E2E_ENV) FRESHCACHE_E2E_IMPLEMENTATIONS=$(E2E_IMPLEMENTATIONS) \
		$(GO) -C $(LAB) test -count=1 -timeout 90m -v -run TestUpstreamConformance ./test/upstreame2e/

# gofmt, go vet and golangci-lint on every module; the repository checks
# (links, figures, make help) (~1 min; seconds with warm caches).
verify: fmt lint verify-docs ## gofmt, go vet, golangci-lint and the repository checks (~1 min; seconds warm)

# verify-docs: links in markdown stay inside the repository and resolve
# (files and #anchors), section citations name existing headings, and no
# text cites a tracker's issue number or a notes directory outside the
# repository (internal/repotools/docscheck/doc.go lists the rules); every marked
# figure agrees with the docs/results file it comes from, within its
# tolerance, every figure key is quoted somewhere, and the results index
# lists exactly the files of docs/results (internal/repotools/figures/doc.go); make
# help or make help-all lists every .PHONY target once, with a text
# (internal/repotools/makehelp/doc.go).
verify-docs: ### make verify's repository checks: links, citations, figures, make help
	FRESHCACHE_VERIFY_DOCS=1 $(GO) test -count=1 -run TestRepository ./internal/repotools/docscheck/ ./internal/repotools/figures/ ./internal/repotools/makehelp/

# After a benchmark rerun: rewrite the marked figures in the docs from
# docs/results, then check them (internal/repotools/figures).
figures: ## After a benchmark rerun: rewrite the docs' marked figures from docs/results
	$(GO) run ./internal/repotools/figures/cmd/figures -w

fmt: ### gofmt on the source trees, go vet on every module (seconds warm)
	@out=$$(gofmt -l cmd internal pkg hack tools $(LAB) $(LIB) 2>/dev/null); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) -C $(LAB) vet ./...
	cd $(LIB) && $(GO) vet ./...
	cd $(BENCH_MOD) && $(GO) vet ./...
	cd $(E2E_SUITE_MOD) && $(GO) vet ./...

$(GOLANGCI_LINT):
	GOBIN=$(abspath $(OUT)/tools) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)

# golangci-lint on the root, lab, library and bench modules; installs it
# into _output/tools first (seconds with warm caches).
lint: $(GOLANGCI_LINT) ### golangci-lint on every module; installs it in _output/tools (seconds)
	$(GOLANGCI_LINT) run ./...
	cd $(LAB) && $(abspath $(GOLANGCI_LINT)) run --config $(abspath .golangci.yml) ./...
	cd $(LIB) && $(abspath $(GOLANGCI_LINT)) run ./...
	cd $(BENCH_MOD) && $(abspath $(GOLANGCI_LINT)) run --config $(abspath .golangci.yml) ./...

# Benchmarks (tools/bench, a module of its own so that the product's
# go.mod carries no plotting or profiling libraries;
# tools/bench/cmd/freshcache-bench; docs/results/README.md explains every
# number). `make bench` is the short shape, under 10 minutes on 2 cores:
# 2,000 pods on 20 nodes (100 pods per node, as in the 20k/200 target
# shape), 1 s per row after 0.2 s of warm-up, 4 watched nodes, and the heap
# per cached object at 20k pods. BENCH_ARGS adds flags to the storage run.
BENCH_OUT ?= docs/results
# The diagnostics of the consistent-read cost investigation write under
# _output (docs/investigations/consistent-read-cost.md has their findings);
# docs/results keeps one run of each benchmark scenario.
DIAG_OUT ?= $(OUT)/investigations
BENCH_ARGS ?=
BENCH := $(BIN)/freshcache-bench
BENCH_SHORT := --pods=2000 --nodes=20 --duration=1s --warmup=200ms --watch-nodes=4 --sweep-lease-rates=0,100,400

# The bench binary carries the commit it was built from (reports quote it),
# not whatever HEAD is when a later step of the same run reads it. It is
# +dirty when a tracked file differs from that commit, docs/results aside:
# those are the benchmarks' own output, so a target that runs after
# another (bench-full after bench-targets) still names a clean commit.
BENCH_COMMIT = $(shell git rev-parse HEAD 2>/dev/null || echo unknown)$(shell git diff --quiet HEAD -- ':/' ':(top,exclude)docs/results' 2>/dev/null || echo +dirty)

$(BENCH): FORCE
	@mkdir -p $(BIN)
	cd $(BENCH_MOD) && $(GO) build -ldflags "-X github.com/freshcache/freshcache/tools/bench/report.buildCommit=$(BENCH_COMMIT)" -o $(abspath $(BENCH)) ./cmd/freshcache-bench

FORCE:

# bench's heap check at 20,000 pods goes to _output/bench: bench-full's
# memory-full measures the same 20,000 pods next to 100,000, and
# docs/results keeps one file set per scenario.
# Short side-by-side benchmark (<10 min), a smoke run whose figures
# docs/results does not keep (bench-full's storage-20k supersedes them):
# storage level (_output/bench/storage.md) + heap per object at 20,000 pods
# (_output/bench/memory.md).
bench: $(BENCH) ### Short storage and heap smoke benchmark into _output/bench (<10 min)
	@mkdir -p $(OUT)/bench
	$(BENCH) storage $(BENCH_SHORT) --name=storage --out-dir=$(OUT)/bench $(BENCH_ARGS)
	$(BENCH) memory --pods=20000 --nodes=200 --name=memory --out-dir=$(OUT)/bench

# bench-full runs the etcd backend on fewer scenarios at the large shapes:
# every etcd LIST decodes every pod (~0.8 s of CPU per LIST at 20k pods).
# Large shapes: storage at 20k/200 and 100k/5000, heap at 20k and 100k,
# through kube-apiserver (~30 min).
bench-full: $(BENCH) build ## Storage and heap at 20k and 100k pods, apiserver rows; docs/results (~30 min)
	$(BENCH) storage --pods=20000 --nodes=200 --etcd-scenarios=list-node,get --name=storage-20k --out-dir=$(BENCH_OUT) $(BENCH_ARGS)
	$(BENCH) storage --pods=100000 --nodes=5000 --etcd-scenarios=get --name=storage-100k --out-dir=$(BENCH_OUT) $(BENCH_ARGS)
	$(BENCH) memory --pods=20000,100000 --nodes=200 --name=memory-full --out-dir=$(BENCH_OUT)
	$(BENCH) apiserver --bin-dir=$(BIN) --name=apiserver --out-dir=$(BENCH_OUT)

# bench-targets measures the targets at 32 clients:
#   - consistent-reads: the consistent-read target shape (20k pods on 200
#     nodes, 32 clients, 100 lease writes/s and no pod writes), every rv
#     pair three times, the target being the median of the pairs;
#   - storage-targets: the rv=0 parity rows (freshcache's rv=0 LISTs and
#     watch fan-out against upstream's) at the harness's default background
#     load (10 pod writes/s as well), plus the gate control (what a wait of
#     0.7-3 ms alone costs the same closed loop; docs/results/README.md).
CONSISTENT_READ_SHAPE := --pods=20000 --nodes=200 --scenarios=list-node,get --etcd-scenarios=get --rvs=consistent,0,consistent,0,consistent,0 --concurrency=32 --pod-write-rate=0 --lease-write-rate=100 --no-sweep

# Targets at 20k pods/200 nodes, c=32: the consistent-read target shape (3
# repeats) and the rv=0 parity rows + gate control (~7 min).
bench-targets: $(BENCH) ### Consistent-read target shape and rv=0 parity rows at 20k pods (~7 min)
	$(BENCH) storage $(CONSISTENT_READ_SHAPE) --name=consistent-reads --out-dir=$(BENCH_OUT) $(BENCH_ARGS)
	$(BENCH) storage --pods=20000 --nodes=200 --scenarios=list-node,list-all,list-label,get,watch-fanout --etcd-scenarios=get --concurrency=32 --no-sweep --gate-control=700us,1500us,3ms --name=storage-targets --out-dir=$(BENCH_OUT) $(BENCH_ARGS)

# bench-external-etcd is the consistent-read target shape with etcd in a
# process of its own (same cores), as in a real control plane: it separates
# what the in-process etcd costs the cache's Go runtime from what the
# protocol does.
bench-external-etcd: $(BENCH) ### Consistent-read target shape with etcd in its own process (~3 min)
	@mkdir -p $(DIAG_OUT)
	BENCH=$(BENCH) hack/bench-external-etcd.sh $(CONSISTENT_READ_SHAPE) --name=consistent-reads-external-etcd --out-dir=$(DIAG_OUT) $(BENCH_ARGS)

# bench-etcd-own-core is the same with etcd pinned to CPU 1 and the bench
# (clients, caches, harness) to CPU 0: etcd's server half of each fetch
# leaves the cache's core, as when etcd runs on machines of its own. Every
# row then has one core, so compare its rows with each other only.
bench-etcd-own-core: $(BENCH) ### Consistent-read target shape, etcd on CPU 1, bench on CPU 0 (~2 min)
	@mkdir -p $(DIAG_OUT)
	ETCD_CPUS=1 BENCH_CPUS=0 BENCH=$(BENCH) hack/bench-external-etcd.sh $(CONSISTENT_READ_SHAPE) --note="etcd pinned to CPU 1, this process to CPU 0 (taskset; make bench-etcd-own-core)" --name=consistent-reads-etcd-own-core --out-dir=$(DIAG_OUT) $(BENCH_ARGS)

# bench-trace runs the consistent-read target shape's LIST rows
# (freshcache only) with an execution trace of each measured row, then
# splits every freshness wait at its release (freshcache-bench trace-wait;
# docs/investigations/consistent-read-cost.md).
# Traced rows run slower than untraced ones; compare them with each other.
TRACE_DIR ?= $(OUT)/traces
# The consistent-read target shape's LIST rows under execution traces, and
# where each freshness wait went (~1 min).
bench-trace: $(BENCH) ### The target shape's LIST rows traced: where each wait went (~1 min)
	@mkdir -p $(DIAG_OUT)
	rm -rf $(TRACE_DIR)
	$(BENCH) storage --pods=20000 --nodes=200 --scenarios=list-node --backends=freshcache --rvs=consistent,0,consistent,0,consistent,0 --concurrency=32 --pod-write-rate=0 --lease-write-rate=100 --no-sweep --trace-dir=$(TRACE_DIR) --name=consistent-reads-trace --out-dir=$(DIAG_OUT) $(BENCH_ARGS)
	$(BENCH) trace-wait --out=$(DIAG_OUT)/consistent-reads-trace-waits.md $(TRACE_DIR)/*.trace

# bench-cpu-split runs the whole consistent-read target command with a CPU
# profile of every row's measured part; the report ends with each row's CPU
# per op split by part (tools/bench/diag/cpusplit, by freshcache's pprof
# labels): the fetch chain, the reader's wait, the op, GC.
PROFILE_DIR ?= $(OUT)/profiles
bench-cpu-split: $(BENCH) ### Consistent-read target shape, CPU per row split by part (~5 min)
	@mkdir -p $(DIAG_OUT)
	rm -rf $(PROFILE_DIR)
	$(BENCH) storage $(CONSISTENT_READ_SHAPE) --cpuprofile-dir=$(PROFILE_DIR) --name=consistent-reads-cpu-split --out-dir=$(DIAG_OUT) $(BENCH_ARGS)

# bench-netpoll-floor times a loopback TCP round trip against a channel
# round trip while 0-64 goroutines burn CPU and park like the benchmark's
# readers: what Go's network poller adds to any socket round trip, a
# revision fetch's included, on saturated cores (package netpollfloor).
bench-netpoll-floor: $(BENCH) ### A socket round trip against a channel one on busy cores (~1 min).
	@mkdir -p $(DIAG_OUT)
	$(BENCH) netpoll-floor --out=$(DIAG_OUT)/netpoll-floor.md $(BENCH_ARGS)

# bench-hollow-nodes measures what a kubemark hollow node costs here:
# local-up with the controllers and N nodes, idle and under pod churn.
# HOLLOW_NODES lists the node counts. The one run the docs keep is a past
# investigation (docs/investigations/hollow-node-cost.md), so a new run
# goes to _output/bench.
HOLLOW_NODES ?= 10,30,60
# RSS and CPU of hollow nodes at 10, 30 and 60 nodes, idle and under churn
# (~12 min); writes _output/bench/hollow-nodes.md.
bench-hollow-nodes: $(BENCH) build ### RSS and CPU of 10, 30, 60 hollow nodes, idle and under churn (~12 min)
	@mkdir -p $(OUT)/bench
	$(BENCH) hollow-nodes --bin-dir=$(BIN) --nodes=$(HOLLOW_NODES) --out=$(OUT)/bench/hollow-nodes.md $(BENCH_ARGS)

# bench-cluster is the cluster-level A/B benchmark: for
# upstream, freshcache and freshcache with FreshResourceVersionZero, a fresh
# local-up cluster (controller-manager, scheduler, N hollow nodes) per node
# count, and HA (2 kube-apiservers, 3 etcd members) at CLUSTER_HA_NODES, all
# under the same seeded load: Deployment churn, LIST clients at rv="" and
# rv=0, informers with and without WatchListClient, a freshness probe
# (freshcache-bench cluster; docs/results/cluster.md, its figure cluster.png).
# It ends with one line: cluster-bench ratios: apiserver-cpu=... etcd-reads=...
# list-p99=... stale=... Run it on a quiet machine; CLUSTER_NODES lists the
# node counts. 100 nodes is past this 2-core machine's edge: in three runs
# each configuration's 100-node cell failed or overloaded at least once,
# so 75 is the largest node count that held for all three. HA runs at 30
# nodes: at 100, upstream's 3,000 pods did not all run within the 10 min
# ready timeout with 2 apiservers and 3 etcd members on 2 cores
# (docs/investigations/cluster-targets.md). A failed cell keeps its logs
# (the error names them). bench-cluster-short is the same at 3 nodes with
# short windows, to check the harness; it writes under _output, never docs.
# CLUSTER_REPEAT runs every cell that many times, interleaved, and the
# ratios are then medians over the repeats: one cell's CPU and LIST p99 move
# by more than the targets' margins from run to run.
CLUSTER_NODES ?= 10,50,75,100
CLUSTER_REPEAT ?= 1
CLUSTER_HA_NODES ?= 30
CLUSTER_SHORT := --nodes=3 --ha-nodes=3 --pods-per-node=10 --replicas-per-deployment=10 --warmup=5s --window=20s --calibration-window=3s --informer-restart=10s
# Cluster-level A/B: 3 configurations at 10, 50, 75, 100 hollow nodes + HA
# at 30 (~105 min, quiet machine); writes docs/results/cluster.md.
bench-cluster: $(BENCH) build ## Cluster A/B at 10-100 hollow nodes + HA at 30; docs/results (~105 min)
	$(BENCH) cluster --bin-dir=$(BIN) --nodes=$(CLUSTER_NODES) --ha-nodes=$(CLUSTER_HA_NODES) --repeat=$(CLUSTER_REPEAT) --out=$(BENCH_OUT)/cluster.md $(BENCH_ARGS)

# Cluster-level A/B at 3 hollow nodes, single + HA, short windows (<10 min);
# writes _output/bench/cluster-short.md.
bench-cluster-short: $(BENCH) build ### Cluster A/B at 3 hollow nodes, single + HA, short windows (<10 min)
	@mkdir -p $(OUT)/bench
	$(BENCH) cluster --bin-dir=$(BIN) $(CLUSTER_SHORT) --out=$(OUT)/bench/cluster-short.md $(BENCH_ARGS)

# bench-cluster-light is a small cluster under light, spread-out load, as a
# new user would try one: a single apiserver, 3 hollow nodes, LISTs of one
# node's pods at 40/s at each of rv="" and rv=0 (80 fresh reads a second
# with the default gates, open loop, arriving one by one), one pod created
# or deleted a second and the nodes' leases as the writes, no informers.
# Upstream against freshcache with its default gates, 3 interleaved pairs;
# at this rate a revision fetch is shared by few reads, so it shows what
# freshness costs where coalescing cannot help.
CLUSTER_LIGHT := --nodes=3 --ha-nodes=0 --configs=upstream,freshcache-fresh-rv0 --repeat=3 --node-list-rate=40 --all-list-rate=0 --pod-rate=1 --informers=0
# Light open-loop load on 3 hollow nodes, one apiserver, 3 pairs (~30 min);
# writes docs/results/cluster-light.md.
bench-cluster-light: $(BENCH) build ### Light open-loop load, 3 hollow nodes, 3 pairs; docs/results (~30 min)
	$(BENCH) cluster --bin-dir=$(BIN) $(CLUSTER_LIGHT) --out=$(BENCH_OUT)/cluster-light.md $(BENCH_ARGS)

# bench-scale is the cluster A/B on kwok nodes (local-up --kwok-nodes,
# lab/pkg/localup/kwoknode): one kwok controller stands in for the kubelets'
# node status, leases and pod lifecycle, and the benchmark's children run
# one pod watch per node (spec.nodeName), half with WatchListClient on, as
# the kubelets' own. After the measured window every one of those watches
# restarts at once (the restart storm). Its closing line is
# "scale-bench ratios: nodes=N apiserver-cpu=A etcd-reads=B list-p99=C
# storm-sync-p99=D storm-etcd=E stale=S storm-429=Q wait-p99-ms=W", freshcache-fresh-rv0 / upstream (the last two absolute).
SCALE_NODES ?= 1000
SCALE_REPEAT ?= 3
SCALE_SHORT := --nodes=200 --repeat=1 --warmup=10s --window=60s --calibration-window=10s
# Scale A/B on 1,000 kwok nodes (30,000 pods, 1,000 kubelet pod watches, a
# restart storm), 3 configurations x 3 repeats; writes docs/results/scale.md
# (~3-4 h: a 1,000-node cell takes 17-26 min, 10-21 of them starting the
# pods, depending on the machine; on one 2-core machine upstream's 30,000
# pods took over 20 min to start, so the bound on a cell's set-up is 45 min).
bench-scale: $(BENCH) build build-kwok ## Scale A/B on 1,000 kwok nodes, a restart storm, 3x3 cells; docs/results (~4 h)
	$(BENCH) scale --bin-dir=$(BIN) --nodes=$(SCALE_NODES) --repeat=$(SCALE_REPEAT) --ready-timeout=45m --out=$(BENCH_OUT)/scale.md $(BENCH_ARGS)

# Scale A/B on 200 kwok nodes, one cell per configuration, short windows,
# the same closing line (~12 min here after make build); writes
# _output/bench/scale-short.md.
bench-scale-short: $(BENCH) build build-kwok ### Scale A/B on 200 kwok nodes, one cell per configuration (~12 min)
	@mkdir -p $(OUT)/bench
	$(BENCH) scale --bin-dir=$(BIN) $(SCALE_SHORT) --out=$(OUT)/bench/scale-short.md $(BENCH_ARGS)

# bench-kep-2340 is KEP-2340's own benchmark shape (tools/bench/kepshape):
# configmaps of 1 KiB, one consistent LIST per second with a label
# selector that matches none, for upstream's cacher, freshcache,
# freshcache+FreshResourceVersionZero and no watch cache (every LIST from
# etcd); the report sets the figures next to the KEP's published ones.
# KEP-2340's shape at 100,000 configmaps of 1 KiB, 1 LIST/s matching
# nothing, 4 configurations including no watch cache; writes
# docs/results/kep-2340.md (~10 min here).
bench-kep-2340: $(BENCH) build ### KEP-2340's shape, 100,000 configmaps, 4 setups; docs/results (~10 min)
	$(BENCH) kep-2340 --bin-dir=$(BIN) --out=$(BENCH_OUT)/kep-2340.md $(BENCH_ARGS)

# KEP-2340's shape at 10,000 configmaps, 30 s windows (~3 min); writes
# _output/bench/kep-2340-short.md.
bench-kep-2340-short: $(BENCH) build ### KEP-2340's shape at 10,000 configmaps, 30 s windows (~3 min)
	@mkdir -p $(OUT)/bench
	$(BENCH) kep-2340 --short --bin-dir=$(BIN) --out=$(OUT)/bench/kep-2340-short.md $(BENCH_ARGS)

# bench-stall stops etcd (SIGSTOP, a process of its own) for 10 s while 20
# clients list 5,000 configmaps of 10 KiB (~50 MB) with rv="" in a loop,
# for upstream, upstream with ConsistentListFromCacheSkipTimeoutFallback,
# freshcache (fallback within --consistent-read-fallback-budget),
# freshcache-reject and freshcache with no budget, one after another, each
# on a fresh etcd and local-up (kubernetes#138494; freshcache-bench stall;
# docs/results/stall.md). It ends with one line: stall ratios:
# apiserver-rss-growth=... etcd-rss-growth=... (freshcache/upstream) 5xx=...
# bench-stall-short is a smoke run of the same timeline (1,000 configmaps,
# 8 clients, a 5 s stall); it writes under _output, never docs.
# etcd stopped 10 s under consistent LISTs of 50 MB: apiserver/etcd RSS
# growth, answers, recovery; 5 configurations (~13 min).
bench-stall: $(BENCH) build ### etcd stopped 10 s under 50 MB consistent LISTs, 5 setups (~13 min)
	$(BENCH) stall --bin-dir=$(BIN) --out-dir=$(BENCH_OUT) $(BENCH_ARGS)

bench-stall-short: $(BENCH) build ### Smoke run of bench-stall into _output/bench (~4 min)
	@mkdir -p $(OUT)/bench
	$(BENCH) stall --short --bin-dir=$(BIN) --out-dir=$(OUT)/bench --name=stall-short $(BENCH_ARGS)

bench-apiserver: $(BENCH) build ### Two kube-apiservers (upstream, freshcache) on one etcd (~3 min)
	$(BENCH) apiserver --bin-dir=$(BIN) --name=apiserver --out-dir=$(BENCH_OUT)

# bench-watchlist is the "WatchList over a huge resource" scenario
# (kubernetes#138728; freshcache-bench watchlist, tools/bench/watchlist): for
# upstream, freshcache and freshcache with FreshResourceVersionZero, one
# after the other, a fresh local-up cluster with 100,000 configmaps written
# straight to etcd; fresh reads (rv="") of configmaps and secrets without
# (A) and with (B) 10 WatchList loops over every configmap, then the
# WatchLists alone (C, their CPU per event). It writes
# docs/results/watchlist.md and .json and ends with one line: watchlist
# ratios: read-p99-ms=... upstream-read-p99-ms=... throughput-drop=...
# watchlist-cpu-share=... bench-watchlist-short is a smoke run (3,000
# objects, phases of seconds) that writes under _output, never docs.
# WatchList over 100,000 configmaps against fresh reads, 3 configurations
# (~9 min on a busy 2-core machine); writes docs/results/watchlist.md.
bench-watchlist: $(BENCH) build ### WatchList over 100,000 configmaps, fresh reads; docs/results (~9 min)
	$(BENCH) watchlist --bin-dir=$(BIN) --out=$(BENCH_OUT)/watchlist.md $(BENCH_ARGS)

# The WatchList scenario at 3,000 objects with short phases (~1.5 min);
# writes _output/bench/watchlist-short.md.
bench-watchlist-short: $(BENCH) build ### The WatchList scenario at 3,000 objects, short phases (~1.5 min)
	@mkdir -p $(OUT)/bench
	$(BENCH) watchlist --bin-dir=$(BIN) --short --out=$(OUT)/bench/watchlist-short.md $(BENCH_ARGS)

clean: ## Remove build output (keeps nothing under _output).
	rm -rf $(OUT)

.PHONY: kind-up
# KIND_ARGS, e.g. KIND_ARGS="--ha" or KIND_ARGS="--dry-run"; docs/kind.md.
KIND_ARGS ?=
kind-up: ## A kind cluster (1+1) on our apiserver, after kind-images (~1 min) [KIND_ARGS]
	$(KIND_APISERVER_ENV) hack/kind-up.sh $(KIND_ARGS)

# Offline kind (docs/kind.md, "Building every image here"): the static
# binaries the node image and the images kubeadm starts need, built from Go
# modules: tools/kindnode (k8s.io/kubernetes v1.37.2, cri-tools v1.37.0,
# kind v0.33.0), tools/kindetcd (etcd v3.7.0), tools/kindcontainerd
# (containerd v2.3.4), tools/coredns, and our kube-apiserver and pause.
.PHONY: build-kind-bins kind-images kind-down
KIND_BIN := $(OUT)/kindnode/bin
KIND_CMDS := kubeadm kubelet kubectl kube-controller-manager kube-scheduler kube-proxy
CONTAINERD_TAGS := no_aufs no_zfs no_btrfs no_devmapper
build-kind-bins: ### Static binaries for the offline kind images (~38 min cold, ~30 s warm)
	@mkdir -p $(KIND_BIN)
	CGO_ENABLED=0 $(GO) -C tools/kindnode build -trimpath -ldflags "-s -w $(KUBE_LDFLAGS)" -o $(abspath $(KIND_BIN))/ $(addprefix k8s.io/kubernetes/cmd/,$(KIND_CMDS))
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w $(KUBE_LDFLAGS)" -o $(KIND_BIN)/kube-apiserver ./cmd/kube-apiserver
	CGO_ENABLED=0 $(GO) -C tools/kindnode build -trimpath -ldflags "-s -w" -o $(abspath $(KIND_BIN))/ sigs.k8s.io/cri-tools/cmd/crictl
	CGO_ENABLED=0 $(GO) -C tools/kindnode build -trimpath -ldflags "-s -w" -o $(abspath $(BIN))/kind sigs.k8s.io/kind
	CGO_ENABLED=0 $(GO) -C tools/kindetcd build -trimpath -ldflags "-s -w" -o $(abspath $(KIND_BIN))/etcd go.etcd.io/etcd/server/v3
	CGO_ENABLED=0 $(GO) -C tools/kindcontainerd build -trimpath -tags "$(CONTAINERD_TAGS)" -ldflags "-s -w" -o $(abspath $(KIND_BIN))/ $(addprefix github.com/containerd/containerd/v2/cmd/,containerd ctr containerd-shim-runc-v2)
	CGO_ENABLED=0 $(GO) -C $(LAB) build -trimpath -o $(abspath $(KIND_BIN))/pause ./cmd/freshcache-pause
	CGO_ENABLED=0 $(GO) -C $(LAB) build -trimpath -ldflags "-s -w" -o $(abspath $(KIND_BIN))/kind-lb ./cmd/kind-lb
	cd tools/coredns && CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w" -o $(abspath $(KIND_BIN))/coredns .

# Every kind image, offline: Debian bookworm (mmdebstrap), the node image,
# the images kubeadm starts, busybox (hack/kind-images.sh).
kind-images: build-kind-bins ## Every kind image, built here with no registry (~18-35 min cold, ~1 min warm)
	hack/kind-images.sh

# kind-down also removes kind's Docker network "kind" when no container is
# left on it (kind creates it and never removes it), so the host is as before.
kind-down: ## Delete make kind-up's cluster and its empty Docker network (~3-7 s) [KIND_NAME]
	$(if $(wildcard $(BIN)/kind),$(BIN)/kind,kind) delete cluster --name $(or $(KIND_NAME),freshcache)
	@if [ "$$(docker network inspect kind -f '{{len .Containers}}' 2>/dev/null)" = 0 ]; then docker network rm kind >/dev/null && echo "removed Docker network kind"; fi

# kubernetes#59848 on the kind --ha cluster (hack/demo-59848-kind.sh; docs/kind.md
# section 3): apiserver 3's etcd member cut off, a StatefulSet pod deleted
# through apiserver 1, the worker's kubelet restarted on apiserver 3, for
# upstream's cacher, freshcache (default gates) and freshcache-rv0-off, with
# the kubelet's watch-list off and on. Brings the cluster up (and down) when
# none is running. DEMO_KIND_RUN, DEMO_KIND_WATCHLIST, DEMO_KIND_TRIALS,
# DEMO_KIND_OBSERVE, DEMO_KIND_CUT=partition|freeze select; the full run's
# report goes to docs/results/demo-59848-kind.md, a selection's to _output.
.PHONY: demo-59848-kind
DEMO_KIND_TRIALS ?= 3
DEMO_KIND_REPORT ?= $(if $(DEMO_KIND_RUN)$(DEMO_KIND_WATCHLIST),$(abspath $(OUT))/demo-59848-kind/report.md,$(abspath docs/results/demo-59848-kind.md))
demo-59848-kind: ### kubernetes#59848 on kind --ha, after kind-images (~25 min)
	DEMO_KIND_TRIALS=$(DEMO_KIND_TRIALS) DEMO_KIND_REPORT=$(DEMO_KIND_REPORT) hack/demo-59848-kind.sh

# The build steps' old names, so that scripts and habits that use them keep
# working.
.PHONY: coredns kwok e2e-suite kind-bins
coredns: build-coredns ### Old name of build-coredns.
kwok: build-kwok ### Old name of build-kwok.
e2e-suite: build-e2e-suite ### Old name of build-e2e-suite.
kind-bins: build-kind-bins ### Old name of build-kind-bins.
