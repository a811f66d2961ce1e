package cluster

// What the cluster benchmark reads around a window: each kube-apiserver's
// /metrics and /proc CPU, and etcd's /metrics and the CPU of local-up's
// process, which runs every embedded etcd member.

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/freshcache/freshcache/lab/pkg/counters"
	"github.com/freshcache/freshcache/tools/bench/procfs"
	"github.com/freshcache/freshcache/tools/bench/promtext"
	"github.com/freshcache/freshcache/tools/bench/quantile"
	"github.com/freshcache/freshcache/tools/bench/servermetrics"
)

// requestDurationMetric is kube-apiserver's request latency histogram
// (verb, resource, subresource, scope, ...).
const requestDurationMetric = "apiserver_request_duration_seconds"

// apiMetrics is what one kube-apiserver's /metrics says, reduced to what
// the cluster report shows.
type apiMetrics struct {
	// requests are request_duration_seconds for pods, by requestKey.
	requests map[string]quantile.Histogram
	// wait is the implementation's freshness-wait histogram for pods
	// (waitMetric); nil when the server does not expose it.
	wait quantile.Histogram
	// etcdOps is etcd_requests_total by operation, over every resource:
	// the apiserver's own count of what it asked etcd.
	etcdOps map[string]float64
	// fetches counts freshcache's revision fetches, progress its progress
	// requests; zero on upstream's cacher, which exports neither.
	fetches, progress, stalls float64
	// progressBy is progress requests by resource ("leases.coordination.k8s.io").
	progressBy map[string]float64
	// fetchSec is the fetches' summed round trips, fetchReads the reads
	// they answered (the sums of revision_fetch_duration_seconds and
	// reads_per_revision_fetch); freshReads counts reads_total, every
	// read that needed freshness, of every resource.
	fetchSec, fetchReads, freshReads float64
	// writeReads counts the reads a write's revision answered
	// (reads_answered_by_writes_total, RevisionsFromWrites).
	writeReads float64
	// holds counts revision_holds_total by result (write, expired,
	// abandoned): reads held for the apiserver's next write.
	holds map[string]float64
	// completed counts revisions_completed_total by what proved a held
	// revision whole (event, progress, own_write).
	completed map[string]float64
	// advances counts own_write_advances_total: catch-ups proven by the
	// ledger of the apiserver's own writes, without a progress request.
	advances float64
	// extensions counts read_wait_extensions_total: timeouts after which
	// an rv=0 LIST waited on because the cache was catching up.
	extensions float64
	// rejected counts the apiserver's 429s by who sent them (the
	// reject* keys).
	rejected map[string]float64
	// parts are the pieces of a fresh read's wait, by WaitPart* name:
	// freshcache's release (read_release_seconds, pods) and either
	// implementation's revision fetch (freshcache's revision_fetch_duration
	// over every resource; upstream's getCurrentResourceVersion for pods
	// from etcd_request_duration_seconds).
	parts map[string]quantile.Histogram
}

// The pieces of the freshness wait the report splits out.
const (
	// waitPartWait is the whole wait (waitMetric, pods).
	waitPartWait    = "wait"
	waitPartRelease = "released"
	waitPartFetch   = "revision fetch"
)

// waitParts is the report's column order.
var waitParts = []string{waitPartWait, waitPartRelease, waitPartFetch}

// requestKey names a series of request_duration_seconds: "LIST cluster",
// "GET namespace", "PATCH namespace status".
func requestKey(verb, scope, subresource string) string {
	k := verb + " " + scope
	if subresource != "" {
		k += " " + subresource
	}
	return k
}

// apiMetricsFrom reduces a scrape; impl picks the freshness-wait metric.
func apiMetricsFrom(mfs []*dto.MetricFamily, impl string) apiMetrics {
	a := apiMetrics{requests: map[string]quantile.Histogram{}, etcdOps: map[string]float64{}}
	for _, mf := range mfs {
		switch mf.GetName() {
		case requestDurationMetric:
			for _, m := range mf.GetMetric() {
				if promtext.Label(m, "resource") != "pods" || promtext.Label(m, "group") != "" {
					continue
				}
				k := requestKey(promtext.Label(m, "verb"), promtext.Label(m, "scope"), promtext.Label(m, "subresource"))
				a.requests[k] = a.requests[k].Add(m.GetHistogram())
			}
		case "etcd_requests_total":
			for _, m := range mf.GetMetric() {
				a.etcdOps[promtext.Label(m, "operation")] += m.GetCounter().GetValue()
			}
		}
	}
	a.wait = servermetrics.HistogramFrom(mfs, servermetrics.WaitMetric(impl), "pods")
	a.parts = map[string]quantile.Histogram{}
	if impl == Freshcache {
		a.parts[waitPartRelease] = servermetrics.HistogramFrom(mfs, servermetrics.FreshcacheRelease, "pods")
		a.parts[waitPartFetch] = servermetrics.HistogramFrom(mfs, servermetrics.FreshcacheFetch, "")
	} else {
		a.parts[waitPartFetch] = servermetrics.HistogramWhere(mfs, "etcd_request_duration_seconds", func(m *dto.Metric) bool {
			return promtext.Label(m, "operation") == "getCurrentResourceVersion" && promtext.Label(m, "resource") == "pods" && promtext.Label(m, "group") == ""
		})
	}
	a.fetches = servermetrics.CounterFrom(mfs, "apiserver_freshcache_revision_fetches_total")
	a.progress = servermetrics.CounterFrom(mfs, servermetrics.FreshcacheProgress)
	a.progressBy = counterByResource(mfs, servermetrics.FreshcacheProgress)
	a.stalls = servermetrics.CounterFrom(mfs, "apiserver_freshcache_progress_stalls_total")
	a.fetchSec = histogramSum(mfs, servermetrics.FreshcacheFetch)
	a.fetchReads = histogramSum(mfs, "apiserver_freshcache_reads_per_revision_fetch")
	a.freshReads = servermetrics.CounterFrom(mfs, "apiserver_freshcache_reads_total")
	a.writeReads = servermetrics.CounterFrom(mfs, "apiserver_freshcache_reads_answered_by_writes_total")
	a.holds = counterByLabel(mfs, "apiserver_freshcache_revision_holds_total", "result")
	a.completed = counterByLabel(mfs, "apiserver_freshcache_revisions_completed_total", "by")
	a.advances = servermetrics.CounterFrom(mfs, "apiserver_freshcache_own_write_advances_total")
	a.extensions = servermetrics.CounterFrom(mfs, "apiserver_freshcache_read_wait_extensions_total")
	a.rejected = rejectionsFrom(mfs)
	return a
}

// Who answered a request 429, for rejectionsFrom.
const (
	// rejectAll is every 429 the apiserver answered
	// (apiserver_request_total with code 429).
	rejectAll = "all"
	// rejectAPF: API priority and fairness turned the request away
	// (apiserver_flowcontrol_rejected_requests_total).
	rejectAPF = "priority and fairness"
	// rejectFresh: freshcache's freshness wait did
	// (apiserver_freshcache_reads_total, outcome rejected or over_budget).
	rejectFresh = "freshness wait"
)

// rejectionsFrom counts a scrape's 429s by who sent them (reject*).
func rejectionsFrom(mfs []*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	servermetrics.EachSeries(mfs, "apiserver_request_total", func(m *dto.Metric) {
		if promtext.Label(m, "code") == "429" {
			out[rejectAll] += m.GetCounter().GetValue()
		}
	})
	out[rejectAPF] = servermetrics.CounterFrom(mfs, "apiserver_flowcontrol_rejected_requests_total")
	servermetrics.EachSeries(mfs, "apiserver_freshcache_reads_total", func(m *dto.Metric) {
		if o := promtext.Label(m, "outcome"); o == "rejected" || o == "over_budget" {
			out[rejectFresh] += m.GetCounter().GetValue()
		}
	})
	return out
}

// counterByLabel sums counter name's series by the value of label.
func counterByLabel(mfs []*dto.MetricFamily, name, label string) map[string]float64 {
	out := map[string]float64{}
	servermetrics.EachSeries(mfs, name, func(m *dto.Metric) {
		out[promtext.Label(m, label)] += m.GetCounter().GetValue()
	})
	return out
}

// counterByResource sums counter name by its resource and group labels,
// "resource" or "resource.group".
func counterByResource(mfs []*dto.MetricFamily, name string) map[string]float64 {
	out := map[string]float64{}
	servermetrics.EachSeries(mfs, name, func(m *dto.Metric) {
		k := promtext.Label(m, "resource")
		if g := promtext.Label(m, "group"); g != "" {
			k += "." + g
		}
		out[k] += m.GetCounter().GetValue()
	})
	return out
}

// histogramSum is the sum of every observation of histogram name, all
// series; zero when absent.
func histogramSum(mfs []*dto.MetricFamily, name string) float64 {
	var sum float64
	servermetrics.EachSeries(mfs, name, func(m *dto.Metric) { sum += m.GetHistogram().GetSampleSum() })
	return sum
}

// etcdMetrics is what etcd's /metrics says. Every member of local-up's
// embedded etcd runs in one process and registers on one Prometheus
// registry, so one scrape counts all members together.
type etcdMetrics struct {
	// handled is grpc_server_handled_total by "Service.Method"
	// (etcdserverpb.KV.Range -> "KV.Range"): unary RPCs when they finish,
	// streams when they close.
	handled map[string]float64
	// watchMsgs counts messages clients sent on Watch streams: watch
	// creations, cancellations and progress requests, which etcd does not
	// tell apart.
	watchMsgs float64
	// mvcc is etcd_mvcc_{range,put,delete,txn}_total by the part after
	// "etcd_mvcc_": what the members' stores did, each member counting its
	// own (a write is applied by every member).
	mvcc map[string]float64
}

func etcdMetricsFrom(mfs []*dto.MetricFamily) etcdMetrics {
	e := etcdMetrics{handled: map[string]float64{}, mvcc: map[string]float64{}}
	for _, mf := range mfs {
		name := mf.GetName()
		switch {
		case name == "grpc_server_handled_total":
			for _, m := range mf.GetMetric() {
				svc := strings.TrimPrefix(promtext.Label(m, "grpc_service"), "etcdserverpb.")
				if v := m.GetCounter().GetValue(); v > 0 {
					e.handled[svc+"."+promtext.Label(m, "grpc_method")] += v
				}
			}
		case name == "grpc_server_msg_received_total":
			for _, m := range mf.GetMetric() {
				if promtext.Label(m, "grpc_service") == "etcdserverpb.Watch" && promtext.Label(m, "grpc_method") == "Watch" {
					e.watchMsgs += m.GetCounter().GetValue()
				}
			}
		case strings.HasPrefix(name, "etcd_mvcc_") && strings.HasSuffix(name, "_total") && mf.GetType() == dto.MetricType_COUNTER:
			for _, m := range mf.GetMetric() {
				e.mvcc[strings.TrimPrefix(name, "etcd_mvcc_")] += m.GetCounter().GetValue()
			}
		}
	}
	return e
}

// clusterSample is everything read at one instant of a run.
type clusterSample struct {
	at time.Time
	// apiTicks and api are per kube-apiserver, in the ready file's order.
	apiTicks []float64
	api      []apiMetrics
	// etcdTicks is local-up's CPU: the embedded etcd members, plus
	// local-up's own supervision of its children.
	etcdTicks float64
	etcd      etcdMetrics
}

// clusterProbe reads one cluster's servers.
type clusterProbe struct {
	impl     string
	apis     []*servermetrics.Client
	apiPIDs  []int
	etcdPID  int
	etcdURL  string
	etcdHTTP *http.Client
}

func (p *clusterProbe) sample(ctx context.Context) (clusterSample, error) {
	s := clusterSample{at: time.Now()}
	for i, h := range p.apis {
		s.apiTicks = append(s.apiTicks, procfs.CPUTicks([]int{p.apiPIDs[i]}))
		mfs, err := h.Metrics(ctx)
		if err != nil {
			return s, p.explain(err)
		}
		s.api = append(s.api, apiMetricsFrom(mfs, p.impl))
	}
	s.etcdTicks = procfs.CPUTicks([]int{p.etcdPID})
	sctx, cancel := context.WithTimeout(ctx, servermetrics.MetricsTimeout)
	defer cancel()
	emfs, err := servermetrics.Scrape(sctx, p.etcdHTTP, strings.TrimSuffix(p.etcdURL, "/")+"/metrics")
	if err != nil {
		return s, p.explain(err)
	}
	s.etcd = etcdMetricsFrom(emfs)
	return s, nil
}

// explain adds to a failed scrape which of the cluster's servers has
// exited, if any: a refused connection alone does not say.
func (p *clusterProbe) explain(err error) error {
	var gone []string
	for i, pid := range p.apiPIDs {
		if !procfs.Alive(pid) {
			gone = append(gone, fmt.Sprintf("kube-apiserver-%d (pid %d)", i+1, pid))
		}
	}
	if !procfs.Alive(p.etcdPID) {
		gone = append(gone, fmt.Sprintf("local-up, which runs etcd (pid %d)", p.etcdPID))
	}
	if len(gone) == 0 {
		return err
	}
	return fmt.Errorf("%w; exited: %s", err, strings.Join(gone, ", "))
}

// windowDelta is what happened between two samples.
type windowDelta struct {
	Seconds float64
	// APICPUSec is every kube-apiserver's CPU, summed; APICPUSecEach per
	// server.
	APICPUSec     float64
	APICPUSecEach []float64
	EtcdCPUSec    float64
	// Requests are the servers' pods request histograms, summed.
	requests map[string]quantile.Histogram
	wait     quantile.Histogram
	parts    map[string]quantile.Histogram
	// Etcd* are counts in the window.
	EtcdHandled map[string]float64
	EtcdWatch   float64
	EtcdMVCC    map[string]float64
	APIEtcdOps  map[string]float64
	Fetches     float64
	Progress    float64
	ProgressBy  map[string]float64
	Stalls      float64
	// FetchSec, FetchReads and FreshReads are the window's part of
	// apiMetrics' sums of the same names.
	FetchSec, FetchReads, FreshReads float64
	// WriteReads is the window's part of writeReads.
	WriteReads float64
	// Holds is the window's part of holds, by result.
	Holds map[string]float64
	// Completed is the window's part of completed, by what proved it.
	Completed map[string]float64
	// Advances is the window's part of advances.
	Advances float64
	// Extensions is the window's part of extensions.
	Extensions float64
	// Rejected is the window's part of rejected, by who answered 429.
	Rejected map[string]float64
}

func (d windowDelta) etcdReads() float64 {
	return d.EtcdHandled["KV.Range"] + d.EtcdHandled["KV.RangeStream"]
}

func diffSamples(before, after clusterSample) windowDelta {
	d := windowDelta{
		Seconds:     after.at.Sub(before.at).Seconds(),
		EtcdCPUSec:  (after.etcdTicks - before.etcdTicks) / procfs.ClockTicksPerSec,
		requests:    map[string]quantile.Histogram{},
		parts:       map[string]quantile.Histogram{},
		EtcdHandled: counters.Delta(before.etcd.handled, after.etcd.handled),
		EtcdWatch:   after.etcd.watchMsgs - before.etcd.watchMsgs,
		EtcdMVCC:    counters.Delta(before.etcd.mvcc, after.etcd.mvcc),
		APIEtcdOps:  map[string]float64{},
		ProgressBy:  map[string]float64{},
		Holds:       map[string]float64{},
		Completed:   map[string]float64{},
		Rejected:    map[string]float64{},
	}
	for i := range after.api {
		if i >= len(before.api) {
			break
		}
		cpu := (after.apiTicks[i] - before.apiTicks[i]) / procfs.ClockTicksPerSec
		d.APICPUSec += cpu
		d.APICPUSecEach = append(d.APICPUSecEach, cpu)
		a, b := after.api[i], before.api[i]
		for k, h := range a.requests {
			d.requests[k] = d.requests[k].Plus(h.Sub(b.requests[k]))
		}
		if a.wait != nil {
			d.wait = d.wait.Plus(a.wait.Sub(b.wait))
		}
		for k, h := range a.parts {
			if h != nil {
				d.parts[k] = d.parts[k].Plus(h.Sub(b.parts[k]))
			}
		}
		addDelta(d.APIEtcdOps, b.etcdOps, a.etcdOps)
		d.Fetches += a.fetches - b.fetches
		d.Progress += a.progress - b.progress
		d.Stalls += a.stalls - b.stalls
		addDelta(d.ProgressBy, b.progressBy, a.progressBy)
		d.FetchSec += a.fetchSec - b.fetchSec
		d.FetchReads += a.fetchReads - b.fetchReads
		d.WriteReads += a.writeReads - b.writeReads
		addDelta(d.Holds, b.holds, a.holds)
		addDelta(d.Completed, b.completed, a.completed)
		d.FreshReads += a.freshReads - b.freshReads
		d.Advances += a.advances - b.advances
		d.Extensions += a.extensions - b.extensions
		addDelta(d.Rejected, b.rejected, a.rejected)
	}
	return d
}

// addDelta adds to sum, key by key, what each counter moved from before
// to after: the apiservers' counters summed over the window.
func addDelta(sum, before, after map[string]float64) {
	for k, v := range counters.Delta(before, after) {
		sum[k] += v
	}
}

// latencyOf is the count, p50 and p99 (ms) of the histograms of keys whose
// verb and, when scope is not "", scope match.
func latencyOf(reqs map[string]quantile.Histogram, verb, scope string) (count, p50, p99 float64, ok bool) {
	var sum quantile.Histogram
	for k, h := range reqs {
		f := strings.Fields(k)
		if len(f) < 2 || f[0] != verb || len(f) > 2 || (scope != "" && f[1] != scope) {
			continue
		}
		sum = sum.Plus(h)
	}
	if sum == nil {
		return 0, 0, 0, false
	}
	count = sum.Count()
	q50, ok50 := sum.Quantile(0.5)
	q99, ok99 := sum.Quantile(0.99)
	if !ok50 || !ok99 {
		return count, 0, 0, false
	}
	return count, q50 * 1000, q99 * 1000, true
}

// peakRSS samples VmRSS of pids every interval until ctx is done and
// returns each one's highest (MB).
func peakRSS(ctx context.Context, pids []int, interval time.Duration) []float64 {
	peak := make([]float64, len(pids))
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		for i, p := range pids {
			peak[i] = max(peak[i], procfs.RSSMB(p))
		}
		select {
		case <-ctx.Done():
			return peak
		case <-tick.C:
		}
	}
}

// sortedKeys lists m's keys in order, for stable tables.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
