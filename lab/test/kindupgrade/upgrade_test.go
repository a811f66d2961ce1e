package kindupgrade

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/freshcache/freshcache/lab/internal/githead"
	"github.com/freshcache/freshcache/lab/internal/testenv"
	"github.com/freshcache/freshcache/lab/pkg/kindcluster"
)

// TestKindUpgrade runs the roll on a kind cluster (make
// test-kind-upgrade, after make kind-images) and fails if any answer was
// staler than the cache that gave it promised, or if a step's apiserver
// did not serve again. Failed requests, relists and watch restarts are
// reported beside the control's, not asserted: a restart fails some
// requests whatever the cache.
func TestKindUpgrade(t *testing.T) {
	if os.Getenv("FRESHCACHE_KIND_UPGRADE") != "1" {
		t.Skip("FRESHCACHE_KIND_UPGRADE is not 1 (make test-kind-upgrade sets it)")
	}
	binDir := testenv.Require(t, "FRESHCACHE_BIN_DIR", "FRESHCACHE_BIN_DIR must name make build's _output/bin")
	outDir := testenv.DirOr(t, "FRESHCACHE_KIND_UPGRADE_OUT")
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	commit, dirty := githead.Head(12)
	if dirty {
		commit += " (with uncommitted changes)"
	}
	o := Defaults()
	o.Logf = t.Logf
	o.Cluster = kindcluster.Options{Root: root, Name: "freshcache-upgrade", Binary: envOr("KIND", filepath.Join(binDir, "kind")), Dir: outDir}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	rec, runErr := Run(ctx, o)
	if rec == nil {
		t.Fatal(runErr)
	}
	wins := Tally(rec)
	if path := os.Getenv("FRESHCACHE_KIND_UPGRADE_REPORT"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		m := Meta{Command: "make test-kind-upgrade", Commit: commit, Date: time.Now(), Dwell: o.Dwell,
			Machine: fmt.Sprintf("%d CPUs, %s/%s, %s", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version())}
		if err := WriteReport(f, m, rec, wins, runErr); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		t.Logf("report: %s", path)
	}
	if runErr != nil {
		t.Error(runErr)
	}
	if len(rec.Changes) != len(Plan(ControlPlanes)) {
		t.Errorf("%d of %d steps ran", len(rec.Changes), len(Plan(ControlPlanes)))
	}
	for _, w := range wins {
		if w.Counts.Stale > 0 {
			t.Errorf("%s: %d answers staler than their cache promised", w.Name, w.Counts.Stale)
		}
		if w.Counts.Answered == 0 {
			t.Errorf("%s: no read was answered: the traffic did not reach the apiservers", w.Name)
		}
	}
	fmt.Println(ClosingLine(wins))
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
