package linearizability

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/storage"

	"github.com/freshcache/watchcache"
	"github.com/freshcache/watchcache/internal/testing/cachetest"
	"github.com/freshcache/watchcache/metrics"
	"github.com/freshcache/watchcache/oracle"
)

// advanceCounter counts the pod cache's catch-ups on the ledger.
type advanceCounter struct {
	metrics.Discard
	n atomic.Int64
}

func (a *advanceCounter) AdvancedByOwnWrites() { a.n.Add(1) }

// TestOwnWritesLinearizable is the history check for the ledger of own
// writes (ProgressFromOwnWrites). One "apiserver" (one Oracle, hence one
// ledger) has a pod cache and a lease cache. Its writers update pods
// through the pod cache and, far more often, leases through the lease
// cache, so that the pod cache is usually behind a read's revision by
// other resources' own writes only, which is when it catches up without
// etcd. Another writer updates pods straight through a store on another
// member (another apiserver: revisions the ledger lacks). Every
// consistent read of the pod cache must reflect every pod write
// acknowledged before it started and be a true snapshot of etcd at its
// resourceVersion (Check); a catch-up the ledger got wrong would serve a
// snapshot that lacks a pod written at or below that revision.
func TestOwnWritesLinearizable(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-member etcd cluster")
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	run := runOwnWrites(t, seed, nil)
	run.rec.mu.Lock()
	defer run.rec.mu.Unlock()
	violations := checkHistory(t, run.rec)
	if run.advances == 0 {
		t.Fatal("the pod cache never caught up on the ledger: the test did not exercise it")
	}
	t.Logf("OWN-WRITES EVIDENCE: %d pod writes (half through the cache, half by another member), %d lease writes through the cache, %d consistent reads, %d catch-ups on the ledger; violations: %d",
		len(run.rec.writes), run.leaseWrites, len(run.rec.reads), run.advances, len(violations))
}

// ownWritesRun is what one run of runOwnWrites recorded.
type ownWritesRun struct {
	rec                   *recorder
	advances, leaseWrites int64
	// readErrors counts reads that failed, when the run tolerates them.
	readErrors int64
}

// runOwnWrites runs TestOwnWritesLinearizable's writers and readers once.
// breakLedger, if set, is applied to the shared ledger before the caches
// start (a negative control): a read that fails then (the pod cache
// relists when an event shows the ledger wrong, and answers 429 until it
// has) is counted, not reported.
func runOwnWrites(t *testing.T, seed uint64, breakLedger func(*oracle.Ledger)) *ownWritesRun {
	t.Helper()
	cl := cachetest.StartCluster(t)
	kc := cl.KubeClient(t, 0)
	o, err := oracle.New(kc.Client, oracle.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(o.Close)
	if breakLedger != nil {
		breakLedger(o.Ledger())
	}
	opts := cachetest.WithOptions(watchcache.Options{
		ConsistentReadsFromCache: ptr(true), FreshResourceVersionZero: ptr(true),
		RevisionsFromWrites: ptr(true), ProgressFromOwnWrites: ptr(true),
		ConsistentReadTimeout: opTimeout, ZeroReadStaleness: zeroStaleness,
	})
	advances := &advanceCounter{}
	pods := cachetest.StartOn(t, kc, opts, cachetest.WithOracle(o), cachetest.WithRecorder(advances))
	leases := cachetest.StartOn(t, kc, opts, cachetest.WithOracle(o), cachetest.WithPrefix("/leases/", "leases"))
	foreign := cachetest.NewStoreOn(t, cl.KubeClient(t, 1))

	rec := &recorder{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		writers, readers sync.WaitGroup
		done             = make(chan struct{})
		leaseWrites      atomic.Int64
		readErrors       atomic.Int64
	)
	for wi, s := range []storage.Interface{pods.Cache, foreign} {
		rng := rand.New(rand.NewPCG(seed, uint64(wi)))
		writers.Go(func() {
			for n := range writesPerWriter {
				if err := writeOnce(ctx, rec, s, rng, fmt.Sprintf("w%d-%d", wi, n)); err != nil {
					t.Errorf("pod writer %d: %v", wi, err)
					return
				}
			}
		})
	}
	for li := range 3 {
		rng := rand.New(rand.NewPCG(seed, uint64(50+li)))
		writers.Go(func() {
			for n := range 4 * writesPerWriter {
				if err := writeLease(ctx, leases.Cache, rng, fmt.Sprintf("l%d-%d", li, n)); err != nil {
					t.Errorf("lease writer %d: %v", li, err)
					return
				}
				leaseWrites.Add(1)
			}
		})
	}
	for ri := range 3 {
		rng := rand.New(rand.NewPCG(seed, uint64(100+ri)))
		name := fmt.Sprintf("pods/r%d", ri)
		if breakLedger == nil {
			readers.Go(func() { readUntil(ctx, t, done, rec, pods.Cache, rng, name) })
			continue
		}
		readers.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-done:
					return
				default:
				}
				if err := readOnce(ctx, rec, pods.Cache, rng, fmt.Sprintf("%s-%d", name, n)); err != nil {
					readErrors.Add(1)
				}
			}
		})
	}
	writers.Wait()
	close(done)
	readers.Wait()
	return &ownWritesRun{rec: rec, advances: advances.n.Load(), leaseWrites: leaseWrites.Load(), readErrors: readErrors.Load()}
}

// writeLease creates or updates one of a few leases through s (a cache of
// /leases/), changing it every time.
func writeLease(ctx context.Context, s storage.Interface, rng *rand.Rand, tag string) error {
	name := fmt.Sprintf("l%d", rng.IntN(keys))
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	return s.GuaranteedUpdate(ctx, "/leases/ns/"+name, &example.Pod{}, true, nil, func(in runtime.Object, _ storage.ResponseMeta) (runtime.Object, *uint64, error) {
		p := in.(*example.Pod).DeepCopy()
		p.Namespace, p.Name = "ns", name
		p.Annotations = map[string]string{"write": tag}
		return p, nil, nil
	}, nil)
}
