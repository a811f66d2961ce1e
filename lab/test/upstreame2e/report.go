package upstreame2e

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// ReportMeta is what the report says about where it was made.
type ReportMeta struct {
	Command, Commit, Machine string
	Date                     time.Time
	Procs                    int
	Selected, Left           int
	// RealNode: the cluster had one real node instead of hollow ones.
	RealNode bool
	// Kind: the cluster was a kind cluster, not local-up's.
	Kind bool
}

// WriteReport writes the markdown report of runs: totals per
// implementation, freshcache's read counters, and every test whose outcome
// differs between implementations.
func WriteReport(w io.Writer, m ReportMeta, sel *Selection, runs []*Run) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Upstream e2e tests against freshcache\n\n")
	nodes := "two kubemark hollow nodes (the kubelet on a fake runtime)"
	if m.RealNode {
		nodes = "one real node (the kubelet v1.37.2 on containerd and runc, kube-proxy, CoreDNS; pods are real processes from images built here: pause, busybox, agnhost)"
	}
	cluster := "a fresh local-up cluster per implementation: one kube-apiserver on embedded etcd, kube-controller-manager, kube-scheduler and " + nodes
	if m.Kind {
		cluster = "a fresh kind cluster per implementation (hack/kind-up.sh on make kind-images' offline images): one control-plane node (kubeadm's static pods: our kube-apiserver, etcd, kube-controller-manager, kube-scheduler) and one worker, each the kubelet v1.37.2 on containerd and runc, with kube-proxy and CoreDNS; test pods from images built here (busybox, agnhost)"
	}
	fmt.Fprintf(&b, "Upstream Kubernetes' own e2e tests (`e2e.test` of k8s.io/kubernetes/test/e2e v1.37.2, unchanged) run against %s, etcd compacted every minute. The selection is [lab/test/upstreame2e/tests.txt](../../lab/test/upstreame2e/tests.txt): %d tests run, %d more [sig-api-machinery] or [Conformance] tests left out, each with its reason there.\n\n", cluster, m.Selected, m.Left)
	fmt.Fprintf(&b, "- Command: `%s`\n- Commit: `%s`\n- Machine: %s\n- Date: %s, ginkgo with %d parallel processes\n\n", m.Command, m.Commit, m.Machine, m.Date.UTC().Format("2006-01-02 15:04 MST"), m.Procs)

	b.WriteString("| implementation | passed | failed | skipped | run time |\n|---|---:|---:|---:|---:|\n")
	for _, r := range runs {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %s |\n", r.Impl.Name, r.Counts.Passed, r.Counts.Failed, r.Counts.Skipped, r.Duration.Round(time.Second))
	}
	b.WriteString("\nRun times are wall-clock times on a shared machine, not a benchmark.\n")
	b.WriteString("\n```\n")
	for _, r := range runs {
		b.WriteString(r.ClosingLine() + "\n")
	}
	b.WriteString("```\n\n")

	b.WriteString("## Reads freshcache served\n\n")
	b.WriteString("Deltas of `apiserver_freshcache_reads_total` over each run (reads that needed freshness, every resource), by verb, what was requested, and outcome: `cache` was served from the watch cache once it was fresh enough, `fallback` from etcd, `rejected` and `error` were refused. The upstream run has no such counter.\n\n")
	for _, r := range runs {
		if !r.Impl.Freshcache {
			continue
		}
		keys := make([]string, 0, len(r.Reads))
		for k := range r.Reads {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintf(&b, "**%s**: ", r.Impl.Name)
		if len(keys) == 0 {
			b.WriteString("no reads counted.\n\n")
			continue
		}
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%s %.0f", k, r.Reads[k])
		}
		b.WriteString(strings.Join(parts, ", ") + "\n\n")
	}

	b.WriteString("## Tests whose outcome differs\n\n")
	var diff []string
	for _, n := range sel.Run {
		var outs []string
		same := true
		for i, r := range runs {
			o := outcomeOf(r, n)
			if i > 0 && o != outcomeOf(runs[0], n) {
				same = false
			}
			outs = append(outs, fmt.Sprintf("%s: %s", r.Impl.Name, o))
		}
		if !same {
			diff = append(diff, fmt.Sprintf("- %s — %s", n, strings.Join(outs, ", ")))
		}
	}
	if len(diff) == 0 {
		b.WriteString("None: every selected test had the same outcome on every implementation.\n")
	} else {
		b.WriteString(strings.Join(diff, "\n") + "\n")
	}
	for _, r := range runs {
		var failed []string
		for _, n := range sel.Run {
			if res, ok := r.Specs[n]; ok && res.Outcome == Failed {
				failed = append(failed, fmt.Sprintf("- %s: %s", n, res.Message))
			}
		}
		if len(failed) > 0 {
			fmt.Fprintf(&b, "\n### Failures on %s\n\n%s\n", r.Impl.Name, strings.Join(failed, "\n"))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func outcomeOf(r *Run, name string) Outcome {
	if res, ok := r.Specs[name]; ok {
		return res.Outcome
	}
	return "missing"
}
