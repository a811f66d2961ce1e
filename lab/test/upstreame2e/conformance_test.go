package upstreame2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/freshcache/freshcache/lab/internal/githead"
	"github.com/freshcache/freshcache/lab/internal/testenv"
	"github.com/freshcache/freshcache/lab/pkg/localup/realnode"
)

// TestUpstreamConformance runs the selection against each implementation
// named in FRESHCACHE_E2E_IMPLEMENTATIONS (comma-separated; default
// freshcache-fresh-rv0, the run make test does). It fails if a freshcache
// run fails a selected test, if the cache served no read, and, when
// upstream ran too, if a test that passed on upstream did not pass on a
// freshcache run. Each run ends with its closing line on stdout.
func TestUpstreamConformance(t *testing.T) {
	suiteDir := testenv.Skip(t, "FRESHCACHE_E2E_SUITE", "FRESHCACHE_E2E_SUITE is not set (make test-conformance or make test-e2e-conformance set it)")
	binDir := testenv.Require(t, "FRESHCACHE_BIN_DIR", "FRESHCACHE_BIN_DIR must name make build's _output/bin")
	outDir := testenv.DirOr(t, "FRESHCACHE_E2E_OUT")
	names := strings.Split(envOr("FRESHCACHE_E2E_IMPLEMENTATIONS", "freshcache-fresh-rv0"), ",")
	var impls []Implementation
	for _, n := range names {
		impl, ok := ImplementationByName(strings.TrimSpace(n))
		if !ok {
			t.Fatalf("FRESHCACHE_E2E_IMPLEMENTATIONS: unknown implementation %q (upstream, freshcache, freshcache-fresh-rv0)", n)
		}
		impls = append(impls, impl)
	}
	procs, _ := strconv.Atoi(envOr("FRESHCACHE_E2E_PROCS", "4"))
	ginkgoTimeout, err := time.ParseDuration(envOr("FRESHCACHE_E2E_TIMEOUT", "40m"))
	if err != nil {
		t.Fatalf("FRESHCACHE_E2E_TIMEOUT: %v", err)
	}
	realNode := os.Getenv("FRESHCACHE_E2E_REAL_NODE") == "1"
	if realNode && os.Geteuid() != 0 {
		t.Fatal("FRESHCACHE_E2E_REAL_NODE=1 runs a real node, which needs root")
	}
	onKind := os.Getenv("FRESHCACHE_E2E_KIND") == "1"
	if onKind && realNode {
		t.Fatal("FRESHCACHE_E2E_KIND=1 and FRESHCACHE_E2E_REAL_NODE=1: kind's nodes are the real nodes; set one")
	}

	listed, err := ReadSelection(ListFile)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Hour)
	defer cancel()
	all, err := ListTests(ctx, suiteDir, outDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := listed.Check(all); err != nil {
		t.Fatal(err)
	}
	sel := listed.ForCluster(realNode || onKind)

	// The commit the binaries were built from: read before the runs, which
	// take long enough for HEAD to move.
	commit := gitCommit()
	o := Options{BinDir: binDir, Kubectl: os.Getenv("FRESHCACHE_E2E_KUBECTL"), SuiteDir: suiteDir, OutDir: outDir, Procs: procs, RealNode: realNode, Timeout: ginkgoTimeout}
	if onKind {
		o.Kind = kindFor(ctx, t, binDir, suiteDir, outDir)
	}
	var runs []*Run
	for _, impl := range impls {
		t.Logf("%s: running %d tests (%d processes), output in %s", impl.Name, len(sel.Run), procs, filepath.Join(outDir, impl.Name))
		run, err := RunSuite(ctx, o, impl, sel)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: done in %v, junit %s", impl.Name, run.Duration.Round(time.Second), run.JUnit)
		runs = append(runs, run)
	}

	var upstream *Run
	for _, r := range runs {
		if !r.Impl.Freshcache {
			upstream = r
		}
	}
	for _, r := range runs {
		for _, s := range r.Suite {
			t.Errorf("%s: suite node %s %s: %s", r.Impl.Name, s.Name, s.Status, s.Message)
		}
		if len(r.Missing) > 0 {
			t.Errorf("%s: %d selected tests are not in the report (did not run): %s", r.Impl.Name, len(r.Missing), strings.Join(r.Missing, "; "))
		}
		if !r.Impl.Freshcache {
			continue
		}
		if ServedFromCache(r.Reads) < 1 {
			t.Errorf("%s: %s shows no read served from the cache: %v", r.Impl.Name, readsMetric, r.Reads)
		}
		for _, n := range sel.Run {
			res, ok := r.Specs[n]
			if !ok || res.Outcome != Failed {
				continue
			}
			if upstream != nil && upstream.Specs[n].Outcome != Passed {
				t.Logf("%s: %q failed, and did not pass on upstream either (%s)", r.Impl.Name, n, upstream.Specs[n].Status)
				continue
			}
			t.Errorf("%s: %q %s: %s", r.Impl.Name, n, res.Status, res.Message)
		}
	}
	if upstream != nil {
		for _, n := range sel.Run {
			if upstream.Specs[n].Outcome != Passed {
				t.Errorf("upstream: selected test %q %s (the selection must hold only tests that pass on upstream): %s", n, upstream.Specs[n].Status, upstream.Specs[n].Message)
			}
		}
	}

	if path := os.Getenv("FRESHCACHE_E2E_REPORT"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		m := ReportMeta{
			Command: envOr("FRESHCACHE_E2E_COMMAND", "make test-conformance"),
			Commit:  commit, Machine: machine(), Date: time.Now(), Procs: procs,
			Selected: len(sel.Run), Left: len(sel.Skipped), RealNode: realNode, Kind: onKind,
		}
		if err := WriteReport(f, m, sel, runs); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		t.Logf("report: %s", path)
	}
	for _, r := range runs {
		fmt.Println(r.ClosingLine())
	}
}

// kindFor is the kind cluster of a FRESHCACHE_E2E_KIND=1 run: make
// kind-images' offline images, kind from make build-kind-bins, and the e2e
// test images (busybox, agnhost, glibc-dns-testing) built here from
// Debian's packages, agnhost and CoreDNS, to be loaded into its nodes.
func kindFor(ctx context.Context, t *testing.T, binDir, suiteDir, outDir string) *Kind {
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "hack", "kind-up.sh")); err != nil {
		t.Fatalf("the repository's hack/kind-up.sh: %v", err)
	}
	k := &Kind{Root: root, Name: envOr("FRESHCACHE_E2E_KIND_NAME", "freshcache-e2e"), Binary: envOr("KIND", filepath.Join(binDir, "kind"))}
	imgs := realnode.E2EImages{
		BusyboxBinary: "/bin/busybox", AgnhostBinary: filepath.Join(suiteDir, "agnhost"),
		CoreDNSBinary: filepath.Join(binDir, "coredns"), Install: true,
	}
	if k.Images, err = imgs.Write(ctx, filepath.Join(outDir, "images"), t.Logf); err != nil {
		t.Fatalf("the e2e test images: %v", err)
	}
	return k
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func gitCommit() string {
	c, dirty := githead.Head(12)
	if dirty {
		c += " (with uncommitted changes)"
	}
	return c
}

func machine() string {
	return fmt.Sprintf("%d CPUs, %s/%s, %s", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version())
}
