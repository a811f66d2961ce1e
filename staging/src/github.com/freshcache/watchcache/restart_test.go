package watchcache_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/storage"

	"github.com/freshcache/watchcache"
	"github.com/freshcache/watchcache/internal/testing/cachetest"
	"github.com/freshcache/watchcache/oracle"
)

// restartReadTimeout bounds one client read against the lagging member:
// long enough for a failed revision fetch and the delegated quorum read
// to fail there, short enough to keep the test quick.
const restartReadTimeout = 5 * time.Second

// TestRestartTimeTravel: a client that saw state S1 (rv=0 LIST through
// apiserver A, RV r1) must never be handed a state older than S1 after its
// apiserver is replaced by one whose etcd member lags (kubernetes#59848 at
// restart), when FreshResourceVersionZero is on.
//
// Setup: 3 members; pod x exists; a follower L is cut off from its peers;
// x is deleted and y created through the leader; the client lists rv=0
// through cache A on the leader and gets S1 (y, no x) at r1. Then the
// client's apiserver "restarts" onto member L, in two ways:
//
//   - new: a cache built now on L. Its first list is a quorum read, which L
//     cannot serve, so it never holds a stale state: it is not ready, and
//     reads fail or are delegated (and fail) with or without the gate.
//   - ha: a cache on L that started before the partition (an HA peer, or
//     an apiserver restarted while L was healthy). It holds x and not y,
//     a state older than r1.
//
// Each is built with the gate on and off; the client reads LIST rv=0,
// GET y rv=0 and GET x rv=0. With the gate on no read returns a state
// older than r1 (errors and 429s are fine). With the gate off the ha cache
// deterministically returns the old state: the time travel. After healing,
// the gate-on caches converge to a state at or after r1.
func TestRestartTimeTravel(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-member etcd cluster")
	}
	cl, leader, lag := startClusterWithLeader(t)
	kLeader, kLag := cl.KubeClient(t, leader), cl.KubeClient(t, lag)
	writer := cachetest.NewStoreOn(t, kLeader)
	ctx := context.Background()
	x := create(t, writer, "ns", "x", "node1")

	lagOracle, err := oracle.New(kLag.Client, oracle.Options{FetchTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(lagOracle.Close)
	onLag := func(gate bool, more ...cachetest.Option) *cachetest.Env {
		g := gate
		opts := []cachetest.Option{cachetest.WithOracle(lagOracle), cachetest.WithOptions(watchcache.Options{
			ConsistentReadsFromCache: on(), FreshResourceVersionZero: &g,
			ConsistentReadTimeout: 2 * time.Second, TimeoutAction: watchcache.TimeoutFallback,
		})}
		return cachetest.StartOn(t, kLag, append(opts, more...)...)
	}
	// The HA caches on L, before the partition; both hold x.
	haOn, haOff := onLag(true), onLag(false)
	for _, e := range []*cachetest.Env{haOn, haOff} {
		o := listOpts(x.ResourceVersion)
		o.ResourceVersionMatch = metav1.ResourceVersionMatchNotOlderThan
		if l := (&example.PodList{}); e.Cache.GetList(ctx, "/pods/", o, l) != nil || !names(l)["x"] {
			t.Fatalf("the cache on the lagging member does not hold x: %v", names(l))
		}
	}

	cl.Isolate(lag)
	if err := writer.Delete(ctx, cachetest.PodKey(x), &example.Pod{}, nil, storage.ValidateAllObjectFunc, nil, storage.DeleteOptions{}); err != nil {
		t.Fatalf("delete x through the leader: %v", err)
	}
	y := create(t, writer, "ns", "y", "node1")

	// The client's read before the restart, through A on the leader.
	a := cachetest.StartOn(t, kLeader, cachetest.WithOptions(watchcache.Options{
		ConsistentReadsFromCache: on(), FreshResourceVersionZero: on(), ConsistentReadTimeout: longWait,
	}))
	s1 := &example.PodList{}
	if err := a.Cache.GetList(ctx, "/pods/", listOpts("0"), s1); err != nil {
		t.Fatal(err)
	}
	r1 := rvOf(t, s1.ResourceVersion)
	if got := names(s1); got["x"] || !got["y"] || r1 < rvOf(t, y.ResourceVersion) {
		t.Fatalf("S1 through A = %v at %d, want y and no x at >= %s", got, r1, y.ResourceVersion)
	}
	a.Cache.Stop() // apiserver A goes away

	// The apiserver restarted onto L.
	newOn, newOff := onLag(true, cachetest.NoReadyWait), onLag(false, cachetest.NoReadyWait)
	clients := []struct {
		name string
		gate bool
		env  *cachetest.Env
	}{{"new/gate-on", true, newOn}, {"new/gate-off", false, newOff}, {"ha/gate-on", true, haOn}, {"ha/gate-off", false, haOff}}

	var (
		mu      sync.Mutex
		results = map[string][]string{} // client -> outcomes
		older   = map[string]int{}      // client -> reads older than S1
		wg      sync.WaitGroup
	)
	note := func(client, what string, travelled bool, outcome string) {
		mu.Lock()
		defer mu.Unlock()
		results[client] = append(results[client], what+": "+outcome)
		if travelled {
			older[client]++
		}
	}
	for _, c := range clients {
		wg.Add(3)
		go func() {
			defer wg.Done()
			rctx, cancel := context.WithTimeout(ctx, restartReadTimeout)
			defer cancel()
			l := &example.PodList{}
			if err := c.env.Cache.GetList(rctx, "/pods/", listOpts("0"), l); err != nil {
				note(c.name, "LIST", false, "error: "+firstLine(err))
				return
			}
			rv, got := rvOf(t, l.ResourceVersion), names(l)
			note(c.name, "LIST", rv < r1 || got["x"] || !got["y"], fmt.Sprintf("RV %d, pods %v", rv, sortedNames(got)))
		}()
		for _, p := range []*example.Pod{x, y} {
			go func() {
				defer wg.Done()
				rctx, cancel := context.WithTimeout(ctx, restartReadTimeout)
				defer cancel()
				what := "GET " + p.Name
				err := c.env.Cache.Get(rctx, cachetest.PodKey(p), storage.GetOptions{ResourceVersion: "0"}, &example.Pod{})
				// At r1 x is gone and y exists.
				switch {
				case storage.IsNotFound(err):
					note(c.name, what, p == y, "NotFound")
				case err != nil:
					note(c.name, what, false, "error: "+firstLine(err))
				default:
					note(c.name, what, p == x, "found")
				}
			}()
		}
	}
	wg.Wait()
	for _, c := range clients {
		sort.Strings(results[c.name])
		t.Logf("%-13s ready=%-5v reads older than S1: %d/3  %v", c.name, c.env.Cache.Ready(), older[c.name], results[c.name])
		switch {
		case c.gate && older[c.name] > 0:
			t.Errorf("%s: %d rv=0 reads returned a state older than S1 (RV %d) after the restart", c.name, older[c.name], r1)
		case c.name == "ha/gate-off" && older[c.name] != 3:
			t.Errorf("ha/gate-off: %d/3 reads older than S1; the cache on the isolated member holds x without y, so all 3 should be (the contrast failed)", older[c.name])
		}
	}
	t.Logf("RESTART EVIDENCE: S1 at RV %d (y, no x) through the leader; after the restart onto the isolated member, rv=0 reads older than S1: new/gate-on=%d/3 new/gate-off=%d/3 ha/gate-on=%d/3 ha/gate-off=%d/3",
		r1, older["new/gate-on"], older["new/gate-off"], older["ha/gate-on"], older["ha/gate-off"])

	// Healed, the gate-on caches converge to S1 or later.
	cl.Heal()
	for _, e := range []*cachetest.Env{newOn, haOn} {
		waitFor(t, "an rv=0 LIST at or after S1 after healing", func() bool {
			rctx, cancel := context.WithTimeout(ctx, restartReadTimeout)
			defer cancel()
			l := &example.PodList{}
			err := e.Cache.GetList(rctx, "/pods/", listOpts("0"), l)
			return err == nil && rvOf(t, l.ResourceVersion) >= r1 && names(l)["y"] && !names(l)["x"]
		})
	}
}

func sortedNames(m map[string]bool) []string { return slices.Sorted(maps.Keys(m)) }
