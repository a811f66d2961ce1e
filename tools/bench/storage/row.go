package storage

import (
	"math"
	"time"

	"github.com/freshcache/freshcache/tools/bench/quantile"
	"github.com/freshcache/freshcache/tools/bench/servermetrics"
)

// Row is one measured combination of backend, scenario, rv mode and
// concurrency. Durations are in milliseconds. How each field is measured
// is documented in docs/results/README.md.
type Row struct {
	Backend     string `json:"backend"`
	Scenario    string `json:"scenario"`
	RV          string `json:"rv"`
	Concurrency int    `json:"concurrency"`
	// Sweep marks rows of the freshness sweep (varying lease write rate).
	Sweep bool `json:"sweep,omitempty"`
	// GateMs marks a gate-control row (Config.GateControl): the period of
	// the gate every op waited for first.
	GateMs float64 `json:"gate_ms,omitempty"`
	// GateWaitP50Ms and GateWaitP99Ms are exact quantiles of a gate-control
	// row's waits, from the op's start until it ran again after the gate
	// opened: the counterpart of a freshness wait with a protocol that
	// costs nothing. GateOpenP50Ms and GateOpenP99Ms stop at the opening,
	// the counterpart of read_release_seconds. nil outside gate rows.
	GateWaitP50Ms *float64 `json:"gate_wait_p50_ms,omitempty"`
	GateWaitP99Ms *float64 `json:"gate_wait_p99_ms,omitempty"`
	GateOpenP50Ms *float64 `json:"gate_open_p50_ms,omitempty"`
	GateOpenP99Ms *float64 `json:"gate_open_p99_ms,omitempty"`
	Load          Load     `json:"load"`
	// OracleClient is OracleInProcess on freshcache rows measured with
	// etcd's in-process client for the revision oracle (Config.OracleClient);
	// empty for the default gRPC client and for the other backends.
	OracleClient string `json:"oracle_client,omitempty"`

	Seconds   float64 `json:"seconds"`
	Ops       int64   `json:"ops"`
	OpsPerSec float64 `json:"ops_per_sec"`
	P50Ms     float64 `json:"p50_ms"`
	P99Ms     float64 `json:"p99_ms"`
	// CPUPerOpMs is process CPU time (user+system, getrusage) per op. The
	// embedded etcd server runs in the same process, so its work counts.
	CPUPerOpMs float64 `json:"cpu_per_op_ms"`
	// AllocsPerOp is runtime.MemStats.Mallocs per op, process-wide.
	AllocsPerOp float64 `json:"allocs_per_op"`
	// GCPerKOp is the number of GC cycles per 1,000 ops, process-wide.
	GCPerKOp float64 `json:"gc_per_kop"`
	// EtcdPerOp is (Ranges + Txns + WatchMsgs) per op; Etcd has the parts.
	EtcdPerOp float64                    `json:"etcd_requests_per_op"`
	Etcd      servermetrics.EtcdCounters `json:"etcd"`
	// FreshWaitP99Ms is the p99 of the backend's freshness-wait histogram
	// over the row; nil when the backend has no such metric or it observed
	// nothing.
	FreshWaitP99Ms *float64 `json:"fresh_wait_p99_ms,omitempty"`
	FreshWaitP50Ms *float64 `json:"fresh_wait_p50_ms,omitempty"`
	// FreshReleaseP99Ms and FreshReleaseP50Ms are quantiles of freshcache's
	// read_release_seconds over the row: the wait until the freshness
	// protocol released the read, without the reader's queue for a CPU
	// after that. nil for the other backends.
	FreshReleaseP99Ms *float64 `json:"fresh_release_p99_ms,omitempty"`
	FreshReleaseP50Ms *float64 `json:"fresh_release_p50_ms,omitempty"`
	// FetchesPerOp and ProgressPerOp are freshcache's revision fetches and
	// progress requests per op (zero for the other backends).
	FetchesPerOp  float64 `json:"fetches_per_op,omitempty"`
	ProgressPerOp float64 `json:"progress_requests_per_op,omitempty"`
	// FetchP50Ms and FetchP99Ms are quantiles of freshcache's revision-fetch
	// round trips during the row (apiserver_freshcache_revision_fetch_
	// duration_seconds); nil when no fetch ended in the row.
	FetchP50Ms *float64 `json:"fetch_p50_ms,omitempty"`
	FetchP99Ms *float64 `json:"fetch_p99_ms,omitempty"`
	ItemsPerOp float64  `json:"items_per_op"`

	Errors     int64  `json:"errors"`
	FirstError string `json:"first_error,omitempty"`
	// WrongCounts counts ops whose item count differed from the shape's.
	WrongCounts int64 `json:"wrong_counts"`

	// Watch fan-out only.
	Watchers        int     `json:"watchers,omitempty"`
	EventsExpected  int64   `json:"events_expected,omitempty"`
	EventsDelivered int64   `json:"events_delivered,omitempty"`
	SetupSeconds    float64 `json:"setup_seconds,omitempty"`

	// Trace is the execution trace written over the measured part of the
	// row (Config.TraceDir); tracing slows the row, so its figures are not
	// comparable with untraced rows.
	Trace string `json:"trace,omitempty"`
	// CPUProfile is the CPU profile written over the measured part of the
	// row (Config.CPUProfileDir).
	CPUProfile string `json:"cpu_profile,omitempty"`
	// CPUSplitUsPerOp is CPUPerOpMs split by cpusplit's parts, in
	// microseconds per op: each part's share of the profile's samples
	// times the measured CPU per op. Only rows with a CPU profile.
	CPUSplitUsPerOp map[string]float64 `json:"cpu_split_us_per_op,omitempty"`
}

// extra reports whether r is outside the main matrix (a sweep or a gate
// control row): the targets and the main plots leave such rows out.
func (r Row) extra() bool { return r.Sweep || r.GateMs > 0 }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// fillGate computes the gate quantiles from each op's wait until the
// gate opened and from the opening until the op ran again (same order).
func (r *Row) fillGate(open, run []time.Duration) {
	if len(open) == 0 || len(open) != len(run) {
		return
	}
	total := make([]time.Duration, len(open))
	for i := range open {
		total[i] = open[i] + run[i]
	}
	q := func(d []time.Duration, p float64) *float64 {
		v := ms(quantile.Percentile(d, p))
		return &v
	}
	sortDurations(total)
	sortDurations(open)
	r.GateWaitP50Ms, r.GateWaitP99Ms = q(total, 50), q(total, 99)
	r.GateOpenP50Ms, r.GateOpenP99Ms = q(open, 50), q(open, 99)
}

// fill computes the per-op figures from the samples around the row.
func (r *Row) fill(before, after sample, lat []time.Duration, items int64) {
	r.Seconds = after.at.Sub(before.at).Seconds()
	if r.Ops > 0 {
		r.OpsPerSec = float64(r.Ops) / r.Seconds
		r.CPUPerOpMs = ms(after.cpu-before.cpu) / float64(r.Ops)
		r.AllocsPerOp = float64(after.mallocs-before.mallocs) / float64(r.Ops)
		r.GCPerKOp = float64(after.numGC-before.numGC) * 1000 / float64(r.Ops)
		r.ItemsPerOp = float64(items) / float64(r.Ops)
	}
	r.Etcd = after.etcd.Sub(before.etcd)
	if r.Ops > 0 {
		r.EtcdPerOp = r.Etcd.Requests() / float64(r.Ops)
	}
	sortDurations(lat)
	r.P50Ms = ms(quantile.Percentile(lat, 50))
	r.P99Ms = ms(quantile.Percentile(lat, 99))
	quantileMs := func(b, a quantile.Histogram, q float64) *float64 {
		if v, ok := a.Sub(b).Quantile(q); ok {
			v *= 1000
			return &v
		}
		return nil
	}
	r.FreshWaitP99Ms = quantileMs(before.wait, after.wait, 0.99)
	r.FreshWaitP50Ms = quantileMs(before.wait, after.wait, 0.50)
	r.FreshReleaseP99Ms = quantileMs(before.release, after.release, 0.99)
	r.FreshReleaseP50Ms = quantileMs(before.release, after.release, 0.50)
	if r.Ops > 0 {
		r.FetchesPerOp = (after.fetch[math.Inf(1)] - before.fetch[math.Inf(1)]) / float64(r.Ops)
		r.ProgressPerOp = (after.progress - before.progress) / float64(r.Ops)
	}
	r.FetchP50Ms = quantileMs(before.fetch, after.fetch, 0.50)
	r.FetchP99Ms = quantileMs(before.fetch, after.fetch, 0.99)
}
