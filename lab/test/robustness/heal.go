package robustness

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	"github.com/freshcache/freshcache/lab/pkg/localup"
	"github.com/freshcache/freshcache/lab/test/robustness/counterload"
)

// The fault-heal scenario: apiserver W (member 0) takes a steady stream of
// writes, apiserver R (member 1) serves reads in four modes, and member 1
// is cut off from its peers for Cut out of every Period. What the
// recording shows is how each watch cache implementation behaves while
// its member is partitioned and, above all, right after the partition
// heals: stale answers, 5xx, and 429s that come after the cache should
// have caught up. heal_report.go turns the recording into counts.

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

	Pace           counterload.Pace // a read that takes longer than Pace.ReadTimeout is an error ("other")
	ReadersPerKind int

	Logf func(format string, args ...any)
}

// healWindow is one isolation of member 1.
type healWindow struct {
	Cut, Heal time.Time
}

// healOutcome is the recording of one run.
type healOutcome struct {
	Name          string
	Flags         []string
	ZeroStaleness time.Duration       // healConfig.ZeroStaleness
	Binary        string              // the kube-apiservers' /version: version, commit, tree state
	Writes        []counterload.Write // in completion order, values increasing
	WriteErrors   []string
	Reads         []counterload.Read
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
	first, err := counterload.Setup(ctx, w.clientset())
	if err != nil {
		return nil, err
	}
	out.Writes = []counterload.Write{first}

	hc, err := rest.HTTPClientFor(r.restConfig())
	if err != nil {
		return nil, fmt.Errorf("the HTTP client of apiserver R: %w", err)
	}
	base := r.serverURL()
	if err := counterload.WaitCounter(ctx, hc, base); err != nil {
		return nil, err
	}

	trafficCtx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	wr := &counterload.Writer{Pace: c.Pace, Client: w.clientset()}
	wg.Go(func() { wr.Run(trafficCtx) })
	readers := make([]*counterload.Reader, 0, int(counterload.Kinds)*c.ReadersPerKind)
	for k := range counterload.Kinds {
		for range c.ReadersPerKind {
			rd := &counterload.Reader{Pace: c.Pace, Kind: k, Client: hc, Base: base}
			readers = append(readers, rd)
			wg.Go(func() { rd.Run(trafficCtx) })
		}
	}
	out.Began = time.Now()
	windows, schedErr := c.schedule(ctx, cl, out.Began)
	out.Over = time.Now()
	stop()
	wg.Wait()

	out.Windows = windows
	out.Writes = append(out.Writes, wr.Writes...)
	for _, e := range wr.Errs {
		out.WriteErrors = append(out.WriteErrors, e.Err)
	}
	for _, rd := range readers {
		out.Reads = append(out.Reads, rd.Reads...)
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
		if err := counterload.Until(ctx, cut); err != nil {
			return windows, err
		}
		cl.Isolate(1)
		win := healWindow{Cut: time.Now()}
		err := counterload.Until(ctx, cut.Add(c.Cut))
		cl.HealPeers()
		win.Heal = time.Now()
		windows = append(windows, win)
		c.Logf("%s: member 1 isolated %s, healed %s after the start",
			c.Name, win.Cut.Sub(began).Round(time.Millisecond), win.Heal.Sub(began).Round(time.Millisecond))
		if err != nil {
			return windows, err
		}
	}
	return windows, counterload.Until(ctx, began.Add(c.Lead+time.Duration(c.Cycles)*c.Period))
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
