package cluster

// The restart storm (Config.Storm): after the window, every per-node pod
// watch of the informer children is stopped and started again at once, as
// every kubelet does after an apiserver rolling restart or a network
// blip. With WatchListClient on each restart is a watch-list; with it
// off, a LIST at rv=0 and then a watch.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// StormStats is one cell's restart storm.
type StormStats struct {
	// Watches is how many pod watches restarted; Seconds how long until
	// the last had synced again.
	Watches int     `json:"watches"`
	Seconds float64 `json:"seconds"`
	// Sync* are the time from the storm until each watch had synced, over
	// every watch.
	SyncP50Ms float64 `json:"sync_p50_ms"`
	SyncP99Ms float64 `json:"sync_p99_ms"`
	SyncMaxMs float64 `json:"sync_max_ms"`
	// ByGate splits the watches by client-go's WatchListClient.
	ByGate []StormGate `json:"by_gate"`
	// EtcdRequests is every unary request etcd handled during the storm
	// (EtcdHandled without Watch.Watch); EtcdReads its KV.Range part.
	EtcdRequests float64            `json:"etcd_requests"`
	EtcdReads    float64            `json:"etcd_reads"`
	EtcdHandled  map[string]float64 `json:"etcd_handled"`
	APIEtcdOps   map[string]float64 `json:"apiserver_etcd_ops"`
	// APICPUSec is every apiserver's CPU over the storm; APIPeakRSSMB
	// each one's highest RSS, sampled every 200 ms.
	APICPUSec    float64   `json:"apiserver_cpu_seconds"`
	APIPeakRSSMB []float64 `json:"apiserver_peak_rss_mb"`
	// Status429 counts the watches' requests answered 429.
	Status429 int64 `json:"status_429"`
	// Rejected counts the apiservers' 429s during the storm by who sent
	// them: "all", "priority and fairness", "freshness wait" (the
	// reject* keys); absent in older runs.
	Rejected map[string]float64 `json:"rejected"`
	// WaitsExtended counts the timeouts after which an rv=0 LIST waited
	// on, instead of getting 429, because the cache was catching up
	// (read_wait_extensions_total during the storm).
	WaitsExtended float64 `json:"waits_extended,omitempty"`
	// Progress counts freshcache's progress requests during the storm,
	// Stalls those no notification answered in time, and Advances the
	// times a cache reached a read's revision on the own-writes ledger
	// instead (progress_requests_total, progress_stalls_total and
	// own_write_advances_total); absent in older runs.
	Progress *StormProgress `json:"progress,omitempty"`
}

// StormProgress is how freshcache's caches caught up during a storm.
type StormProgress struct {
	Requests float64 `json:"requests"`
	Stalls   float64 `json:"stalls"`
	Advances float64 `json:"own_write_advances"`
}

// StormGate is the storm of the watches of one WatchListClient value.
type StormGate struct {
	WatchListClient bool             `json:"watch_list_client"`
	Watches         int              `json:"watches"`
	SyncP50Ms       float64          `json:"sync_p50_ms"`
	SyncP99Ms       float64          `json:"sync_p99_ms"`
	SyncMaxMs       float64          `json:"sync_max_ms"`
	Requests        map[string]int64 `json:"requests"`
}

// runStorm storms every child at once and measures the servers around it.
func runStorm(ctx context.Context, children []*informerChild, probe *clusterProbe, timeout time.Duration) (*StormStats, error) {
	before, err := probe.sample(ctx)
	if err != nil {
		return nil, err
	}
	rssCtx, cancelRSS := context.WithCancel(ctx)
	peaks := make(chan []float64, 1)
	go func() { peaks <- peakRSS(rssCtx, probe.apiPIDs, 200*time.Millisecond) }()
	stats := make([]StormChildStats, len(children))
	errs := make([]error, len(children))
	var wg sync.WaitGroup
	for i, ch := range children {
		wg.Go(func() { stats[i], errs[i] = ch.storm(ctx, timeout) })
	}
	wg.Wait()
	after, serr := probe.sample(ctx)
	cancelRSS()
	peak := <-peaks
	for _, e := range append(errs, serr) {
		if e != nil {
			return nil, e
		}
	}
	gates := make([]bool, len(children))
	for i, ch := range children {
		gates[i] = ch.gate
	}
	s := stormFromChildren(gates, stats)
	d := diffSamples(before, after)
	s.EtcdHandled, s.APIEtcdOps, s.APICPUSec, s.APIPeakRSSMB = d.EtcdHandled, d.APIEtcdOps, d.APICPUSec, peak
	s.EtcdReads = d.etcdReads()
	s.Rejected = d.Rejected
	s.WaitsExtended = d.Extensions
	s.Progress = &StormProgress{Requests: d.Progress, Stalls: d.Stalls, Advances: d.Advances}
	for m, v := range d.EtcdHandled {
		if m != "Watch.Watch" {
			s.EtcdRequests += v
		}
	}
	return s, nil
}

// stormFromChildren merges the children's reports (gates[i] is child i's
// WatchListClient): sync quantiles over all and per gate value, the longest
// storm, the 429s.
func stormFromChildren(gates []bool, stats []StormChildStats) *StormStats {
	s := &StormStats{}
	var all []float64
	byGate := map[bool]*StormGate{}
	syncs := map[bool][]float64{}
	for i, st := range stats {
		g := gates[i]
		s.Watches += st.Informers
		s.Seconds = max(s.Seconds, st.Seconds)
		all = append(all, st.SyncMs...)
		syncs[g] = append(syncs[g], st.SyncMs...)
		if byGate[g] == nil {
			byGate[g] = &StormGate{WatchListClient: g, Requests: map[string]int64{}}
		}
		byGate[g].Watches += st.Informers
		for k, v := range st.Requests {
			byGate[g].Requests[k] += v
			if k == status429 {
				s.Status429 += v
			}
		}
	}
	s.SyncP50Ms, s.SyncP99Ms, s.SyncMaxMs = syncQuantiles(all)
	for _, g := range []bool{true, false} {
		if bg := byGate[g]; bg != nil {
			bg.SyncP50Ms, bg.SyncP99Ms, bg.SyncMaxMs = syncQuantiles(syncs[g])
			s.ByGate = append(s.ByGate, *bg)
		}
	}
	return s
}

// syncQuantiles is v's p50, p99 and max (zeros for none).
func syncQuantiles(v []float64) (p50, p99, mx float64) {
	if len(v) == 0 {
		return 0, 0, 0
	}
	sorted := slices.Clone(v)
	slices.Sort(sorted)
	return quantileSorted(sorted, 0.5), quantileSorted(sorted, 0.99), sorted[len(sorted)-1]
}

// writeStorm is the report's storm table, when a row has one.
func writeStorm(b *strings.Builder, rows []Row) {
	var with []Row
	for _, r := range rows {
		if r.Storm != nil {
			with = append(with, r)
		}
	}
	if len(with) == 0 {
		return
	}
	b.WriteString("\nRestart storm (after the window, every node's pod watch stopped and started again at once; sync is from the storm until that watch had synced; etcd requests are every unary request etcd handled during the storm, writes included; the target counts the Range column; \"rv=0 waits extended\" counts the timeouts after which an rv=0 LIST waited on because the cache was catching up, where it would otherwise have got 429; \"progress\" is freshcache's progress requests, those that stalled (no notification within the stall time), and the times a cache reached a read's revision on the own-writes ledger instead, all caches together):\n\n" +
		"| configuration | nodes | watches | all synced s | sync p50 / p99 / max ms | WatchListClient on: p99 ms | off: p99 ms | etcd requests | etcd Range | apiserver CPU s | peak RSS MB | 429s | apiserver 429s: all / priority and fairness / freshness wait | rv=0 waits extended | progress: requests / stalls / own-write advances |\n" +
		"|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|\n")
	for _, r := range with {
		s := r.Storm
		gate := map[bool]string{true: "–", false: "–"}
		for _, g := range s.ByGate {
			gate[g.WatchListClient] = fmt.Sprintf("%.0f", g.SyncP99Ms)
		}
		rejected := "–"
		if s.Rejected != nil {
			rejected = fmt.Sprintf("%.0f / %.0f / %.0f", s.Rejected[rejectAll], s.Rejected[rejectAPF], s.Rejected[rejectFresh])
		}
		progress := "–" // upstream's cacher exports no such counts
		if p := s.Progress; p != nil && r.Config != Upstream {
			progress = fmt.Sprintf("%.0f / %.0f / %.0f", p.Requests, p.Stalls, p.Advances)
		}
		fmt.Fprintf(b, "| %s%s | %d | %d | %.1f | %.0f / %.0f / %.0f | %s | %s | %.0f | %.0f | %.1f | %s | %d | %s | %.0f | %s |\n",
			r.Config, repeatSuffix(r), r.Nodes, s.Watches, s.Seconds, s.SyncP50Ms, s.SyncP99Ms, s.SyncMaxMs, gate[true], gate[false],
			s.EtcdRequests, s.EtcdReads, s.APICPUSec, fmtList(s.APIPeakRSSMB, "%.0f"), s.Status429, rejected, s.WaitsExtended, progress)
	}
}

// repeatSuffix names a row's repeat in a table's first column.
func repeatSuffix(r Row) string {
	if r.Repeat == 0 {
		return ""
	}
	return fmt.Sprintf(" (repeat %d)", r.Repeat)
}
