package robustness

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/freshcache/freshcache/lab/test/robustness/checker"
	"github.com/freshcache/freshcache/lab/test/robustness/record"
)

// Summary is what docs/results/robustness.md reports per run.
type Summary struct {
	Variant       string             `json:"variant"`
	Seed          uint64             `json:"seed"`
	Seconds       float64            `json:"seconds"`
	Ops           int                `json:"ops"`
	OpsByKind     map[string]int     `json:"opsByKind"`
	OpsByOutcome  map[string]int     `json:"opsByOutcome"`
	Batches       map[string]int     `json:"batches"` // see batchLabel
	Faults        map[string]int     `json:"faults"`
	FaultErrors   map[string]int     `json:"faultErrors,omitempty"`
	WatchSessions int                `json:"watchSessions"`
	WatchEvents   int                `json:"watchEvents"`
	EtcdEvents    int                `json:"etcdEvents"`
	Checked       map[string]int     `json:"checked"`
	Violations    map[string]int     `json:"violations"`
	Porcupine     string             `json:"porcupine"`
	Metrics       map[string]float64 `json:"metrics"`
}

func summarize(run *record.Run, r *checker.Report, took time.Duration, metrics map[string]float64) Summary {
	s := Summary{
		Variant: run.Variant, Seed: run.Seed, Seconds: took.Seconds(), Ops: len(run.Ops),
		OpsByKind: map[string]int{}, OpsByOutcome: map[string]int{}, Batches: map[string]int{}, Faults: map[string]int{}, FaultErrors: map[string]int{},
		WatchSessions: len(run.Sessions), EtcdEvents: len(run.Truth), Checked: r.Checked, Violations: r.Counts, Metrics: metrics,
	}
	type batch struct {
		client, id int
		kind       record.Batch
	}
	batches := map[batch]bool{}
	for _, op := range run.Ops {
		k := string(op.Kind)
		if op.Mode != "" {
			k += "/" + string(op.Mode)
		}
		if op.Kind == record.List && op.Node != "" {
			k += "/by-node"
		}
		if op.Batch != "" {
			k += "/" + string(op.Batch)
			if b := (batch{op.Client, op.BatchID, op.Batch}); !batches[b] {
				batches[b] = true
				s.Batches[batchLabel(op.Batch, op.Out)]++
			}
		}
		s.OpsByKind[k]++
		s.OpsByOutcome[string(op.Out)]++
	}
	for _, f := range run.Faults {
		if f.Err != "" {
			s.FaultErrors[f.Kind]++
		} else {
			s.Faults[f.Kind]++
		}
	}
	for _, ss := range run.Sessions {
		s.WatchEvents += len(ss.Events)
	}
	if r.Porcupine != nil {
		s.Porcupine = fmt.Sprintf("%s over %d key operations in %d segments", r.Porcupine.Result, r.Porcupine.Ops, r.Porcupine.Segments)
	}
	return s
}

// batchLabel names a batch in Summary.Batches, which counts the writes
// straight to etcd that changed several keys at one revision, one per
// transaction or lease end however many keys (ops) it had: a transaction
// by its outcome ("txn/ok", "lease/unknown"), a lease's end by how it
// came ("lease-expiry", "lease-revoke").
func batchLabel(b record.Batch, out record.Outcome) string {
	if b == record.BatchTxn || b == record.BatchLease {
		return string(b) + "/" + string(out)
	}
	return string(b)
}

// CommittedTxns is the number of multi-key transactions etcd applied.
func (s Summary) CommittedTxns() int { return s.Batches[batchLabel(record.BatchTxn, record.OK)] }

// LeaseExpiries is the number of leases whose keys etcd deleted when they
// expired (not revoked by the client).
func (s Summary) LeaseExpiries() int { return s.Batches[batchLabel(record.BatchLeaseExpiry, "")] }

// String renders the summary for the test log.
func (s Summary) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "variant %s, seed %d, %.0fs: %d ops, %d watch sessions with %d events, %d etcd events\n", s.Variant, s.Seed, s.Seconds, s.Ops, s.WatchSessions, s.WatchEvents, s.EtcdEvents)
	fmt.Fprintf(&b, "  ops: %s\n  outcomes: %s\n  faults: %s\n", kv(s.OpsByKind, "%d"), kv(s.OpsByOutcome, "%d"), kv(s.Faults, "%d"))
	fmt.Fprintf(&b, "  multi-key writes: %s\n", kv(s.Batches, "%d"))
	if len(s.FaultErrors) > 0 {
		fmt.Fprintf(&b, "  faults that failed to inject: %s\n", kv(s.FaultErrors, "%d"))
	}
	fmt.Fprintf(&b, "  violations: ")
	for i, n := range checker.Names {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s=%d", n, s.Violations[n])
	}
	fmt.Fprintf(&b, "\n  porcupine: %s\n  metrics: %s\n", s.Porcupine, kv(s.Metrics, "%g"))
	return b.String()
}

// kv formats m as space-separated k=v pairs sorted by key, each value
// with format.
func kv[V int | float64](m map[string]V, format string) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s="+format, k, m[k]))
	}
	return strings.Join(parts, " ")
}

// WriteReport dumps the run into dir: summary.json, violations.txt,
// history.json (ops, watch sessions, faults, etcd's history),
// faults.json and, per segment porcupine did not accept,
// linearizability-<key>-<n>.html.
func WriteReport(dir string, res *Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	write := func(name string, v any) error {
		b, err := json.MarshalIndent(v, "", " ")
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, name), b, 0o644)
	}
	if err := write("summary.json", res.Summary); err != nil {
		return err
	}
	if err := write("history.json", res.Run); err != nil {
		return err
	}
	if err := write("faults.json", res.Run.Faults); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d (replay: ROBUSTNESS_SEED=%d)\n\n%s\n", res.Run.Seed, res.Run.Seed, res.Summary)
	for _, n := range checker.Names {
		if res.Report.Counts[n] == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n== %s: %d violation(s)\n", n, res.Report.Counts[n])
		for _, d := range res.Report.Details[n] {
			fmt.Fprintf(&b, "  %s\n", d)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "violations.txt"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	// One visualization per segment porcupine did not accept (at most 5).
	if p := res.Report.Porcupine; p != nil {
		for i, f := range p.Failures {
			if i == 5 {
				break
			}
			info := f.Info
			name := fmt.Sprintf("linearizability-%s-%d.html", f.Name, i)
			if err := porcupine.VisualizePath(f.Model, info, filepath.Join(dir, name)); err != nil {
				return err
			}
		}
	}
	return nil
}

// gatherMetrics reads the cache counters from the legacy registry: the
// upstream cacher's apiserver_watch_cache_* and freshcache's
// apiserver_freshcache_*, summed over the group and resource labels.
func gatherMetrics() map[string]float64 {
	out := map[string]float64{}
	mfs, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		return out
	}
	for _, mf := range mfs {
		name := mf.GetName()
		if !strings.HasPrefix(name, "apiserver_watch_cache_") && !strings.HasPrefix(name, "apiserver_freshcache_") {
			continue
		}
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				if l.GetName() == "group" || l.GetName() == "resource" {
					continue
				}
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			key := name
			if len(labels) > 0 {
				key += "{" + strings.Join(labels, ",") + "}"
			}
			switch {
			case m.GetCounter() != nil:
				out[key] += m.GetCounter().GetValue()
			case m.GetHistogram() != nil:
				out[key+"_count"] += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}
