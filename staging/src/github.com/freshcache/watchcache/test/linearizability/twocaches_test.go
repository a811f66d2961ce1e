package linearizability

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/storage"

	"github.com/freshcache/watchcache"
	"github.com/freshcache/watchcache/internal/testing/cachetest"
	"github.com/freshcache/watchcache/oracle"
)

const (
	keys            = 6
	writesPerWriter = 60
	readersPerCache = 2
	// opTimeout bounds one operation; a healthy cluster never reaches it.
	opTimeout = 30 * time.Second
	// zeroStaleness is the caches' ZeroReadStaleness: an rv=0 read must
	// reflect every write acknowledged this long before it started. Short,
	// so that the bound is tight against the writers' pace and many rv=0
	// reads still fetch.
	zeroStaleness = 20 * time.Millisecond
)

// recorder collects the history. Positions come from one counter, handed
// out under mu: Return of one operation < Invoke of another means it
// finished first. Each position's monotonic time is kept as well, for the
// one check that needs time: an rv=0 read's bound (bounded).
type recorder struct {
	mu     sync.Mutex
	pos    uint64
	stamps []time.Time // stamps[p-1]: when position p was handed out
	writes []Write
	reads  []Read
	lagged int // reads that arrived while their cache was behind an acked write
}

func (r *recorder) now() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pos++
	r.stamps = append(r.stamps, time.Now())
	return r.pos
}

// bounded is the Invoke that Check must give an rv=0 read invoked at
// position invoke: the last position handed out at least zeroStaleness
// before it, so that exactly the writes acknowledged that long before the
// read started must be in it. (The cache took the read's arrival later
// still, so its own bound covers at least these writes.) 0 if none.
func (r *recorder) bounded(invoke uint64) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	cutoff := r.stamps[invoke-1].Add(-zeroStaleness)
	// The first position stamped after the cutoff; the one before it is
	// the last at or before.
	after := sort.Search(int(invoke), func(i int) bool { return r.stamps[i].After(cutoff) })
	return uint64(after)
}

func (r *recorder) write(w Write) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writes = append(r.writes, w)
}

func (r *recorder) read(rd Read, cacheRVAtInvoke uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reads = append(r.reads, rd)
	if int64(cacheRVAtInvoke) < NewestAckedRV(r.writes, rd.Invoke) {
		r.lagged++
	}
}

func podKey(i int) (ns, name, key string) {
	name = fmt.Sprintf("k%d", i)
	return "ns", name, "/pods/ns/" + name
}

// TestTwoCachesLinearizable runs writers on all three members of a
// 3-member embedded etcd and consistent readers on two caches whose etcd
// clients are pinned to two different members, then checks from the
// recorded history that every consistent read (LIST rv="" and rv=0, GET
// rv="" and rv=0, and the initial state of WATCH rv="" with
// sendInitialEvents) reflects every write acknowledged before it started
// and shows a true snapshot of etcd (Check). The seed of the random
// choices is logged; the interleaving is the scheduler's, so a failure
// prints the violations and the write history instead of a replay.
func TestTwoCachesLinearizable(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-member etcd cluster")
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)

	cl := cachetest.StartCluster(t)
	opts := cachetest.WithOptions(watchcache.Options{
		ConsistentReadsFromCache: ptr(true), FreshResourceVersionZero: ptr(true),
		ConsistentReadTimeout: opTimeout, ZeroReadStaleness: zeroStaleness,
	})
	type cache struct {
		name string
		c    *watchcache.Cache
		gate *cachetest.Gate
	}
	var caches []cache
	for _, member := range []int{0, 1} {
		kc := cl.KubeClient(t, member)
		o, err := oracle.New(kc.Client, oracle.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(o.Close)
		env := cachetest.StartOn(t, kc, opts, cachetest.WithOracle(o))
		caches = append(caches, cache{fmt.Sprintf("cache@m%d", member), env.Cache, env.Gate})
	}
	var stores []storage.Interface
	for member := range cl.Members {
		stores = append(stores, cachetest.NewStoreOn(t, cl.KubeClient(t, member)))
	}

	rec := &recorder{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		writers sync.WaitGroup
		readers sync.WaitGroup
		done    = make(chan struct{})
	)
	for wi, s := range stores {
		rng := rand.New(rand.NewPCG(seed, uint64(wi)))
		writers.Add(1)
		go func() {
			defer writers.Done()
			for n := range writesPerWriter {
				if err := writeOnce(ctx, rec, s, rng, fmt.Sprintf("w%d-%d", wi, n)); err != nil {
					t.Errorf("writer %d: %v", wi, err)
					return
				}
			}
		}()
	}
	for ci, c := range caches {
		for ri := range readersPerCache {
			rng := rand.New(rand.NewPCG(seed, uint64(100+10*ci+ri)))
			readers.Go(func() { readUntil(ctx, t, done, rec, c.c, rng, fmt.Sprintf("%s/r%d", c.name, ri)) })
		}
	}
	// The second cache lags now and then: its watch is held back for a
	// few bounds at a time, so that reads arrive while it is behind writes
	// acknowledged longer than zeroStaleness ago, the reads a wrong bound
	// would serve stale.
	readers.Go(func() { lagNowAndThen(done, caches[1].gate) })
	writers.Wait()
	close(done)
	readers.Wait()

	rec.mu.Lock()
	defer rec.mu.Unlock()
	kinds := map[string]int{}
	for _, r := range rec.reads {
		kinds[kindOf(r)]++
	}
	violations := checkHistory(t, rec)
	t.Logf("LINEARIZABILITY EVIDENCE: %d writes on 3 members, %d consistent reads on 2 caches (members 0 and 1) %v, %d arrived while their cache lagged behind an acknowledged write; violations: %d",
		len(rec.writes), len(rec.reads), kinds, rec.lagged, len(violations))
}

// lagNowAndThen holds back g's watch for 5*zeroStaleness at a time, with
// zeroStaleness between, until done closes. The timer paces the fault;
// nothing waits on it.
func lagNowAndThen(done <-chan struct{}, g *cachetest.Gate) {
	defer g.Resume()
	for paused := true; ; paused = !paused {
		d := zeroStaleness
		if paused {
			g.Pause()
			d = 5 * zeroStaleness
		} else {
			g.Resume()
		}
		select {
		case <-done:
			return
		case <-time.After(d):
		}
	}
}

// readUntil has one reader read c (readOnce) until done closes; name
// prefixes its reads' names.
func readUntil(ctx context.Context, t *testing.T, done <-chan struct{}, rec *recorder, c *watchcache.Cache, rng *rand.Rand, name string) {
	for n := 0; ; n++ {
		select {
		case <-done:
			return
		default:
		}
		read := fmt.Sprintf("%s-%d", name, n)
		if err := readOnce(ctx, rec, c, rng, read); err != nil {
			t.Errorf("%s: %v", read, err)
			return
		}
	}
}

// checkHistory checks rec's history (Check), reports up to 20 violations
// and the write history if there are any, fails on an empty history, and
// returns the violations. rec.mu must be held.
func checkHistory(t *testing.T, rec *recorder) []Violation {
	t.Helper()
	violations := Check(rec.writes, rec.reads)
	for i, v := range violations {
		if i == 20 {
			t.Errorf("... %d more", len(violations)-i)
			break
		}
		t.Errorf("violation: %v", v)
	}
	if len(violations) > 0 {
		dumpHistory(t, rec.writes)
	}
	if len(rec.reads) == 0 || len(rec.writes) == 0 {
		t.Fatalf("empty history: %d writes, %d reads", len(rec.writes), len(rec.reads))
	}
	return violations
}

func ptr[T any](v T) *T { return &v }

func kindOf(r Read) string {
	switch {
	case r.Key != "":
		return "GET"
	case strings.HasSuffix(r.Name, "/watch"):
		return "WATCH"
	}
	return "LIST"
}

// writeOnce creates or updates (4 in 5) or deletes a random key through s
// and records it. Every update changes the object, so that it is a real
// write with a revision of its own.
func writeOnce(ctx context.Context, rec *recorder, s storage.Interface, rng *rand.Rand, tag string) error {
	ns, name, key := podKey(rng.IntN(keys))
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	out := &example.Pod{}
	if rng.IntN(5) == 0 {
		invoke := rec.now()
		err := s.Delete(ctx, key, out, nil, storage.ValidateAllObjectFunc, nil, storage.DeleteOptions{})
		ret := rec.now()
		if storage.IsNotFound(err) {
			return nil // nothing was written
		}
		if err != nil {
			return fmt.Errorf("delete %s: %w", key, err)
		}
		rec.write(Write{Key: key, Invoke: invoke, Return: ret, RV: rvOf(out), Delete: true})
		return nil
	}
	invoke := rec.now()
	err := s.GuaranteedUpdate(ctx, key, out, true, nil, func(in runtime.Object, _ storage.ResponseMeta) (runtime.Object, *uint64, error) {
		p := in.(*example.Pod).DeepCopy()
		p.Namespace, p.Name = ns, name
		p.Annotations = map[string]string{"write": tag}
		return p, nil, nil
	}, nil)
	ret := rec.now()
	if err != nil {
		return fmt.Errorf("write %s: %w", key, err)
	}
	rec.write(Write{Key: key, Invoke: invoke, Return: ret, RV: rvOf(out)})
	return nil
}

// readOnce runs one consistent read of a random kind through c and
// records what it observed.
func readOnce(ctx context.Context, rec *recorder, c *watchcache.Cache, rng *rand.Rand, name string) error {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	rv := [2]string{"", "0"}[rng.IntN(2)]
	r := Read{Objects: map[string]int64{}}
	switch rng.IntN(3) {
	case 0: // LIST
		r.Name = name + "/list"
		l := &example.PodList{}
		cacheRV := c.RV()
		r.Invoke = rec.now()
		err := c.GetList(ctx, "/pods/", storage.ListOptions{ResourceVersion: rv, Recursive: true, Predicate: storage.Everything}, l)
		r.Return = rec.now()
		if err != nil {
			return fmt.Errorf("LIST rv=%q: %w", rv, err)
		}
		for i := range l.Items {
			r.Objects["/pods/"+l.Items[i].Namespace+"/"+l.Items[i].Name] = rvOf(&l.Items[i])
		}
		r.SnapshotRV = listRV(l)
		boundZero(rec, &r, rv)
		rec.read(r, cacheRV)
	case 1: // GET
		_, _, key := podKey(rng.IntN(keys))
		r.Name, r.Key = name+"/get", key
		p := &example.Pod{}
		cacheRV := c.RV()
		r.Invoke = rec.now()
		err := c.Get(ctx, key, storage.GetOptions{ResourceVersion: rv}, p)
		r.Return = rec.now()
		switch {
		case storage.IsNotFound(err):
		case err != nil:
			return fmt.Errorf("GET %s rv=%q: %w", key, rv, err)
		default:
			r.Objects[key] = rvOf(p)
		}
		boundZero(rec, &r, rv)
		rec.read(r, cacheRV)
	default: // WATCH rv="" with its initial state
		r.Name = name + "/watch"
		cacheRV := c.RV()
		r.Invoke = rec.now()
		if err := watchInitial(ctx, c, &r); err != nil {
			return err
		}
		r.Return = rec.now()
		rec.read(r, cacheRV)
	}
	return nil
}

// boundZero makes an rv=0 read's check the bounded one: it must reflect
// the writes acknowledged zeroStaleness before it started, not those
// acknowledged since (Options.ZeroReadStaleness).
func boundZero(rec *recorder, r *Read, rv string) {
	if rv == "0" {
		r.Name += "/rv0"
		r.Invoke = rec.bounded(r.Invoke)
	}
}

// watchInitial starts WATCH rv="" with sendInitialEvents and reads its
// initial state: the ADDED events up to the initial-events-end bookmark,
// whose RV is the snapshot's.
func watchInitial(ctx context.Context, c *watchcache.Cache, r *Read) error {
	pred := storage.Everything
	pred.AllowWatchBookmarks = true
	w, err := c.Watch(ctx, "/pods/", storage.ListOptions{Recursive: true, SendInitialEvents: ptr(true), Predicate: pred})
	if err != nil {
		return fmt.Errorf("WATCH: %w", err)
	}
	defer w.Stop()
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return fmt.Errorf("WATCH closed before the initial-events-end bookmark")
			}
			// Events may carry a shared wrapper; it is a metav1.Object.
			obj, err := meta.Accessor(ev.Object)
			if err != nil {
				return fmt.Errorf("WATCH: %s event: %w", ev.Type, err)
			}
			switch ev.Type {
			case watch.Added:
				r.Objects["/pods/"+obj.GetNamespace()+"/"+obj.GetName()] = rvOf(obj)
			case watch.Bookmark:
				if obj.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
					r.SnapshotRV = rvOf(obj)
					return nil
				}
			default:
				return fmt.Errorf("WATCH: unexpected initial event %s", ev.Type)
			}
		case <-ctx.Done():
			return fmt.Errorf("WATCH: %w", ctx.Err())
		}
	}
}

func rvOf(obj metav1.Object) int64 {
	var rv int64
	if _, err := fmt.Sscan(obj.GetResourceVersion(), &rv); err != nil {
		panic(fmt.Sprintf("resourceVersion %q: %v", obj.GetResourceVersion(), err))
	}
	return rv
}

func listRV(l *example.PodList) int64 {
	var rv int64
	if _, err := fmt.Sscan(l.ResourceVersion, &rv); err != nil {
		panic(fmt.Sprintf("list resourceVersion %q: %v", l.ResourceVersion, err))
	}
	return rv
}

func dumpHistory(t *testing.T, writes []Write) {
	t.Helper()
	ws := append([]Write(nil), writes...)
	sort.Slice(ws, func(i, j int) bool { return ws[i].RV < ws[j].RV })
	for _, w := range ws {
		t.Logf("write %s rv=%d delete=%v [%d,%d]", w.Key, w.RV, w.Delete, w.Invoke, w.Return)
	}
}
