package cluster

// The closing line's ratios, and the targets they are judged against.

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/freshcache/freshcache/tools/bench/quantile"
)

// Ratios are the closing line's figures: freshcache with
// FreshResourceVersionZero over upstream at the largest single-apiserver
// node count both ran, and freshcache's stale answers. When the run
// repeated cells, the i-th repeat of one is paired with the i-th of the
// other (they ran next to each other), and each ratio is the median over
// the pairs; Pairs and the *Each slices keep every pair's ratio, so the
// report can show the spread.
type Ratios struct {
	Nodes                      int
	APICPU, EtcdReads, ListP99 *float64
	// Pairs is how many upstream/freshcache-fresh-rv0 pairs the ratios
	// are the median of.
	Pairs                                  int
	APICPUEach, EtcdReadsEach, ListP99Each []float64
	// Work is how much of upstream's open-loop work freshcache-fresh-rv0
	// got done in the same window: the smaller of the ratios of answered
	// LIST-client reads and of churned pods (created + deleted), the
	// median over the pairs. Below comparableWork its CPU and etcd figures
	// are those of a cluster that served less, not of one that served the
	// same for less. Nil when upstream did none.
	Work *float64
	// StormSyncP99 and StormEtcd are the restart storm's all-synced p99
	// and etcd reads (Range), freshcache-fresh-rv0 / upstream (nil when
	// the cells had no storm). Reads, not every request: the writes etcd
	// handles during the storm are the churn's and the nodes' leases,
	// the same for both, and at a few hundred watches they would outweigh
	// the storm's own requests.
	StormSyncP99, StormEtcd         *float64
	StormSyncP99Each, StormEtcdEach []float64
	// StormFresh429 is the 429s freshcache-fresh-rv0's apiservers sent
	// during the storm because a read's freshness wait ran out, and
	// WaitP99Ms its pods' freshness wait p99 in ms (absolute, KEP-2340's
	// SLO is 200 ms): each the median over the pairs' freshcache-fresh-rv0
	// cells, nil when none measured it.
	StormFresh429, WaitP99Ms *float64
	// Stale counts, over every freshcache run, the stale answers to reads
	// that configuration promises fresh: rv="" reads on freshcache,
	// every read on freshcache-fresh-rv0. Nil when no freshcache run
	// probed anything.
	Stale *int64
}

// ComputeRatios finds the ratios in rows.
func ComputeRatios(rows []Row) Ratios {
	var r Ratios
	runs := func(config string, n int) []Row {
		var out []Row
		for _, x := range rows {
			if x.Config == config && x.Mode == modeSingle && x.Nodes == n {
				out = append(out, x)
			}
		}
		slices.SortStableFunc(out, func(a, b Row) int { return a.Repeat - b.Repeat })
		return out
	}
	for _, x := range rows {
		if x.Config == FreshRV0 && x.Mode == modeSingle && len(runs(Upstream, x.Nodes)) > 0 && x.Nodes > r.Nodes {
			r.Nodes = x.Nodes
		}
	}
	if r.Nodes > 0 {
		fs, us := runs(FreshRV0, r.Nodes), runs(Upstream, r.Nodes)
		r.Pairs = min(len(fs), len(us))
		var work, fresh429, waits []float64
		for i := range r.Pairs {
			f, u := fs[i], us[i]
			if f.Storm != nil && f.Storm.Rejected != nil {
				fresh429 = append(fresh429, f.Storm.Rejected[rejectFresh])
			}
			if f.FreshWaitP99Ms != nil {
				waits = append(waits, *f.FreshWaitP99Ms)
			}
			appendRatio(&r.APICPUEach, f.APICPUSec, u.APICPUSec)
			appendRatio(&r.EtcdReadsEach, f.EtcdReads, u.EtcdReads)
			if f.ListP99Ms != nil && u.ListP99Ms != nil {
				appendRatio(&r.ListP99Each, *f.ListP99Ms, *u.ListP99Ms)
			}
			if w := workRatio(f, u); w != nil {
				work = append(work, *w)
			}
			if f.Storm != nil && u.Storm != nil {
				appendRatio(&r.StormSyncP99Each, f.Storm.SyncP99Ms, u.Storm.SyncP99Ms)
				appendRatio(&r.StormEtcdEach, f.Storm.EtcdReads, u.Storm.EtcdReads)
			}
		}
		r.APICPU, r.EtcdReads, r.ListP99, r.Work = medianPtr(r.APICPUEach), medianPtr(r.EtcdReadsEach), medianPtr(r.ListP99Each), medianPtr(work)
		r.StormSyncP99, r.StormEtcd = medianPtr(r.StormSyncP99Each), medianPtr(r.StormEtcdEach)
		r.StormFresh429, r.WaitP99Ms = medianPtr(fresh429), medianPtr(waits)
	}
	for _, x := range rows {
		if x.Config != Freshcache && x.Config != FreshRV0 {
			continue
		}
		if x.Probe.Writes == 0 {
			continue
		}
		n := promisedStale(x)
		if r.Stale == nil {
			r.Stale = new(int64)
		}
		*r.Stale += n
	}
	return r
}

// workRatio is the share of u's open-loop work that f served: the
// smaller of the LIST-client and churn ratios (see Ratios.Work).
func workRatio(f, u Row) *float64 {
	fl, fc := servedWork(f)
	ul, uc := servedWork(u)
	lists, churn := ratioPtr(fl, ul), ratioPtr(fc, uc)
	switch {
	case lists == nil:
		return churn
	case churn == nil || *lists <= *churn:
		return lists
	}
	return churn
}

func appendRatio(to *[]float64, a, b float64) {
	if p := ratioPtr(a, b); p != nil {
		*to = append(*to, *p)
	}
}

func medianPtr(v []float64) *float64 {
	if len(v) == 0 {
		return nil
	}
	m := quantile.Median(v)
	return &m
}

// comparableWork is the least share of upstream's work a cell must serve
// for its cost ratios to be judged against the targets.
const comparableWork = 0.9

// servedWork is the open-loop work x got done: LIST-client reads answered
// and pods churned. (The probe is closed-loop: its write count follows its
// own read latency, so it is not a measure of capacity.)
func servedWork(x Row) (lists, churn float64) {
	for _, rs := range x.Reads {
		lists += float64(rs.OK)
	}
	return lists, float64(x.PodsCreated + x.PodsDeleted)
}

// promisedStale is the stale answers to reads row's configuration
// promises fresh: rv="" on both freshcache configurations; rv=0 too on
// freshcache-fresh-rv0, unless the probe read through another apiserver
// right after writing (ProbeStats.CrossServer), inside rv=0's staleness
// bound.
func promisedStale(x Row) int64 {
	var n int64
	for k, v := range x.Probe.Stale {
		zero := strings.HasSuffix(k, "rv=0")
		if !zero || (x.Config == FreshRV0 && !x.Probe.CrossServer) {
			n += v
		}
	}
	return n
}

func ratioPtr(a, b float64) *float64 {
	if b <= 0 || math.IsNaN(a) || math.IsNaN(b) {
		return nil
	}
	v := a / b
	return &v
}

// Line is the closing line: "cluster-bench ratios: apiserver-cpu=A
// etcd-reads=B list-p99=C stale=D", n/a for what the run could not say.
func (r Ratios) Line() string {
	return fmt.Sprintf("cluster-bench ratios: apiserver-cpu=%s etcd-reads=%s list-p99=%s stale=%s", fmtRatio(r.APICPU), fmtRatio(r.EtcdReads), fmtRatio(r.ListP99), r.staleText())
}

// fmtRatio is a closing line's ratio, n/a when unknown.
func fmtRatio(p *float64) string {
	if p == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", *p)
}

// staleText is Stale for a closing line.
func (r Ratios) staleText() string {
	if r.Stale == nil {
		return "n/a"
	}
	return fmt.Sprint(*r.Stale)
}

// ScaleLine is the scale benchmark's closing line: "scale-bench ratios:
// nodes=N apiserver-cpu=A etcd-reads=B list-p99=C storm-sync-p99=D
// storm-etcd=E stale=S storm-429=Q wait-p99-ms=W", n/a for what the run
// could not say.
func (r Ratios) ScaleLine() string {
	return fmt.Sprintf("scale-bench ratios: nodes=%d apiserver-cpu=%s etcd-reads=%s list-p99=%s storm-sync-p99=%s storm-etcd=%s stale=%s storm-429=%s wait-p99-ms=%s",
		r.Nodes, fmtRatio(r.APICPU), fmtRatio(r.EtcdReads), fmtRatio(r.ListP99), fmtRatio(r.StormSyncP99), fmtRatio(r.StormEtcd), r.staleText(),
		fmtCount(r.StormFresh429), fmtCount(r.WaitP99Ms))
}

// fmtCount is a closing line's count or milliseconds, n/a when unknown.
func fmtCount(p *float64) string {
	if p == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.0f", *p)
}

// clusterTargets are the cluster benchmark's targets for the closing line, reported
// and not asserted.
// With scale (kwok nodes) they are the scale benchmark's targets.
func clusterTargets(r Ratios, scale bool) [][4]string {
	met := func(p *float64, limit float64) string {
		switch {
		case p == nil:
			return "not measured"
		case *p <= limit:
			return "yes"
		}
		return "no"
	}
	under := func(p *float64, limit float64) string {
		if p != nil && *p >= limit {
			return "no"
		}
		return met(p, limit)
	}
	// A cost is judged only when the same work was served; a latency is
	// judged whatever the work (less work at a higher p99 is still worse).
	cost := func(p *float64, limit float64) string {
		if p != nil && r.Work != nil && *r.Work < comparableWork {
			return fmt.Sprintf("not comparable: %.0f%% of upstream's work served", 100**r.Work)
		}
		return met(p, limit)
	}
	val := func(p *float64, each []float64) string {
		if p == nil {
			return "n/a"
		}
		if len(each) < 2 {
			return fmt.Sprintf("%.2f", *p)
		}
		return fmt.Sprintf("%.2f (pairs: %s)", *p, fmtList(each, "%.2f"))
	}
	staleMet, staleVal := "not measured", "n/a"
	if r.Stale != nil {
		staleVal = fmt.Sprint(*r.Stale)
		staleMet = map[bool]string{true: "yes", false: "no"}[*r.Stale == 0]
	}
	if scale {
		return [][4]string{
			{"apiserver CPU, freshcache-fresh-rv0 / upstream", val(r.APICPU, r.APICPUEach), "≤ 1.00", cost(r.APICPU, 1.00)},
			{"etcd reads (Range + RangeStream), freshcache-fresh-rv0 / upstream", val(r.EtcdReads, r.EtcdReadsEach), "≤ 0.5", cost(r.EtcdReads, 0.5)},
			{"pod LIST p99, freshcache-fresh-rv0 / upstream", val(r.ListP99, r.ListP99Each), "≤ 1", met(r.ListP99, 1)},
			{"restart storm, all-synced p99, freshcache-fresh-rv0 / upstream", val(r.StormSyncP99, r.StormSyncP99Each), "≤ 1", met(r.StormSyncP99, 1)},
			{"restart storm, etcd reads (Range), freshcache-fresh-rv0 / upstream", val(r.StormEtcd, r.StormEtcdEach), "≤ 0.1", met(r.StormEtcd, 0.1)},
			{"restart storm, 429s from freshcache-fresh-rv0's freshness wait", fmtCount(r.StormFresh429), "0", met(r.StormFresh429, 0)},
			{"pod freshness wait p99 ms, freshcache-fresh-rv0 (KEP-2340's SLO)", fmtCount(r.WaitP99Ms), "< 200", under(r.WaitP99Ms, 200)},
			{"stale answers freshcache promised fresh", staleVal, "0", staleMet},
		}
	}
	return [][4]string{
		{"apiserver CPU, freshcache-fresh-rv0 / upstream", val(r.APICPU, r.APICPUEach), "≤ 1.05", cost(r.APICPU, 1.05)},
		{"etcd reads (Range + RangeStream), freshcache-fresh-rv0 / upstream", val(r.EtcdReads, r.EtcdReadsEach), "≤ 0.5", cost(r.EtcdReads, 0.5)},
		{"pod LIST p99, freshcache-fresh-rv0 / upstream", val(r.ListP99, r.ListP99Each), "≤ 1", met(r.ListP99, 1)},
		{"stale answers freshcache promised fresh", staleVal, "0", staleMet},
	}
}
