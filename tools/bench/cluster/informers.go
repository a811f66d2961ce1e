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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/freshcache/freshcache/lab/pkg/counters"
	"github.com/freshcache/freshcache/tools/bench/procfs"
)

// InformerChildSubcommand is the freshcache-bench subcommand a child runs.
const InformerChildSubcommand = "cluster-informers"

// InformerChildConfig is one child: Informers pod informers on one
// apiserver, each restarted every RestartEvery (staggered) during the
// first RestartFor, as components restart; after that they only watch.
// With NodeCount > 0 the child is NodeCount kubelets' pod watches instead:
// one informer per node NodePrefix+i (i from NodeFirst), on the pods bound
// to it (spec.nodeName), which is what a kubelet lists and watches.
type InformerChildConfig struct {
	Kubeconfig string
	// WatchListClient is client-go's gate for the child's informers.
	WatchListClient bool
	Informers       int
	RestartEvery    time.Duration
	RestartFor      time.Duration
	NodePrefix      string
	NodeFirst       int
	NodeCount       int
}

// args are the child's command line after the subcommand.
func (c InformerChildConfig) args() []string {
	args := []string{
		"--kubeconfig=" + c.Kubeconfig,
		"--watch-list-client=" + strconv.FormatBool(c.WatchListClient),
		"--informers=" + strconv.Itoa(c.Informers),
		"--restart-every=" + c.RestartEvery.String(),
		"--restart-for=" + c.RestartFor.String(),
	}
	if c.NodeCount > 0 {
		args = append(args, "--node-prefix="+c.NodePrefix, "--node-first="+strconv.Itoa(c.NodeFirst), "--node-count="+strconv.Itoa(c.NodeCount))
	}
	return args
}

// informerCount is how many informers the child runs.
func (c InformerChildConfig) informerCount() int {
	if c.NodeCount > 0 {
		return c.NodeCount
	}
	return c.Informers
}

// fieldSelector is informer i's: its node's pods, or every pod.
func (c InformerChildConfig) fieldSelector(i int) string {
	if c.NodeCount == 0 {
		return ""
	}
	return "spec.nodeName=" + c.NodePrefix + strconv.Itoa(c.NodeFirst+i)
}

// InformerStats is what a child reports when it stops.
type InformerStats struct {
	// WatchListClient is client-go's gate as the child saw it.
	WatchListClient bool `json:"watch_list_client"`
	Informers       int  `json:"informers"`
	// PerNode is set when the informers are per-node pod watches.
	PerNode bool `json:"per_node,omitempty"`
	// Syncs counts initial syncs (start and every restart); SyncMs is how
	// long each took, from Run until HasSynced.
	Syncs  int64     `json:"syncs"`
	SyncMs []float64 `json:"sync_ms,omitempty"`
	// Events counts handler calls (adds, updates, deletes).
	Events int64 `json:"events"`
	// CPUSeconds is the child process's own CPU (user + system) over its
	// life: what the clients cost, kept out of the servers' figures.
	CPUSeconds float64 `json:"cpu_seconds,omitempty"`
	// Requests counts the informers' pod requests by kind: "list rv=0",
	// "list rv=\"\"", "watch" (resuming from an rv), "watch-list"
	// (sendInitialEvents=true); and "status 429" for every answer that
	// was one.
	Requests map[string]int64 `json:"requests"`
}

// add merges o into s (the children of one gate value).
func (s *InformerStats) add(o InformerStats) {
	s.WatchListClient = o.WatchListClient
	s.Informers += o.Informers
	s.PerNode = s.PerNode || o.PerNode
	s.Syncs += o.Syncs
	s.SyncMs = append(s.SyncMs, o.SyncMs...)
	s.Events += o.Events
	s.CPUSeconds += o.CPUSeconds
	if s.Requests == nil {
		s.Requests = map[string]int64{}
	}
	for k, v := range o.Requests {
		s.Requests[k] += v
	}
}

// The child's protocol on stdout: informerReady once every informer has
// synced the first time; after each stormCommand on stdin, stormSynced
// and a StormChildStats as JSON on the same line once every informer has
// synced again; its InformerStats as one JSON line when stdin closes.
const (
	informerReady = "informers-synced"
	stormCommand  = "storm"
	stormSynced   = "storm-synced"
)

// StormChildStats is one child's side of a restart storm: every informer
// stopped and started again at once.
type StormChildStats struct {
	Informers int `json:"informers"`
	// SyncMs is each informer's time from the storm until it had synced
	// again; Seconds the whole storm, until the last one.
	SyncMs  []float64 `json:"sync_ms"`
	Seconds float64   `json:"seconds"`
	// Requests are the pod requests sent during the storm, by kind (as
	// InformerStats.Requests).
	Requests map[string]int64 `json:"requests"`
}

// stormState is one storm in the child: fire is closed when it begins.
type stormState struct {
	fire   chan struct{}
	began  time.Time
	wg     sync.WaitGroup
	mu     sync.Mutex
	syncMs []float64
}

// storms hands the informers their storms. An informer that was syncing
// when a storm fired finds it the next time it waits (fired beyond what it
// has seen), so none misses one.
type storms struct {
	mu    sync.Mutex
	fired []*stormState
	next  *stormState
}

func newStorms() *storms { return &storms{next: &stormState{fire: make(chan struct{})}} }

// begin fires the next storm for n informers and returns it.
func (s *storms) begin(n int) *stormState {
	s.mu.Lock()
	st := s.next
	st.began = time.Now()
	st.wg.Add(n)
	s.fired = append(s.fired, st)
	s.next = &stormState{fire: make(chan struct{})}
	s.mu.Unlock()
	close(st.fire)
	return st
}

// pending is the storm an informer that has seen seen storms must join
// now, or nil and the channel the next one fires on.
func (s *storms) pending(seen int) (*stormState, int, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.fired) > seen {
		return s.fired[len(s.fired)-1], len(s.fired), nil
	}
	return nil, seen, s.next.fire
}

// RunInformerChild is the child's body: it runs until stdin closes (the
// parent's signal; also what happens when the parent dies) or ctx is done,
// then writes its InformerStats to out. A line stormCommand on stdin
// restarts every informer at once (see StormChildStats).
func RunInformerChild(ctx context.Context, cfg InformerChildConfig, stdin io.Reader, out io.Writer) error {
	n := cfg.informerCount()
	if n <= 0 {
		return errors.New("cluster: --informers (or --node-count) must be at least 1")
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
	// One clientset for every informer: one transport, so the watches
	// share HTTP/2 connections as the pods of one node agent would.
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var (
		outMu  sync.Mutex
		stMu   sync.Mutex
		events atomic.Int64
		wg     sync.WaitGroup
		first  sync.WaitGroup
		storm  = newStorms()
	)
	writeLine := func(line string) error {
		outMu.Lock()
		defer outMu.Unlock()
		_, err := fmt.Fprintln(out, line)
		return err
	}
	st := InformerStats{WatchListClient: clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient), Informers: n, PerNode: cfg.NodeCount > 0}
	start := time.Now()
	first.Add(n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Informer i restarts at offset + k*RestartEvery, so restarts
			// are spread evenly over the period.
			offset := time.Duration(int64(cfg.RestartEvery) * int64(i) / int64(n))
			next := start.Add(offset + cfg.RestartEvery)
			synced := false
			seen := 0
			var inStorm *stormState
			for ctx.Err() == nil {
				sel := cfg.fieldSelector(i)
				f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = sel }))
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
					stMu.Lock()
					st.Syncs++
					st.SyncMs = append(st.SyncMs, ms(time.Since(t0)))
					stMu.Unlock()
					if inStorm != nil {
						inStorm.mu.Lock()
						inStorm.syncMs = append(inStorm.syncMs, ms(time.Since(inStorm.began)))
						inStorm.mu.Unlock()
						inStorm.wg.Done()
						inStorm = nil
					}
				}
				if !synced {
					synced = true
					first.Done()
				}
				wait := time.Until(next)
				if cfg.RestartEvery <= 0 || next.After(start.Add(cfg.RestartFor)) {
					wait = 1<<63 - 1
				}
				var fire <-chan struct{}
				if inStorm, seen, fire = storm.pending(seen); inStorm == nil {
					t := time.NewTimer(wait)
					select {
					case <-ctx.Done():
					case <-t.C:
						next = next.Add(cfg.RestartEvery)
					case <-fire:
						inStorm, seen, _ = storm.pending(seen)
					}
					t.Stop()
				}
				close(stop)
			}
			if !synced {
				first.Done()
			}
			if inStorm != nil {
				inStorm.wg.Done() // stopped before it synced again
			}
		}()
	}
	first.Wait()
	if ctx.Err() == nil {
		if err := writeLine(informerReady); err != nil {
			return err
		}
	}
	// Commands until stdin closes or ctx is done.
	cmds := make(chan string)
	go func() {
		defer close(cmds)
		sc := bufio.NewScanner(stdin)
		for sc.Scan() {
			select {
			case cmds <- strings.TrimSpace(sc.Text()):
			case <-ctx.Done():
				return
			}
		}
	}()
	for ctx.Err() == nil {
		var cmd string
		var ok bool
		select {
		case cmd, ok = <-cmds:
		case <-ctx.Done():
		}
		if !ok {
			break
		}
		if cmd != stormCommand {
			continue
		}
		before := counter.snapshot()
		s := storm.begin(n)
		done := make(chan struct{})
		go func() { s.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		s.mu.Lock()
		syncMs := append([]float64(nil), s.syncMs...)
		s.mu.Unlock()
		stats := StormChildStats{Informers: n, SyncMs: syncMs, Seconds: time.Since(s.began).Seconds(), Requests: counters.Delta(before, counter.snapshot())}
		line, err := json.Marshal(stats)
		if err != nil {
			return err
		}
		if err := writeLine(stormSynced + " " + string(line)); err != nil {
			return err
		}
	}
	cancel()
	wg.Wait()
	st.Events = events.Load()
	st.Requests = counter.snapshot()
	st.CPUSeconds = procfs.CPUTicks([]int{os.Getpid()}) / procfs.ClockTicksPerSec
	outMu.Lock()
	defer outMu.Unlock()
	return json.NewEncoder(out).Encode(st)
}

// status429 is requestCounter's key for pod requests answered 429.
const status429 = "status 429"

// requestCounter counts the pod requests that pass through it.
type requestCounter struct {
	mu     sync.Mutex
	counts map[string]int64
}

func (c *requestCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		k := podRequestKind(r)
		if k != "" {
			c.mu.Lock()
			c.counts[k]++
			c.mu.Unlock()
		}
		resp, err := rt.RoundTrip(r)
		if k != "" && err == nil && resp.StatusCode == http.StatusTooManyRequests {
			c.mu.Lock()
			c.counts[status429]++
			c.mu.Unlock()
		}
		return resp, err
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
	// perNode: its informers are per-node pod watches.
	perNode bool
	log     *os.File
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
	c := &informerChild{cmd: cmd, stdin: stdin, lines: make(chan string, 4), gate: gate, perNode: cfg.NodeCount > 0, log: log}
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

// storm asks the child for a restart storm and waits until it reports
// every informer synced again, or timeout.
func (c *informerChild) storm(ctx context.Context, timeout time.Duration) (StormChildStats, error) {
	var st StormChildStats
	if _, err := io.WriteString(c.stdin, stormCommand+"\n"); err != nil {
		return st, fmt.Errorf("cluster: informer child (WatchListClient=%v): asking for a storm: %w", c.gate, err)
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case l, ok := <-c.lines:
		rest, found := strings.CutPrefix(l, stormSynced+" ")
		if !ok || !found {
			return st, fmt.Errorf("cluster: informer child (WatchListClient=%v) answered the storm with %q; its log: %s", c.gate, l, c.log.Name())
		}
		if err := json.Unmarshal([]byte(rest), &st); err != nil {
			return st, fmt.Errorf("cluster: informer child (WatchListClient=%v) storm report %q: %w", c.gate, rest, err)
		}
		return st, nil
	case <-ctx.Done():
		return st, ctx.Err()
	case <-t.C:
		return st, fmt.Errorf("cluster: informer child (WatchListClient=%v): not every informer synced %s after the storm; its log: %s", c.gate, timeout, c.log.Name())
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
