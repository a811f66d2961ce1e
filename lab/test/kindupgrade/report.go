package kindupgrade

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Meta is what the report says about where it was made.
type Meta struct {
	Command, Commit, Machine string
	Date                     time.Time
	Dwell                    time.Duration
}

// Phases are the report's groups of steps, in order.
var Phases = []string{"baseline", "restart", "upgrade", "rollback"}

// PhaseTotals sums the windows' counts by phase.
func PhaseTotals(wins []Window) map[string]Counts {
	out := map[string]Counts{}
	for _, w := range wins {
		t := out[w.Phase]
		if t.Failed == nil {
			t.Failed = map[int]int{}
		}
		t.Reads += w.Counts.Reads
		t.Answered += w.Counts.Answered
		t.Stale += w.Counts.Stale
		t.OlderZero += w.Counts.OlderZero
		for s, n := range w.Counts.Failed {
			t.Failed[s] += n
		}
		t.WriteErrors += w.Counts.WriteErrors
		t.Relists += w.Counts.Relists
		t.WatchRestarts += w.Counts.WatchRestarts
		out[w.Phase] = t
	}
	return out
}

// ClosingLine is the run's one-line summary.
func ClosingLine(wins []Window) string {
	t := PhaseTotals(wins)
	stale := 0
	for _, c := range t {
		stale += c.Stale
	}
	f := func(get func(Counts) int) string {
		return fmt.Sprintf("%d/%d/%d", get(t["restart"]), get(t["upgrade"]), get(t["rollback"]))
	}
	return fmt.Sprintf("kind-upgrade: stale=%d failed-reads=%s write-errors=%s relists=%s watch-restarts=%s (restart/upgrade/rollback)",
		stale, f(Counts.FailedReads), f(func(c Counts) int { return c.WriteErrors }),
		f(func(c Counts) int { return c.Relists }), f(func(c Counts) int { return c.WatchRestarts }))
}

// statuses renders failed reads by status: "503×12, none×3".
func statuses(failed map[int]int) string {
	if len(failed) == 0 {
		return "0"
	}
	codes := make([]int, 0, len(failed))
	for c := range failed {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	parts := make([]string, len(codes))
	for i, c := range codes {
		name := fmt.Sprint(c)
		if c == 0 {
			name = "no answer"
		}
		parts[i] = fmt.Sprintf("%s×%d", name, failed[c])
	}
	return strings.Join(parts, ", ")
}

// WriteReport writes the markdown report of a run.
func WriteReport(w io.Writer, m Meta, rec *Recording, wins []Window, runErr error) error {
	var b strings.Builder
	b.WriteString("# Rolling upgrade and rollback on kind\n\n")
	fmt.Fprintf(&b, "A kind cluster with %d control planes (stacked etcd) and a worker, every kube-apiserver first on upstream's cacher. Under steady traffic each apiserver is restarted in turn with its flags unchanged (the control: a rolling restart of upstream's own image), then moved to freshcache on its default gates (rv=0 fresh) in turn, then moved back in turn; each step edits one static pod manifest and waits until a new process serves with the cache asked for, then lets the traffic run %v more.\n\n", rec.ControlPlanes, m.Dwell)
	b.WriteString("Traffic: one writer through kind's load balancer increments a counter ConfigMap (and creates and deletes another object every fifth write); on each apiserver, reached directly, one reader each of GET and LIST at rv=\"\" and at rv=0, one request at a time with no client-side retry; one pod informer per node through the load balancer, as kubelets have. A read is stale when its counter is older than the newest write acknowledged before it began; it counts against the run (\"stale\") when the cache that answered promised it fresh: rv=\"\" on both caches, rv=0 on freshcache within its 100 ms bound. rv=0 answers from upstream's cacher, or from an apiserver being replaced while the read was in flight, promise nothing (\"rv=0 older\").\n\n")
	fmt.Fprintf(&b, "- Command: `%s`\n- Commit: `%s`\n- Machine: %s\n- Date: %s\n\n", m.Command, m.Commit, m.Machine, m.Date.UTC().Format("2006-01-02 15:04 MST"))
	if runErr != nil {
		fmt.Fprintf(&b, "**The run did not finish**: %v\n\n", runErr)
	}
	b.WriteString("```\n" + ClosingLine(wins) + "\n```\n\n")

	b.WriteString("## By phase\n\n| phase | reads | failed reads | stale | rv=0 older | write errors | relists | watch restarts |\n|---|---:|---|---:|---:|---:|---:|---:|\n")
	t := PhaseTotals(wins)
	for _, p := range Phases {
		c, ok := t[p]
		if !ok {
			continue
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %d | %d | %d | %d | %d |\n", p, c.Reads, statuses(c.Failed), c.Stale, c.OlderZero, c.WriteErrors, c.Relists, c.WatchRestarts)
	}
	b.WriteString("\n## By step\n\nCaches after the step, apiserver 1 to 3 (u: upstream's cacher, f: freshcache); \"serving after\" is from the manifest's edit until the new process answered /readyz with the cache asked for. A step's counts run from its edit to the next step's edit.\n\n")
	b.WriteString("| step | caches | serving after | reads | failed reads | stale | rv=0 older | write errors | relists | watch restarts |\n|---|---|---:|---:|---|---:|---:|---:|---:|---:|\n")
	for _, w := range wins {
		caches := make([]string, len(w.Caches))
		for i, c := range w.Caches {
			caches[i] = c[:1]
		}
		down := "–"
		if w.Downtime > 0 {
			down = w.Downtime.Round(100 * time.Millisecond).String()
		}
		c := w.Counts
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %s | %d | %d | %d | %d | %d |\n", w.Name, strings.Join(caches, " "), down, c.Reads, statuses(c.Failed), c.Stale, c.OlderZero, c.WriteErrors, c.Relists, c.WatchRestarts)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
