package demo59848

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/freshcache/freshcache/lab/internal/githead"
)

// trialRow is one trial of one configuration, for the report.
type trialRow struct {
	config string
	trial  int
	took   time.Duration
	o      outcome
}

type reportInfo struct {
	began  time.Time
	real   bool
	trials int
	out    string
}

// writeReport writes the run as markdown (make demo-59848 puts it in
// docs/results/demo-59848.md): what ran, every trial's evidence and the
// closing lines, all from this run.
func writeReport(path string, info reportInfo, rows []trialRow, closing []string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# kubernetes#59848 replayed: does a restarted kubelet start a deleted pod?\n\n")
	fmt.Fprintf(&b, "Written by `make demo-59848` (lab/test/demo59848); every figure below is from this run.\n\n")
	fmt.Fprintf(&b, "- Ran: %s to %s UTC, on commit `%s`.\n", info.began.UTC().Format("2006-01-02 15:04"), time.Now().UTC().Format("15:04"), commit())
	fmt.Fprintf(&b, "- Machine: %d cores (GOMAXPROCS %d), %s, %s/%s.\n", runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	if info.real {
		fmt.Fprintf(&b, "- Node: a real one (local-up --real-nodes=1): the upstream kubelet v1.37.2 on containerd and runc; a StatefulSet's web-0 runs on it and is deleted through A, its replacement runs on a hollow node; \"started again\" means containerd holds a container of the old web-0 (its UID) created after the kubelet restarted on B.\n")
	} else {
		fmt.Fprintf(&b, "- Node: a hollow one (kubemark); \"started again\" means the new kubelet's fake runtime ran the deleted pod or its kubelet_started_containers_total rose.\n")
	}
	fmt.Fprintf(&b, "- Setup: 3-member etcd with fault proxies on every peer link; apiserver A on member 0 with the controllers, B on member 1 (audit log); member 1 cut off before the delete; the kubelet restarted against B and watched for %s.\n", observe)
	fmt.Fprintf(&b, "- watchlist=on: the kubelet's client as 1.35+ ships it (its first request is a watch-list); off: WatchListClient=false, as kubelets of 1.34 and older (they list at rv=0 first).\n")
	fmt.Fprintf(&b, "- Trials per configuration: %d. Logs and B's audit log of each trial: %s/<configuration>/<trial>.\n\n", info.trials, info.out)
	b.WriteString("## Closing lines\n\n```\n")
	for _, l := range closing {
		b.WriteString(l + "\n")
	}
	b.WriteString("```\n\n## Trials\n\n")
	b.WriteString("| configuration | trial | started again | took | B's answer to an admin rv=0 LIST after the delete | evidence | the restarted kubelet's requests to B |\n|---|---:|:-:|---:|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s |\n", r.config, r.trial, yesNo(r.o.started), r.took.Round(time.Second),
			cell(r.o.staleAtRV0), cell(r.o.evidence), cell(r.o.path))
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// cell keeps a table cell on one line.
func cell(s string) string {
	return strings.NewReplacer("|", "\\|", "\n", " ").Replace(s)
}

// commit is the repository's HEAD (with "-dirty" for uncommitted changes),
// or DEMO_59848_COMMIT when set.
func commit() string {
	if c := os.Getenv("DEMO_59848_COMMIT"); c != "" {
		return c
	}
	c, dirty := githead.Head(0)
	if dirty {
		c += "-dirty"
	}
	return c
}
