package watchlist

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// RatiosLine is the closing line of a run (stdout and the report's end).
func RatiosLine(r Ratios) string {
	return fmt.Sprintf("watchlist ratios: read-p99-ms=%.1f upstream-read-p99-ms=%.1f throughput-drop=%.2f watchlist-cpu-share=%.2f",
		r.ReadP99Ms, r.UpstreamReadP99Ms, r.ThroughputDrop, r.WatchListCPUShare)
}

// WriteMarkdown writes the report of r: what ran, the targets, then every
// table the figures come from.
func WriteMarkdown(w io.Writer, r Result) error {
	b := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(b, format+"\n", args...) }
	writeHeader(p, r)
	writeSummary(p, r)
	writeReads(p, r)
	writeWaits(p, r)
	writeCPU(p, r)
	writeWatchLists(p, r)
	writeErrors(p, r)
	p("```")
	p("%s", RatiosLine(r.Ratios))
	p("```")
	return b.Flush()
}

type printer func(format string, args ...any)

// section starts a section of the report: its heading, its paragraphs
// (text, not formats), then its table's header and alignment rows.
func (p printer) section(title, header, align string, paragraphs ...string) {
	p("## %s", title)
	p("")
	for _, para := range paragraphs {
		p("%s", para)
		p("")
	}
	p("%s", header)
	p("%s", align)
}

func writeHeader(p printer, r Result) {
	c, m := r.Config, r.Machine
	p("# WatchList over a huge resource (kubernetes#138728)")
	p("")
	p("Does a WatchList of every object of a huge resource slow down fresh reads? Upstream's cacher held its lock for O(N log N) per WatchList; its cache fell behind, consistent reads waited 3 s, fell back to etcd, and the apiserver ran out of memory.")
	p("")
	p("- Ran: %s, on commit `%s`.", r.Date.Format("2006-01-02 15:04 UTC"), r.GitCommit)
	p("- Machine: %s, %d cores (GOMAXPROCS %d), %s, %s. The apiserver, etcd and this benchmark's clients share these cores.", m.CPU, m.Cores, m.GOMAXPROCS, m.GoVersion, m.OS)
	if r.Command != "" {
		p("- Command: `%s`", r.Command)
	}
	p("- Configurations, each on a fresh local-up cluster (one kube-apiserver, embedded etcd, no controllers, no nodes), one after the other: %s.", strings.Join(c.Configs, ", "))
	p("- Data: %d configmaps (the huge resource) in %d namespaces plus %d in a small namespace, and %d secrets there; each holds a %d-byte value. Written straight to etcd in kube-apiserver's storage encoding, then waited for until the cache listed them all.",
		c.Objects, c.HugeNamespaces, c.SmallObjects, c.SmallObjects, c.ValueBytes)
	p("- Fresh reads (rv=\"\"), closed loops, %d clients per kind, each on its own connection: GET of one secret, LIST of the small namespace's secrets, GET of one configmap, LIST of the small namespace's configmaps.", c.ReadClients)
	p("- Writes in every phase: %g updates/s of random configmaps and %g/s of the small secrets, straight to etcd.", c.WriteRate, c.WriteRate)
	p("- WatchLists: %d concurrent loops, each a watch of every configmap with sendInitialEvents=true, resourceVersionMatch=NotOlderThan, allowWatchBookmarks=true, rv=\"\" (protobuf), read until the bookmark annotated k8s.io/initial-events-end, closed, and started again.", c.WatchLists)
	p("- Phases: %s %v (the apiserver's idle CPU), warm-up %v (reads, not reported), A = %s %v, B = %s %v, C = %s %v (the WatchLists' CPU per event).",
		PhaseIdle, c.Idle, c.Warmup, PhaseBaseline, c.Baseline, PhaseContended, c.Contended, PhaseAlone, c.Alone)
	if lo, hi, ok := otherCores(r); ok && hi >= noisyCores {
		p("- Noise: other work on the machine took %.2f–%.2f cores of the %d during the phases (the \"other\" column of the CPU table). Every figure here is from a shared, busy machine: compare configurations with care, and rows within one configuration's run first.", lo, hi, m.Cores)
	}
	for _, n := range r.Notes {
		p("- Note: %s", n)
	}
	p("")
}

// noisyCores is the other processes' CPU from which the header warns.
const noisyCores = 0.25

// otherCores is the range of the other processes' CPU over every phase.
func otherCores(r Result) (lo, hi float64, ok bool) {
	for _, run := range r.Runs {
		for _, ph := range run.Phases {
			if !ok {
				lo, hi, ok = ph.CPU.Other, ph.CPU.Other, true
				continue
			}
			lo, hi = min(lo, ph.CPU.Other), max(hi, ph.CPU.Other)
		}
	}
	return lo, hi, ok
}

func writeSummary(p printer, r Result) {
	p.section("Targets", fmt.Sprintf("| configuration | read p99 A (ms) | read p99 B (ms) | p99 B < %d ms | p99 B configmaps / secrets (ms) | sched latency p99 B (ms) | reads/s A | reads/s B | throughput drop | WatchList CPU share | drop <= share | WatchLists done in B | WatchList p50 in B (s) |", SLOMs),
		"|---|---:|---:|:-:|---:|---:|---:|---:|---:|---:|:-:|---:|---:|",
		fmt.Sprintf("Read p99 is the worst read kind's client-side p99 (it bounds the server's wait from above); the target is under %d ms (KEP-2340's SLO) with the WatchLists running. The throughput drop should be at most the WatchLists' share of the apiserver's CPU in B (phase C's CPU per event times B's events, over B's apiserver CPU): a larger drop means reads waited for something other than CPU.", SLOMs),
		"Two columns tell a cache that fell behind from a process that has no CPU to spare. The huge resource's reads against the other resource's (p99 in B, configmaps / secrets): a cache behind its etcd slows only its own resource's fresh reads. The apiserver's goroutine scheduling latency (go_sched_latencies_seconds, p99 in B): every request waits that long at each of its hops, whatever the cache does.")
	for _, run := range r.Runs {
		d := Derive(run)
		a, b := run.Phase(PhaseBaseline), run.Phase(PhaseContended)
		if a == nil || b == nil {
			p("| %s | — | — | — | — | — | — | — | — | — | — | — | — |", run.Config)
			continue
		}
		share := "—"
		if d.HasCPUShare {
			share = fmt.Sprintf("%.0f%%", d.WatchListCPUShare*100)
		}
		p("| %s | %.1f | %.1f (%s) | %s | %s / %s | %s | %.0f | %.0f | %.0f%% | %s | %s | %d | %.2f |", run.Config, d.BaselineP99Ms, d.WorstP99Ms, d.WorstKind, yes(d.MeetsSLO),
			worstOf(b, ReadGetConfigMap, ReadListConfigMap), worstOf(b, ReadGetSecret, ReadListSecrets), schedP99(b),
			a.ReadsPerSec(), b.ReadsPerSec(), d.ThroughputDrop*100, share, yes(d.MeetsCPU), b.WatchList.Completed, b.WatchList.P50Ms/1000)
	}
	p("")
}

// worstOf is the largest p99 of the given read kinds in a phase.
func worstOf(ph *PhaseResult, kinds ...string) string {
	worst, found := 0.0, false
	for _, k := range kinds {
		if r := ph.Read(k); r != nil {
			worst, found = max(worst, r.P99Ms), true
		}
	}
	if !found {
		return "—"
	}
	return fmt.Sprintf("%.0f", worst)
}

// quantiles renders "p50 / p99", or — when absent.
func quantiles(q *Quantiles) string {
	if q == nil {
		return "—"
	}
	return fmt.Sprintf("%.2f / %.1f", q.P50Ms, q.P99Ms)
}

func schedP99(ph *PhaseResult) string {
	if ph.Runtime.SchedLatency == nil {
		return "—"
	}
	return fmt.Sprintf("%.1f", ph.Runtime.SchedLatency.P99Ms)
}

func yes(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}

func writeReads(p printer, r Result) {
	p.section("Fresh reads, client side", "| configuration | read | p50 A (ms) | p99 A (ms) | p50 B (ms) | p99 B (ms) | max B (ms) | reads/s A | reads/s B | drop | reads B (cut) | errors A / B |",
		"|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
		"Latencies include the reads still in flight when the phase ended (cut), at the time they had waited: a lower bound, kept because when reads take seconds the cut ones are the slowest. Reads/s count finished reads.")
	for _, run := range r.Runs {
		a, b := run.Phase(PhaseBaseline), run.Phase(PhaseContended)
		if a == nil || b == nil {
			continue
		}
		for _, kind := range AllReads {
			ra, rb := a.Read(kind), b.Read(kind)
			if ra == nil || rb == nil {
				continue
			}
			drop := 0.0
			if ra.OpsPerSec > 0 {
				drop = 1 - rb.OpsPerSec/ra.OpsPerSec
			}
			p("| %s | %s | %.2f | %.1f | %.2f | %.1f | %.1f | %.0f | %.1f | %.0f%% | %d (%d) | %d / %d |", run.Config, kind, ra.P50Ms, ra.P99Ms, rb.P50Ms, rb.P99Ms, rb.MaxMs, ra.OpsPerSec, rb.OpsPerSec, drop*100, rb.Ops, rb.Cut, ra.Errors, rb.Errors)
		}
	}
	p("")
}

func writeWaits(p printer, r Result) {
	p.section("Server-side freshness wait", "| configuration | phase | resource | verb | waits | p50 (ms) | p99 (ms) | released p50 (ms) | released p99 (ms) | fallbacks | rejected |",
		"|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
		"From /metrics around each phase: freshcache's apiserver_freshcache_read_wait_seconds (every read that needed freshness, by verb; watch is the WatchLists' own wait) and upstream's apiserver_watch_cache_read_wait_seconds (observed only when its cache was behind the requested revision, LISTs and watches together: verb \"any\"; upstream sends a GET at rv=\"\" to etcd without waiting). Quantiles are interpolated within the histogram's buckets. Released is freshcache's apiserver_freshcache_read_release_seconds: the part of the wait until its cache had reached a revision fetched after the read arrived; the rest of the wait is the released reader's queue for a CPU. Fallbacks were served from etcd after the wait timed out; rejected were answered 429.")
	for _, run := range r.Runs {
		for _, ph := range run.Phases {
			if ph.MetricsError != "" {
				p("| %s | %s | — | — | — | — | — | — | — | — | — |", run.Config, ph.Name)
				continue
			}
			for _, w := range ph.Waits {
				r50, r99 := "—", "—"
				if w.Release != nil {
					r50, r99 = fmt.Sprintf("%.2f", w.Release.P50Ms), fmt.Sprintf("%.1f", w.Release.P99Ms)
				}
				p("| %s | %s | %s | %s | %.0f | %.2f | %.1f | %s | %s | %.0f | %.0f |", run.Config, ph.Name, w.Resource, w.Verb, w.Count, w.P50Ms, w.P99Ms, r50, r99, w.Fallbacks, w.Rejected)
			}
		}
	}
	p("")
}

func writeCPU(p printer, r Result) {
	p.section("CPU and memory", "| configuration | phase | apiserver | of it GC | etcd | bench | other | sched latency p50 / p99 (ms) | revision fetch p50 / p99 (ms) | apiserver peak RSS (MiB) | writes/s |",
		"|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
		"Cores used over each phase, from /proc: the kube-apiserver (and, from its /metrics, the part its garbage collector took), the local-up process (its embedded etcd), this benchmark process (readers, WatchList clients, writers), and the rest of the machine (other work on it: noise). Sched latency is the apiserver's go_sched_latencies_seconds over the phase; revision fetch is freshcache's round trip to etcd for a read's revision (apiserver_freshcache_revision_fetch_duration_seconds), the first part of its release.")
	for _, run := range r.Runs {
		for _, ph := range run.Phases {
			wps := 0.0
			if ph.Seconds > 0 {
				wps = float64(ph.Writes) / ph.Seconds
			}
			p("| %s | %s | %.2f | %.2f | %.2f | %.2f | %.2f | %s | %s | %.0f | %.1f |", run.Config, ph.Name, ph.CPU.APIServer, ph.Runtime.GCCores, ph.CPU.Etcd, ph.CPU.Bench, ph.CPU.Other,
				quantiles(ph.Runtime.SchedLatency), quantiles(ph.Runtime.RevisionFetch), ph.CPU.APIServerPeakRSSMiB, wps)
		}
	}
	p("")
}

func writeWatchLists(p printer, r Result) {
	p.section("WatchLists", "| configuration | phase | completed | p50 (s) | p99 (s) | max (s) | errors | cancelled | initial events | events/s | apiserver CPU per event (µs) |",
		"|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
		"Completed WatchLists reached the initial-events-end bookmark; initial events are the ADDED events before it (every configmap in the cluster, including the few kube-system ones). Cancelled ones were cut by the end of the phase. Apiserver CPU per event is phase C's apiserver CPU above the writes-only phase, per event delivered.")
	for _, run := range r.Runs {
		d := Derive(run)
		for _, ph := range run.Phases {
			wl := ph.WatchList
			if wl.Completed+wl.Errors+wl.Cancelled == 0 {
				continue
			}
			perEvent := "—"
			if ph.Name == PhaseAlone && d.HasCPUShare {
				perEvent = fmt.Sprintf("%.1f", d.WatchListCPUPerEventUs)
			}
			initial := "—"
			if wl.Completed > 0 {
				initial = fmt.Sprintf("%d", wl.InitialEventsMin)
				if wl.InitialEventsMax != wl.InitialEventsMin {
					initial += fmt.Sprintf("–%d", wl.InitialEventsMax)
				}
			}
			eps := 0.0
			if ph.Seconds > 0 {
				eps = float64(wl.Events) / ph.Seconds
			}
			p("| %s | %s | %d | %.2f | %.2f | %.2f | %d | %d | %s | %.0f | %s |", run.Config, ph.Name, wl.Completed, wl.P50Ms/1000, wl.P99Ms/1000, wl.MaxMs/1000, wl.Errors, wl.Cancelled, initial, eps, perEvent)
		}
	}
	p("")
}

func writeErrors(p printer, r Result) {
	var lines []string
	for _, run := range r.Runs {
		if run.Error != "" {
			lines = append(lines, fmt.Sprintf("- %s stopped early: %s", run.Config, oneLine(run.Error)))
		}
		for _, ph := range run.Phases {
			for _, rd := range ph.Reads {
				if rd.FirstError != "" {
					lines = append(lines, fmt.Sprintf("- %s, %s, %s: %d errors, the first: %s", run.Config, ph.Name, rd.Kind, rd.Errors, oneLine(rd.FirstError)))
				}
			}
			if ph.WatchList.FirstError != "" {
				lines = append(lines, fmt.Sprintf("- %s, %s, WatchList: %d errors, the first: %s", run.Config, ph.Name, ph.WatchList.Errors, oneLine(ph.WatchList.FirstError)))
			}
			if ph.MetricsError != "" {
				lines = append(lines, fmt.Sprintf("- %s, %s: /metrics not read: %s", run.Config, ph.Name, oneLine(ph.MetricsError)))
			}
			if ph.WriteErrors > 0 {
				lines = append(lines, fmt.Sprintf("- %s, %s: %d background writes failed", run.Config, ph.Name, ph.WriteErrors))
			}
		}
	}
	if len(lines) == 0 {
		return
	}
	p("## Errors")
	p("")
	for _, l := range lines {
		p("%s", l)
	}
	p("")
}

// oneLine keeps an error message to one bounded line of a markdown list.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
