package tracewait

import (
	"fmt"
	"io"
	"time"
)

// WriteMarkdown writes r as a markdown section: the wait split, the fetches,
// the GC mark share and who held the CPU.
func (r Report) WriteMarkdown(w io.Writer) error {
	p := &printer{w: w}
	if r.Total.N == 0 && r.Fetch.N == 0 {
		p.f("No freshness waits or revision fetches in this trace.\n\n")
	} else {
		r.writeTable(p)
	}
	r.writeFindings(p)
	return p.err
}

func (r Report) writeTable(p *printer) {
	p.f("| part | n | p50 ms | p90 ms | p99 ms | max ms |\n|---|---:|---:|---:|---:|---:|\n")
	for _, row := range []struct {
		name string
		d    Dist
	}{
		{"wait, total", r.Total},
		{"arrival to release", r.UntilRelease},
		{"release to running", r.ReleaseToRun},
		{"revision fetch", r.Fetch},
		{"fetch: start to a P idle", r.FetchToIdle},
		{"fetch: P idle to answer", r.IdleToAnswer},
	} {
		p.f("| %s | %d | %s | %s | %s | %s |\n", row.name, row.d.N, ms(row.d.P50), ms(row.d.P90), ms(row.d.P99), ms(row.d.Max))
	}
	p.f("\n")
}

func (r Report) writeFindings(p *printer) {
	p.f("- trace span %s ms, %d Ps busy at most", ms(r.Span), r.Procs)
	if r.Total.N > 0 {
		p.f("; %d of %d waits never blocked", r.NotBlocked, r.Total.N)
	}
	p.f(".\n")
	p.f("- GC mark phase: %s ms, %s of the span.\n", ms(r.GCMark), pct(r.GCMark, r.Span))
	p.f("- Idle P time (no goroutine, or only an idle-priority GC mark worker, for %v or longer): %s ms, %s of the Ps' time.\n",
		r.MinIdle, ms(r.Idle), pct(r.Idle, r.Span*time.Duration(max(r.Procs, 1))))
	if r.Fetch.N > 0 {
		p.f("- %d of %d fetches saw no P idle while in flight (left out of the two fetch split rows).\n", r.FetchNoIdle, r.Fetch.N)
	}
	p.f("- CPU over the whole trace: readers (goroutines that waited for freshness) %s, GC mark workers %s, other %s.\n",
		pct(r.CPU.Readers, r.CPU.Total()), pct(r.CPU.GCWorkers, r.CPU.Total()), pct(r.CPU.Other, r.CPU.Total()))
	if r.Slow.N > 0 {
		s := r.Slow
		p.f("- Slowest waits (at or above %s ms, the p99): %d, of which %d overlap a GC mark phase; on average %s ms until release and %s ms from release to running.\n",
			ms(s.Threshold), s.N, s.InGCMark, ms(s.UntilRelease), ms(s.ReleaseToRun))
		p.f("- CPU inside their release-to-running windows: readers %s, GC mark workers %s, other %s.\n",
			pct(s.CPU.Readers, s.CPU.Total()), pct(s.CPU.GCWorkers, s.CPU.Total()), pct(s.CPU.Other, s.CPU.Total()))
	}
}

type printer struct {
	w   io.Writer
	err error
}

func (p *printer) f(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/1e6) }

func pct(part, whole time.Duration) string {
	if whole <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(part)/float64(whole))
}
