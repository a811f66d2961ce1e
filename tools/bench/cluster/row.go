package cluster

import (
	"fmt"
	"strings"

	"github.com/freshcache/freshcache/tools/bench/quantile"
)

// Row is one cluster's result: a configuration at a node count in a
// mode. CPU is from /proc/<pid>/stat (utime+stime) over the window;
// counts are deltas of the servers' own counters over the window.
type Row struct {
	Config string `json:"config"`
	Mode   string `json:"mode"`
	Nodes  int    `json:"nodes"`
	// Repeat is which run of this cell the row is (1 to --repeat); 0 when
	// the run did not repeat cells.
	Repeat int `json:"repeat,omitempty"`
	// Pods is the Deployments' replicas at the start; PodsRunning how many
	// ran before the window.
	Pods        int    `json:"pods"`
	PodsRunning int    `json:"pods_running"`
	Seed        uint64 `json:"seed"`
	// ReadySeconds is local-up's start until its ready file; SetupSeconds
	// the Deployments' creation until every pod ran; WallSeconds the whole
	// cell, start to stop.
	ReadySeconds  float64 `json:"ready_seconds"`
	SetupSeconds  float64 `json:"setup_seconds"`
	WallSeconds   float64 `json:"wall_seconds"`
	WarmupSeconds float64 `json:"warmup_seconds"`
	WindowSeconds float64 `json:"window_seconds"`

	// APICPUSec sums every kube-apiserver; APICPUSecEach is per server.
	APICPUSec     float64   `json:"apiserver_cpu_seconds"`
	APICPUSecEach []float64 `json:"apiserver_cpu_seconds_each"`
	// APIPeakRSSMB is each server's highest VmRSS, sampled every second in
	// the window; APIHWMMB its lifetime peak (VmHWM) at the window's end,
	// which includes the start-up and the initial rollout.
	APIPeakRSSMB []float64 `json:"apiserver_peak_rss_mb"`
	APIHWMMB     []float64 `json:"apiserver_hwm_mb"`
	// APICPUParts is the apiservers' CPU seconds in the window by part
	// (cpusplit.APIServer: freshcache's pprof labels, then functions),
	// from one CPU profile of each over the window, summed;
	// APIProfiledSec is the profiles' total, to set beside APICPUSec.
	// Absent without Config.CPUProfile, when a profile failed (a note
	// says why), and in older runs.
	APICPUParts    map[string]float64 `json:"apiserver_cpu_parts,omitempty"`
	APIProfiledSec float64            `json:"apiserver_profiled_cpu_seconds,omitempty"`
	// EtcdCPUSec is local-up's process: every embedded etcd member, plus
	// local-up's own supervision (not subtracted; it is idle but for
	// reaping and health checks at start).
	EtcdCPUSec    float64 `json:"etcd_cpu_seconds"`
	EtcdPeakRSSMB float64 `json:"etcd_peak_rss_mb"`

	// EtcdReads is KV.Range + KV.RangeStream from etcd's
	// grpc_server_handled_total; EtcdHandled has every method.
	EtcdReads     float64            `json:"etcd_reads"`
	EtcdHandled   map[string]float64 `json:"etcd_handled"`
	EtcdWatchMsgs float64            `json:"etcd_watch_msgs"`
	EtcdMVCC      map[string]float64 `json:"etcd_mvcc"`
	// APIEtcdOps is the apiservers' etcd_requests_total by operation.
	APIEtcdOps map[string]float64 `json:"apiserver_etcd_ops"`
	// RevisionFetches and ProgressRequests are freshcache's own counters;
	// upstream's cacher exports neither (its revision fetch shows as
	// APIEtcdOps["getCurrentResourceVersion"]).
	RevisionFetches  float64 `json:"revision_fetches"`
	ProgressRequests float64 `json:"progress_requests"`
	// ProgressByResource splits ProgressRequests by resource. A resource
	// with few fresh reads and many writes asks for progress mostly to
	// prove its last revision whole (the reflector's pending revision).
	ProgressByResource map[string]float64 `json:"progress_by_resource,omitempty"`
	// ProgressStalls counts progress requests no notification answered
	// within freshcache's stall time, each followed by another.
	ProgressStalls float64 `json:"progress_stalls"`
	// FreshReads counts freshcache's reads_total (every read that needed
	// freshness, every resource); FetchReads the reads the revision
	// fetches answered, FetchSeconds the fetches' summed round trips.
	FreshReads float64 `json:"fresh_reads"`
	FetchReads float64 `json:"fetch_reads"`
	// WriteReads are the fresh reads a write's revision answered instead
	// of a fetch (RevisionsFromWrites); absent in older runs.
	WriteReads float64 `json:"write_reads,omitempty"`
	// Holds counts the rounds of fresh reads held for the apiserver's
	// next write (revision_holds_total), by how the hold ended: write (a
	// fetch saved), expired, abandoned; absent before the hold existed.
	Holds map[string]float64 `json:"revision_holds,omitempty"`
	// RevisionsCompleted counts the revisions freshcache's reflectors
	// held until something proved them whole (revisions_completed_total),
	// by what did: event, progress, own_write; absent in older runs.
	RevisionsCompleted map[string]float64 `json:"revisions_completed,omitempty"`
	// OwnWriteAdvances counts the times a cache caught up with a read's
	// revision on the ledger of the apiserver's own writes, without a
	// progress request (own_write_advances_total, ProgressFromOwnWrites).
	OwnWriteAdvances float64 `json:"own_write_advances,omitempty"`
	FetchSeconds     float64 `json:"fetch_seconds"`

	// Latency is apiserver_request_duration_seconds for pods, per verb
	// and scope, every apiserver summed.
	Latency []Quantiles `json:"latency"`
	// ListP99Ms is that of every pod LIST (all scopes).
	ListP99Ms *float64 `json:"list_p99_ms,omitempty"`
	// FreshWaitP99Ms is the p99 of FreshWaitMetric for pods.
	FreshWaitP99Ms  *float64 `json:"fresh_wait_p99_ms,omitempty"`
	FreshWaitCount  float64  `json:"fresh_wait_count"`
	FreshWaitMetric string   `json:"fresh_wait_metric"`
	// WaitParts are pieces of that wait in the window (WaitPart*), so
	// that the two implementations' waits, which start at different
	// points, can be set side by side.
	WaitParts []Quantiles `json:"wait_parts,omitempty"`

	Probe     ProbeStats      `json:"probe"`
	Reads     []ReadStats     `json:"reads"`
	Informers []InformerStats `json:"informers"`
	// Storm is the restart storm after the window (Config.Storm).
	Storm *StormStats `json:"storm,omitempty"`
	// Pod* are the churn's pods, seen by a watch on the first apiserver:
	// PodLatency from first seen bound to a node until first seen
	// Running, for pods bound in the window.
	PodLatency  PodLatency  `json:"pod_latency"`
	PodsCreated int         `json:"pods_created"`
	PodsDeleted int         `json:"pods_deleted"`
	Churn       churnResult `json:"churn"`
	// ChurnPlanned is the schedule's actions and pods created plus
	// deleted over warm-up and window.
	ChurnPlanned     int `json:"churn_planned"`
	ChurnPlannedPods int `json:"churn_planned_pods"`

	Idle        IdleRates  `json:"idle"`
	Calibration []CalibRow `json:"calibration"`
	Notes       []string   `json:"notes,omitempty"`
}

// Quantiles is one histogram's window: a verb and scope of
// request_duration_seconds (Key "LIST cluster"), or a piece of the
// freshness wait (Key one of the WaitPart* names).
type Quantiles struct {
	Key   string  `json:"key"`
	Count float64 `json:"count"`
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
}

// quantilesOf is h's count, p50 and p99 under key; ok is false when h
// counted nothing.
func quantilesOf(key string, h quantile.Histogram) (q Quantiles, ok bool) {
	if h.Count() <= 0 {
		return q, false
	}
	q50, _ := h.Quantile(0.5)
	q99, _ := h.Quantile(0.99)
	return Quantiles{Key: key, Count: h.Count(), P50Ms: q50 * 1000, P99Ms: q99 * 1000}, true
}

// PodLatency is bound-to-Running as the benchmark's watch saw it, and
// scheduled-to-started from the pods' own status (whole seconds).
type PodLatency struct {
	Count       int     `json:"count"`
	P50Ms       float64 `json:"p50_ms"`
	P99Ms       float64 `json:"p99_ms"`
	StatusCount int     `json:"status_count"`
	StatusP50S  float64 `json:"status_p50_s"`
	StatusP99S  float64 `json:"status_p99_s"`
}

// IdleRates is the cluster with no churn and no benchmark reads: the
// nodes' heartbeats and status, the controllers, the informers' watches.
type IdleRates struct {
	Seconds         float64 `json:"seconds"`
	APICPUPerSec    float64 `json:"apiserver_cpu_per_sec"`
	EtcdCPUPerSec   float64 `json:"etcd_cpu_per_sec"`
	EtcdReadsPerSec float64 `json:"etcd_reads_per_sec"`
}

// CalibRow is one read kind run alone on the idle cluster, on the first
// apiserver: its cost over the idle rates, per request.
type CalibRow struct {
	Kind     string `json:"kind"`
	RV       string `json:"rv"`
	Requests int64  `json:"requests"`
	Errors   int64  `json:"errors"`
	// Items is the mean items per answer.
	Items           float64 `json:"items"`
	APICPUMsPerReq  float64 `json:"apiserver_cpu_ms_per_req"`
	EtcdCPUMsPerReq float64 `json:"etcd_cpu_ms_per_req"`
	EtcdReadsPerReq float64 `json:"etcd_reads_per_req"`
	P99Ms           float64 `json:"p99_ms"`
}

// fillWindow sets the window's figures from its delta.
func (r *Row) fillWindow(d windowDelta) {
	r.WindowSeconds = d.Seconds
	r.APICPUSec, r.APICPUSecEach, r.EtcdCPUSec = d.APICPUSec, d.APICPUSecEach, d.EtcdCPUSec
	r.EtcdReads, r.EtcdHandled, r.EtcdWatchMsgs, r.EtcdMVCC = d.etcdReads(), d.EtcdHandled, d.EtcdWatch, d.EtcdMVCC
	r.APIEtcdOps, r.RevisionFetches, r.ProgressRequests, r.ProgressStalls = d.APIEtcdOps, d.Fetches, d.Progress, d.Stalls
	if len(d.ProgressBy) > 0 {
		r.ProgressByResource = d.ProgressBy
	}
	r.FreshReads, r.FetchReads, r.FetchSeconds = d.FreshReads, d.FetchReads, d.FetchSec
	r.WriteReads = d.WriteReads
	if len(d.Holds) > 0 {
		r.Holds = d.Holds
	}
	if len(d.Completed) > 0 {
		r.RevisionsCompleted = d.Completed
	}
	r.OwnWriteAdvances = d.Advances
	for _, k := range sortedKeys(d.requests) {
		if q, ok := quantilesOf(k, d.requests[k]); ok {
			r.Latency = append(r.Latency, q)
		}
	}
	if _, _, p99, ok := latencyOf(d.requests, "LIST", ""); ok {
		r.ListP99Ms = &p99
	}
	r.WaitParts = nil
	for _, k := range waitParts {
		h := d.parts[k]
		if k == waitPartWait {
			h = d.wait
		}
		if q, ok := quantilesOf(k, h); ok {
			r.WaitParts = append(r.WaitParts, q)
		}
	}
	if d.wait != nil {
		r.FreshWaitCount = d.wait.Count()
		if q, ok := d.wait.Quantile(0.99); ok {
			v := q * 1000
			r.FreshWaitP99Ms = &v
		}
	}
}

// modeLabel is the mode column of the report's tables: the mode, and the
// repeat when the run repeated cells.
func (r Row) modeLabel() string {
	if r.Repeat > 0 {
		return fmt.Sprintf("%s #%d", r.Mode, r.Repeat)
	}
	return r.Mode
}

func (r Row) summary() string {
	p99 := "n/a"
	if r.ListP99Ms != nil {
		p99 = fmt.Sprintf("%.1fms", *r.ListP99Ms)
	}
	var stale []string
	for _, k := range sortedKeys(r.Probe.Stale) {
		stale = append(stale, fmt.Sprintf("%s:%d", k, r.Probe.Stale[k]))
	}
	return fmt.Sprintf("%s %s nodes=%d pods=%d: apiserver %.1f cpu-s, etcd %.1f cpu-s, %.0f etcd reads, LIST p99 %s, probe %d writes, stale [%s], pod bound->running p50 %.0fms p99 %.0fms (%d pods), cell %.0fs",
		r.Config, r.modeLabel(), r.Nodes, r.Pods, r.APICPUSec, r.EtcdCPUSec, r.EtcdReads, p99, r.Probe.Writes, strings.Join(stale, " "),
		r.PodLatency.P50Ms, r.PodLatency.P99Ms, r.PodLatency.Count, r.WallSeconds)
}
