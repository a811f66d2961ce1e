package kindupgrade

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/freshcache/freshcache/lab/internal/scrape"
	"github.com/freshcache/freshcache/lab/pkg/kindcluster"
	"github.com/freshcache/freshcache/lab/test/robustness/counterload"
)

// ControlPlanes is the size of kind-up's --ha control plane.
const ControlPlanes = 3

// Options say how to run the roll.
type Options struct {
	// Cluster brings the cluster up; Run adds --ha and the flags that put
	// every kube-apiserver on upstream's cacher.
	Cluster kindcluster.Options
	// Dwell is how long the traffic runs before the first step and after
	// each apiserver serves again.
	Dwell time.Duration
	// ReadyTimeout bounds the wait for a restarted apiserver.
	ReadyTimeout time.Duration
	// ZeroStaleness is freshcache's --resource-version-zero-max-staleness
	// (its default, 100 ms, unless the cluster's flags change it).
	ZeroStaleness time.Duration
	Pace          counterload.Pace
	Logf          func(format string, args ...any)
}

// Defaults are the options of make test-kind-upgrade, but the cluster's.
func Defaults() Options {
	return Options{
		Dwell: 30 * time.Second, ReadyTimeout: 3 * time.Minute, ZeroStaleness: 100 * time.Millisecond,
		Pace: counterload.Pace{Write: 50 * time.Millisecond, ChurnEvery: 5, Read: 50 * time.Millisecond, ReadTimeout: 15 * time.Second},
		Logf: func(string, ...any) {},
	}
}

// controlPlane is one kube-apiserver, reached directly (not through
// kind's load balancer).
type controlPlane struct {
	node string
	hc   *http.Client
	base string
}

// Run brings up the cluster, runs the traffic through Plan's steps and
// returns the recording; the cluster is deleted on the way out. A step
// whose apiserver does not serve again in time ends the run with an
// error and the recording so far.
func Run(ctx context.Context, o Options) (*Recording, error) {
	co := o.Cluster
	co.Args = append([]string{"--ha", "--apiserver-arg=watch-cache-implementation=upstream", "--feature-gates="}, co.Args...)
	cl, err := kindcluster.Up(ctx, co)
	if err != nil {
		return nil, err
	}
	defer func() { _ = cl.Delete() }()
	cfg, err := clientcmd.BuildConfigFromFlags("", cl.Kubeconfig)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	first, err := counterload.Setup(ctx, cs)
	if err != nil {
		return nil, err
	}
	cps := make([]controlPlane, ControlPlanes)
	for i := range cps {
		if cps[i], err = reach(ctx, cl, cfg, i); err != nil {
			return nil, err
		}
		if err := counterload.WaitCounter(ctx, cps[i].hc, cps[i].base); err != nil {
			return nil, err
		}
	}
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}

	rec := &Recording{ControlPlanes: ControlPlanes, ZeroStaleness: o.ZeroStaleness, Writes: []counterload.Write{first}}
	trafficCtx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	wr := &counterload.Writer{Pace: o.Pace, Client: cs}
	wg.Go(func() { wr.Run(trafficCtx) })
	var readers [ControlPlanes][]*counterload.Reader
	for i, cp := range cps {
		for k := range counterload.Kinds {
			rd := &counterload.Reader{Pace: o.Pace, Kind: k, Client: cp.hc, Base: cp.base}
			readers[i] = append(readers[i], rd)
			wg.Go(func() { rd.Run(trafficCtx) })
		}
	}
	opens := &openLog{}
	for i, n := range nodes.Items {
		inf := podInformer(cs, n.Name, i, opens)
		wg.Go(func() { inf.RunWithContext(trafficCtx) })
	}
	rec.Informers = len(nodes.Items)
	rec.Began = time.Now()
	o.Logf("traffic started: a writer, %d readers on each of %d apiservers, %d pod informers", counterload.Kinds, ControlPlanes, len(nodes.Items))

	runErr := counterload.Until(ctx, rec.Began.Add(o.Dwell))
	for gen, s := range Plan(ControlPlanes) {
		if runErr != nil {
			break
		}
		var ch Change
		ch, runErr = o.change(ctx, cl, cps[s.Target], s, gen+1)
		rec.Changes = append(rec.Changes, ch)
		if runErr == nil {
			o.Logf("%s: serving again after %v", s.Name, ch.Ready.Sub(ch.Edit).Round(time.Millisecond))
			runErr = counterload.Until(ctx, time.Now().Add(o.Dwell))
		}
	}
	rec.Over = time.Now()
	stop()
	wg.Wait()
	rec.Writes = append(rec.Writes, wr.Writes...)
	rec.WriteErrors = wr.Errs
	for i := range readers {
		for _, rd := range readers[i] {
			for _, r := range rd.Reads {
				rec.Reads = append(rec.Reads, Read{CP: i, Read: r})
			}
		}
	}
	rec.Opens = opens.all()
	return rec, runErr
}

// reach is control plane i's apiserver at its node's address, with the
// kubeconfig's credentials.
func reach(ctx context.Context, cl *kindcluster.Cluster, cfg *rest.Config, i int) (controlPlane, error) {
	node := cl.ControlPlane(i)
	ip, err := cl.NodeIP(ctx, node)
	if err != nil {
		return controlPlane{}, err
	}
	c := rest.CopyConfig(cfg)
	c.Host = "https://" + ip + ":6443"
	hc, err := rest.HTTPClientFor(c)
	if err != nil {
		return controlPlane{}, err
	}
	return controlPlane{node: node, hc: hc, base: c.Host}, nil
}

// change runs step s (generation gen) on cp: it edits the manifest and
// waits until a new kube-apiserver process serves, ready, with the cache
// the step asked for.
func (o Options) change(ctx context.Context, cl *kindcluster.Cluster, cp controlPlane, s Step, gen int) (Change, error) {
	ch := Change{Step: s}
	before, err := cp.startTime(ctx)
	if err != nil {
		return ch, fmt.Errorf("%s: before the edit: %w", s.Name, err)
	}
	cmd, err := EditCommand(Manifest, s.To, gen)
	if err != nil {
		return ch, err
	}
	ch.Edit = time.Now()
	if _, err := cl.Exec(ctx, cp.node, cmd...); err != nil {
		return ch, fmt.Errorf("%s: editing the manifest: %w", s.Name, err)
	}
	deadline := time.Now().Add(o.ReadyTimeout)
	for {
		if cp.serves(ctx, before, s.To) {
			ch.Ready = time.Now()
			return ch, nil
		}
		if time.Now().After(deadline) {
			return ch, fmt.Errorf("%s: the new kube-apiserver did not serve with %s within %v", s.Name, s.To, o.ReadyTimeout)
		}
		if err := counterload.Until(ctx, time.Now().Add(200*time.Millisecond)); err != nil {
			return ch, err
		}
	}
}

// serves reports whether cp answers /readyz from a process started after
// before (a Unix time in seconds) that runs cache: freshcache's series
// are on /metrics exactly when it does.
func (cp controlPlane) serves(ctx context.Context, before float64, cache string) bool {
	if code, _, err := cp.get(ctx, "/readyz"); err != nil || code != http.StatusOK {
		return false
	}
	code, body, err := cp.get(ctx, "/metrics")
	if err != nil || code != http.StatusOK {
		return false
	}
	samples, err := scrape.Samples(body)
	if err != nil || samples["process_start_time_seconds"] == before {
		return false
	}
	return strings.Contains(string(body), "\napiserver_freshcache_") == (cache == Freshcache)
}

// startTime is process_start_time_seconds of cp's kube-apiserver.
func (cp controlPlane) startTime(ctx context.Context) (float64, error) {
	code, body, err := cp.get(ctx, "/metrics")
	if err != nil {
		return 0, err
	}
	if code != http.StatusOK {
		return 0, fmt.Errorf("GET %s/metrics: %d", cp.base, code)
	}
	samples, err := scrape.Samples(body)
	if err != nil {
		return 0, err
	}
	v, ok := samples["process_start_time_seconds"]
	if !ok {
		return 0, fmt.Errorf("%s/metrics has no process_start_time_seconds", cp.base)
	}
	return v, nil
}

func (cp controlPlane) get(ctx context.Context, path string) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cp.base+path, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := cp.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// openLog records the informers' LISTs and watch opens, from their
// goroutines.
type openLog struct {
	mu    sync.Mutex
	opens []Open
}

func (l *openLog) add(o Open) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.opens = append(l.opens, o)
}

func (l *openLog) all() []Open {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Open(nil), l.opens...)
}

// podInformer is an informer of node's pods, as its kubelet has, that
// logs every LIST and watch it opens as informer i.
func podInformer(cs kubernetes.Interface, node string, i int, log *openLog) cache.SharedIndexInformer {
	sel := fields.OneTermEqualSelector("spec.nodeName", node).String()
	pods := cs.CoreV1().Pods(metav1.NamespaceAll)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			log.add(Open{Informer: i, At: time.Now(), List: true})
			opts.FieldSelector = sel
			return pods.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			log.add(Open{Informer: i, At: time.Now()})
			opts.FieldSelector = sel
			return pods.Watch(ctx, opts)
		},
	}
	return cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{})
}
