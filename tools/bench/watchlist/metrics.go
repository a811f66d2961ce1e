package watchlist

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/rest"

	"github.com/freshcache/freshcache/tools/bench/promtext"
	"github.com/freshcache/freshcache/tools/bench/quantile"
)

// The freshness-wait metrics of each implementation. Both label the
// resource; freshcache also the verb and what was requested, upstream
// observes its wait only when the cache was behind the requested revision.
const (
	freshWait      = "apiserver_freshcache_read_wait_seconds"
	freshRelease   = "apiserver_freshcache_read_release_seconds"
	freshReads     = "apiserver_freshcache_reads_total"
	upstreamWait   = "apiserver_watch_cache_read_wait_seconds"
	upstreamReads  = "apiserver_watch_cache_consistent_read_total"
	verbAny        = "any"
	scrapeTimeout  = 30 * time.Second
	resConfigMaps  = "configmaps"
	resSecrets     = "secrets"
	coreGroupLabel = ""
)

// The Go runtime's own metrics (component-base registers every one):
// how long runnable goroutines waited for a P, and the CPU the garbage
// collector took. A saturated process slows every request through the
// first, whatever its cache does.
const (
	goSchedLatency = "go_sched_latencies_seconds"
	goGCCPU        = "go_cpu_classes_gc_total_cpu_seconds_total"
	// freshFetch is freshcache's linearizable revision fetch round trip to
	// etcd (for every resource): the first part of a read's release.
	freshFetch = "apiserver_freshcache_revision_fetch_duration_seconds"
)

// waitKey names one wait series.
type waitKey struct{ resource, verb string }

// waitSample is what one /metrics scrape says about freshness waits and
// the Go runtime.
type waitSample struct {
	waits map[waitKey]quantile.Histogram
	// release is freshcache's wait until the protocol released the read.
	release map[waitKey]quantile.Histogram
	// fallbacks and rejected count consistent reads per series key.
	fallbacks map[waitKey]float64
	rejected  map[waitKey]float64
	// sched is the runtime's scheduling-latency histogram (nil when not
	// exported), gcCPU the collector's CPU seconds so far.
	sched quantile.Histogram
	gcCPU float64
	// fetch is freshcache's successful revision fetches (nil for upstream).
	fetch quantile.Histogram
}

// parseWaits reads the wait histograms and read outcomes of configmaps
// and secrets (core group) from a Prometheus text exposition.
func parseWaits(r io.Reader) (waitSample, error) {
	mfs, err := promtext.Parse(r)
	if err != nil {
		return waitSample{}, fmt.Errorf("watchlist: parsing /metrics: %w", err)
	}
	s := waitSample{waits: map[waitKey]quantile.Histogram{}, release: map[waitKey]quantile.Histogram{}, fallbacks: map[waitKey]float64{}, rejected: map[waitKey]float64{}}
	for name, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch name {
			case goSchedLatency:
				s.sched = s.sched.Add(m.GetHistogram())
				continue
			case goGCCPU:
				s.gcCPU += m.GetCounter().GetValue()
				continue
			case freshFetch:
				if promtext.Label(m, "result") == "success" {
					s.fetch = s.fetch.Add(m.GetHistogram())
				}
				continue
			}
			res := promtext.Label(m, "resource")
			if promtext.Label(m, "group") != coreGroupLabel || (res != resConfigMaps && res != resSecrets) {
				continue
			}
			switch name {
			case freshWait, upstreamWait:
				k := waitKey{res, verbAny}
				if name == freshWait {
					k.verb = promtext.Label(m, "verb")
				}
				s.waits[k] = s.waits[k].Add(m.GetHistogram())
			case freshRelease:
				k := waitKey{res, promtext.Label(m, "verb")}
				s.release[k] = s.release[k].Add(m.GetHistogram())
			case freshReads:
				k := waitKey{res, promtext.Label(m, "verb")}
				switch promtext.Label(m, "outcome") {
				case "fallback":
					s.fallbacks[k] += m.GetCounter().GetValue()
				case "rejected", "over_budget":
					s.rejected[k] += m.GetCounter().GetValue()
				}
			case upstreamReads:
				k := waitKey{res, verbAny}
				switch promtext.Label(m, "fallback") {
				case "true":
					s.fallbacks[k] += m.GetCounter().GetValue()
				case "skipped":
					s.rejected[k] += m.GetCounter().GetValue()
				}
			}
		}
	}
	return s, nil
}

// waitStats is the phase's wait series, between two scrapes, sorted by
// resource and verb. A series without observations or outcomes is left
// out.
func waitStats(before, after waitSample) []WaitStats {
	keys := map[waitKey]bool{}
	for k := range after.waits {
		keys[k] = true
	}
	for k := range after.fallbacks {
		keys[k] = true
	}
	for k := range after.rejected {
		keys[k] = true
	}
	var out []WaitStats
	for k := range keys {
		h := after.waits[k].Sub(before.waits[k])
		w := WaitStats{
			Resource: k.resource, Verb: k.verb, Count: h.Count(),
			Fallbacks: after.fallbacks[k] - before.fallbacks[k],
			Rejected:  after.rejected[k] - before.rejected[k],
		}
		if w.Count == 0 && w.Fallbacks == 0 && w.Rejected == 0 {
			continue
		}
		if v, ok := h.Quantile(0.5); ok {
			w.P50Ms = v * 1000
		}
		if v, ok := h.Quantile(0.99); ok {
			w.P99Ms = v * 1000
		}
		if r := after.release[k].Sub(before.release[k]); r.Count() > 0 {
			v50, _ := r.Quantile(0.5)
			v99, _ := r.Quantile(0.99)
			w.Release = &Quantiles{P50Ms: v50 * 1000, P99Ms: v99 * 1000}
		}
		out = append(out, w)
	}
	slices.SortFunc(out, func(a, b WaitStats) int {
		return strings.Compare(a.Resource+"/"+a.Verb, b.Resource+"/"+b.Verb)
	})
	return out
}

// runtimeStats is the apiserver's Go runtime over a phase of secs seconds.
func runtimeStats(before, after waitSample, secs float64) RuntimeStats {
	var r RuntimeStats
	if secs > 0 {
		r.GCCores = (after.gcCPU - before.gcCPU) / secs
	}
	if h := after.sched.Sub(before.sched); h.Count() > 0 {
		v50, _ := h.Quantile(0.5)
		v99, _ := h.Quantile(0.99)
		r.SchedLatency = &Quantiles{P50Ms: v50 * 1000, P99Ms: v99 * 1000}
	}
	if h := after.fetch.Sub(before.fetch); h.Count() > 0 {
		v50, _ := h.Quantile(0.5)
		v99, _ := h.Quantile(0.99)
		r.RevisionFetch = &Quantiles{P50Ms: v50 * 1000, P99Ms: v99 * 1000}
	}
	return r
}

// scraper reads one kube-apiserver's /metrics with its admin credentials.
type scraper struct {
	hc  *http.Client
	url string
}

func newScraper(rc *rest.Config) (*scraper, error) {
	rt, err := rest.TransportFor(rc)
	if err != nil {
		return nil, fmt.Errorf("watchlist: metrics transport: %w", err)
	}
	return &scraper{hc: &http.Client{Transport: rt}, url: strings.TrimSuffix(rc.Host, "/") + "/metrics"}, nil
}

func (s *scraper) scrape(ctx context.Context) (waitSample, error) {
	ctx, cancel := context.WithTimeout(ctx, scrapeTimeout)
	defer cancel()
	body, err := promtext.Get(ctx, s.hc, s.url)
	if err != nil {
		return waitSample{}, fmt.Errorf("watchlist: GET /metrics: %w", err)
	}
	defer func() { _ = body.Close() }()
	return parseWaits(body)
}
