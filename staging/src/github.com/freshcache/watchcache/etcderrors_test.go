package watchcache_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/apis/example"
	apiserverfeatures "k8s.io/apiserver/pkg/features"
	"k8s.io/apiserver/pkg/storage"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"

	"github.com/freshcache/watchcache"
	"github.com/freshcache/watchcache/internal/testing/cachetest"
)

// etcdTrouble fails the reads whose context carries troubled with err,
// the first failures times (negative: always), and passes everything else
// to the real store: what the etcd3 store returns while the member it
// reads through rejoins its cluster.
type etcdTrouble struct {
	storage.Interface
	err      error
	failures int64
	calls    atomic.Int64
}

type troubled struct{}

func (e *etcdTrouble) fail(ctx context.Context) error {
	if ctx.Value(troubled{}) == nil {
		return nil
	}
	if n := e.calls.Add(1); e.failures < 0 || n <= e.failures {
		return e.err
	}
	return nil
}

func (e *etcdTrouble) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	if err := e.fail(ctx); err != nil {
		return err
	}
	return e.Interface.GetList(ctx, key, opts, listObj)
}

func (e *etcdTrouble) Get(ctx context.Context, key string, opts storage.GetOptions, objPtr runtime.Object) error {
	if err := e.fail(ctx); err != nil {
		return err
	}
	return e.Interface.Get(ctx, key, opts, objPtr)
}

// TestReadsFromEtcdSurviveItsTroubles: a read the cache sends to etcd (here
// GET rv="" with the gates off and an Exact LIST with ListFromCacheSnapshot
// off, as upstream delegates them) meets an error etcd
// gives while its member rejoins or elects a leader. Such an error is
// gone a moment later: the read is tried again, briefly, and answered;
// if etcd stays in trouble the client gets 429 with Retry-After, which
// client-go retries, never a 500 with etcd's raw error. Errors that are
// answers (not found) pass through at once.
func TestReadsFromEtcdSurviveItsTroubles(t *testing.T) {
	for _, tc := range []struct {
		name     string
		err      error
		failures int64
		want429  bool
	}{
		{"leader changed once", rpctypes.ErrLeaderChanged, 1, false},
		{"no leader, three times", rpctypes.ErrNoLeader, 3, false},
		{"timed out twice", rpctypes.ErrTimeout, 2, false},
		{"no leader for good", rpctypes.ErrNoLeader, -1, true},
		{"leader changed for good", rpctypes.ErrLeaderChanged, -1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, apiserverfeatures.ListFromCacheSnapshot, false)
			trouble := &etcdTrouble{err: tc.err, failures: tc.failures}
			e := cachetest.Start(t,
				cachetest.WithStorageWrapper(func(s storage.Interface) storage.Interface { trouble.Interface = s; return trouble }),
				cachetest.WithOptions(watchcache.Options{ConsistentReadsFromCache: off()}))
			a := create(t, e.Cache, "ns", "a", "")
			for _, read := range []struct {
				name string
				do   func(ctx context.Context) error
			}{
				{"LIST", func(ctx context.Context) error {
					list := &example.PodList{}
					opts := listOpts(a.ResourceVersion)
					opts.ResourceVersionMatch = metav1.ResourceVersionMatchExact
					if err := e.Cache.GetList(ctx, "/pods/", opts, list); err != nil {
						return err
					}
					if len(list.Items) != 1 {
						return errors.New("the list does not hold a")
					}
					return nil
				}},
				{"GET", func(ctx context.Context) error {
					return e.Cache.Get(ctx, cachetest.PodKey(a), storage.GetOptions{}, &example.Pod{})
				}},
			} {
				trouble.calls.Store(0)
				err := read.do(context.WithValue(context.Background(), troubled{}, true))
				if tc.want429 {
					retryAfter(t, err)
					continue
				}
				if err != nil {
					t.Fatalf("%s: %v; want the read tried again and answered", read.name, err)
				}
				if got := trouble.calls.Load(); got != tc.failures+1 {
					t.Fatalf("%s: %d calls to etcd, want %d", read.name, got, tc.failures+1)
				}
			}
			missing := &example.Pod{}
			missing.Namespace, missing.Name = "ns", "missing"
			err := e.Cache.Get(context.Background(), cachetest.PodKey(missing), storage.GetOptions{}, &example.Pod{})
			if !storage.IsNotFound(err) {
				t.Fatalf("GET of a missing pod: %v, want not found", err)
			}
			if apierrors.IsTooManyRequests(err) {
				t.Fatal("not found turned into 429")
			}
		})
	}
}
