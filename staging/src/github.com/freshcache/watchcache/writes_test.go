package watchcache_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/storage"

	"github.com/freshcache/watchcache"
	"github.com/freshcache/watchcache/internal/testing/cachetest"
	"github.com/freshcache/watchcache/oracle"
)

// heldOracle is an Oracle whose fetches wait for the test: each one sends
// a reply channel on fetches and returns what the test sends back.
type heldOracle struct {
	*oracle.Oracle
	fetches chan chan int64
}

func newHeldOracle(t *testing.T) *heldOracle {
	h := &heldOracle{fetches: make(chan chan int64, 4)}
	o, err := oracle.NewFromFunc(func(ctx context.Context) (int64, error) {
		reply := make(chan int64, 1)
		h.fetches <- reply
		select {
		case rev := <-reply:
			return rev, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}, oracle.Options{WriteWait: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(o.Close)
	h.Oracle = o
	return h
}

// waiting starts a Revision call and returns its result channel once its
// fetch reached the (held) etcd, with that fetch's reply channel.
func (h *heldOracle) waiting(t *testing.T) (<-chan int64, chan int64) {
	t.Helper()
	res := make(chan int64, 1)
	go func() {
		rev, err := h.Revision(context.Background())
		if err != nil {
			rev = -1 // the test may be over; it fails on -1 if not
		}
		res <- rev
	}()
	select {
	case reply := <-h.fetches:
		return res, reply
	case <-time.After(30 * time.Second):
		t.Fatal("no fetch")
		return nil, nil
	}
}

func setNode(node string) storage.UpdateFunc {
	return storage.SimpleUpdate(func(obj runtime.Object) (runtime.Object, error) {
		obj.(*example.Pod).Spec.NodeName = node
		return obj, nil
	})
}

// TestWritesAnswerWaitingReads: a write through the cache answers a read
// waiting for its revision with the revision etcd committed the write at,
// and a call that sent no write, or whose write etcd refused, answers
// nothing. The read's own fetch is held throughout, so any answer before
// the test releases it came from a write.
func TestWritesAnswerWaitingReads(t *testing.T) {
	ctx := context.Background()
	const key = "/pods/ns/p"
	create := func(e *cachetest.Env, out *example.Pod) error {
		return e.Cache.Create(ctx, key, mkPod("ns", "p", "n0"), out, 0)
	}
	cases := []struct {
		name string
		// setup runs before the read starts waiting.
		setup func(t *testing.T, e *cachetest.Env)
		// write runs while it waits and returns the written object, or an
		// error.
		write   func(t *testing.T, e *cachetest.Env, out *example.Pod) error
		answers bool
		wantErr func(error) bool
	}{
		{name: "create", write: func(t *testing.T, e *cachetest.Env, out *example.Pod) error { return create(e, out) }, answers: true},
		{
			name:  "create of an existing key",
			setup: func(t *testing.T, e *cachetest.Env) { mustCreate(t, e, key) },
			write: func(t *testing.T, e *cachetest.Env, out *example.Pod) error { return create(e, out) },
			// etcd refused the write, so its header names no write of ours.
			wantErr: storage.IsExist,
		},
		{
			name:  "update",
			setup: func(t *testing.T, e *cachetest.Env) { mustCreate(t, e, key) },
			write: func(t *testing.T, e *cachetest.Env, out *example.Pod) error {
				return e.Cache.GuaranteedUpdate(ctx, key, out, false, nil, setNode("n1"), nil)
			},
			answers: true,
		},
		{
			name:  "update that changes nothing",
			setup: func(t *testing.T, e *cachetest.Env) { mustCreate(t, e, key) },
			write: func(t *testing.T, e *cachetest.Env, out *example.Pod) error {
				// The store answers it from a read: its resourceVersion
				// is the object's, not a revision fetched or written
				// after the read arrived.
				return e.Cache.GuaranteedUpdate(ctx, key, out, false, nil, setNode("n0"), nil)
			},
		},
		{
			name: "update after a conflict",
			setup: func(t *testing.T, e *cachetest.Env) {
				mustCreate(t, e, key)
				// The cache's copy goes stale: the update's first
				// attempt is refused and its second one writes.
				e.Gate.Pause()
				if err := e.Etcd.GuaranteedUpdate(ctx, key, &example.Pod{}, false, nil, setNode("behind-the-cache"), nil); err != nil {
					t.Fatal(err)
				}
			},
			write: func(t *testing.T, e *cachetest.Env, out *example.Pod) error {
				defer e.Gate.Resume()
				return e.Cache.GuaranteedUpdate(ctx, key, out, false, nil, setNode("n1"), nil)
			},
			answers: true,
		},
		{
			name:  "update whose precondition fails",
			setup: func(t *testing.T, e *cachetest.Env) { mustCreate(t, e, key) },
			write: func(t *testing.T, e *cachetest.Env, out *example.Pod) error {
				uid := "not-the-uid"
				return e.Cache.GuaranteedUpdate(ctx, key, out, false, storage.NewUIDPreconditions(uid), setNode("n1"), nil)
			},
			wantErr: storage.IsInvalidObj,
		},
		{
			name:  "delete",
			setup: func(t *testing.T, e *cachetest.Env) { mustCreate(t, e, key) },
			write: func(t *testing.T, e *cachetest.Env, out *example.Pod) error {
				return e.Cache.Delete(ctx, key, out, nil, storage.ValidateAllObjectFunc, nil, storage.DeleteOptions{})
			},
			answers: true,
		},
		{
			name:  "delete the validator refuses",
			setup: func(t *testing.T, e *cachetest.Env) { mustCreate(t, e, key) },
			write: func(t *testing.T, e *cachetest.Env, out *example.Pod) error {
				refuse := func(context.Context, runtime.Object) error {
					return apierrors.NewForbidden(example.Resource("pods"), "p", nil)
				}
				return e.Cache.Delete(ctx, key, out, nil, refuse, nil, storage.DeleteOptions{})
			},
			wantErr: apierrors.IsForbidden,
		},
	}
	// sourceOnly gives the cache the Oracle as its revision source alone
	// (Config.Oracle without Config.Writes): it then hears of no write.
	for _, mode := range []struct{ gateOn, sourceOnly bool }{{true, false}, {false, false}, {true, true}} {
		gateOn := mode.gateOn
		for _, tc := range cases {
			t.Run(tc.name+"/RevisionsFromWrites="+strconv.FormatBool(gateOn)+"/source-only="+strconv.FormatBool(mode.sourceOnly), func(t *testing.T) {
				h := newHeldOracle(t)
				with := cachetest.WithOracle(h.Oracle)
				if mode.sourceOnly {
					with = cachetest.WithSource(h.Oracle)
				}
				e := cachetest.Start(t, with, cachetest.WithOptions(watchcache.Options{RevisionsFromWrites: &gateOn}))
				if tc.setup != nil {
					tc.setup(t, e)
				}
				res, reply := h.waiting(t)
				out := &example.Pod{}
				err := tc.write(t, e, out)
				switch {
				case tc.wantErr != nil && !tc.wantErr(err):
					t.Fatalf("write: %v, want the error the case names", err)
				case tc.wantErr == nil && err != nil:
					t.Fatalf("write: %v", err)
				}
				if tc.answers && gateOn && !mode.sourceOnly {
					if got, want := <-res, int64(rvOf(t, out.ResourceVersion)); got != want {
						t.Fatalf("the read got %d, want the write's revision %d", got, want)
					}
					if st := h.Stats(); st.ReadsFromWrites != 1 {
						t.Fatalf("stats %+v, want one read answered by the write", st)
					}
					reply <- 1 // the fetch ends; nobody is left for it
					return
				}
				// The write has returned: had it answered the read, the
				// count would show it now.
				if st := h.Stats(); st.ReadsFromWrites != 0 {
					t.Fatalf("stats %+v: the write answered the read", st)
				}
				const fetched = 1 << 40
				reply <- fetched
				if got := <-res; got != fetched {
					t.Fatalf("the read got %d, want its fetch's %d", got, int64(fetched))
				}
			})
		}
	}
}

func mustCreate(t *testing.T, e *cachetest.Env, key string) {
	t.Helper()
	out := &example.Pod{}
	if err := e.Cache.Create(context.Background(), key, mkPod("ns", "p", "n0"), out, 0); err != nil {
		t.Fatal(err)
	}
	// Let the cache hold it, so that updates get it as their suggestion.
	if err := e.Cache.GetList(context.Background(), "/pods/", storage.ListOptions{ResourceVersion: out.ResourceVersion, Recursive: true, Predicate: storage.Everything}, &example.PodList{}); err != nil {
		t.Fatal(err)
	}
}

// panickingStore panics after the etcd3 store under it has sent and
// committed a write, as a codec or a store bug would between the write's
// send and its end.
type panickingStore struct{ storage.Interface }

type storePanic struct{}

func (s panickingStore) Create(ctx context.Context, key string, obj, out runtime.Object, ttl uint64) error {
	_ = s.Interface.Create(ctx, key, obj, out, ttl)
	panic(storePanic{})
}

func (s panickingStore) GuaranteedUpdate(ctx context.Context, key string, destination runtime.Object, ignoreNotFound bool, preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc, suggestion runtime.Object) error {
	_ = s.Interface.GuaranteedUpdate(ctx, key, destination, ignoreNotFound, preconditions, tryUpdate, suggestion)
	panic(storePanic{})
}

func (s panickingStore) Delete(ctx context.Context, key string, out runtime.Object, preconditions *storage.Preconditions, validateDeletion storage.ValidateObjectFunc, cachedExistingObject runtime.Object, opts storage.DeleteOptions) error {
	_ = s.Interface.Delete(ctx, key, out, preconditions, validateDeletion, cachedExistingObject, opts)
	panic(storePanic{})
}

// TestWriteProbeEndsOnPanic: a write call that panics after its request
// went to etcd still ends the write it announced. Otherwise the ledger
// counts it in flight for good, and a gap in every later span is Pending
// (a settle waits out its grace each time) instead of Unproven.
func TestWriteProbeEndsOnPanic(t *testing.T) {
	ctx := context.Background()
	const key = "/pods/ns/p"
	for _, tc := range []struct {
		name  string
		write func(c *watchcache.Cache) error
	}{
		{name: "create", write: func(c *watchcache.Cache) error {
			return c.Create(ctx, key, mkPod("ns", "p", "n0"), &example.Pod{}, 0)
		}},
		{name: "update", write: func(c *watchcache.Cache) error {
			return c.GuaranteedUpdate(ctx, key, &example.Pod{}, false, nil, setNode("n1"), nil)
		}},
		{name: "delete", write: func(c *watchcache.Cache) error {
			return c.Delete(ctx, key, &example.Pod{}, nil, storage.ValidateAllObjectFunc, nil, storage.DeleteOptions{})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server, o := etcdWithOracle(t)
			opts := cachetest.WithOptions(watchcache.Options{RevisionsFromWrites: on(), ProgressFromOwnWrites: on()})
			e := cachetest.StartOn(t, server.V3Client, opts, cachetest.WithOracle(o),
				cachetest.WithStorageWrapper(func(s storage.Interface) storage.Interface { return panickingStore{s} }))
			if tc.name != "create" {
				if err := e.Etcd.Create(ctx, key, mkPod("ns", "p", "n0"), &example.Pod{}, 0); err != nil {
					t.Fatal(err)
				}
			}
			func() {
				defer func() {
					if r := recover(); r != (storePanic{}) {
						t.Fatalf("recovered %v, want the store's panic", r)
					}
				}()
				_ = tc.write(e.Cache)
			}()
			// A revision nobody wrote through the cache: with no write of
			// this process in flight, nothing can fill it.
			resp, err := e.Client.Put(ctx, "/foreign", "x")
			if err != nil {
				t.Fatal(err)
			}
			rev := resp.Header.Revision
			if got := o.Ledger().Prove("/nothing/", rev-1, rev); got != oracle.Unproven {
				t.Fatalf("a span with a foreign revision is %v, want Unproven: the panicked write is still in flight", got)
			}
		})
	}
}
