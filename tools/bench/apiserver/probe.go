package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/freshcache/freshcache/tools/bench/quantile"
	"github.com/freshcache/freshcache/tools/bench/servermetrics"
	"github.com/freshcache/freshcache/tools/bench/storage"
)

// What the harness reads from a kube-apiserver under test besides the API
// itself: its /metrics around every row, and its CPU profile over a row.

// profileTimeout bounds the harness's request for a server's CPU
// profile, which takes as long as the row it covers, plus the transfer.
const profileTimeout = 2 * time.Minute

type serverSample struct {
	at   time.Time
	cpu  float64
	wait quantile.Histogram
	etcd servermetrics.EtcdCounters
	// sent is what the server itself says it asked etcd: its store's
	// etcd_requests_total, and freshcache's revision fetches and progress
	// requests (upstream's cacher exports no count of its progress
	// requests, at most ten a second while consistent reads wait).
	sent float64
	// heap is the server's go_memstats_heap_inuse_bytes; gcs its
	// go_gc_duration_seconds count (GC cycles so far).
	heap, gcs float64
}

func (a *apiTarget) sample(ctx context.Context) (serverSample, error) {
	s := serverSample{at: time.Now()}
	mfs, err := a.http.Metrics(ctx)
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
	s.wait = servermetrics.HistogramFrom(mfs, servermetrics.WaitMetric(impl), "pods")
	s.sent = servermetrics.CounterFrom(mfs, "etcd_requests_total") +
		servermetrics.CounterFrom(mfs, "apiserver_freshcache_revision_fetches_total") +
		servermetrics.CounterFrom(mfs, servermetrics.FreshcacheProgress)
	emfs, err := servermetrics.Scrape(ctx, http.DefaultClient, strings.TrimSuffix(a.etcdURL, "/")+"/metrics")
	if err != nil {
		return s, err
	}
	s.etcd = servermetrics.EtcdCountersFrom(emfs)
	return s, nil
}

// startProfile, with cfg.ProfileDir set, asks the apiserver for a CPU
// profile as long as the measured row; the returned func waits for it and
// writes it. Without ProfileDir both are no-ops.
func (a *apiTarget) startProfile(ctx context.Context, cfg Config, r Row) func() error {
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
		b, err := a.http.Get(ctx, fmt.Sprintf("/debug/pprof/profile?seconds=%d", secs), "", profileTimeout)
		done <- result{b, err}
	}()
	return func() error {
		res := <-done
		if res.err != nil {
			return fmt.Errorf("apiserver: CPU profile of %s: %w", a.label, res.err)
		}
		rv := map[string]string{storage.RVConsistent: "consistent", storage.RVZero: "0", storage.RVNewest: "N"}[r.RV]
		name := fmt.Sprintf("%s-%s-%s-c%d.pprof", a.label, r.Operation, rv, r.Clients)
		if err := os.MkdirAll(cfg.ProfileDir, 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(cfg.ProfileDir, name), res.b, 0o644)
	}
}
