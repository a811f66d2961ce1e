package apiserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/freshcache/freshcache/tools/bench/ctxsleep"
	"github.com/freshcache/freshcache/tools/bench/quantile"
	"github.com/freshcache/freshcache/tools/bench/report"
	"github.com/freshcache/freshcache/tools/bench/servermetrics"
	"github.com/freshcache/freshcache/tools/bench/storage"
)

// Config is one through-kube-apiserver run: two local-up
// processes share one etcd (the first one's embedded etcd; the second gets
// --etcd-servers), each running one kube-apiserver with its own
// --watch-cache-implementation.
type Config struct {
	// BinDir holds local-up and kube-apiserver (make build).
	BinDir string
	// Impls are the --watch-cache-implementation values, one apiserver each.
	Impls []string
	// Fallback, when an implementation is refused by kube-apiserver (as
	// freshcache is until the library is wired in): "" skips it with a
	// note; another implementation name runs that one in its place, so that
	// the harness itself is exercised, and labels the rows "X-as-Y".
	Fallback string

	Shape    storage.Shape
	Clients  []int
	Duration time.Duration
	Warmup   time.Duration
	// Load is written straight to etcd (Puts), so it costs neither
	// apiserver anything and the etcd counters leave it out.
	Load              storage.Load
	WatchNodes        int
	WatchWritesPerSec float64
	// DataDir holds both local-ups' data; a temporary one when empty.
	DataDir string
	// ProfileDir, when set, receives a CPU profile of the kube-apiserver
	// over each measured LIST and GET row (its /debug/pprof/profile), named
	// IMPL-OP-RV-cCLIENTS.pprof.
	ProfileDir string
	Progress   io.Writer
}

func (c Config) withDefaults() Config {
	if len(c.Impls) == 0 {
		c.Impls = []string{storage.BackendUpstream, storage.BackendFreshcache}
	}
	if c.Shape.Pods == 0 {
		c.Shape = storage.Shape{Pods: 5000, Nodes: 50}
	}
	c.Shape = c.Shape.WithDefaults()
	if len(c.Clients) == 0 {
		c.Clients = []int{1, 32}
	}
	// Rows last, and watches are set up, as in the storage bench, with its
	// defaults.
	sd := storage.Config{Shape: c.Shape, Duration: c.Duration, WatchNodes: c.WatchNodes, WatchWritesPerSec: c.WatchWritesPerSec}.WithDefaults()
	c.Duration, c.WatchNodes, c.WatchWritesPerSec = sd.Duration, sd.WatchNodes, sd.WatchWritesPerSec
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	return c
}

// errImplementationRefused is returned when kube-apiserver refuses a
// --watch-cache-implementation value.
var errImplementationRefused = errors.New("apiserver: kube-apiserver refused the watch cache implementation")

// Run starts the servers, loads the shape into their etcd, and
// measures each server in turn while the other idles. notes says what was
// skipped or substituted.
func Run(ctx context.Context, cfg Config) (rows []Row, notes []string, err error) {
	cfg = cfg.withDefaults()
	dir := cfg.DataDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "freshcache-bench-apiserver-"); err != nil {
			return nil, nil, err
		}
		defer func() { _ = os.RemoveAll(dir) }()
	}
	type server struct {
		label string
		lu    *localUpProc
		cs    *kubernetes.Clientset
		rest  *rest.Config
	}
	var servers []server
	defer func() {
		for i := len(servers) - 1; i >= 0; i-- {
			servers[i].lu.stop()
		}
	}()
	etcdURL := ""
	for i, impl := range cfg.Impls {
		args := []string{"--watch-cache-implementation=" + impl}
		if etcdURL != "" {
			args = append(args, "--etcd-servers="+etcdURL)
		}
		label := impl
		lu, err := startLocalUp(ctx, cfg.BinDir, filepath.Join(dir, fmt.Sprintf("%d-%s", i, impl)), args)
		if errors.Is(err, errImplementationRefused) {
			if cfg.Fallback == "" {
				notes = append(notes, fmt.Sprintf("%s: skipped: %v", impl, err))
				fmt.Fprintf(cfg.Progress, "# %s skipped: %v\n", impl, err)
				continue
			}
			notes = append(notes, fmt.Sprintf("%s was refused by kube-apiserver (%v); rows labelled %s-as-%s ran --watch-cache-implementation=%s in its place to exercise the harness", impl, err, cfg.Fallback, impl, cfg.Fallback))
			label = cfg.Fallback + "-as-" + impl
			args[0] = "--watch-cache-implementation=" + cfg.Fallback
			lu, err = startLocalUp(ctx, cfg.BinDir, filepath.Join(dir, fmt.Sprintf("%d-%s", i, label)), args)
		}
		if err != nil {
			return rows, notes, err
		}
		if etcdURL == "" {
			etcdURL = lu.etcdURL
		}
		rc, err := clientcmd.BuildConfigFromFlags("", lu.kubeconfig)
		if err != nil {
			lu.stop()
			return rows, notes, err
		}
		rc.QPS, rc.Burst = -1, 0 // no client-side rate limit
		rc.ContentType = "application/vnd.kubernetes.protobuf"
		rc.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
		cs, err := kubernetes.NewForConfig(rc)
		if err != nil {
			lu.stop()
			return rows, notes, err
		}
		servers = append(servers, server{label: label, lu: lu, cs: cs, rest: rc})
		fmt.Fprintf(cfg.Progress, "# %s ready (etcd %s)\n", label, etcdURL)
	}
	if len(servers) == 0 {
		return rows, notes, errors.New("apiserver: no kube-apiserver started")
	}
	t0 := time.Now()
	env, err := storage.AttachEnv(ctx, etcdURL, cfg.Shape)
	if err != nil {
		return rows, notes, err
	}
	defer env.Close()
	fmt.Fprintf(cfg.Progress, "# loaded %d pods on %d nodes in %v\n", env.Shape.Pods, env.Shape.Nodes, time.Since(t0).Round(time.Millisecond))

	for _, s := range servers {
		sv := &apiTarget{label: s.label, cs: s.cs, env: env, etcdURL: etcdURL}
		if sv.http, err = servermetrics.NewClient(s.rest); err != nil {
			return rows, notes, err
		}
		if err := sv.waitCache(ctx); err != nil {
			return rows, notes, err
		}
		for _, op := range []string{storage.ScenarioListNode, storage.ScenarioGet, "watch"} {
			rvs := []string{storage.RVConsistent, storage.RVZero}
			if op == "watch" {
				rvs = []string{storage.RVNewest}
			}
			for _, rv := range rvs {
				for _, c := range cfg.Clients {
					if err := ctx.Err(); err != nil {
						return rows, notes, err
					}
					r, err := sv.row(ctx, cfg, op, rv, c)
					if err != nil {
						return rows, notes, err
					}
					fmt.Fprintf(cfg.Progress, "%s %s rv=%s clients=%d ops/s=%.1f p50=%.2fms p99=%.2fms cpu/op=%.3fms etcd/op=%.2f errors=%d\n",
						r.Implementation, r.Operation, r.RV, r.Clients, r.OpsPerSec, r.P50Ms, r.P99Ms, r.ServerCPUPerOpMs, r.EtcdPerOp, r.Errors)
					rows = append(rows, r)
				}
			}
		}
	}
	return rows, notes, nil
}

// apiTarget is one kube-apiserver under test.
type apiTarget struct {
	label   string
	cs      *kubernetes.Clientset
	env     *storage.Env
	etcdURL string
	// http reads the server's /metrics and pprof endpoints.
	http *servermetrics.Client
}

// waitCache waits until the server's cache (rv=0 list) holds node 0's pods.
func (a *apiTarget) waitCache(ctx context.Context) error {
	want := a.env.Shape.PodsOnNode(0)
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	got := -1
	var err error
	if ctxsleep.Poll(ctx, 100*time.Millisecond, func() bool {
		l, lerr := a.cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + storage.NodeName(0), ResourceVersion: "0"})
		if err = lerr; err == nil {
			got = len(l.Items)
		}
		return err == nil && got == want
	}) != nil {
		return fmt.Errorf("apiserver: %s: cache holds %d of %d pods of node 0 after 3m (last error %v)", a.label, got, want, err)
	}
	return nil
}

// row measures one operation at one client count.
func (a *apiTarget) row(ctx context.Context, cfg Config, op, rv string, clients int) (Row, error) {
	r := Row{Implementation: a.label, Operation: op, RV: rv, Clients: clients}
	if op == "watch" {
		return a.watchRow(ctx, cfg, r)
	}
	w := a.env.StartLoad(ctx, cfg.Load)
	defer func() { _, _ = w.Stop() }()
	if cfg.Warmup > 0 {
		a.loop(ctx, op, rv, clients, time.Now().Add(cfg.Warmup))
	}
	before, err := a.sample(ctx)
	if err != nil {
		return r, err
	}
	prof := a.startProfile(ctx, cfg, r)
	res := a.loop(ctx, op, rv, clients, time.Now().Add(cfg.Duration))
	after, err := a.sample(ctx)
	if err != nil {
		return r, err
	}
	if err := prof(); err != nil {
		return r, err
	}
	lat, ops, errs, wrong, firstErr := res.Counts()
	r.Ops, r.Errors, r.FirstError, r.WrongCounts = ops, errs, firstErr, wrong
	a.fill(&r, before, after, lat)
	return r, nil
}

func (a *apiTarget) fill(r *Row, before, after serverSample, lat []time.Duration) {
	r.Seconds = after.at.Sub(before.at).Seconds()
	r.Etcd = after.etcd.Sub(before.etcd)
	if r.Ops > 0 {
		r.OpsPerSec = float64(r.Ops) / r.Seconds
		r.ServerCPUPerOpMs = (after.cpu - before.cpu) * 1000 / float64(r.Ops)
		r.EtcdPerOp = (after.sent - before.sent) / float64(r.Ops)
		r.ServerGCsPerKOp = (after.gcs - before.gcs) * 1000 / float64(r.Ops)
	}
	r.ServerHeapMiB = after.heap / (1 << 20)
	slices.Sort(lat)
	r.P50Ms, r.P99Ms = ms(quantile.Percentile(lat, 50)), ms(quantile.Percentile(lat, 99))
	if q, ok := after.wait.Sub(before.wait).Quantile(0.99); ok {
		v := q * 1000
		r.FreshWaitP99Ms = &v
	}
}

func (a *apiTarget) loop(ctx context.Context, op, rv string, clients int, deadline time.Time) storage.LoopResult {
	rvParam := ""
	if rv == storage.RVZero {
		rvParam = "0"
	}
	return storage.ClosedLoop(ctx, clients, deadline, func(rnd *rand.Rand, local *storage.LoopResult) {
		t0 := time.Now()
		var err error
		wrong := false
		switch op {
		case storage.ScenarioListNode:
			node := rnd.IntN(a.env.Shape.Nodes)
			pl, e := a.cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + storage.NodeName(node), ResourceVersion: rvParam})
			err = e
			if e == nil {
				wrong = len(pl.Items) != a.env.Shape.PodsOnNode(node)
			}
		case storage.ScenarioGet:
			i := rnd.IntN(a.env.Shape.Pods)
			ns, name := a.env.Shape.PodKey(i)
			p, e := a.cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{ResourceVersion: rvParam})
			err = e
			if e == nil {
				wrong = p.Name != name
			}
		}
		local.Record(time.Since(t0), 0, err, wrong)
	}, (*storage.LoopResult).Add)
}

// watchRow opens clients watches spread over the watched nodes, from the
// current RV (no initial events), writes to those nodes' pods straight to
// etcd, and measures delivery latency through the apiserver.
func (a *apiTarget) watchRow(ctx context.Context, cfg Config, r Row) (Row, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	k := min(cfg.WatchNodes, r.Clients)
	var targets []int
	for i := range a.env.Shape.Pods {
		if i%a.env.Shape.Nodes < k {
			targets = append(targets, i)
		}
	}
	l, err := a.cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{ResourceVersion: "0", Limit: 1})
	if err != nil {
		return r, err
	}
	var (
		start     atomic.Int64
		delivered atomic.Int64
		errs      atomic.Int64
		first     report.FirstError
		mu        sync.Mutex
		lat       []time.Duration
		wg        sync.WaitGroup
		watchers  []watch.Interface
		stopping  atomic.Bool
	)
	start.Store(1<<63 - 1)
	perNode := make([]int64, k)
	for i := range r.Clients {
		node := i % k
		perNode[node]++
		w, err := a.cs.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + storage.NodeName(node), ResourceVersion: l.ResourceVersion})
		if err != nil {
			for _, w := range watchers {
				w.Stop()
			}
			return r, err
		}
		watchers = append(watchers, w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var local []time.Duration
			for ev := range w.ResultChan() {
				now := time.Now()
				if ev.Type == watch.Error {
					if stopping.Load() {
						continue // client-go reports its own Stop as an error event
					}
					errs.Add(1)
					first.Set(fmt.Sprintf("watch error: %v", ev.Object))
					continue
				}
				m, err := meta.Accessor(ev.Object)
				if err != nil {
					continue
				}
				ts, err := strconv.ParseInt(m.GetAnnotations()[storage.AnnotationWritten], 10, 64)
				if err != nil || ts < start.Load() {
					continue
				}
				delivered.Add(1)
				local = append(local, now.Sub(time.Unix(0, ts)))
			}
			mu.Lock()
			lat = append(lat, local...)
			mu.Unlock()
		}()
	}
	// Count writes per node so that expected events = sum over writes of
	// the watchers on the written pod's node.
	byNode := make([][]int, k)
	for _, i := range targets {
		byNode[i%a.env.Shape.Nodes] = append(byNode[i%a.env.Shape.Nodes], i)
	}
	before, err := a.sample(ctx)
	if err != nil {
		return r, err
	}
	start.Store(before.at.UnixNano())
	var expected atomic.Int64
	wctx, wcancel := context.WithCancel(ctx)
	var wwg sync.WaitGroup
	wwg.Add(1)
	go func() {
		defer wwg.Done()
		tick := time.NewTicker(time.Duration(float64(time.Second) / cfg.WatchWritesPerSec))
		defer tick.Stop()
		rnd := rand.New(rand.NewPCG(1, 2))
		for {
			select {
			case <-wctx.Done():
				return
			case <-tick.C:
			}
			node := rnd.IntN(k)
			i := byNode[node][rnd.IntN(len(byNode[node]))]
			if err := a.env.PutPod(wctx, i, time.Now().UnixNano()); err == nil {
				expected.Add(perNode[node])
			}
		}
	}()
	lw := a.env.StartLoad(ctx, storage.Load{LeaseWritesPerSec: cfg.Load.LeaseWritesPerSec})
	select {
	case <-ctx.Done():
	case <-time.After(cfg.Duration):
	}
	wcancel()
	wwg.Wait()
	_, _ = lw.Stop()
	deadline := time.Now().Add(5 * time.Second)
	for delivered.Load() < expected.Load() && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Millisecond):
		}
	}
	after, err := a.sample(ctx)
	stopping.Store(true)
	for _, w := range watchers {
		w.Stop()
	}
	wg.Wait()
	if err != nil {
		return r, err
	}
	r.EventsExpected, r.EventsDelivered = expected.Load(), delivered.Load()
	r.Ops, r.Errors, r.FirstError = r.EventsDelivered, errs.Load(), first.Get()
	mu.Lock()
	defer mu.Unlock()
	a.fill(&r, before, after, lat)
	if r.Ops > 0 {
		r.OpsPerSec = float64(r.Ops) / cfg.Duration.Seconds()
	}
	return r, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
