package cluster

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"k8s.io/client-go/rest"

	"github.com/freshcache/freshcache/tools/bench/diag/cpusplit"
	"github.com/freshcache/freshcache/tools/bench/report"
	"github.com/freshcache/freshcache/tools/bench/report/reporttest"
	"github.com/freshcache/freshcache/tools/bench/servermetrics"
	"github.com/freshcache/watchcache/metrics"
)

// sample is one stack of a single function, worth ms milliseconds,
// labelled with freshcache's wait label when wait is set.
type sample struct {
	fn   string
	wait bool
	ms   int64
}

// cpuProfile is a CPU profile's bytes with samples.
func cpuProfile(t *testing.T, samples ...sample) []byte {
	t.Helper()
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:     int64(10 * time.Millisecond),
	}
	for i, s := range samples {
		fn := &profile.Function{ID: uint64(i + 1), Name: s.fn}
		loc := &profile.Location{ID: uint64(i + 1), Line: []profile.Line{{Function: fn}}}
		p.Function, p.Location = append(p.Function, fn), append(p.Location, loc)
		var labels map[string][]string
		if s.wait {
			labels = map[string][]string{metrics.ProfileLabel: {metrics.ProfileWait}}
		}
		p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{loc}, Label: labels, Value: []int64{1, s.ms * int64(time.Millisecond)}})
	}
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestWindowProfilesAskEachAPIServer: one profile request per apiserver,
// as long as the window, and collect sums their splits and writes the
// files.
func TestWindowProfilesAskEachAPIServer(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	body := cpuProfile(t, sample{"runtime.bgsweep", false, 200}, sample{"main.main", true, 300})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.URL.String())
		mu.Unlock()
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	var apis []*servermetrics.Client
	for range 2 {
		c, err := servermetrics.NewClient(&rest.Config{Host: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		apis = append(apis, c)
	}
	if w := startWindowProfiles(context.Background(), Config{Window: 90 * time.Second}, apis); w != nil {
		t.Fatal("profiles without Config.CPUProfile")
	}
	w := startWindowProfiles(context.Background(), Config{Window: 90 * time.Second, CPUProfile: true}, apis)
	defer w.stop()
	var r Row
	dir := t.TempDir()
	w.collect(&r, dir)
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 2 || asked[0] != "/debug/pprof/profile?seconds=90" {
		t.Errorf("asked %v, want two 90 s profiles", asked)
	}
	if r.APIProfiledSec != 1 || r.APICPUParts[cpusplit.APIGC] != 0.4 || r.APICPUParts[cpusplit.APIWait] != 0.6 || len(r.Notes) != 0 {
		t.Errorf("total %v, parts %v, notes %v", r.APIProfiledSec, r.APICPUParts, r.Notes)
	}
	for _, name := range []string{"kube-apiserver-1.cpu.pprof", "kube-apiserver-2.cpu.pprof"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || !bytes.Equal(b, body) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestWindowProfileFailureIsANote: a failed profile leaves a note and no
// split (a sum without that apiserver would understate the cell).
func TestWindowProfileFailureIsANote(t *testing.T) {
	good := make(chan profileResult, 1)
	good <- profileResult{b: cpuProfile(t, sample{"main.main", false, 10})}
	bad := make(chan profileResult, 1)
	bad <- profileResult{b: []byte("not a profile")}
	w := &windowProfiles{cancel: func() {}, results: []chan profileResult{good, bad}}
	var r Row
	w.collect(&r, t.TempDir())
	if r.APICPUParts != nil || r.APIProfiledSec != 0 {
		t.Errorf("a partial split was stored: %v", r.APICPUParts)
	}
	if len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "kube-apiserver-2") {
		t.Errorf("notes %q", r.Notes)
	}
	var off *windowProfiles
	off.collect(&r, t.TempDir())
	off.stop()
}

// TestAPICPUPartsSection: the section renders the median over repeats per
// configuration, one table per mode and node count, from rows with a
// split, through a JSON round trip and a merge (--from-json); rows
// without one (older runs) give no section.
func TestAPICPUPartsSection(t *testing.T) {
	row := func(config string, repeat int, wait, encode, apiCPU float64) Row {
		return Row{Config: config, Mode: modeSingle, Nodes: 1000, Repeat: repeat, APICPUSec: apiCPU,
			APICPUParts: map[string]float64{cpusplit.APIWait: wait, cpusplit.APIEncode: encode}, APIProfiledSec: wait + encode}
	}
	rows := []Row{
		row(Upstream, 1, 1, 9, 10.5), row(Upstream, 2, 2, 18, 20.5), row(Upstream, 3, 3, 27, 30.5),
		row(FreshRV0, 1, 5, 5, 10.2),
		{Config: Freshcache, Mode: modeSingle, Nodes: 1000, Repeat: 2, APICPUSec: 7, Notes: []string{profileNote + "1 over the window: EOF"}},
		{Config: FreshRV0, Mode: modeHA, Nodes: 200, APICPUSec: 4, APICPUParts: map[string]float64{"a part since renamed": 4}, APIProfiledSec: 4},
	}
	path := filepath.Join(t.TempDir(), "scale.json")
	if err := NewReport(Config{NodeKind: NodesKwok, Window: time.Minute}, rows, nil).WriteJSON(path); err != nil {
		t.Fatal(err)
	}
	back, err := ReadReport(path)
	if err != nil {
		t.Fatal(err)
	}
	merged, err := MergeReports(report.NewIdentity(back.Kind), []Report{back})
	if err != nil {
		t.Fatal(err)
	}
	md := reporttest.Render(t, func(w io.Writer) error { return WriteMarkdown(w, merged, nil) })
	reporttest.CheckContains(t, "the report", md,
		"## Where the apiserver CPU goes in the steady-state window",
		"1000 nodes, single apiserver: CPU seconds in the window",
		"| part | upstream (n=3) | freshcache-fresh-rv0 (n=1) |",
		"| freshness wait | 2.0 (10%) | 5.0 (50%) |",
		"| encode/decode (and gzip) | 18.0 (90%) | 5.0 (50%) |",
		"| **profiled total** | **20.0** | **10.0** |",
		"| apiserver CPU from /proc | 20.5 | 10.2 |",
		"200 nodes, HA, 2 kube-apiservers summed",
		"| a part since renamed | 4.0 (100%) |",
		"Left out, their profile failed: freshcache single #2 at 1000 nodes: CPU profile of kube-apiserver-1 over the window: EOF.",
	)
	if strings.Index(md, "1000 nodes, single") > strings.Index(md, "200 nodes, HA") {
		t.Error("HA before the single-apiserver table")
	}
	if strings.Contains(md, "| part | upstream (n=3) | freshcache (n=") {
		t.Error("a configuration without a profile has a column")
	}

	old := reporttest.Render(t, func(w io.Writer) error {
		return WriteMarkdown(w, NewReport(Config{}, []Row{{Config: Upstream, Mode: modeSingle, Nodes: 10, APICPUSec: 3}}, nil), nil)
	})
	if strings.Contains(old, "Where the apiserver CPU goes") {
		t.Error("rows without a profile rendered the section")
	}
}
