package apiserver

import (
	"fmt"
	"io"
	"strings"

	"github.com/freshcache/freshcache/tools/bench/report"
	"github.com/freshcache/freshcache/tools/bench/servermetrics"
)

// Row is one row of the through-kube-apiserver benchmark: one
// operation against one kube-apiserver (one watch cache implementation).
type Row struct {
	Implementation string `json:"implementation"` // --watch-cache-implementation of the server
	Operation      string `json:"operation"`      // list-node, get, watch
	RV             string `json:"rv"`
	Clients        int    `json:"clients"`

	Seconds   float64 `json:"seconds"`
	Ops       int64   `json:"ops"`
	OpsPerSec float64 `json:"ops_per_sec"`
	P50Ms     float64 `json:"p50_ms"`
	P99Ms     float64 `json:"p99_ms"`
	// ServerCPUPerOpMs is the kube-apiserver's process_cpu_seconds_total
	// (its own /metrics) per op.
	ServerCPUPerOpMs float64 `json:"server_cpu_per_op_ms"`
	// EtcdPerOp is, per op, the etcd requests the server under test
	// counts itself: its store's etcd_requests_total, freshcache's revision
	// fetches and progress requests (upstream's cacher does not count its
	// progress requests). Etcd is the etcd server's own counters, which
	// also count the other server: idle, but a freshcache server asks for
	// progress after each background write it did not send.
	EtcdPerOp float64                    `json:"etcd_requests_per_op"`
	Etcd      servermetrics.EtcdCounters `json:"etcd"`
	// ServerHeapMiB is the server's go_memstats_heap_inuse_bytes at the
	// end of the row; ServerGCsPerKOp its GC cycles (go_gc_duration_seconds
	// count) per 1,000 ops. A server's GC work per op grows with both.
	ServerHeapMiB   float64 `json:"server_heap_inuse_mib"`
	ServerGCsPerKOp float64 `json:"server_gcs_per_kop"`
	// FreshWaitP99Ms is from the server's own freshness-wait histogram.
	FreshWaitP99Ms *float64 `json:"fresh_wait_p99_ms,omitempty"`
	Errors         int64    `json:"errors"`
	FirstError     string   `json:"first_error,omitempty"`
	WrongCounts    int64    `json:"wrong_counts"`
	// Watch only: events delivered of events expected.
	EventsExpected  int64 `json:"events_expected,omitempty"`
	EventsDelivered int64 `json:"events_delivered,omitempty"`
}

var serverHeader = []string{"implementation", "operation", "rv", "clients", "ops/s", "p50 ms", "p99 ms", "server cpu ms/op", "etcd req/op", "wait p99 ms", "notes"}

func serverCells(r Row) []string {
	wait := ""
	if r.FreshWaitP99Ms != nil {
		wait = fmt.Sprintf("%.2f", *r.FreshWaitP99Ms)
	}
	var notes []string
	if r.ServerHeapMiB > 0 {
		notes = append(notes, fmt.Sprintf("heap %.0f MiB, %.1f GCs/kop", r.ServerHeapMiB, r.ServerGCsPerKOp))
	}
	if r.EventsExpected > 0 {
		notes = append(notes, fmt.Sprintf("%d/%d events", r.EventsDelivered, r.EventsExpected))
	}
	notes = append(notes, report.FailureNotes(r.WrongCounts, r.Errors, r.FirstError)...)
	return []string{r.Implementation, r.Operation, r.RV, fmt.Sprint(r.Clients), report.Num(r.OpsPerSec),
		fmt.Sprintf("%.2f", r.P50Ms), fmt.Sprintf("%.2f", r.P99Ms), fmt.Sprintf("%.3f", r.ServerCPUPerOpMs),
		fmt.Sprintf("%.2f", r.EtcdPerOp), wait, strings.Join(notes, "; ")}
}

// WriteTable prints apiserver rows as an aligned table.
func WriteTable(w io.Writer, rows []Row) error {
	return report.WriteAligned(w, serverHeader, report.Cells(rows, serverCells))
}

// writeRowsMarkdown prints apiserver rows as a markdown table.
func writeRowsMarkdown(w io.Writer, rows []Row) {
	report.WriteMarkdownTable(w, serverHeader, report.Cells(rows, serverCells), 3)
}
