package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"

	"k8s.io/client-go/rest"

	"github.com/freshcache/freshcache/tools/bench/promtext"
	"github.com/freshcache/freshcache/tools/bench/quantile"
)

// What the harness reads from a kube-apiserver under test besides the API
// itself: its /metrics around every row, and its CPU profile over a row.

// Bounds of the harness's requests to a server's debugging endpoints. A
// profile takes as long as the row it covers, plus the transfer.
const (
	metricsTimeout = 30 * time.Second
	profileTimeout = 2 * time.Minute
)

// serverHTTP is an HTTP client with the admin credentials of one
// kube-apiserver, for paths outside the API.
type serverHTTP struct {
	hc   *http.Client
	host string
}

func newServerHTTP(rc *rest.Config) (*serverHTTP, error) {
	rt, err := rest.TransportFor(rc)
	if err != nil {
		return nil, err
	}
	return &serverHTTP{hc: &http.Client{Transport: rt}, host: strings.TrimSuffix(rc.Host, "/")}, nil
}

// get fetches path, bounded by timeout, and fails on any status but 200.
func (s *serverHTTP) get(ctx context.Context, path, accept string, timeout time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.host+path, nil)
	if err != nil {
		return nil, err
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("bench: GET %s: %s: %.200s", path, resp.Status, b)
	}
	return b, nil
}

// metrics scrapes the server's /metrics, as text.
func (s *serverHTTP) metrics(ctx context.Context) ([]*dto.MetricFamily, error) {
	b, err := s.get(ctx, "/metrics", "text/plain", metricsTimeout)
	if err != nil {
		return nil, err
	}
	return parseMetrics(bytes.NewReader(b), s.host+"/metrics")
}

// scrape reads the Prometheus text at url (the etcd server's /metrics).
func scrape(ctx context.Context, hc *http.Client, url string) ([]*dto.MetricFamily, error) {
	body, err := promtext.Get(ctx, hc, url)
	if err != nil {
		return nil, fmt.Errorf("bench: GET %s: %w", url, err)
	}
	defer func() { _ = body.Close() }()
	return parseMetrics(body, url)
}

func parseMetrics(r io.Reader, url string) ([]*dto.MetricFamily, error) {
	m, err := promtext.Parse(r)
	if err != nil {
		return nil, fmt.Errorf("bench: parsing %s: %w", url, err)
	}
	out := make([]*dto.MetricFamily, 0, len(m))
	for _, mf := range m {
		out = append(out, mf)
	}
	return out, nil
}

type serverSample struct {
	at   time.Time
	cpu  float64
	wait quantile.Histogram
	etcd EtcdCounters
	// heap is the server's go_memstats_heap_inuse_bytes; gcs its
	// go_gc_duration_seconds count (GC cycles so far).
	heap, gcs float64
}

func (a *apiTarget) sample(ctx context.Context) (serverSample, error) {
	s := serverSample{at: time.Now()}
	mfs, err := a.http.metrics(ctx)
	if err != nil {
		return s, err
	}
	for _, mf := range mfs {
		if len(mf.GetMetric()) == 0 {
			continue
		}
		m := mf.GetMetric()[0]
		switch mf.GetName() {
		case "process_cpu_seconds_total":
			s.cpu = m.GetCounter().GetValue() + m.GetGauge().GetValue()
		case "go_memstats_heap_inuse_bytes":
			s.heap = m.GetGauge().GetValue()
		case "go_gc_duration_seconds":
			s.gcs = float64(m.GetSummary().GetSampleCount())
		}
	}
	impl := a.label
	if i := strings.Index(impl, "-as-"); i >= 0 {
		impl = impl[:i]
	}
	s.wait = histogramFrom(mfs, waitMetric[impl], "pods")
	emfs, err := scrape(ctx, http.DefaultClient, strings.TrimSuffix(a.etcdURL, "/")+"/metrics")
	if err != nil {
		return s, err
	}
	s.etcd = etcdCountersFrom(emfs)
	return s, nil
}

// startProfile, with cfg.ProfileDir set, asks the apiserver for a CPU
// profile as long as the measured row; the returned func waits for it and
// writes it. Without ProfileDir both are no-ops.
func (a *apiTarget) startProfile(ctx context.Context, cfg APIServerConfig, r ServerRow) func() error {
	if cfg.ProfileDir == "" {
		return func() error { return nil }
	}
	secs := max(1, int(cfg.Duration.Round(time.Second)/time.Second))
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		b, err := a.http.get(ctx, fmt.Sprintf("/debug/pprof/profile?seconds=%d", secs), "", profileTimeout)
		done <- result{b, err}
	}()
	return func() error {
		res := <-done
		if res.err != nil {
			return fmt.Errorf("bench: CPU profile of %s: %w", a.label, res.err)
		}
		rv := map[string]string{RVConsistent: "consistent", RVZero: "0", RVNewest: "N"}[r.RV]
		name := fmt.Sprintf("%s-%s-%s-c%d.pprof", a.label, r.Operation, rv, r.Clients)
		if err := os.MkdirAll(cfg.ProfileDir, 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(cfg.ProfileDir, name), res.b, 0o644)
	}
}
