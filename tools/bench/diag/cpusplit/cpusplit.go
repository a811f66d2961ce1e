package cpusplit

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/google/pprof/profile"

	"github.com/freshcache/watchcache/metrics"
)

// Storage's parts, in the order Split tries them on each sample.
const (
	// Wait is the reader's own freshness wait: registering with the
	// freshness driver, the Machine, the wait metrics.
	Wait = "reader: freshness wait"
	// Op is the rest of a client loop's op: the LIST or GET from the
	// snapshot, or an upstream/etcd read, and the harness around it.
	Op = "reader: the op"
	// Fetch is the goroutines that send revision fetches and progress
	// requests, down through the gRPC client call.
	Fetch = "fetch and progress senders"
	// GCIdle is mark work the garbage collector did on Ps that had nothing
	// else to run: CPU a busier process would not have had to spare.
	GCIdle = "GC: mark on idle Ps"
	// GCMark is the rest of the background mark workers' time (dedicated
	// and fractional), which the runtime takes from the program.
	GCMark = "GC: background mark"
	// GCSweep is background sweeping and scavenging.
	GCSweep = "GC: sweep and scavenge"
	// Harness is the benchmark's own goroutines outside the client loops:
	// background writes (pods, leases) and bookkeeping.
	Harness = "harness: background writes, bookkeeping"
	// EtcdServer is the embedded etcd: its gRPC server side, raft and
	// storage.
	EtcdServer = "etcd server (with its gRPC side)"
	// GRPCClient is the gRPC client transport: the connection reader and
	// writer goroutines every etcd client call goes through.
	GRPCClient = "gRPC client transport"
	// Cache is the caches' own goroutines: reflectors, watch streams,
	// event dispatch, the freshness driver's timer.
	Cache = "caches and watch streams"
)

// Parts every rule set ends with.
const (
	// Runtime is the scheduler and the rest of the Go runtime.
	Runtime = "Go runtime (scheduler, other)"
	// Other is anything no rule matched.
	Other = "other"
)

// RuleSet is one kind of process's parts: which of freshcache's pprof
// labels go to which part, and the function rules tried on the samples
// without a label. Storage and APIServer are the two; a process of
// another shape needs its own, since a rule's order encodes what a
// goroutine of that process is for.
type RuleSet struct {
	// labels maps freshcache's pprof labels (its public contract,
	// metrics.Profile*) to parts. A labelled sample is classified by its
	// label alone: renaming a function of the library cannot move its CPU.
	labels map[string]string
	// rules are tried in order; the first with a pattern matching a
	// function anywhere on the sample's stack takes it.
	rules []rule
	// match says whether a function name matches a rule's pattern.
	match func(function, pattern string) bool
}

type rule struct {
	part string
	// column is the part's short name, for table headers.
	column string
	// any: the sample matches when a function on its stack matches one
	// of these patterns (RuleSet.match).
	any []string
}

// freshcacheLabels maps freshcache's pprof labels (package metrics) to a
// rule set's parts: the freshness wait, the revision fetches and progress
// requests, and the rest of its cache goroutines.
func freshcacheLabels(wait, fetch, cache string) map[string]string {
	return map[string]string{
		metrics.ProfileWait:        wait,
		metrics.ProfileFetch:       fetch,
		metrics.ProfileProgress:    fetch,
		metrics.ProfileReflector:   cache,
		metrics.ProfileFanout:      cache,
		metrics.ProfileDriver:      cache,
		metrics.ProfileConsistency: cache,
	}
}

// Storage is the rule set of a freshcache-bench storage process (see the
// package doc). Its patterns are substrings of function names.
var Storage = &RuleSet{
	labels: freshcacheLabels(Wait, Fetch, Cache),
	// A client loop is recognised first so that what it calls (a gRPC
	// call of an upstream read, say) stays with it.
	rules: []rule{
		{Wait, "wait", nil}, // label only
		{Op, "op", []string{"freshcache/tools/bench/storage.(*Env).workers"}},
		{Fetch, "fetch senders", nil}, // label only
		{GCIdle, "GC idle Ps", []string{"runtime.gcDrainMarkWorkerIdle"}},
		{GCMark, "GC mark", []string{"runtime.gcBgMarkWorker"}},
		{GCSweep, "GC sweep", []string{"runtime.bgsweep", "runtime.bgscavenge"}},
		{Harness, "harness", []string{"freshcache/tools/bench/storage."}},
		{EtcdServer, "etcd server", []string{"google.golang.org/grpc.(*Server)", "transport.NewServerTransport", "transport.(*http2Server)", "go.etcd.io/etcd/server/", "go.etcd.io/raft/", "go.etcd.io/bbolt"}},
		{GRPCClient, "gRPC client", []string{"transport.NewHTTP2Client", "transport.(*http2Client)", "google.golang.org/grpc.(*ccBalancerWrapper)", "google.golang.org/grpc.(*addrConn)"}},
		// Upstream's cacher, and etcd3 store goroutines no labelled
		// goroutine started (freshcache's inherit its labels).
		{Cache, "caches", []string{"k8s.io/apiserver/pkg/storage", "go.etcd.io/etcd/client/v3"}},
		{Runtime, "runtime", []string{"runtime."}},
	},
	match: strings.Contains,
}

// Column is the short name of part, for a table header; an unknown part
// is its own name.
func (rs *RuleSet) Column(part string) string {
	for _, r := range rs.rules {
		if r.part == part {
			return r.column
		}
	}
	return part
}

// Parts lists every part in the order Split tries them, Other last.
func (rs *RuleSet) Parts() []string {
	out := make([]string, 0, len(rs.rules)+1)
	for _, r := range rs.rules {
		out = append(out, r.part)
	}
	return append(out, Other)
}

// Split returns the CPU time of p's samples per part (parts without
// samples are left out) and the total. p must be a CPU profile (a sample
// type "cpu" in nanoseconds).
func (rs *RuleSet) Split(p *profile.Profile) (map[string]time.Duration, time.Duration, error) {
	idx := -1
	for i, st := range p.SampleType {
		if st.Type == "cpu" && st.Unit == "nanoseconds" {
			idx = i
		}
	}
	if idx < 0 {
		return nil, 0, fmt.Errorf("cpusplit: not a CPU profile (no cpu/nanoseconds sample type)")
	}
	parts := make(map[string]time.Duration)
	var total time.Duration
	for _, s := range p.Sample {
		d := time.Duration(s.Value[idx])
		parts[rs.classify(s)] += d
		total += d
	}
	return parts, total, nil
}

// ReadFile parses the CPU profile at path and splits it.
func (rs *RuleSet) ReadFile(path string) (map[string]time.Duration, time.Duration, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer func() { _ = f.Close() }()
	p, err := profile.Parse(f)
	if err != nil {
		return nil, 0, fmt.Errorf("cpusplit: %s: %w", path, err)
	}
	return rs.Split(p)
}

// Column is Storage.Column; it, Parts, Split and ReadFile serve the
// storage benchmark, their first caller.
func Column(part string) string { return Storage.Column(part) }

// Parts is Storage.Parts.
func Parts() []string { return Storage.Parts() }

// Split is Storage.Split.
func Split(p *profile.Profile) (map[string]time.Duration, time.Duration, error) {
	return Storage.Split(p)
}

// ReadFile is Storage.ReadFile.
func ReadFile(path string) (map[string]time.Duration, time.Duration, error) {
	return Storage.ReadFile(path)
}

func (rs *RuleSet) classify(s *profile.Sample) string {
	for _, v := range s.Label[metrics.ProfileLabel] {
		if part, ok := rs.labels[v]; ok {
			return part
		}
	}
	for _, r := range rs.rules {
		for _, loc := range s.Location {
			for _, line := range loc.Line {
				if line.Function == nil {
					continue
				}
				for _, pat := range r.any {
					if rs.match(line.Function.Name, pat) {
						return r.part
					}
				}
			}
		}
	}
	return Other
}
