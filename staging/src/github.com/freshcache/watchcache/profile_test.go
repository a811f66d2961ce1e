package watchcache_test

import (
	"bytes"
	"fmt"
	"runtime/pprof"
	"testing"

	"github.com/freshcache/watchcache"
	"github.com/freshcache/watchcache/internal/testing/cachetest"
	"github.com/freshcache/watchcache/metrics"
)

// TestGoroutinesCarryProfileLabels: the cache's goroutines carry the pprof
// label of their part (metrics.Profile*), the contract CPU profiles are
// split by, so that a profile attributes them without knowing the
// library's function names.
func TestGoroutinesCarryProfileLabels(t *testing.T) {
	e := cachetest.Start(t, cachetest.WithOptions(watchcache.Options{ConsistentReadsFromCache: on()}))
	watchAll(t, e.Cache, 1) // a watcher: its goroutine is the fanout's
	var buf bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&buf, 1); err != nil {
		t.Fatal(err)
	}
	for _, part := range []string{metrics.ProfileReflector, metrics.ProfileFanout, metrics.ProfileDriver} {
		if want := fmt.Sprintf("%q:%q", metrics.ProfileLabel, part); !bytes.Contains(buf.Bytes(), []byte(want)) {
			t.Errorf("no goroutine labelled %s in the goroutine profile", want)
		}
	}
}
