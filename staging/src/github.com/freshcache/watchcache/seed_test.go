package watchcache_test

import (
	"context"
	"sort"
	"strings"
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

// TestSeedScenario is kubernetes#59848 on a real 3-member etcd, side by
// side (docs/design.md, "Why the revision request must be linearizable"):
//
//  1. 3 members, peer traffic through proxies the test controls;
//  2. the caches' etcd client talks to one follower only;
//  3. pod X is created and every cache serves it;
//  4. the follower is cut off from its peers in both directions;
//  5. X is deleted through the leader;
//  6. LIST, GET and LIST-by-node through the caches, at rv="" and rv=0
//     (FreshResourceVersionZero on), once the oracle's last answer is
//     older than the rv=0 bound (ZeroReadStaleness).
//
// With the linearizable revision oracle no read returns X: they fail
// (fallback to a quorum read that the isolated member cannot serve) or
// answer 429 (reject). With Options.UnsafeSerializable on the oracle the
// very same cache returns X: the isolated member's revision is stale, the
// cache is exactly as stale, so it looks fresh. Upstream's cacher
// (k8s.io/apiserver/pkg/storage/cacher, startUpstream) on the same member
// returns X to every rv=0 read: the known bug, and the proof that this test
// can fail. After healing, the linearizable cache converges.
func TestSeedScenario(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-member etcd cluster")
	}
	cl, leader, follower := startClusterWithLeader(t)
	kIso := cl.KubeClient(t, follower)
	kLeader := cl.KubeClient(t, leader)

	lin, err := oracle.New(kIso.Client, oracle.Options{FetchTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(lin.Close)
	ser, err := oracle.New(kIso.Client, oracle.Options{FetchTimeout: 2 * time.Second, UnsafeSerializable: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ser.Close)
	opts := func(timeout time.Duration, action watchcache.TimeoutAction) cachetest.Option {
		return cachetest.WithOptions(watchcache.Options{
			ConsistentReadsFromCache: on(), FreshResourceVersionZero: on(),
			ConsistentReadTimeout: timeout, TimeoutAction: action,
		})
	}
	caches := []struct {
		name string
		env  *cachetest.Env
	}{
		{"linearizable/fallback", cachetest.StartOn(t, kIso, cachetest.NodeNameAndNamespaceIndex, cachetest.WithOracle(lin), opts(2*time.Second, watchcache.TimeoutFallback))},
		{"linearizable/reject", cachetest.StartOn(t, kIso, cachetest.NodeNameAndNamespaceIndex, cachetest.WithOracle(lin), opts(time.Second, watchcache.TimeoutReject))},
		{"serializable", cachetest.StartOn(t, kIso, cachetest.NodeNameAndNamespaceIndex, cachetest.WithOracle(ser), opts(2*time.Second, watchcache.TimeoutFallback))},
	}
	// Upstream's cacher on the same member: the contrast that shows the
	// scenario is stale (kubernetes#59848).
	upstream := startUpstream(t, kIso)
	writer := cachetest.StartOn(t, kLeader)
	x := create(t, writer.Etcd, "ns", "x", "node1")

	// Every cache serves X, and (through the consistent read) is as fresh
	// as the member it watches.
	ctx := context.Background()
	for _, c := range caches {
		l := &example.PodList{}
		if err := c.env.Cache.GetList(ctx, "/pods/", listOpts(""), l); err != nil || !names(l)["x"] {
			t.Fatalf("%s before the partition: %v %v", c.name, err, names(l))
		}
	}
	// Upstream's rv=0 is served from its cache as it is: wait until it
	// holds X (a NotOlderThan read at X's RV waits for that).
	{
		o := listOpts(x.ResourceVersion)
		o.ResourceVersionMatch = metav1.ResourceVersionMatchNotOlderThan
		l := &example.PodList{}
		if err := upstream.GetList(ctx, "/pods/", o, l); err != nil || !names(l)["x"] {
			t.Fatalf("upstream cacher before the partition: %v %v", err, names(l))
		}
	}

	cl.Isolate(follower)
	var deleted example.Pod
	if err := writer.Etcd.Delete(ctx, cachetest.PodKey(x), &deleted, nil, storage.ValidateAllObjectFunc, nil, storage.DeleteOptions{}); err != nil {
		t.Fatalf("delete through the leader: %v", err)
	}

	byNode := storage.SelectionPredicate{
		Label: storage.Everything.Label, Field: mustField(t, "spec.nodeName=node1"),
		GetAttrs: cachetest.PodAttrs, IndexFields: []string{"spec.nodeName"},
	}
	var (
		mu    sync.Mutex
		reads []seedRead
		wg    sync.WaitGroup
	)
	record := func(r seedRead) {
		mu.Lock()
		defer mu.Unlock()
		reads = append(reads, r)
	}
	// The same reads through upstream's cacher at rv=0, first and one by
	// one: served from its cache as it is, which is as stale as the
	// isolated member. (Done at once: a few seconds after the partition
	// the member cancels its watches with "no leader", and then upstream
	// marks its cache not ready and delegates instead.)
	upReads := []struct {
		what string
		read func(context.Context) (bool, error)
	}{
		{"LIST", func(rctx context.Context) (bool, error) {
			l := &example.PodList{}
			err := upstream.GetList(rctx, "/pods/", listOpts("0"), l)
			return err == nil && names(l)["x"], err
		}},
		{"GET", func(rctx context.Context) (bool, error) {
			p := &example.Pod{}
			err := upstream.Get(rctx, cachetest.PodKey(x), storage.GetOptions{ResourceVersion: "0"}, p)
			return err == nil && p.Name == "x", err
		}},
		{"LIST-by-node", func(rctx context.Context) (bool, error) {
			l := &example.PodList{}
			o := listOpts("0")
			o.Predicate = byNode
			err := upstream.GetList(rctx, "/pods/", o, l)
			return err == nil && names(l)["x"], err
		}},
	}
	for _, u := range upReads {
		rctx, cancel := context.WithTimeout(ctx, upstreamReadTimeout)
		sawX, err := u.read(rctx)
		cancel()
		record(seedRead{"upstream-cacher", u.what, "0", sawX, err})
	}
	// rv=0 promises the writes acknowledged ZeroReadStaleness before the
	// read: the reads come once every revision the linearizable oracle
	// got before the cut is older than that, as a restarting kubelet's
	// list does, seconds or minutes after the delete.
	waitFor(t, "the linearizable oracle's last answer to age past the rv=0 bound", func() bool {
		_, ok := lin.RecentRevision(watchcache.DefaultZeroReadStaleness)
		return !ok
	})
	// All reads at once: the ones that fall back wait for etcd's own
	// request timeout on the isolated member.
	for _, c := range caches {
		for _, rv := range []string{"", "0"} {
			wg.Add(3)
			go func() {
				defer wg.Done()
				rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				l := &example.PodList{}
				err := c.env.Cache.GetList(rctx, "/pods/", listOpts(rv), l)
				record(seedRead{c.name, "LIST", rv, err == nil && names(l)["x"], err})
			}()
			go func() {
				defer wg.Done()
				rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				p := &example.Pod{}
				err := c.env.Cache.Get(rctx, cachetest.PodKey(x), storage.GetOptions{ResourceVersion: rv}, p)
				record(seedRead{c.name, "GET", rv, err == nil && p.Name == "x", err})
			}()
			go func() {
				defer wg.Done()
				rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				l := &example.PodList{}
				o := listOpts(rv)
				o.Predicate = byNode
				err := c.env.Cache.GetList(rctx, "/pods/", o, l)
				record(seedRead{c.name, "LIST-by-node", rv, err == nil && names(l)["x"], err})
			}()
		}
	}
	wg.Wait()
	sort.Slice(reads, func(i, j int) bool {
		a, b := reads[i], reads[j]
		return a.cache+a.what+a.rv < b.cache+b.what+b.rv
	})
	for _, r := range reads {
		outcome := "no X"
		switch {
		case r.sawX:
			outcome = "returned deleted X"
		case r.err != nil:
			outcome = "error: " + firstLine(r.err)
		}
		t.Logf("%-22s %-13s rv=%-3q %s", r.cache, r.what, r.rv, outcome)
		if strings.HasPrefix(r.cache, "linearizable") && r.sawX {
			t.Errorf("%s %s rv=%q returned the deleted pod X: stale read", r.cache, r.what, r.rv)
		}
		if r.cache == "serializable" && !r.sawX {
			t.Errorf("serializable %s rv=%q did not return X (%v): the contrast failed", r.what, r.rv, r.err)
		}
		if r.cache == "upstream-cacher" && !r.sawX {
			t.Errorf("upstream cacher %s rv=%q did not return X (%v): the contrast failed", r.what, r.rv, r.err)
		}
	}
	t.Logf("SEED EVIDENCE: X deleted at %s through the leader while the caches' member was isolated; reads that returned X: linearizable=%d/12, serializable=%d/6, upstream-cacher(rv=0)=%d/3",
		deleted.ResourceVersion, countX(reads, "linearizable"), countX(reads, "serializable"), countX(reads, "upstream-cacher"))

	// Heal: the linearizable cache converges to a state without X.
	cl.Heal()
	waitFor(t, "a consistent LIST without X after healing", func() bool {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		l := &example.PodList{}
		err := caches[0].env.Cache.GetList(rctx, "/pods/", listOpts(""), l)
		return err == nil && !names(l)["x"]
	})
}

// seedRead is one read of the seed scenario and what it returned.
type seedRead struct {
	cache, what, rv string
	sawX            bool
	err             error
}

func countX(reads []seedRead, prefix string) int {
	n := 0
	for _, r := range reads {
		if strings.HasPrefix(r.cache, prefix) && r.sawX {
			n++
		}
	}
	return n
}

func firstLine(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 120 {
		s = s[:120] + "..."
	}
	return s
}
