package watchcache_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"reflect"
	"sort"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/storage"

	"github.com/freshcache/watchcache"
	"github.com/freshcache/watchcache/internal/cachetest"
)

func mkPod(ns, name, node string) *example.Pod {
	return &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: example.PodSpec{NodeName: node}}
}

func TestBadInputGetsKubernetesErrors(t *testing.T) {
	e := cachetest.Start(t)
	ctx := context.Background()
	list := &example.PodList{}
	cases := []struct {
		name  string
		key   string
		opts  storage.ListOptions
		check func(error) bool
	}{
		{"malformed rv", "/pods/", storage.ListOptions{ResourceVersion: "x1", Recursive: true, Predicate: storage.Everything}, apierrors.IsBadRequest},
		{"malformed continue", "/pods/", storage.ListOptions{Recursive: true, Predicate: storage.SelectionPredicate{Label: storage.Everything.Label, Field: storage.Everything.Field, Limit: 1, Continue: "%%%"}}, apierrors.IsBadRequest},
		{"negative limit", "/pods/", storage.ListOptions{ResourceVersion: "0", Recursive: true, Predicate: storage.SelectionPredicate{Label: storage.Everything.Label, Field: storage.Everything.Field, Limit: -1}}, apierrors.IsBadRequest},
		{"unknown match", "/pods/", storage.ListOptions{ResourceVersion: "1", ResourceVersionMatch: "Sometimes", Recursive: true, Predicate: storage.Everything}, apierrors.IsBadRequest},
		{"key outside prefix", "/secrets/", storage.ListOptions{ResourceVersion: "0", Recursive: true, Predicate: storage.Everything}, func(err error) bool { return err != nil }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := e.Cache.GetList(ctx, tc.key, tc.opts, list); !tc.check(err) {
				t.Fatalf("got %v", err)
			}
		})
	}
	if _, err := e.Cache.Watch(ctx, "/pods/", storage.ListOptions{ResourceVersion: "zz", Recursive: true, Predicate: storage.Everything}); err == nil {
		t.Fatal("watch with malformed rv succeeded")
	}
}

func TestLimitHonouredAtRVZeroAndIndexUsed(t *testing.T) {
	e := cachetest.Start(t, cachetest.NodeNameAndNamespaceIndex)
	ctx := context.Background()
	var last string
	for i := 0; i < 5; i++ {
		out := &example.Pod{}
		p := mkPod("ns", fmt.Sprintf("p%d", i), fmt.Sprintf("node%d", i%2))
		if err := e.Cache.Create(ctx, cachetest.PodKey(p), p, out, 0); err != nil {
			t.Fatal(err)
		}
		last = out.ResourceVersion
	}
	// Make sure the cache has everything, then list at rv=0 with a limit.
	list := &example.PodList{}
	if err := e.Cache.GetList(ctx, "/pods/", storage.ListOptions{ResourceVersion: last, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Recursive: true, Predicate: storage.Everything}, list); err != nil {
		t.Fatal(err)
	}
	pred := storage.Everything
	pred.Limit = 2
	if err := e.Cache.GetList(ctx, "/pods/", storage.ListOptions{ResourceVersion: "0", Recursive: true, Predicate: pred}, list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 2 || list.Continue == "" || list.RemainingItemCount == nil || *list.RemainingItemCount != 3 {
		t.Fatalf("rv=0 limit=2: %d items, continue %q, remaining %v", len(list.Items), list.Continue, list.RemainingItemCount)
	}
	byNode := storage.SelectionPredicate{
		Label:       storage.Everything.Label,
		Field:       mustField(t, "spec.nodeName=node1"),
		GetAttrs:    cachetest.PodAttrs,
		IndexFields: []string{"spec.nodeName"},
	}
	if err := e.Cache.GetList(ctx, "/pods/", storage.ListOptions{ResourceVersion: "0", Recursive: true, Predicate: byNode}, list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range list.Items {
		names = append(names, p.Name)
	}
	if !reflect.DeepEqual(names, []string{"p1", "p3"}) {
		t.Fatalf("by node1: %v", names)
	}
}

// TestNoLeaksOnCancel checks that cancelled contexts end watches and waits:
// no goroutine started for them survives.
func TestNoLeaksOnCancel(t *testing.T) {
	e := cachetest.Start(t)
	// The cache's etcd watch stream starts after readiness; make sure it
	// runs (an event went through it) before taking the baseline.
	out := &example.Pod{}
	if err := e.Cache.Create(context.Background(), "/pods/ns/seed", mkPod("ns", "seed", ""), out, 0); err != nil {
		t.Fatal(err)
	}
	if err := e.Cache.Get(context.Background(), "/pods/ns/seed", storage.GetOptions{ResourceVersion: out.ResourceVersion}, &example.Pod{}); err != nil {
		t.Fatal(err)
	}
	ignore := goleak.IgnoreCurrent()
	ctx, cancel := context.WithCancel(context.Background())
	var ws []watch.Interface
	for i := 0; i < 10; i++ {
		w, err := e.Cache.Watch(ctx, "/pods/", storage.ListOptions{ResourceVersion: "0", Recursive: true, Predicate: storage.Everything})
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	waitErr := make(chan error, 1)
	go func() {
		// A revision far in the future: only the cancellation ends it.
		waitErr <- e.Cache.Get(ctx, "/pods/ns/x", storage.GetOptions{ResourceVersion: strconv.FormatUint(e.Cache.RV()+1_000_000, 10)}, &example.Pod{})
	}()
	cancel()
	select {
	case err := <-waitErr:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("wait ended with %v, want context.Canceled", err)
		}
	case <-time.After(wait30s):
		t.Fatal("cancelled wait did not return")
	}
	for _, w := range ws {
		for range w.ResultChan() {
		}
	}
	goleak.VerifyNone(t, ignore)
}

const wait30s = 30 * time.Second

// TestModel applies random creates, updates and deletes to etcd through the
// cache and compares the cache's LIST (Exact and NotOlderThan), GET and
// WATCH against a plain map replayed from the writes, at every revision.
// Set FRESHCACHE_SEED to replay a failure.
func TestModel(t *testing.T) {
	seed := time.Now().UnixNano()
	if s := os.Getenv("FRESHCACHE_SEED"); s != "" {
		seed, _ = strconv.ParseInt(s, 10, 64)
	}
	rng := rand.New(rand.NewSource(seed))
	defer func() {
		if t.Failed() {
			t.Logf("replay with FRESHCACHE_SEED=%d", seed)
		}
	}()
	e := cachetest.Start(t, cachetest.NodeNameAndNamespaceIndex)
	ctx := context.Background()

	type state map[string]string // key -> node name
	type change struct {
		rv   uint64
		typ  watch.EventType
		key  string
		node string
	}
	cur := state{}
	states := map[uint64]state{}
	var log []change
	startRV := e.Cache.RV()
	states[startRV] = state{}
	watchFrom := startRV
	w, err := e.Cache.Watch(ctx, "/pods/", storage.ListOptions{ResourceVersion: strconv.FormatUint(watchFrom, 10), Recursive: true, Predicate: storage.Everything})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	keys := []string{"a", "b", "c", "d", "e", "f"}
	for step := 0; step < 150; step++ {
		name := keys[rng.Intn(len(keys))]
		node := fmt.Sprintf("n%d", rng.Intn(3))
		p := mkPod("ns", name, node)
		key := cachetest.PodKey(p)
		out := &example.Pod{}
		var typ watch.EventType
		if _, exists := cur[key]; !exists {
			if err := e.Cache.Create(ctx, key, p, out, 0); err != nil {
				t.Fatal(err)
			}
			typ = watch.Added
			cur[key] = node
		} else if rng.Intn(3) == 0 {
			if err := e.Cache.Delete(ctx, key, out, nil, storage.ValidateAllObjectFunc, nil, storage.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			typ = watch.Deleted
			delete(cur, key)
		} else {
			err := e.Cache.GuaranteedUpdate(ctx, key, out, false, nil, storage.SimpleUpdate(func(obj runtime.Object) (runtime.Object, error) {
				q := obj.(*example.Pod)
				q.Spec.NodeName = node
				q.Labels = map[string]string{"step": strconv.Itoa(step)}
				return q, nil
			}), nil)
			if err != nil {
				t.Fatal(err)
			}
			typ = watch.Modified
			cur[key] = node
		}
		rv, _ := strconv.ParseUint(out.ResourceVersion, 10, 64)
		snap := state{}
		for k, v := range cur {
			snap[k] = v
		}
		states[rv] = snap
		log = append(log, change{rv: rv, typ: typ, key: key, node: node})

		if rng.Intn(10) != 0 {
			continue
		}
		// Compare a LIST at an earlier revision (Exact) ...
		at := log[rng.Intn(len(log))].rv
		list := &example.PodList{}
		if err := e.Cache.GetList(ctx, "/pods/", storage.ListOptions{ResourceVersion: strconv.FormatUint(at, 10), ResourceVersionMatch: metav1.ResourceVersionMatchExact, Recursive: true, Predicate: storage.Everything}, list); err != nil {
			t.Fatalf("step %d: exact list at %d: %v", step, at, err)
		}
		if got := asState(list); !reflect.DeepEqual(got, map[string]string(states[at])) {
			t.Fatalf("step %d: exact list at %d = %v, model %v", step, at, got, states[at])
		}
		// ... a LIST not older than now ...
		if err := e.Cache.GetList(ctx, "/pods/", storage.ListOptions{ResourceVersion: strconv.FormatUint(rv, 10), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Recursive: true, Predicate: storage.Everything}, list); err != nil {
			t.Fatalf("step %d: list at %d: %v", step, rv, err)
		}
		if got := asState(list); !reflect.DeepEqual(got, map[string]string(states[rv])) {
			t.Fatalf("step %d: list at %d = %v, model %v", step, rv, got, states[rv])
		}
		// ... and a GET of the key just written.
		got := &example.Pod{}
		err := e.Cache.Get(ctx, key, storage.GetOptions{ResourceVersion: strconv.FormatUint(rv, 10)}, got)
		if node, ok := states[rv][key]; ok {
			if err != nil || got.Spec.NodeName != node {
				t.Fatalf("step %d: get %s at %d = %v/%v, model %s", step, key, rv, got.Spec.NodeName, err, node)
			}
		} else if !storage.IsNotFound(err) {
			t.Fatalf("step %d: get deleted %s at %d: %v", step, key, rv, err)
		}
	}
	// The watch must have replayed exactly the log.
	for i, want := range log {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch closed after %d events", i)
			}
			obj := ev.Object
			if co, ok := obj.(runtime.CacheableObject); ok {
				obj = co.GetObject() // the fan-out shares objects among watchers
			}
			p := obj.(*example.Pod)
			rv, _ := strconv.ParseUint(p.ResourceVersion, 10, 64)
			if ev.Type != want.typ || rv != want.rv || cachetest.PodKey(p) != want.key {
				t.Fatalf("watch event %d = %s %s@%d, model %s %s@%d", i, ev.Type, cachetest.PodKey(p), rv, want.typ, want.key, want.rv)
			}
		case <-time.After(wait30s):
			t.Fatalf("watch event %d did not arrive", i)
		}
	}
}

func asState(l *example.PodList) map[string]string {
	out := map[string]string{}
	keys := make([]string, 0, len(l.Items))
	for i := range l.Items {
		k := cachetest.PodKey(&l.Items[i])
		out[k] = l.Items[i].Spec.NodeName
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return out
}

func TestOptionsValidation(t *testing.T) {
	bad := []watchcache.Options{
		{EventsHistoryWindow: -1},
		{HistoryCapacity: -1},
		{ConsistentReadTimeout: -time.Second},
		{TimeoutAction: "maybe"},
		{InconsistencyCheckPeriod: -time.Minute},
	}
	for _, o := range bad {
		if _, err := watchcache.New(o, watchcache.Config{}); !errors.Is(err, watchcache.ErrInvalidOptions) {
			t.Errorf("%+v: err = %v, want ErrInvalidOptions", o, err)
		}
	}
}
