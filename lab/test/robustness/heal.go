package robustness

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/freshcache/freshcache/lab/pkg/localup"
)

// The fault-heal scenario: apiserver W (member 0) takes a steady stream of
// writes, apiserver R (member 1) serves reads in four modes, and member 1
// is cut off from its peers for Cut out of every Period. What the
// recording shows is how each watch cache implementation behaves while
// its member is partitioned and, above all, right after the partition
// heals: stale answers, 5xx, and 429s that come after the cache should
// have caught up. heal_report.go turns the recording into counts.

// healNamespace holds the counter and the churn objects.
const healNamespace = "fault-heal"

// healCounter is the ConfigMap whose data[healKey] the writer increments.
const (
	healCounter = "counter"
	healKey     = "n"
)

// readKind is one of the four reads the readers send through R.
type readKind int

const (
	getConsistent readKind = iota
	getZero
	listConsistent
	listZero
	readKinds // the number of kinds
)

func (k readKind) String() string {
	return [...]string{`GET rv=""`, `GET rv="0"`, `LIST rv=""`, `LIST rv="0"`}[k]
}

// path is the request URI of the read, relative to the server.
func (k readKind) path() string {
	p := "/api/v1/namespaces/" + healNamespace + "/configmaps"
	if k == getConsistent || k == getZero {
		p += "/" + healCounter
	}
	if k == getZero || k == listZero {
		p += "?resourceVersion=0"
	}
	return p
}

// healConfig is one implementation's run. The zero values of the pacing
// fields are not meaningful: healDefaults fills them in.
type healConfig struct {
	Name  string
	Flags []string // kube-apiserver flags that pick the implementation
	// ZeroStaleness: an rv=0 read answered with a counter older than the
	// newest write acknowledged this long before it started is stale
	// (--resource-version-zero-max-staleness); zero, before it started.
	ZeroStaleness time.Duration
	Binary        string
	Dir           string // the apiservers' logs and credentials, kept if asked
	DataDir       string // etcd's data: a fresh directory per run

	Lead   time.Duration // traffic before the first cut
	Period time.Duration // from one cut to the next
	Cut    time.Duration // how long member 1 stays isolated
	Cycles int

	WritePace      time.Duration // between one write's answer and the next write
	ChurnEvery     int           // every so many counter writes, one create and one delete
	ReadPace       time.Duration // between one read's answer and the next read, per reader
	ReadersPerKind int
	ReadTimeout    time.Duration // a read that takes longer is an error ("other")

	Logf func(format string, args ...any)
}

// healWrite is one completed counter write: Value was stored before Done.
type healWrite struct {
	Value int64
	Done  time.Time
}

// healRead is one read through R as the server answered it.
type healRead struct {
	Kind       readKind
	Start, End time.Time
	Status     int    // 0: no HTTP answer (Err says why)
	Value      int64  // the counter value of a 2xx answer; -1 when it held no counter
	Err        string // transport error, or the Status message of a non-2xx answer
}

// healWindow is one isolation of member 1.
type healWindow struct {
	Cut, Heal time.Time
}

// healOutcome is the recording of one run.
type healOutcome struct {
	Name          string
	Flags         []string
	ZeroStaleness time.Duration // healConfig.ZeroStaleness
	Binary        string        // the kube-apiservers' /version: version, commit, tree state
	Writes        []healWrite   // in completion order, values increasing
	WriteErrors   []string
	Reads         []healRead
	Windows       []healWindow
	Began, Over   time.Time
}

// runHeal starts a fresh cluster and two kube-apiservers, drives the
// traffic through the isolation schedule and returns the recording.
func runHeal(ctx context.Context, c healConfig) (*healOutcome, error) {
	cl, err := StartCluster(ctx, c.DataDir, uint64(time.Now().UnixNano()))
	if err != nil {
		return nil, fmt.Errorf("starting etcd: %w", err)
	}
	defer cl.Close()
	// Member 0 leads, so that isolating member 1 never costs the writer
	// an election and the implementations see the same cluster.
	if err := cl.MoveLeader(ctx, 0); err != nil {
		c.Logf("%s: moving the etcd leader to member 0: %v (the run goes on)", c.Name, err)
	}
	apis, err := KubeAPIServers(c.Binary, c.Dir, c.Flags)(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("starting kube-apiservers: %w", err)
	}
	defer func() {
		for _, a := range apis {
			a.Stop()
		}
	}()
	w, r := apis[0].(*KubeAPIServer), apis[1].(*KubeAPIServer)
	out := &healOutcome{Name: c.Name, Flags: c.Flags, ZeroStaleness: c.ZeroStaleness, Binary: "unknown"}
	if v, err := w.clientset().Discovery().ServerVersion(); err == nil {
		out.Binary = fmt.Sprintf("%s, commit %s (%s tree), built %s", v.GitVersion, v.GitCommit, v.GitTreeState, v.BuildDate)
	}
	wc := w.clientset().CoreV1()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: healNamespace}}
	if _, err := wc.Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("creating namespace %s: %w", healNamespace, err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: healCounter}, Data: map[string]string{healKey: "0"}}
	if _, err := wc.ConfigMaps(healNamespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("creating the counter: %w", err)
	}
	out.Writes = []healWrite{{Value: 0, Done: time.Now()}}

	hc, err := rest.HTTPClientFor(r.restConfig())
	if err != nil {
		return nil, fmt.Errorf("the HTTP client of apiserver R: %w", err)
	}
	base := r.serverURL()
	if err := c.waitCounter(ctx, hc, base); err != nil {
		return nil, err
	}

	trafficCtx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	wr := &healWriter{cfg: c, client: w.clientset()}
	wg.Go(func() { wr.run(trafficCtx) })
	readers := make([]*healReader, 0, int(readKinds)*c.ReadersPerKind)
	for k := range readKinds {
		for range c.ReadersPerKind {
			rd := &healReader{cfg: c, kind: k, client: hc, base: base}
			readers = append(readers, rd)
			wg.Go(func() { rd.run(trafficCtx) })
		}
	}
	out.Began = time.Now()
	windows, schedErr := c.schedule(ctx, cl, out.Began)
	out.Over = time.Now()
	stop()
	wg.Wait()

	out.Windows = windows
	out.Writes = append(out.Writes, wr.writes...)
	out.WriteErrors = wr.errs
	for _, rd := range readers {
		out.Reads = append(out.Reads, rd.reads...)
	}
	if schedErr != nil {
		return out, schedErr
	}
	return out, nil
}

// save writes the recording as JSON, for a closer look than the report.
func (o *healOutcome) save(path string) error {
	b, err := json.Marshal(o)
	if err != nil {
		return fmt.Errorf("encoding the recording: %w", err)
	}
	return os.WriteFile(path, b, 0o644)
}

// schedule cuts member 1 off for c.Cut at began+Lead+i*Period, for each
// cycle, and returns when the last healthy stretch is over. Member 1 is
// healed on every way out.
func (c healConfig) schedule(ctx context.Context, cl *Cluster, began time.Time) ([]healWindow, error) {
	defer cl.HealPeers()
	var windows []healWindow
	for i := range c.Cycles {
		cut := began.Add(c.Lead + time.Duration(i)*c.Period)
		if err := until(ctx, cut); err != nil {
			return windows, err
		}
		cl.Isolate(1)
		win := healWindow{Cut: time.Now()}
		err := until(ctx, cut.Add(c.Cut))
		cl.HealPeers()
		win.Heal = time.Now()
		windows = append(windows, win)
		c.Logf("%s: member 1 isolated %s, healed %s after the start",
			c.Name, win.Cut.Sub(began).Round(time.Millisecond), win.Heal.Sub(began).Round(time.Millisecond))
		if err != nil {
			return windows, err
		}
	}
	return windows, until(ctx, began.Add(c.Lead+time.Duration(c.Cycles)*c.Period))
}

// until returns at t, or with ctx's error if ctx ends first.
func until(ctx context.Context, t time.Time) error {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("fault schedule: %w", ctx.Err())
	}
}

// waitCounter waits until R answers a consistent GET of the counter: its
// cache holds the namespace's first objects, so the readers measure the
// faults, not the start.
func (c healConfig) waitCounter(ctx context.Context, hc *http.Client, base string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		rd := readOnce(ctx, hc, base, getConsistent)
		if rd.Status == http.StatusOK && rd.Value >= 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("apiserver R never served the counter (last: %d %s): %w", rd.Status, rd.Err, ctx.Err())
		case <-tick.C:
		}
	}
}

// restConfig is the admin's client configuration for this apiserver.
func (s *KubeAPIServer) restConfig() *rest.Config {
	return localup.RESTConfig(s.serverURL(), s.pki)
}

// serverURL is where the current process serves.
func (s *KubeAPIServer) serverURL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.url
}
