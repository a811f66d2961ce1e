package watchlist

import (
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/freshcache/freshcache/tools/bench/report"
)

// Phase names, in the order they run. The warm-up runs between Idle and
// Baseline and is not reported.
const (
	PhaseIdle      = "writes only"
	PhaseBaseline  = "reads"            // phase A
	PhaseContended = "reads+watchlists" // phase B
	PhaseAlone     = "watchlists only"  // phase C
)

// Read kinds: a GET of one object and a LIST of the small namespace, on the
// huge resource (configmaps) and on another one (secrets), all rv="".
const (
	ReadGetSecret     = "GET secret"
	ReadListSecrets   = "LIST secrets (ns)"
	ReadGetConfigMap  = "GET configmap"
	ReadListConfigMap = "LIST configmaps (ns)"
)

// AllReads in report order.
var AllReads = []string{ReadGetSecret, ReadListSecrets, ReadGetConfigMap, ReadListConfigMap}

// Result is one run: the JSON document docs/results/watchlist.json holds.
type Result struct {
	Date      time.Time      `json:"date"`
	GitCommit string         `json:"git_commit"`
	Command   string         `json:"command,omitempty"`
	Machine   report.Machine `json:"machine"`
	Config    Config         `json:"config"`
	Notes     []string       `json:"notes,omitempty"`
	Runs      []ConfigRun    `json:"runs"`
	Ratios    Ratios         `json:"ratios"`
}

// ConfigRun is one configuration on its own cluster.
type ConfigRun struct {
	Config string   `json:"config"`
	Args   []string `json:"args"`
	// Objects is how many configmaps the cache held before the phases
	// (the huge resource plus the small namespace's).
	Objects int `json:"objects"`
	// LoadSeconds is the time to write them to etcd; SyncSeconds the
	// time after that until the apiserver's cache listed them all.
	LoadSeconds float64       `json:"load_seconds"`
	SyncSeconds float64       `json:"sync_seconds"`
	Phases      []PhaseResult `json:"phases"`
	// Error says why the run stopped early; its phases so far are kept.
	Error string `json:"error,omitempty"`
}

// Phase returns the named phase, or nil.
func (r *ConfigRun) Phase(name string) *PhaseResult {
	for i := range r.Phases {
		if r.Phases[i].Name == name {
			return &r.Phases[i]
		}
	}
	return nil
}

// PhaseResult is what one phase measured.
type PhaseResult struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
	// Reads has one entry per read kind when the phase ran reads.
	Reads []ReadStats `json:"reads,omitempty"`
	// Waits are the server's freshness-wait histograms over the phase.
	Waits     []WaitStats    `json:"waits,omitempty"`
	WatchList WatchListStats `json:"watchlist"`
	CPU       CPUStats       `json:"cpu"`
	// Writes done by the background writers; WriteErrors failed.
	Writes      int64 `json:"writes"`
	WriteErrors int64 `json:"write_errors"`
	// Runtime is the apiserver's Go runtime over the phase (from /metrics).
	Runtime RuntimeStats `json:"runtime"`
	// MetricsError says why the server's /metrics could not be read at an
	// end of the phase (then Waits and Runtime are empty).
	MetricsError string `json:"metrics_error,omitempty"`
}

// RuntimeStats are the apiserver's Go runtime figures over a phase.
type RuntimeStats struct {
	// SchedLatency is go_sched_latencies_seconds: how long goroutines
	// waited runnable before a P ran them. Every request pays it at each
	// hop (network read, etcd reply, handoff between goroutines); nil when
	// the server does not export it.
	SchedLatency *Quantiles `json:"sched_latency,omitempty"`
	// GCCores is the garbage collector's CPU, in cores.
	GCCores float64 `json:"gc_cores"`
	// RevisionFetch is freshcache's successful revision fetches from etcd
	// (every resource's): the part of a read's release before its cache
	// had to catch up. Nil for upstream, which fetches none.
	RevisionFetch *Quantiles `json:"revision_fetch,omitempty"`
}

// Quantiles are a histogram's p50 and p99 over a phase.
type Quantiles struct {
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
}

// Read returns the stats of one read kind, or nil.
func (p *PhaseResult) Read(kind string) *ReadStats {
	if p == nil {
		return nil
	}
	for i := range p.Reads {
		if p.Reads[i].Kind == kind {
			return &p.Reads[i]
		}
	}
	return nil
}

// ReadsPerSec is the phase's total read throughput.
func (p *PhaseResult) ReadsPerSec() float64 {
	var sum float64
	for _, r := range p.Reads {
		sum += r.OpsPerSec
	}
	return sum
}

// ReadStats is one read kind over one phase, as the clients saw it. The
// latencies include, as lower bounds, the reads cut by the end of the
// phase (Cut); Ops and OpsPerSec count finished reads only.
type ReadStats struct {
	Kind       string  `json:"kind"`
	Ops        int64   `json:"ops"`
	Cut        int64   `json:"cut"`
	Errors     int64   `json:"errors"`
	FirstError string  `json:"first_error,omitempty"`
	OpsPerSec  float64 `json:"ops_per_sec"`
	P50Ms      float64 `json:"p50_ms"`
	P99Ms      float64 `json:"p99_ms"`
	MaxMs      float64 `json:"max_ms"`
}

// WaitStats is one series of the server's freshness-wait histogram over a
// phase (freshcache: apiserver_freshcache_read_wait_seconds by resource and
// verb; upstream: apiserver_watch_cache_read_wait_seconds by resource,
// observed only when its cache was behind, Verb "any"). Fallbacks and
// Rejected count the consistent reads of the resource that were served
// from etcd or refused after the wait.
type WaitStats struct {
	Resource  string  `json:"resource"`
	Verb      string  `json:"verb"`
	Count     float64 `json:"count"`
	P50Ms     float64 `json:"p50_ms"`
	P99Ms     float64 `json:"p99_ms"`
	Fallbacks float64 `json:"fallbacks"`
	Rejected  float64 `json:"rejected"`
	// Release is freshcache's apiserver_freshcache_read_release_seconds:
	// the part of the wait until the freshness protocol released the read
	// (the cache had reached a revision fetched after the read arrived);
	// the rest of the wait is the released reader's queue for a CPU. Nil
	// for upstream.
	Release *Quantiles `json:"release,omitempty"`
}

// WatchListStats are the WatchLists that ended in a phase.
type WatchListStats struct {
	// Completed reached the initial-events-end bookmark.
	Completed int64 `json:"completed"`
	// Errors failed (the server refused or ended the watch, or it timed
	// out); Cancelled were cut by the end of the phase.
	Errors     int64  `json:"errors"`
	FirstError string `json:"first_error,omitempty"`
	Cancelled  int64  `json:"cancelled"`
	// Events is every event the clients received in the phase, finished
	// WatchLists or not.
	Events int64 `json:"events"`
	// Durations of the completed ones.
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`
	// InitialEventsMin/Max: ADDED events before the bookmark, over the
	// completed WatchLists; each should equal the configmaps in the cache.
	InitialEventsMin int64 `json:"initial_events_min"`
	InitialEventsMax int64 `json:"initial_events_max"`
}

// CPUStats are the CPU cores each party used over the phase (CPU seconds
// per second), read from /proc.
type CPUStats struct {
	APIServer float64 `json:"apiserver_cores"`
	// Etcd is the local-up process, which runs the embedded etcd.
	Etcd float64 `json:"etcd_cores"`
	// Bench is this process: the readers, WatchList clients and writers.
	Bench float64 `json:"bench_cores"`
	// Other is the rest of the machine: other people's work, noise.
	Other float64 `json:"other_cores"`
	// APIServerPeakRSSMiB is the largest kube-apiserver RSS sampled (1/s).
	APIServerPeakRSSMiB float64 `json:"apiserver_peak_rss_mib"`
}

// Ratios are the closing line's figures. ReadP99Ms is the worst read kind's
// client-side p99 with WatchLists running; ThroughputDrop and
// WatchListCPUShare are those of the ratio configuration (see
// ComputeRatios).
type Ratios struct {
	Config            string  `json:"config"`
	ReadP99Ms         float64 `json:"read_p99_ms"`
	UpstreamReadP99Ms float64 `json:"upstream_read_p99_ms"`
	ThroughputDrop    float64 `json:"throughput_drop"`
	WatchListCPUShare float64 `json:"watchlist_cpu_share"`
}

// ReadResult reads a Result that WriteJSON wrote.
func ReadResult(path string) (Result, error) {
	var r Result
	err := report.ReadJSON(path, &r)
	if pe := (*fs.PathError)(nil); err != nil && !errors.As(err, &pe) {
		// The file's errors name it already; a JSON error does not.
		err = fmt.Errorf("watchlist: %s: %w", path, err)
	}
	return r, err
}

// WriteJSON writes r, indented, to path.
func (r Result) WriteJSON(path string) error { return report.WriteJSON(path, r) }
