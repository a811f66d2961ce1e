package stall

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// WriteMarkdown writes the whole report: header, table, closing line,
// definitions and per-configuration details.
func WriteMarkdown(w io.Writer, r Result) error {
	var b strings.Builder
	c := r.Config
	fmt.Fprintf(&b, "# freshcache-bench stall: etcd stopped for %v under consistent LISTs (kubernetes#138494)\n\n", c.Stall)
	fmt.Fprintf(&b, "- when: %s\n", r.When.Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, "- commit: `%s`\n", r.Commit)
	m := r.Machine
	gc := ""
	if m.GCEnv != "" {
		gc = ", " + m.GCEnv
	}
	fmt.Fprintf(&b, "- machine: %s, %d cores, %s, %s%s\n", m.CPU, m.Cores, m.OS, m.GoVersion, gc)
	if r.Command != "" {
		fmt.Fprintf(&b, "- command: `%s`\n", r.Command)
	}
	fmt.Fprintf(&b, "- data: %d configmaps of %d bytes of data each in namespace %q, %.1f MB of payload, written straight to etcd in kube-apiserver's protobuf encoding\n",
		c.Objects, c.ObjectBytes, Namespace, float64(r.DataBytes)/1e6)
	fmt.Fprintf(&b, "- load: %d clients (admin credentials, so API Priority and Fairness exempts them: every 429 comes from the cache), each on its own connection, listing the namespace with rv=\"\" in a loop (protobuf, no compression, no client-side retries; after a 429 a client waits its Retry-After, at most %v; after a 5xx or an error, %v); %g configmap updates/s straight to etcd\n",
		c.Clients, c.MaxRetryAfter, errorPause, c.WritesPerSec)
	if c.StallWrites > 0 {
		fmt.Fprintf(&b, "- at the SIGSTOP, %d more updates sent at once: they queue at the stopped etcd and land together at the SIGCONT, a backlog for the cache to catch up with\n", c.StallWrites)
	}
	fmt.Fprintf(&b, "- timeline of each configuration, each on a fresh etcd (a process of its own) and a fresh local-up kube-apiserver: %v warm-up, %v steady (the pre-stall level), SIGSTOP etcd for %v, SIGCONT, %v of observation, then no new reads and every read in flight waited for (client timeout %v)\n\n",
		c.Warmup, c.Steady, c.Stall, c.After, c.ReadTimeout)

	b.WriteString("## Results\n\n")
	if err := WriteTable(&b, r.Configs); err != nil {
		return err
	}
	if v := r.Ratios; v.BudgetAPIServer != nil && v.BudgetEtcd != nil {
		fmt.Fprintf(&b, "\nWhat the fallback budget buys: freshcache's growth divided by freshcache-unbounded's is %.2f for the apiserver and %.2f for etcd.\n", *v.BudgetAPIServer, *v.BudgetEtcd)
	}
	fmt.Fprintf(&b, "\n%s\n\n", r.ClosingLine)
	writeDefinitions(&b, c)
	b.WriteString("## Per configuration\n\n")
	for _, cr := range r.Configs {
		writeDetails(&b, cr, c)
	}
	if len(r.Notes) > 0 {
		b.WriteString("## Notes\n\n")
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeDefinitions(b *strings.Builder, c Config) {
	fmt.Fprintf(b, `## How to read it

- **RSS** is VmRSS of the kube-apiserver process and of the etcd process (/proc/PID/status), sampled every %v. *pre* is the median over the steady window; *peak* the highest sample from the SIGSTOP until every read in flight was answered; *growth* = peak / pre.
- **etcd sent from stall** is the change of etcd's etcd_network_client_grpc_sent_bytes_total (every gRPC message etcd sent, watch events included) from the last scrape before the SIGSTOP to the end; etcd's /metrics is scraped every 250 ms and does not answer while etcd is stopped.
- **2xx / 429 / 5xx / other** count every LIST started from the steady window on, by the answer it got; *other* is any other status, a client-side timeout or a broken connection. A read is lost when it is 5xx or other: every read is either answered or told to retry.
- **p99 of 2xx** is over the answered LISTs started in the steady window / started from the SIGSTOP on, whole answer read.
- **back to pre-stall latency** is the time from the SIGCONT to the start of the first run of %d LISTs in a row (in order of their start, all started after the SIGCONT) that were each answered 2xx within the steady window's p99: when reads are served from the cache at the pre-stall pace again. *never* means no such run before the end of the observation.
- **apiserver's count from stall on** are the apiserver's own consistent LISTs (its /metrics, scraped every 2 s) of configmaps by outcome from the SIGSTOP on: upstream's apiserver_watch_cache_consistent_read_total (fallback="true" is *fallback*, fallback="skipped" is *rejected*), freshcache's apiserver_freshcache_reads_total (*over_budget* is a 429 because the fallbacks in flight were over --consistent-read-fallback-budget).

`, c.SampleEvery, recoveryRun)
}

func writeDetails(b *strings.Builder, cr ConfigResult, c Config) {
	fmt.Fprintf(b, "### %s\n\n- kube-apiserver flags: `%s`\n", cr.Name, strings.Join(cr.Args, " "))
	if cr.Skipped != "" {
		fmt.Fprintf(b, "- skipped: %s\n\n", oneLine(cr.Skipped))
		return
	}
	if cr.Error != "" {
		fmt.Fprintf(b, "- stopped early: %s\n", oneLine(cr.Error))
	}
	tl := cr.Timeline
	fmt.Fprintf(b, "- timeline: steady from %v, SIGSTOP at %v, SIGCONT at %v, end at %v\n",
		tl.SteadyFrom.Round(100*time.Millisecond), tl.StallAt.Round(100*time.Millisecond), tl.ResumeAt.Round(100*time.Millisecond), tl.End.Round(100*time.Millisecond))
	fmt.Fprintf(b, "- reads: steady %d 2xx, %d 429, %d 5xx, %d other; from the stall on %d 2xx, %d 429, %d 5xx, %d other; %.0f MB answered\n",
		cr.Steady.OK, cr.Steady.Retry, cr.Steady.Err5xx, cr.Steady.Other,
		cr.FromStall.OK, cr.FromStall.Retry, cr.FromStall.Err5xx, cr.FromStall.Other, float64(cr.AnsweredBytes)/1e6)
	fmt.Fprintf(b, "- latency of 2xx: steady p50 %s s, p99 %s s; from the stall p99 %s s; all p99 %s s\n",
		secs(cr.P50Steady), secs(cr.P99Steady), secs(cr.P99FromStall), secs(cr.P99All))
	fmt.Fprintf(b, "- apiserver's count: steady %s; from the stall on %s\n", outcomes(cr.OutcomesSteady), outcomes(cr.OutcomesFromStall))
	if cr.PeakFallbackObjects > 0 {
		fmt.Fprintf(b, "- freshcache fallback_objects_in_flight peak: %.0f objects (%.1f LISTs of %d)\n",
			cr.PeakFallbackObjects, cr.PeakFallbackObjects/float64(c.Objects), c.Objects)
	}
	fmt.Fprintf(b, "- etcd: Range and RangeStream RPCs in flight at most %.0f (scrapes every 250 ms from the SIGSTOP on); sent %.0f MB over the steady window (%.1f MB/s), %.0f MB from the stall on\n",
		cr.PeakEtcdRanges, cr.EtcdSentSteady/1e6, cr.EtcdSentSteady/1e6/max(c.Steady.Seconds(), 1e-9), cr.EtcdSentFromStall/1e6)
	fmt.Fprintf(b, "- VmHWM at the end (peak since start, initial load included): apiserver %.0f MiB, etcd %.0f MiB\n", mib(cr.APIServerHWM), mib(cr.EtcdHWM))
	fmt.Fprintf(b, "- writes (steady load and the stall's burst): %d done, %d failed\n", cr.Writes, cr.WritesFailed)
	for _, k := range []string{Class429, Class5xx, ClassOther} {
		if e, ok := cr.FirstErrors[k]; ok {
			fmt.Fprintf(b, "- first %s: %s\n", k, oneLine(e))
		}
	}
	b.WriteString("\n")
}
