package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// relistObjects is more than client-go's pager page (500), so that an rv=0
// list that honoured the limit would come back paginated.
const relistObjects = 600

// TestReflectorRelistStaysInCache runs a real client-go Reflector (list,
// then watch; WatchListClient off) over more than 500 configmaps, makes its
// watch fail with 410 Gone once the revision of its list has been compacted
// away, and checks what upstream's cacher guarantees (kubernetes#108003):
// the reflector's rv=0 list came back in one piece although it asked for
// 500 items, so its relist is an unpaginated rv=<last> read that the cache
// answers, and etcd sees no configmap list from it. Had the rv=0 list been
// paginated, the reflector would relist with limit=500 at its last
// revision: an Exact read, which goes to etcd (and fails there, compacted).
func TestReflectorRelistStaysInCache(t *testing.T) {
	// WatchListClient (on by default) would replace the list by a watch
	// stream; this test is about the list.
	clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, false)
	for _, impl := range implementations {
		t.Run(impl, func(t *testing.T) { reflectorRelistStaysInCache(t, impl) })
	}
}

func reflectorRelistStaysInCache(t *testing.T, impl string) {
	// Compact often, so that the revision of the reflector's list leaves
	// etcd within seconds, as it leaves the watch cache's history in
	// production after some minutes.
	l := startLocalUp(t, "--watch-cache-implementation="+impl, "--etcd-compaction-interval=5s")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cfg := l.restConfig(t, 0)
	cfg.QPS, cfg.Burst = 500, 500 // client-side throttling would make the creates slow
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ns := createNamespace(ctx, t, cs, "relist-"+impl)
	createConfigMaps(ctx, t, cs, ns, relistObjects)
	// rv=0 means "any state": a cache may not have applied the last create
	// yet (freshcache applies a revision once it is proven whole, a
	// progress round trip after the last write). A consistent LIST first
	// makes the cache as fresh as etcd, so the rv=0 list below holds every
	// object and the check is about pages only.
	if l, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != relistObjects {
		t.Fatalf("consistent list of the configmaps: %v items, %v", lenOf(l), err)
	}

	probe := &listWatchProbe{cs: cs, ns: ns}
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	r := cache.NewReflectorWithOptions(&cache.ListWatch{
		ListWithContextFunc:  probe.list,
		WatchFuncWithContext: probe.watch,
	}, &corev1.ConfigMap{}, store, cache.ReflectorOptions{Name: "e2e-relist"})
	rctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); r.RunWithContext(rctx) }()
	defer wg.Wait()
	defer stop()

	waitFor(ctx, t, "the reflector to list and watch", func() (bool, string) {
		lists, watches := probe.counts()
		return len(store.ListKeys()) == relistObjects && watches == 1,
			fmt.Sprintf("%d objects in the store, %d list calls, %d watches", len(store.ListKeys()), len(lists), watches)
	})
	lists, _ := probe.counts()
	if len(lists) == 0 || lists[0].opts.ResourceVersion != "0" {
		t.Fatalf("the reflector's first list was %v, want rv=0 (is WatchListClient off?)", lists)
	}
	first := lists[0]
	if first.opts.Limit == 0 {
		t.Fatalf("the reflector's rv=0 list asked for no limit (%v): the test would prove nothing", first)
	}
	if len(lists) != 1 || first.continued != "" || first.items != relistObjects {
		t.Errorf("the rv=0 list with limit=%d came back paginated: %d pages, the first with %d items and continue %q; upstream's cacher ignores the limit at rv=0",
			first.opts.Limit, len(lists), first.items, first.continued)
	}
	listRV := first.rv

	// Wait until etcd has compacted past the revision of that list: an
	// Exact list of another resource at it answers 410 then.
	waitFor(ctx, t, "etcd to compact past the reflector's list", func() (bool, string) {
		_, err := cs.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{ResourceVersion: listRV, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
		return apierrors.IsResourceExpired(err) || apierrors.IsGone(err), fmt.Sprintf("exact secrets list at %s: %v", listRV, err)
	})
	before := etcdListRequests(apiserverMetrics(ctx, t, cs), "configmaps")

	initialCalls := len(lists)
	probe.expireWatch()
	waitFor(ctx, t, "the reflector to relist and watch again", func() (bool, string) {
		lists, watches := probe.counts()
		return len(lists) > initialCalls && watches >= 2, fmt.Sprintf("%d list calls, %d watches", len(lists), watches)
	})
	after := etcdListRequests(apiserverMetrics(ctx, t, cs), "configmaps")
	lists, _ = probe.counts()
	relist := lists[initialCalls]
	t.Logf("initial list: %v; relist: %v; etcd list requests for configmaps before %v, after %v", first, relist, before, after)
	// The relist is at the last revision the reflector saw (its list's,
	// or a later bookmark's).
	if rv := relist.opts.ResourceVersion; rv == "" || rv == "0" || relist.opts.Limit != 0 {
		t.Errorf("relist asked rv=%q limit=%d, want rv=<last seen> without a limit (the reflector pages only when rv=0 was paginated)",
			rv, relist.opts.Limit)
	}
	if relist.err != nil || relist.items != relistObjects {
		t.Errorf("relist: %d items, %v", relist.items, relist.err)
	}
	for op, n := range after {
		if n != before[op] {
			t.Errorf("etcd_requests_total{operation=%q,resource=\"configmaps\"} went from %v to %v during the relist: it was not served by the watch cache", op, before[op], n)
		}
	}
}

func createConfigMaps(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string, n int) {
	t.Helper()
	const workers = 8
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += workers {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%04d", i)}}
				if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
					errs <- fmt.Errorf("create configmap %d: %w", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// etcdListRequests returns etcd_requests_total of the operations that read
// objects of resource from etcd ("list", "listStream"), by operation.
func etcdListRequests(m map[string]float64, resource string) map[string]float64 {
	out := map[string]float64{"list": 0, "listStream": 0}
	for k, v := range m {
		if !strings.HasPrefix(k, "etcd_requests_total{") || !strings.Contains(k, `resource="`+resource+`"`) {
			continue
		}
		for op := range out {
			if strings.Contains(k, `operation="`+op+`"`) {
				out[op] += v
			}
		}
	}
	return out
}

// listWatchProbe is a reflector's ListerWatcher on one namespace's
// configmaps that records every list call and can end the current watch
// with 410 Gone, as the server does when a watch's revision is too old.
type listWatchProbe struct {
	cs kubernetes.Interface
	ns string

	mu struct {
		sync.Mutex
		lists   []listCall
		watches int
		current *expirableWatch
	}
}

// listCall is one list request the reflector made (one page).
type listCall struct {
	opts      metav1.ListOptions
	items     int
	continued string // the continue token of the answer
	rv        string
	err       error
}

func (c listCall) String() string {
	return fmt.Sprintf("{rv=%q limit=%d continue=%t: %d items at %s, continue=%t, err=%v}",
		c.opts.ResourceVersion, c.opts.Limit, c.opts.Continue != "", c.items, c.rv, c.continued != "", c.err)
}

func (p *listWatchProbe) list(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	l, err := p.cs.CoreV1().ConfigMaps(p.ns).List(ctx, opts)
	c := listCall{opts: opts, err: err}
	if err == nil {
		c.items, c.continued, c.rv = len(l.Items), l.Continue, l.ResourceVersion
	}
	p.mu.Lock()
	p.mu.lists = append(p.mu.lists, c)
	p.mu.Unlock()
	return l, err
}

func (p *listWatchProbe) watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := p.cs.CoreV1().ConfigMaps(p.ns).Watch(ctx, opts)
	if err != nil {
		return nil, err
	}
	ew := newExpirableWatch(w)
	p.mu.Lock()
	p.mu.watches++
	p.mu.current = ew
	p.mu.Unlock()
	return ew, nil
}

func (p *listWatchProbe) counts() ([]listCall, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]listCall(nil), p.mu.lists...), p.mu.watches
}

// expireWatch ends the current watch with 410 Gone.
func (p *listWatchProbe) expireWatch() {
	p.mu.Lock()
	w := p.mu.current
	p.mu.Unlock()
	if w != nil {
		w.expire()
	}
}

// expirableWatch forwards a watch until expire, then delivers one ERROR
// event with 410 Gone and closes.
type expirableWatch struct {
	inner   watch.Interface
	out     chan watch.Event
	expired chan struct{}
	stopped chan struct{}
	once    sync.Once
	expOnce sync.Once
}

func newExpirableWatch(inner watch.Interface) *expirableWatch {
	w := &expirableWatch{inner: inner, out: make(chan watch.Event), expired: make(chan struct{}), stopped: make(chan struct{})}
	go w.run()
	return w
}

func (w *expirableWatch) run() {
	defer close(w.out)
	defer w.inner.Stop()
	sendGone := func() {
		gone := &metav1.Status{
			Status:  metav1.StatusFailure,
			Code:    http.StatusGone,
			Reason:  metav1.StatusReasonExpired,
			Message: "too old resource version (injected by the test)",
		}
		select {
		case w.out <- watch.Event{Type: watch.Error, Object: gone}:
		case <-w.stopped:
		}
	}
	for {
		select {
		case <-w.stopped:
			return
		case <-w.expired:
			sendGone()
			return
		case ev, ok := <-w.inner.ResultChan():
			if !ok {
				return
			}
			select {
			case w.out <- ev:
			case <-w.expired:
				sendGone()
				return
			case <-w.stopped:
				return
			}
		}
	}
}

func (w *expirableWatch) expire()                        { w.expOnce.Do(func() { close(w.expired) }) }
func (w *expirableWatch) Stop()                          { w.once.Do(func() { close(w.stopped) }) }
func (w *expirableWatch) ResultChan() <-chan watch.Event { return w.out }

func lenOf(l *corev1.ConfigMapList) int {
	if l == nil {
		return 0
	}
	return len(l.Items)
}
