package robustness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"

	"github.com/freshcache/watchcache"

	"github.com/freshcache/freshcache/lab/internal/testenv"
	"github.com/freshcache/freshcache/lab/test/robustness/checker"
)

// The etcd-backed runs are opt-in: `make test-robustness` and
// `make test-robustness-long` set FRESHCACHE_ROBUSTNESS=1, so that a plain
// `go test ./...` stays fast and runs only the checker unit tests.
//
//	ROBUSTNESS_SEED      replay a run (printed by every run)
//	ROBUSTNESS_DURATION  e.g. 30m: repeat fault rounds for that long
//	ROBUSTNESS_REPORT_DIR where reports go (default $TMPDIR/freshcache-robustness)
func enabled(t *testing.T) {
	if os.Getenv("FRESHCACHE_ROBUSTNESS") != "1" {
		t.Skip("etcd-backed robustness run; set FRESHCACHE_ROBUSTNESS=1 (make test-robustness)")
	}
}

func seed(t *testing.T) uint64 {
	if s := os.Getenv("ROBUSTNESS_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("ROBUSTNESS_SEED=%q: %v", s, err)
		}
		return v
	}
	return uint64(time.Now().UnixNano())
}

func duration(t *testing.T) time.Duration {
	if s := os.Getenv("ROBUSTNESS_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("ROBUSTNESS_DURATION=%q: %v", s, err)
		}
		return d
	}
	return 0
}

func reportDir(variant string, seed uint64) string {
	base := os.Getenv("ROBUSTNESS_REPORT_DIR")
	if base == "" {
		base = filepath.Join(os.TempDir(), "freshcache-robustness")
	}
	return filepath.Join(base, fmt.Sprintf("%s-%d", variant, seed))
}

// variant runs one configuration and returns its result. It always writes
// summary.json; the full report (history, faults, porcupine HTML) when
// dump is set.
func variant(t *testing.T, name string, dec generic.StorageDecorator, zeroReads, rv0Consistent bool) (*Result, string) {
	t.Helper()
	return run(t, name, StorageAPIs(dec), zeroReads, rv0Consistent, true)
}

// run runs one configuration. contiguous: the in-process caches, whose
// etcd only the clients write; those runs also have clients write to etcd
// directly (multi-key transactions, leases). The kube-apiserver variants
// do not: kube-apiserver stores pods as protobuf, and a pod written there
// should be encoded as it encodes them.
// rv0Staleness is the bound of the variants' fresh rv=0 reads: the
// library's default, which both the in-process caches and kube-apiserver's
// --resource-version-zero-max-staleness use.
func rv0Staleness(rv0Consistent bool) time.Duration {
	if !rv0Consistent {
		return 0
	}
	return watchcache.DefaultZeroReadStaleness
}

func run(t *testing.T, name string, apis func(context.Context, *Cluster) ([]API, error), zeroReads, rv0Consistent, contiguous bool) (*Result, string) {
	t.Helper()
	s := seed(t)
	t.Logf("%s: seed %d (replay with ROBUSTNESS_SEED=%d)", name, s, s)
	d := duration(t)
	ctx, cancel := context.WithTimeout(context.Background(), d+10*time.Minute)
	defer cancel()
	tr := Traffic{
		Keys: 24, Nodes: 4, Clients: 6, Pace: 30 * time.Millisecond,
		ZeroReads: zeroReads, OpTimeout: 5 * time.Second,
	}
	if contiguous {
		// Of the client's turns: each transaction records one op per key
		// (2-4) and a client holds one lease at a time, so these come to
		// about a tenth of the ops, and every short run commits dozens of
		// transactions and sees dozens of leases expire.
		tr.Txns, tr.Leases = 3, 2
	}
	res, err := Execute(ctx, Config{
		Variant:         name,
		NewAPIs:         apis,
		Traffic:         tr,
		Watchers:        4,
		Seed:            s,
		MinOps:          5000,
		MinDuration:     d,
		Hold:            2 * time.Second,
		RV0Consistent:   rv0Consistent,
		RV0Staleness:    rv0Staleness(rv0Consistent),
		ContiguousTruth: contiguous,
		DataDir:         t.TempDir(),
		Logf:            t.Logf,
	})
	if err != nil {
		t.Fatalf("%s: harness failed (seed %d): %v", name, s, err)
	}
	dir := reportDir(name, s)
	t.Logf("%s", res.Summary)
	return res, dir
}

func dump(t *testing.T, res *Result, dir string) {
	t.Helper()
	if err := WriteReport(dir, res); err != nil {
		t.Errorf("writing report: %v", err)
		return
	}
	t.Logf("report (history, faults, violations, porcupine HTML): %s", dir)
	// The report directory does not outlive a CI run; the log does. Name
	// the first few of each violation so a failure there explains itself.
	for _, n := range checker.Names {
		for i, d := range res.Report.Details[n] {
			if i == 3 {
				t.Logf("%s: %d more", n, len(res.Report.Details[n])-i)
				break
			}
			t.Logf("%s: %v", n, d)
		}
	}
}

// requireEveryFault fails unless every fault kind was injected without
// error at least once.
func requireEveryFault(t *testing.T, res *Result) {
	t.Helper()
	for _, k := range FaultKinds {
		if res.Summary.Faults[k] == 0 {
			t.Errorf("fault %s was never injected successfully (errors: %d)", k, res.Summary.FaultErrors[k])
		}
	}
	if res.Summary.Ops < 5000 {
		t.Errorf("%d ops, want at least 5000", res.Summary.Ops)
	}
}

// requireMultiKey fails unless etcd applied at least one multi-key
// transaction and expired at least one lease with its keys: the traffic
// whose revisions change several keys at once.
func requireMultiKey(t *testing.T, res *Result) {
	t.Helper()
	if res.Summary.CommittedTxns() == 0 {
		t.Errorf("no multi-key transaction was applied (multi-key writes: %v)", res.Summary.Batches)
	}
	if res.Summary.LeaseExpiries() == 0 {
		t.Errorf("no lease expired with its keys (multi-key writes: %v)", res.Summary.Batches)
	}
}

// TestUpstreamCacherTimeTravels is the negative control: upstream's cacher
// serves rv=0 LIST and GET from whatever state it holds. With its etcd
// member isolated, a client that read the other apiserver and then this
// one goes back in time (kubernetes#59848). The time-travel checker must
// find it; if it does not, the checkers or the faults are broken.
func TestUpstreamCacherTimeTravels(t *testing.T) {
	enabled(t)
	res, dir := variant(t, "upstream-rv0", genericregistry.StorageWithCacher(), true, false)
	dump(t, res, dir)
	requireEveryFault(t, res)
	if res.Report.Counts[checker.TimeTravel] == 0 {
		t.Fatalf("negative control: no time travel found against upstream's cacher with rv=0 reads; the checker or the isolation fault is broken (seed %d, report %s)", res.Run.Seed, dir)
	}
	for _, d := range res.Report.Details[checker.TimeTravel][:min(3, len(res.Report.Details[checker.TimeTravel]))] {
		t.Logf("time travel (expected): %s", d)
	}
	for _, n := range checker.Names {
		if n != checker.TimeTravel && res.Report.Counts[n] > 0 {
			t.Logf("upstream also violates %s (%d): %v", n, res.Report.Counts[n], res.Report.Details[n][0])
		}
	}
}

func freshcacheDecorator(rv0 bool) generic.StorageDecorator {
	on := true
	return watchcache.NewStorageDecorator(watchcache.DecoratorOptions{Options: watchcache.Options{ConsistentReadsFromCache: &on, FreshResourceVersionZero: &rv0}})
}

// TestFreshcache runs freshcache with consistent (rv=""), rv=N and watch
// traffic: every checker must stay at zero.
func TestFreshcache(t *testing.T) {
	enabled(t)
	res, dir := variant(t, "freshcache", freshcacheDecorator(false), false, false)
	requireClean(t, "freshcache", res, dir)
}

// TestFreshcacheFreshRVZero is the full promise, the same traffic as the
// negative control: with FreshResourceVersionZero on, rv=0 LIST and GET
// are consistent reads, and every checker must stay at zero.
func TestFreshcacheFreshRVZero(t *testing.T) {
	enabled(t)
	res, dir := variant(t, "freshcache-rv0", freshcacheDecorator(true), true, true)
	requireClean(t, "freshcache with FreshResourceVersionZero", res, dir)
}

// requireClean is what every freshcache variant must show: every fault
// injected, multi-key writes applied, no violation. The report is written
// either way.
func requireClean(t *testing.T, what string, res *Result, dir string) {
	t.Helper()
	requireEveryFault(t, res)
	requireMultiKey(t, res)
	if res.Report.Total() > 0 {
		dump(t, res, dir)
		t.Fatalf("%s: %d violations (seed %d); report in %s", what, res.Report.Total(), res.Run.Seed, dir)
	}
	if err := os.MkdirAll(dir, 0o755); err == nil {
		_ = WriteReport(dir, res)
	}
}

// kubeAPIServer returns the kube-apiserver binary for the variants over
// HTTP, or skips: they need `make build` (make test-robustness-apiserver).
func kubeAPIServer(t *testing.T) string {
	t.Helper()
	enabled(t)
	dir := testenv.Skip(t, "FRESHCACHE_BIN_DIR", "needs the built kube-apiserver: FRESHCACHE_BIN_DIR (make test-robustness-apiserver)")
	bin := filepath.Join(dir, "kube-apiserver")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("FRESHCACHE_BIN_DIR=%s: %v", dir, err)
	}
	return bin
}

// TestKubeAPIServerUpstreamTimeTravels is the negative control over HTTP:
// two real kube-apiservers with upstream's cacher, driven with client-go.
func TestKubeAPIServerUpstreamTimeTravels(t *testing.T) {
	bin := kubeAPIServer(t)
	apis := KubeAPIServers(bin, t.TempDir(), []string{"--watch-cache-implementation=upstream"})
	res, dir := run(t, "kube-apiserver-upstream-rv0", apis, true, false, false)
	dump(t, res, dir)
	requireEveryFault(t, res)
	if res.Report.Counts[checker.TimeTravel] == 0 {
		t.Fatalf("negative control over HTTP: no time travel found (seed %d, report %s)", res.Run.Seed, dir)
	}
	for _, n := range checker.Names {
		if n != checker.TimeTravel && res.Report.Counts[n] > 0 {
			t.Logf("upstream also violates %s (%d): %v", n, res.Report.Counts[n], res.Report.Details[n][0])
		}
	}
}

// TestKubeAPIServerFreshcache: two real kube-apiservers with
// --watch-cache-implementation=freshcache and FreshResourceVersionZero,
// the same traffic as the control: every checker must stay at zero.
func TestKubeAPIServerFreshcache(t *testing.T) {
	bin := kubeAPIServer(t)
	apis := KubeAPIServers(bin, t.TempDir(), []string{"--watch-cache-implementation=freshcache", "--feature-gates=FreshResourceVersionZero=true"})
	res, dir := run(t, "kube-apiserver-freshcache-rv0", apis, true, true, false)
	requireEveryFault(t, res)
	if res.Report.Total() > 0 {
		dump(t, res, dir)
		t.Fatalf("freshcache over HTTP: %d violations (seed %d); report in %s", res.Report.Total(), res.Run.Seed, dir)
	}
	if err := os.MkdirAll(dir, 0o755); err == nil {
		_ = WriteReport(dir, res)
	}
}
