package cluster

// The cluster benchmark's informer clients: client-go SharedInformers on
// pods in child processes of freshcache-bench ("cluster-informers"), half
// of them with client-go's WatchListClient feature on and half with it
// off.
//
// Why child processes: the gate is process-wide and each reflector reads it
// once, when it is built, so one process cannot hold informers of both
// kinds without racing a flip of the gate against their construction. A
// child per gate value sets it before any informer exists, as an operator
// sets it on a controller, and keeps the informers' CPU out of the
// benchmark's own process.
//
// How the child sets it: client-go alone reads KUBE_FEATURE_WatchListClient
// from the environment, but this binary links k8s.io/kubernetes/pkg/features
// (the storage harness uses the real pod registry), whose init replaces
// client-go's gates with kube's own --feature-gates gate
// (clientfeatures.ReplaceFeatureGates), and that one ignores the
// environment. So the parent passes the value both ways: in the
// environment, and as --watch-list-client, which the child sets on the
// gate client-go actually reads, as --feature-gates=WatchListClient=... does
// on a kube binary. Each child then reports the gate as its client-go sees
// it and counts the requests its informers sent, so the report shows
// whether the setting took.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

// InformerChildSubcommand is the freshcache-bench subcommand a child runs.
const InformerChildSubcommand = "cluster-informers"

// InformerChildConfig is one child: Informers pod informers on one
// apiserver, each restarted every RestartEvery (staggered) during the
// first RestartFor, as components restart; after that they only watch.
type InformerChildConfig struct {
	Kubeconfig string
	// WatchListClient is client-go's gate for the child's informers.
	WatchListClient bool
	Informers       int
	RestartEvery    time.Duration
	RestartFor      time.Duration
}

// args are the child's command line after the subcommand.
func (c InformerChildConfig) args() []string {
	return []string{
		"--kubeconfig=" + c.Kubeconfig,
		"--watch-list-client=" + strconv.FormatBool(c.WatchListClient),
		"--informers=" + strconv.Itoa(c.Informers),
		"--restart-every=" + c.RestartEvery.String(),
		"--restart-for=" + c.RestartFor.String(),
	}
}

// InformerStats is what a child reports when it stops.
type InformerStats struct {
	// WatchListClient is client-go's gate as the child saw it.
	WatchListClient bool `json:"watch_list_client"`
	Informers       int  `json:"informers"`
	// Syncs counts initial syncs (start and every restart); SyncMs is how
	// long each took, from Run until HasSynced.
	Syncs  int64     `json:"syncs"`
	SyncMs []float64 `json:"sync_ms,omitempty"`
	// Events counts handler calls (adds, updates, deletes).
	Events int64 `json:"events"`
	// Requests counts the informers' pod requests by kind: "list rv=0",
	// "list rv=\"\"", "watch" (resuming from an rv), "watch-list"
	// (sendInitialEvents=true).
	Requests map[string]int64 `json:"requests"`
}

// add merges o into s (the children of one gate value).
func (s *InformerStats) add(o InformerStats) {
	s.WatchListClient = o.WatchListClient
	s.Informers += o.Informers
	s.Syncs += o.Syncs
	s.SyncMs = append(s.SyncMs, o.SyncMs...)
	s.Events += o.Events
	if s.Requests == nil {
		s.Requests = map[string]int64{}
	}
	for k, v := range o.Requests {
		s.Requests[k] += v
	}
}

// informerReady is the line a child prints once every informer has synced
// the first time; its stats follow as one JSON line when stdin closes.
const informerReady = "informers-synced"

// RunInformerChild is the child's body: it runs until stdin closes (the
// parent's signal; also what happens when the parent dies) or ctx is done,
// then writes its InformerStats to out.
func RunInformerChild(ctx context.Context, cfg InformerChildConfig, stdin io.Reader, out io.Writer) error {
	if cfg.Informers <= 0 {
		return errors.New("cluster: --informers must be at least 1")
	}
	// Where kube's gate stands in for client-go's this sets it; where it
	// does not, the environment has. Either way the gate must now say so.
	serr := utilfeature.DefaultMutableFeatureGate.SetFromMap(map[string]bool{string(clientfeatures.WatchListClient): cfg.WatchListClient})
	if got := clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient); got != cfg.WatchListClient {
		return fmt.Errorf("cluster: client-go's WatchListClient is %v, want %v (setting kube's gate: %v)", got, cfg.WatchListClient, serr)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
	if err != nil {
		return err
	}
	rc.QPS, rc.Burst = -1, 0
	rc.ContentType = "application/vnd.kubernetes.protobuf"
	rc.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	counter := &requestCounter{counts: map[string]int64{}}
	rc.Wrap(counter.wrap)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { _, _ = io.Copy(io.Discard, stdin); cancel() }()

	st := InformerStats{WatchListClient: clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient), Informers: cfg.Informers}
	var (
		mu     sync.Mutex
		events atomic.Int64
		wg     sync.WaitGroup
		first  sync.WaitGroup
		errMu  sync.Mutex
		runErr error
	)
	start := time.Now()
	first.Add(cfg.Informers)
	for i := range cfg.Informers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Informer i restarts at offset + k*RestartEvery, so restarts
			// are spread evenly over the period.
			offset := time.Duration(int64(cfg.RestartEvery) * int64(i) / int64(cfg.Informers))
			next := start.Add(offset + cfg.RestartEvery)
			synced := false
			for ctx.Err() == nil {
				cs, err := kubernetes.NewForConfig(rc)
				if err != nil {
					errMu.Lock()
					runErr = errors.Join(runErr, err)
					errMu.Unlock()
					break
				}
				f := informers.NewSharedInformerFactory(cs, 0)
				inf := f.Core().V1().Pods().Informer()
				_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
					AddFunc:    func(any) { events.Add(1) },
					UpdateFunc: func(any, any) { events.Add(1) },
					DeleteFunc: func(any) { events.Add(1) },
				})
				stop := make(chan struct{})
				t0 := time.Now()
				go inf.Run(stop)
				if cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
					mu.Lock()
					st.Syncs++
					st.SyncMs = append(st.SyncMs, ms(time.Since(t0)))
					mu.Unlock()
				}
				if !synced {
					synced = true
					first.Done()
				}
				wait := time.Until(next)
				if cfg.RestartEvery <= 0 || next.After(start.Add(cfg.RestartFor)) {
					wait = 1<<63 - 1
				}
				_ = sleepCtx(ctx, wait)
				close(stop)
				next = next.Add(cfg.RestartEvery)
			}
			if !synced {
				first.Done()
			}
		}()
	}
	first.Wait()
	if ctx.Err() == nil {
		if _, err := fmt.Fprintln(out, informerReady); err != nil {
			return err
		}
	}
	wg.Wait()
	st.Events = events.Load()
	st.Requests = counter.snapshot()
	if runErr != nil {
		return runErr
	}
	return json.NewEncoder(out).Encode(st)
}

// requestCounter counts the pod requests that pass through it.
type requestCounter struct {
	mu     sync.Mutex
	counts map[string]int64
}

func (c *requestCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if k := podRequestKind(r); k != "" {
			c.mu.Lock()
			c.counts[k]++
			c.mu.Unlock()
		}
		return rt.RoundTrip(r)
	})
}

func (c *requestCounter) snapshot() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int64, len(c.counts))
	for k, v := range c.counts {
		out[k] = v
	}
	return out
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// podRequestKind classifies a request for pods (collection only): "list
// rv=0", "list rv=\"\"", "list rv=N", "watch" or "watch-list"; "" for
// anything else.
func podRequestKind(r *http.Request) string {
	if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/pods") {
		return ""
	}
	q := r.URL.Query()
	if w := q.Get("watch"); w == "true" || w == "1" {
		if q.Get("sendInitialEvents") == "true" {
			return "watch-list"
		}
		return "watch"
	}
	switch rv := q.Get("resourceVersion"); rv {
	case "0", "":
		return fmt.Sprintf("list rv=%q", rv)
	default:
		return "list rv=N"
	}
}

// informerChild is a running child, seen from the parent.
type informerChild struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
	gate  bool
	log   *os.File
}

// startInformerChild runs self (freshcache-bench) as a child with
// WatchListClient set to cfg.WatchListClient, and waits until its
// informers have synced.
func startInformerChild(ctx context.Context, self string, cfg InformerChildConfig, logPath string, timeout time.Duration) (*informerChild, error) {
	gate := cfg.WatchListClient
	cmd := exec.Command(self, append([]string{InformerChildSubcommand}, cfg.args()...)...)
	env := []string{}
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "KUBE_FEATURE_WatchListClient=") {
			env = append(env, e)
		}
	}
	cmd.Env = append(env, "KUBE_FEATURE_WatchListClient="+strconv.FormatBool(gate))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, err
	}
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd.Stderr = log
	stdin, err := cmd.StdinPipe()
	if err != nil {
		_ = log.Close()
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		_ = log.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return nil, fmt.Errorf("cluster: starting the informer child: %w", err)
	}
	c := &informerChild{cmd: cmd, stdin: stdin, lines: make(chan string, 4), gate: gate, log: log}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case l, ok := <-c.lines:
		if ok && l == informerReady {
			return c, nil
		}
		_, _ = c.stop()
		return nil, fmt.Errorf("cluster: informer child (WatchListClient=%v) did not sync: %q; its log: %s", gate, l, logPath)
	case <-ctx.Done():
		_, _ = c.stop()
		return nil, ctx.Err()
	case <-t.C:
		_, _ = c.stop()
		return nil, fmt.Errorf("cluster: informer child (WatchListClient=%v) not synced after %s; its log: %s", gate, timeout, logPath)
	}
}

// stop closes the child's stdin and reads its stats.
func (c *informerChild) stop() (InformerStats, error) {
	var st InformerStats
	_ = c.stdin.Close()
	var last string
	for l := range c.lines {
		last = l
	}
	err := c.cmd.Wait()
	_ = c.log.Close()
	if err != nil {
		return st, fmt.Errorf("cluster: informer child (WatchListClient=%v): %w; its log: %s", c.gate, err, c.log.Name())
	}
	if jerr := json.Unmarshal([]byte(last), &st); jerr != nil {
		return st, fmt.Errorf("cluster: informer child (WatchListClient=%v) reported %q: %w", c.gate, last, jerr)
	}
	return st, nil
}
