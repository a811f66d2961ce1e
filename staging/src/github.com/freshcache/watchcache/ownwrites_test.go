package watchcache_test

import (
	"fmt"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/freshcache/watchcache"
	"github.com/freshcache/watchcache/internal/testing/cachetest"
)

// TestOwnWritesNeedNoProgressRequest: with no reader waiting, writes reach
// the cache. The reflector must ask etcd for progress to complete the last
// revision of each burst, unless the cache knows the revisions of its own
// writes (RevisionsFromWrites): a revision the store wrote holds one key,
// so it is whole on arrival and needs no progress request. The clock is
// fake, so the reflector waits for the answer of a write in flight as long
// as it takes.
func TestOwnWritesNeedNoProgressRequest(t *testing.T) {
	for _, tc := range []struct {
		name       string
		ownWrites  bool
		needsAsked bool
	}{
		{name: "own writes unknown", needsAsked: true},
		{name: "own writes known", ownWrites: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder()
			o := watchcache.Options{ConsistentReadsFromCache: off(), FreshResourceVersionZero: off(), RevisionsFromWrites: off()}
			if tc.ownWrites {
				o = watchcache.Options{ConsistentReadsFromCache: on(), FreshResourceVersionZero: off(), RevisionsFromWrites: on(),
					Clock: testingclock.NewFakeClock(time.Now())}
			}
			e := cachetest.Start(t, cachetest.WithRecorder(rec), cachetest.WithOptions(o))
			for i := 0; i < 5; i++ {
				create(t, e.Cache, "ns", fmt.Sprintf("p%d", i), "node")
				waitFor(t, "rv=0 to hold the new pod", func() bool { return cachedCount(t, e.Cache) == i+1 })
			}
			rec.mu.Lock()
			progress := rec.progress
			rec.mu.Unlock()
			if !tc.needsAsked && progress != 0 {
				t.Fatalf("%d progress requests for 5 writes; want none", progress)
			}
			if tc.needsAsked && progress == 0 {
				t.Fatal("no progress request for 5 writes: then what completed their revisions?")
			}
		})
	}
}
