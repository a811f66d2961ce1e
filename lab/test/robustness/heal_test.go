package robustness

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/freshcache/freshcache/lab/internal/testenv"
	"github.com/freshcache/freshcache/lab/test/robustness/counterload"
	"github.com/freshcache/watchcache"
)

// TestFaultHeal is the fault-heal scenario (heal.go) on upstream's cacher,
// freshcache and freshcache with FreshResourceVersionZero, one after the
// other, each on a fresh cluster. It needs FRESHCACHE_ROBUSTNESS=1 and
// FRESHCACHE_BIN_DIR, like the other kube-apiserver runs, and is named
// apart from them so that `make test-robustness-apiserver` (-run
// TestKubeAPIServer) does not run it: `make test-fault-heal` does.
//
//	HEAL_DURATION  traffic per implementation (default 80s, at least 20s):
//	               one cut every 15 s after 5 s of lead
//	HEAL_REPORT    write the markdown report to this file
//	HEAL_LOG_DIR   keep the apiservers' logs and the recording (every
//	               write and read, recording.json) under <dir>/<implementation>
//	HEAL_STRICT=1  also fail on the availability targets: no late 429 and
//	               no more 5xx or errors than upstream
//
// Always asserted: the partition reached R in every run, upstream's rv=0
// reads went stale (the negative control), freshcache's rv="" reads never
// did, and with FreshResourceVersionZero no read of any kind did.
func TestFaultHeal(t *testing.T) {
	bin := kubeAPIServer(t)
	base := healConfig{
		Binary: bin, Lead: 5 * time.Second, Period: 15 * time.Second, Cut: 7 * time.Second,
		Pace:           counterload.Pace{Write: 20 * time.Millisecond, ChurnEvery: 5, Read: 20 * time.Millisecond, ReadTimeout: 15 * time.Second},
		ReadersPerKind: 2,
		Logf:           t.Logf,
	}
	base.Cycles = healCycles(t, base)
	logs := testenv.DirOr(t, "HEAL_LOG_DIR")
	meta := healMeta{When: time.Now(), Commit: gitHead(), Schedule: base.describeSchedule(), Traffic: base.describeTraffic()}
	var tallies []*healTally
	for _, impl := range healImplementations {
		t.Run(impl.name, func(t *testing.T) {
			c := base
			c.Name, c.Flags, c.Dir, c.DataDir = impl.name, impl.flags, filepath.Join(logs, impl.name), t.TempDir()
			c.ZeroStaleness = impl.zeroStaleness
			if err := os.MkdirAll(c.Dir, 0o755); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), c.length()+5*time.Minute)
			defer cancel()
			o, err := runHeal(ctx, c)
			if err != nil {
				t.Fatalf("%s: %v (logs in %s)", c.Name, err, c.Dir)
			}
			if err := o.save(filepath.Join(c.Dir, "recording.json")); err != nil {
				t.Errorf("%s: %v", c.Name, err)
			}
			tl := tallyHeal(o)
			tallies = append(tallies, tl)
			t.Logf("%s (kube-apiserver %s; logs in %s)\n%s", c.Name, o.Binary, c.Dir, healTable([]*healTally{tl}))
			requireHealed(t, tl, c.Cycles)
		})
	}
	if len(tallies) == 0 {
		return
	}
	meta.Binary = tallies[0].Binary
	up := findTally(tallies, "upstream")
	var sum strings.Builder
	for _, tl := range tallies {
		sum.WriteString(healSummary(tl, up) + "\n")
	}
	t.Logf("fault heal, %s\n%s\n%s", meta.Schedule, healTable(tallies), sum.String())
	if path := os.Getenv("HEAL_REPORT"); path != "" {
		var b bytes.Buffer
		if err := writeHealReport(&b, meta, tallies); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatalf("HEAL_REPORT: %v", err)
		}
		t.Logf("report: %s", path)
	}
	if os.Getenv("HEAL_STRICT") == "1" {
		requireAvailable(t, tallies, up)
	}
}

// healImplementations are the runs, in order; upstream's is the one the
// others are compared with.
var healImplementations = []struct {
	name  string
	flags []string
	// zeroStaleness is how far behind its start an rv=0 read may be
	// (--resource-version-zero-max-staleness); 0: rv=0 promises nothing
	// or is strict.
	zeroStaleness time.Duration
}{
	{"upstream", []string{"--watch-cache-implementation=upstream"}, 0},
	{"freshcache", []string{"--watch-cache-implementation=freshcache", "--feature-gates=FreshResourceVersionZero=false"}, 0},
	{"freshcache-fresh-rv0", []string{"--watch-cache-implementation=freshcache", "--feature-gates=FreshResourceVersionZero=true"}, watchcache.DefaultZeroReadStaleness},
}

// healCycles is how many cuts fit HEAL_DURATION (default 80s): at least one.
func healCycles(t *testing.T, c healConfig) int {
	d := 80 * time.Second
	if s := os.Getenv("HEAL_DURATION"); s != "" {
		v, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("HEAL_DURATION=%q: %v", s, err)
		}
		d = v
	}
	return max(1, int((d-c.Lead+c.Period/2)/c.Period))
}

// length is how long the traffic of one run lasts.
func (c healConfig) length() time.Duration { return c.Lead + time.Duration(c.Cycles)*c.Period }

func (c healConfig) describeSchedule() string {
	return fmt.Sprintf("member 1 cut off from both peers for %s every %s, the first cut %s into the traffic; %d cuts, %s of traffic per implementation",
		c.Cut, c.Period, c.Lead, c.Cycles, c.length())
}

func (c healConfig) describeTraffic() string {
	return fmt.Sprintf("one writer merge-patches the counter ConfigMap's data.%s (+1) through W, %s after each answer, "+
		"and every %d writes creates a ConfigMap and deletes the oldest beyond %d; %d readers per read kind through R, "+
		"raw HTTPS with no client-side retries, one request at a time, %s after each answer, %s timeout",
		counterload.Key, c.Pace.Write, c.Pace.ChurnEvery, counterload.ChurnKeep, c.ReadersPerKind, c.Pace.Read, c.Pace.ReadTimeout)
}

// gitHead is the commit the test ran at, "+dirty" with changes to
// tracked files.
func gitHead() string {
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	head := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
		head += "+dirty"
	}
	return head
}

// requireHealed is what every run must show, whatever the implementation.
func requireHealed(t *testing.T, tl *healTally, cycles int) {
	t.Helper()
	if len(tl.Cuts) != cycles {
		t.Errorf("%s: %d cuts, want %d", tl.Name, len(tl.Cuts), cycles)
	}
	for k := range counterload.Kinds {
		if tl.Kinds[k].Answered == 0 {
			t.Errorf("%s: no %s read was answered", tl.Name, k)
		}
	}
	if tl.Disturbed == 0 {
		t.Errorf("%s: no consistent read failed or waited while member 1 was cut off: the isolation did not reach R", tl.Name)
	}
	stale := func(kinds ...counterload.Kind) int {
		n := 0
		for _, k := range kinds {
			n += tl.Kinds[k].Stale
		}
		return n
	}
	switch tl.Name {
	case "upstream":
		if stale(counterload.GetZero, counterload.ListZero) == 0 {
			t.Errorf("negative control: upstream's rv=0 reads were never stale; the isolation or the stale check is broken")
		}
	case "freshcache":
		if n := stale(counterload.GetConsistent, counterload.ListConsistent); n > 0 {
			t.Errorf("freshcache: %d stale rv=\"\" reads", n)
		}
	case "freshcache-fresh-rv0":
		if n := stale(counterload.GetConsistent, counterload.GetZero, counterload.ListConsistent, counterload.ListZero); n > 0 {
			t.Errorf("freshcache-fresh-rv0: %d stale reads (%s)", n, staleByKind(tl))
		}
	}
}

func staleByKind(tl *healTally) string {
	var parts []string
	for k := range counterload.Kinds {
		parts = append(parts, fmt.Sprintf("%s: %d", k, tl.Kinds[k].Stale))
	}
	return strings.Join(parts, ", ")
}

// requireAvailable is HEAL_STRICT's targets: the freshcache variants
// recover as fast as upstream after a heal and fail no more often.
func requireAvailable(t *testing.T, tallies []*healTally, up *healTally) {
	t.Helper()
	if up == nil {
		t.Errorf("HEAL_STRICT: upstream did not run; nothing to compare with")
		return
	}
	for _, tl := range tallies {
		if tl == up {
			continue
		}
		if tl.Total.Late429 > 0 {
			t.Errorf("HEAL_STRICT: %s: %d late 429s", tl.Name, tl.Total.Late429)
		}
		if tl.Total.Server > up.Total.Server {
			t.Errorf("HEAL_STRICT: %s: %d 5xx, upstream %d", tl.Name, tl.Total.Server, up.Total.Server)
		}
		if tl.Total.Other > up.Total.Other {
			t.Errorf("HEAL_STRICT: %s: %d errors, upstream %d", tl.Name, tl.Total.Other, up.Total.Other)
		}
	}
}
