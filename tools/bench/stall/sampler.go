package stall

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/freshcache/freshcache/tools/bench/procfs"
	"github.com/freshcache/freshcache/tools/bench/promtext"
)

// rssBytes is a process's VmRSS from /proc; 0 when it cannot be read.
func rssBytes(pid int) int64 { return procfs.StatusBytes(pid, "VmRSS:") }

// hwmBytes is a process's VmHWM (peak RSS since it started); 0 when it
// cannot be read.
func hwmBytes(pid int) int64 { return procfs.StatusBytes(pid, "VmHWM:") }

// MetricSample is what the apiserver or etcd said at one moment (etcd
// does not answer while it is stopped).
type MetricSample struct {
	At time.Duration `json:"-"`
	// Reads are the apiserver's consistent LISTs of configmaps so far by
	// outcome (readOutcome); nil when the scrape failed.
	Reads map[string]float64 `json:"reads,omitempty"`
	// FallbackObjects is freshcache's fallback_objects_in_flight for
	// configmaps: the objects the reads now served from etcd instead of
	// the cache cover (divide by Config.Objects for whole LISTs).
	FallbackObjects float64 `json:"fallback_objects,omitempty"`
	// EtcdOK says the etcd scrape answered; then EtcdSentBytes is
	// etcd_network_client_grpc_sent_bytes_total and EtcdRangesInFlight the
	// Range RPCs started but not finished.
	EtcdOK             bool    `json:"etcd_ok"`
	EtcdSentBytes      float64 `json:"etcd_sent_bytes,omitempty"`
	EtcdRangesInFlight float64 `json:"etcd_ranges_in_flight,omitempty"`
}

// MarshalJSON shows At in milliseconds.
func (m MetricSample) MarshalJSON() ([]byte, error) {
	type plain MetricSample
	return json.Marshal(struct {
		At Millis `json:"at_ms"`
		plain
	}{millis(m.At), plain(m)})
}

// sampler samples both processes' RSS every Config.SampleEvery, the
// apiserver's metrics every apiScrapeEvery and etcd's every etcdScrapeEvery,
// until stop. A MetricSample holds either the apiserver's fields or
// etcd's.
type sampler struct {
	apiPID, etcdPID int
	every           time.Duration
	t0              time.Time
	hc              *http.Client // the apiserver's, with admin credentials
	apiMetrics      string
	etcdMetrics     string

	cancel context.CancelFunc
	wg     sync.WaitGroup
	// rss, api and etcd are each written by one goroutine alone until wg
	// is done.
	rss       []Sample
	api, etcd []MetricSample
}

func (s *sampler) start(ctx context.Context) {
	ctx, s.cancel = context.WithCancel(ctx)
	every := func(d time.Duration, f func()) {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			tick := time.NewTicker(d)
			defer tick.Stop()
			for {
				f()
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
			}
		}()
	}
	every(s.every, func() {
		s.rss = append(s.rss, Sample{At: time.Since(s.t0), APIServer: rssBytes(s.apiPID), Etcd: rssBytes(s.etcdPID)})
	})
	// The apiserver's page is megabytes and costs it CPU to render, more
	// than a second of it on a loaded machine; etcd's is small, and its
	// Range RPCs in flight change within a second.
	every(apiScrapeEvery, func() {
		m := MetricSample{At: time.Since(s.t0)}
		if lines, err := fetchLines(ctx, s.hc, s.apiMetrics, apiMetricNames, apiScrapeTimeout); err == nil {
			m.Reads, m.FallbackObjects = apiserverReads(lines)
		}
		s.api = append(s.api, m)
	})
	every(etcdScrapeEvery, func() {
		m := MetricSample{At: time.Since(s.t0)}
		if lines, err := fetchLines(ctx, http.DefaultClient, s.etcdMetrics, etcdMetricNames, etcdScrapeTimeout); err == nil {
			m.EtcdOK = true
			m.EtcdSentBytes, m.EtcdRangesInFlight = etcdCounters(lines)
		}
		s.etcd = append(s.etcd, m)
	})
}

// Intervals and bounds of the metric scrapes.
const (
	apiScrapeEvery    = 2 * time.Second
	apiScrapeTimeout  = 5 * time.Second
	etcdScrapeEvery   = 250 * time.Millisecond
	etcdScrapeTimeout = time.Second
)

// stop ends sampling and returns the RSS samples, and the apiserver's
// and etcd's metric samples merged in time order.
func (s *sampler) stop() ([]Sample, []MetricSample) {
	s.cancel()
	s.wg.Wait()
	ms := append(append([]MetricSample(nil), s.api...), s.etcd...)
	slices.SortStableFunc(ms, func(a, b MetricSample) int { return cmp.Compare(a.At, b.At) })
	return s.rss, ms
}

// fetchLines GETs a Prometheus text page and keeps the sample lines of the
// named metrics.
func fetchLines(ctx context.Context, hc *http.Client, url string, names []string, timeout time.Duration) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	body, err := promtext.Get(ctx, hc, url)
	if err != nil {
		return nil, fmt.Errorf("stall: GET %s: %w", url, err)
	}
	defer func() { _ = body.Close() }()
	return filterLines(body, names)
}

func filterLines(r io.Reader, names []string) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		for _, n := range names {
			if strings.HasPrefix(l, n+"{") || strings.HasPrefix(l, n+" ") {
				out = append(out, l)
				break
			}
		}
	}
	return out, sc.Err()
}
