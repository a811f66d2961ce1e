package cpusplit

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/freshcache/watchcache/metrics"
)

// build makes a CPU profile with one sample per stack (leaf first), each
// worth its index+1 milliseconds. A stack whose first entry is
// "label:<value>" gets freshcache's pprof label with that value.
func build(stacks [][]string) *profile.Profile {
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:     int64(10 * time.Millisecond),
	}
	fns := map[string]*profile.Function{}
	for i, st := range stacks {
		var locs []*profile.Location
		var labels map[string][]string
		if len(st) > 0 && strings.HasPrefix(st[0], "label:") {
			labels = map[string][]string{metrics.ProfileLabel: {strings.TrimPrefix(st[0], "label:")}}
			st = st[1:]
		}
		for _, name := range st {
			fn, ok := fns[name]
			if !ok {
				fn = &profile.Function{ID: uint64(len(fns) + 1), Name: name}
				fns[name] = fn
				p.Function = append(p.Function, fn)
			}
			loc := &profile.Location{ID: uint64(len(p.Location) + 1), Line: []profile.Line{{Function: fn}}}
			p.Location = append(p.Location, loc)
			locs = append(locs, loc)
		}
		p.Sample = append(p.Sample, &profile.Sample{Location: locs, Label: labels, Value: []int64{1, int64(i+1) * int64(time.Millisecond)}})
	}
	return p
}

func TestClassify(t *testing.T) {
	testClassify(t, Storage, []classifyCase{
		{"LIST from the snapshot", []string{"runtime.memmove", "github.com/freshcache/watchcache/internal/listing.Lister.FromSnapshot", "github.com/freshcache/watchcache.(*Cache).GetList", "github.com/freshcache/freshcache/tools/bench/storage.(*Env).op", "github.com/freshcache/freshcache/tools/bench/storage.(*Env).workers.func1"}, Op},
		{"a GC assist inside the op stays with the op", []string{"runtime.gcDrainN", "runtime.gcAssistAlloc", "runtime.mallocgc", "github.com/freshcache/freshcache/tools/bench/storage.(*Env).workers.func1"}, Op},
		{"the reader registering its wait", []string{"label:" + metrics.ProfileWait, "github.com/freshcache/watchcache/freshness.(*Machine).ReadArrived", "github.com/freshcache/freshcache/tools/bench/storage.(*Env).workers.func1"}, Wait},
		{"a renamed library function still counts by its label", []string{"label:" + metrics.ProfileWait, "github.com/freshcache/watchcache.(*someone).renamedWait", "github.com/freshcache/freshcache/tools/bench/storage.(*Env).workers.func1"}, Wait},
		{"an upstream read's gRPC call stays with the op", []string{"google.golang.org/grpc.invoke", "k8s.io/apiserver/pkg/storage/etcd3.(*store).GetList", "github.com/freshcache/freshcache/tools/bench/storage.(*Env).workers.func1"}, Op},
		{"the oracle's fetch down to gRPC", []string{"label:" + metrics.ProfileFetch, "google.golang.org/grpc.(*ClientConn).Invoke", "go.etcd.io/etcd/client/v3.(*kv).Get", "github.com/freshcache/watchcache/oracle.(*Oracle).fetch"}, Fetch},
		{"a progress request", []string{"label:" + metrics.ProfileProgress, "go.etcd.io/etcd/client/v3.(*watcher).RequestProgress"}, Fetch},
		{"GC background mark", []string{"runtime.scanObject", "runtime.gcDrain", "runtime.gcDrainMarkWorkerFractional", "runtime.gcBgMarkWorker.func2", "runtime.gcBgMarkWorker"}, GCMark},
		{"GC mark on an idle P", []string{"runtime.scanObject", "runtime.gcDrain", "runtime.gcDrainMarkWorkerIdle", "runtime.gcBgMarkWorker.func2", "runtime.gcBgMarkWorker"}, GCIdle},
		{"background sweep", []string{"runtime.sweepone", "runtime.bgsweep"}, GCSweep},
		{"lease writes", []string{"go.etcd.io/etcd/client/v3.(*kv).Put", "github.com/freshcache/freshcache/tools/bench/storage.(*Env).StartLoad.func1.1"}, Harness},
		{"etcd's handler", []string{"go.etcd.io/etcd/server/v3/etcdserver.(*EtcdServer).Range", "google.golang.org/grpc.(*Server).handleStream"}, EtcdServer},
		{"the server transport", []string{"syscall.Syscall", "google.golang.org/grpc/internal/transport.NewServerTransport.func3"}, EtcdServer},
		{"raft", []string{"go.etcd.io/raft/v3.(*node).run"}, EtcdServer},
		{"the client reader", []string{"syscall.read", "google.golang.org/grpc/internal/transport.(*http2Client).reader"}, GRPCClient},
		{"the client writer", []string{"google.golang.org/grpc/internal/transport.(*loopyWriter).run", "google.golang.org/grpc/internal/transport.NewHTTP2Client.func6"}, GRPCClient},
		{"the reflector", []string{"label:" + metrics.ProfileReflector, "github.com/freshcache/watchcache/internal/reflector.(*Reflector).Run"}, Cache},
		{"a watcher", []string{"label:" + metrics.ProfileFanout, "runtime.chansend"}, Cache},
		{"a watch stream", []string{"go.etcd.io/etcd/client/v3.(*watchGRPCStream).run"}, Cache},
		{"the scheduler", []string{"runtime.findRunnable", "runtime.schedule", "runtime.mcall"}, Runtime},
		{"nothing known", []string{"main.main"}, Other},
	})
}

func TestSplitSumsEachPart(t *testing.T) {
	p := build([][]string{
		{"runtime.memmove", "github.com/freshcache/freshcache/tools/bench/storage.(*Env).workers.func1"}, // 1 ms
		{"runtime.gcDrain", "runtime.gcBgMarkWorker"},                                                    // 2 ms
		{"runtime.memclr", "github.com/freshcache/freshcache/tools/bench/storage.(*Env).workers.func1"},  // 3 ms
		{"go.etcd.io/raft/v3.(*node).run"},                                                               // 4 ms
	})
	wantSplit(t, Split, p, map[string]time.Duration{Op: 4 * time.Millisecond, GCMark: 2 * time.Millisecond, EtcdServer: 4 * time.Millisecond})
}

// wantSplit sends p through the wire format, as ReadFile sees a profile,
// splits it with split and fails t unless the parts are exactly want and
// the total is their sum.
func wantSplit(t *testing.T, split func(*profile.Profile) (map[string]time.Duration, time.Duration, error), p *profile.Profile, want map[string]time.Duration) {
	t.Helper()
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	parsed, err := profile.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	parts, total, err := split(parsed)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != len(want) {
		t.Errorf("parts = %v, want %v", parts, want)
	}
	var sum time.Duration
	for k, v := range want {
		sum += v
		if parts[k] != v {
			t.Errorf("part %q = %v, want %v", k, parts[k], v)
		}
	}
	if total != sum {
		t.Errorf("total = %v, want %v", total, sum)
	}
}

func TestSplitRejectsOtherProfiles(t *testing.T) {
	p := build([][]string{{"main.main"}})
	p.SampleType = []*profile.ValueType{{Type: "alloc_space", Unit: "bytes"}, {Type: "alloc_objects", Unit: "count"}}
	if _, _, err := Split(p); err == nil || !strings.Contains(err.Error(), "not a CPU profile") {
		t.Errorf("Split(heap profile) error = %v, want 'not a CPU profile'", err)
	}
}

// The storage rule set is the package default, and its first part is the
// freshness wait; TestRuleSetsListEveryPartOnce checks the rest of both sets.
func TestPartsIsTheStorageSet(t *testing.T) {
	got := Parts()
	if !slices.Equal(got, Storage.Parts()) || got[0] != Wait {
		t.Errorf("Parts() = %v", got)
	}
}

// classifyCase is a one-sample profile's stack, leaf first, and the part
// its sample must be classified into.
type classifyCase struct {
	name  string
	stack []string
	want  string
}

// testClassify runs each case as a subtest against rs.
func testClassify(t *testing.T, rs *RuleSet, cases []classifyCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := build([][]string{tc.stack})
			if got := rs.classify(p.Sample[0]); got != tc.want {
				t.Errorf("classify(%v) = %q, want %q", tc.stack, got, tc.want)
			}
		})
	}
}
