package cluster

// The cluster benchmark's outputs: the JSON and the markdown report (the
// closing ratio line is ratios.go).

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/freshcache/freshcache/tools/bench/report"
)

// Report is the JSON a cluster run writes.
type Report struct {
	report.Identity
	Settings  Config         `json:"settings"`
	Cells     []Row          `json:"cells"`
	Models    []CostModel    `json:"cost_models,omitempty"`
	Estimates []CostEstimate `json:"cost_estimates,omitempty"`
	// Error names the cells that failed, or why the run stopped; the
	// cells that ran are kept.
	Error string `json:"error,omitempty"`
}

// NewReport fills the run's identity and the cost models.
func NewReport(cfg Config, rows []Row, runErr error) Report {
	name := "cluster"
	if cfg.NodeKind == NodesKwok {
		name = "scale"
	}
	r := Report{Identity: report.NewIdentity(name), Settings: cfg, Cells: rows}
	if runErr != nil {
		r.Error = runErr.Error()
	}
	at := modelNodes(rows)
	for _, c := range AllConfigs {
		if m, ok := buildCostModel(rows, c, at); ok {
			r.Models = append(r.Models, m)
			r.Estimates = append(r.Estimates, m.extrapolate(kepScale))
		}
	}
	return r
}

// WriteJSON writes r, indented, to path.
func (r Report) WriteJSON(path string) error { return report.WriteJSON(path, r) }

// WriteMarkdown writes the report; plots are the PNGs' file names,
// next to the markdown.
func WriteMarkdown(w io.Writer, r Report, plots []string) error {
	var b strings.Builder
	r.WriteHeading(&b)
	s := r.Settings
	kind := "hollow"
	if s.NodeKind == NodesKwok {
		kind = "kwok"
	}
	fmt.Fprintf(&b, "- configurations: %s; single apiserver at %s %s nodes", strings.Join(s.Configs, ", "), joinInts(s.Nodes), kind)
	if s.HANodes > 0 {
		fmt.Fprintf(&b, "; HA (2 kube-apiservers, 3 etcd members) at %d", s.HANodes)
	}
	informers := fmt.Sprintf("%d pod informers (half WatchListClient on), each restarted every %s", s.Informers, s.InformerRestart)
	if s.NodeWatches {
		informers += "; one pod watch per node on its own pods (spec.nodeName), as kubelets have, half WatchListClient on, never restarted but in the storm"
	}
	if s.ControllerQPS > 0 {
		informers += fmt.Sprintf("; controller-manager and scheduler at %g QPS", s.ControllerQPS)
	}
	fmt.Fprintf(&b, "\n- load (the same for every configuration, seed %d): %d pods per node in Deployments of %d; churn %g pods created+deleted/s (scale up, scale down, rollouts); LISTs of one node's pods %g/s and of every pod %g/s, each at rv=\"\" and at rv=0; %s; freshness probe %g writes/s\n",
		s.Seed, s.PodsPerNode, s.ReplicasPerDeployment, s.PodRate, s.NodeListRate, s.AllListRate, informers, s.ProbeRate)
	fmt.Fprintf(&b, "- windows: %s warm-up (churn only), %s measured, then %s idle and %s per calibrated read kind (%g/s, %g/s for LISTs of every pod)\n",
		s.Warmup, s.Window, s.CalibWindow, s.CalibWindow, s.CalibRate, s.CalibListAllRate)
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "- note: %s\n", n)
	}
	if r.Error != "" {
		fmt.Fprintf(&b, "\n**Not every cell ran:** %s\n", strings.ReplaceAll(r.Error, "\n", "; "))
	}
	ratios := ComputeRatios(r.Cells)
	where := "No node count has both upstream and freshcache-fresh-rv0 on a single apiserver, so there are no ratios."
	if ratios.Nodes > 0 {
		where = fmt.Sprintf("Ratios at %d nodes, single apiserver; stale over every freshcache run.", ratios.Nodes)
		if ratios.Pairs > 1 {
			where += fmt.Sprintf(" Each cell ran %d times, interleaved; a ratio is the median over the %d pairs of upstream and freshcache-fresh-rv0 cells of the same repeat, and its row lists every pair's ratio. A target is met when the median is.", ratios.Pairs, ratios.Pairs)
		}
	}
	if ratios.Work != nil {
		where += fmt.Sprintf(" freshcache-fresh-rv0 served %.0f%% of upstream's open-loop work there (the smaller of answered LIST-client reads and churned pods); below %.0f%% its cost ratios are marked not comparable.", 100**ratios.Work, 100*comparableWork)
	}
	scale := r.Settings.NodeKind == NodesKwok
	line := ratios.Line()
	if scale {
		line = ratios.ScaleLine()
	}
	fmt.Fprintf(&b, "\n## Targets (reported, not asserted)\n\n%s\n\n    %s\n\n| figure | value | target | met |\n|---|---:|---:|---|\n", where, line)
	for _, t := range clusterTargets(ratios, scale) {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", t[0], t[1], t[2], t[3])
	}
	for _, p := range plots {
		fmt.Fprintf(&b, "\n![%s](%s)\n", strings.TrimSuffix(p, ".png"), p)
	}
	writeClusterMain(&b, r.Cells)
	writeAPICPUParts(&b, r.Cells)
	writeClusterEtcd(&b, r.Cells)
	writeClusterFreshness(&b, r.Cells)
	writeClusterWaitParts(&b, r.Cells)
	writeClusterLatency(&b, r.Cells)
	writeClusterClients(&b, r.Cells)
	writeStorm(&b, r.Cells)
	writeClusterCalibration(&b, r.Cells)
	writeCostModel(&b, r)
	b.WriteString(clusterLimits)
	_, err := io.WriteString(w, b.String())
	return err
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}

func optMs(p *float64) string {
	if p == nil {
		return "–"
	}
	return fmt.Sprintf("%.1f", *p)
}

func joinFloats(v []float64, format string) string { return fmtList(v, format) }

func writeClusterMain(b *strings.Builder, rows []Row) {
	b.WriteString("\n## Per configuration\n\nCPU over the measured window from /proc/<pid>/stat (utime+stime; cores = CPU seconds / window). etcd is local-up's process: every embedded member runs in it. Peak RSS is the highest VmRSS sampled each second in the window (per apiserver). etcd reads are KV.Range + KV.RangeStream handled by etcd. LIST p99 is kube-apiserver's `apiserver_request_duration_seconds` for pod LISTs (every client, every scope), interpolated in its buckets. Stale is the probe's answers older than its write, every read kind. Bound→Running is seen by a watch on kube-apiserver-1 (ms); scheduled→started is the pods' own PodScheduled transition and container startedAt, which have whole seconds only.\n\n")
	b.WriteString("| configuration | mode | nodes | pods | window s | apiserver CPU s (cores) | apiserver peak RSS MB | etcd CPU s (cores) | etcd peak RSS MB | etcd reads (/s) | pod LIST p99 ms | freshness wait p99 ms | probe stale / reads | pod bound→Running p50 / p99 ms (pods) | pod scheduled→started from status, p50 / p99 s | pods created, deleted | ready, setup, cell s |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		var reads int64
		for _, v := range r.Probe.Reads {
			reads += v
		}
		w := max(r.WindowSeconds, 1e-9)
		fmt.Fprintf(b, "| %s | %s | %d | %d | %.0f | %.1f (%.2f) | %s | %.1f (%.2f) | %.0f | %.0f (%.1f) | %s | %s | %d / %d | %.0f / %.0f (%d) | %.0f / %.0f | %d, %d | %.0f, %.0f, %.0f |\n",
			r.Config, r.modeLabel(), r.Nodes, r.Pods, r.WindowSeconds, r.APICPUSec, r.APICPUSec/w, joinFloats(r.APIPeakRSSMB, "%.0f"),
			r.EtcdCPUSec, r.EtcdCPUSec/w, r.EtcdPeakRSSMB, r.EtcdReads, r.EtcdReads/w, optMs(r.ListP99Ms), optMs(r.FreshWaitP99Ms),
			r.Probe.staleTotal(), reads, r.PodLatency.P50Ms, r.PodLatency.P99Ms, r.PodLatency.Count, r.PodLatency.StatusP50S, r.PodLatency.StatusP99S, r.PodsCreated, r.PodsDeleted,
			r.ReadySeconds, r.SetupSeconds, r.WallSeconds)
	}
	b.WriteString("\nThe probe, per read (stale / answered); a write completes before its reads are sent, all four at once:\n\n| configuration | mode | nodes | writes | ")
	for _, pr := range probeReads {
		fmt.Fprintf(b, "%s | ", probeReadName(pr.kind, pr.rv))
	}
	b.WriteString("errors | through |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, r := range rows {
		fmt.Fprintf(b, "| %s | %s | %d | %d | ", r.Config, r.modeLabel(), r.Nodes, r.Probe.Writes)
		for _, pr := range probeReads {
			k := probeReadName(pr.kind, pr.rv)
			fmt.Fprintf(b, "%d / %d | ", r.Probe.Stale[k], r.Probe.Reads[k])
		}
		errs := fmt.Sprintf("%d", r.Probe.WriteErrors+r.Probe.ReadErrors)
		if r.Probe.FirstError != "" {
			errs += " (" + strings.ReplaceAll(r.Probe.FirstError, "|", "/") + ")"
		}
		fmt.Fprintf(b, "%s | %s |\n", errs, r.Probe.Through)
	}
}

// etcdMethods are the etcd RPCs the table shows, in order.
var etcdMethods = []string{"KV.Range", "KV.RangeStream", "KV.Txn", "KV.Put", "KV.DeleteRange", "KV.Compact", "Lease.LeaseGrant", "Lease.LeaseKeepAlive", "Watch.Watch"}

func writeClusterEtcd(b *strings.Builder, rows []Row) {
	b.WriteString("\n## etcd requests in the window\n\nFrom etcd's `grpc_server_handled_total` by method (unary calls when they finish, streams when they close: `Watch.Watch` counts closed streams), `grpc_server_msg_received_total` on Watch streams (watch creations, cancellations and progress requests: etcd does not tell them apart), and `etcd_mvcc_*_total` (each member counts its own: with 3 members a write is applied, and counted, three times). etcd cannot split Range into linearizable and serializable: kube-apiserver's etcd3 store and freshcache's revision fetches only send linearizable ones. From the apiservers: `etcd_requests_total` by operation (upstream's revision fetch is `getCurrentResourceVersion`), freshcache's `apiserver_freshcache_revision_fetches_total` and `progress_requests_total` (upstream's cacher exports no progress-request count).\n\n| configuration | mode | nodes |")
	for _, m := range etcdMethods {
		fmt.Fprintf(b, " %s |", m)
	}
	b.WriteString(" Watch msgs in | mvcc range | mvcc put | apiserver get / list / getCurrentResourceVersion | freshcache fetches | progress requests |\n|---|---|---:|")
	b.WriteString(strings.Repeat("---:|", len(etcdMethods)+6) + "\n")
	for _, r := range rows {
		fmt.Fprintf(b, "| %s | %s | %d |", r.Config, r.modeLabel(), r.Nodes)
		for _, m := range etcdMethods {
			fmt.Fprintf(b, " %.0f |", r.EtcdHandled[m])
		}
		fmt.Fprintf(b, " %.0f | %.0f | %.0f | %.0f / %.0f / %.0f | %.0f | %.0f |\n", r.EtcdWatchMsgs, r.EtcdMVCC["range_total"], r.EtcdMVCC["put_total"],
			r.APIEtcdOps["get"], r.APIEtcdOps["list"]+r.APIEtcdOps["listWithCount"]+r.APIEtcdOps["listStream"], r.APIEtcdOps["getCurrentResourceVersion"], r.RevisionFetches, r.ProgressRequests)
	}
}

// writeClusterFreshness is freshcache's own work for fresh reads: how
// many reads each revision fetch answered, what a fetch took, and which
// resources asked for progress. Rows of runs that predate these figures
// (or of upstream, which exports none) are left out; so is the whole
// table when no row has them.
func writeClusterFreshness(b *strings.Builder, rows []Row) {
	var mine []Row
	for _, r := range rows {
		if r.RevisionFetches > 0 && r.FetchReads > 0 {
			mine = append(mine, r)
		}
	}
	if len(mine) == 0 {
		return
	}
	b.WriteString("\n## freshcache's freshness work in the window\n\nFrom freshcache's own metrics, every resource: `reads_total` (reads that needed freshness), `revision_fetches_total`, the sums of `reads_per_revision_fetch` (reads answered) and `revision_fetch_duration_seconds`, `progress_requests_total` by resource (the three that sent most), and `progress_stalls_total`: requests no notification answered within the stall time (100 ms from 3fa7bdb, 250 ms before it; etcd drops one while a watch on the stream is not synced), each followed by another. \"held revisions\" is `revisions_completed_total`: revisions the reflectors held until something proved them whole (etcd gives every key of a transaction one revision), by what did: a later event / a progress notification (a round trip) / the apiserver's own single-key write of it (from 4366df5). \"answered by writes\" is `reads_answered_by_writes_total`: reads whose revision came from a write the apiserver sent after they arrived (RevisionsFromWrites, from the commit after 4c5a104), which spares their fetch. \"held: by a write / expired\" is `revision_holds_total`: rounds of reads that found no fetch in flight and were held for the apiserver's next write (twice the mean write gap, at most 20 ms; from 95f9255), by whether a write came (a fetch saved) or the hold ran out (a fetch sent late). \"caught up on own writes\" is `own_write_advances_total`: the times a cache behind a read's revision reached it without a progress request, because every revision in between was the apiserver's own write of another resource (ProgressFromOwnWrites from 4366df5, on by default since 2026-12-06; a bounded rv=0 read's known revision goes through the ledger too from the commit after 45ec156). A fetch answers every read that arrived before it was sent, so reads per fetch grow with the rate of fresh reads times a fetch's round trip. \"If independent\" is what the cost model assumes for that rate and round trip: rate×rtt + e^(−rate×rtt) reads per fetch; reads that arrive together (the probe sends four at once) share more.\n\n| configuration | mode | nodes | fresh reads (/s) | fetches | reads per fetch | answered by writes | held: by a write / expired | if independent | fetch mean ms | progress requests | stalls | most progress requests | held revisions: event / progress / own write | caught up on own writes |\n|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---|---|---:|\n")
	for _, r := range mine {
		var top []string
		keys := sortedKeys(r.ProgressByResource)
		slices.SortStableFunc(keys, func(x, y string) int { return report.CompareFloat(r.ProgressByResource[y], r.ProgressByResource[x]) })
		for _, k := range keys[:min(len(keys), 3)] {
			top = append(top, fmt.Sprintf("%s %.0f", k, r.ProgressByResource[k]))
		}
		rate := 0.0
		if r.WindowSeconds > 0 {
			rate = r.FreshReads / r.WindowSeconds
		}
		rtt := r.FetchSeconds / r.RevisionFetches
		held := "–"
		if len(r.Holds) > 0 {
			held = fmt.Sprintf("%.0f / %.0f", r.Holds["write"], r.Holds["expired"])
		}
		completed := "–"
		if len(r.RevisionsCompleted) > 0 {
			c := r.RevisionsCompleted
			completed = fmt.Sprintf("%.0f / %.0f / %.0f", c["event"], c["progress"], c["own_write"])
		}
		fmt.Fprintf(b, "| %s | %s | %d | %.0f (%.1f) | %.0f | %.2f | %.0f | %s | %.2f | %.2f | %.0f | %.0f | %s | %s | %.0f |\n", r.Config, r.modeLabel(), r.Nodes, r.FreshReads, rate,
			r.RevisionFetches, r.FetchReads/r.RevisionFetches, r.WriteReads, held, ratio(rate, sharedFetchRate(rate, rtt)), 1000*rtt, r.ProgressRequests, r.ProgressStalls, strings.Join(top, ", "), completed, r.OwnWriteAdvances)
	}
}

// writeClusterWaitParts sets the freshness wait beside its pieces. The
// two implementations start their wait at different points: freshcache's
// at the read's arrival (its revision fetch and the CPU wait after release
// included), upstream's after its getCurrentResourceVersion, for
// consistent LISTs only. Rows without the pieces (older runs) are left
// out.
func writeClusterWaitParts(b *strings.Builder, rows []Row) {
	var mine []Row
	for _, r := range rows {
		if len(r.WaitParts) > 0 {
			mine = append(mine, r)
		}
	}
	if len(mine) == 0 {
		return
	}
	b.WriteString("\n## The freshness wait, split\n\nFor pods, p50 / p99 ms (count), the apiservers summed. \"wait\" is the implementation's own histogram: freshcache's `read_wait_seconds` runs from a read's arrival until it is served (its revision fetch, the catch-up and the CPU wait after release), for every fresh read; upstream's `watch_cache_read_wait_seconds` starts after its `getCurrentResourceVersion` and covers consistent LISTs only. \"released\" is freshcache's `read_release_seconds`: arrival until the protocol let the read go. \"revision fetch\" is freshcache's `revision_fetch_duration_seconds` (every resource: one fetch answers them all) and upstream's `getCurrentResourceVersion` for pods from `etcd_request_duration_seconds`, whose buckets start at 5 ms.\n\n")
	writeQuantileColumns(b, mine, waitParts, "%.1f", func(r Row) []Quantiles { return r.WaitParts })
}

// writeQuantileColumns writes a table with one line per row and one column
// per key, each cell "p50 / p99 (count)" in ms of the row's Quantiles
// (of) with that key, or "–" where it has none. p99Verb formats the p99.
func writeQuantileColumns(b *strings.Builder, rows []Row, keys []string, p99Verb string, of func(r Row) []Quantiles) {
	b.WriteString("| configuration | mode | nodes |")
	for _, k := range keys {
		fmt.Fprintf(b, " %s |", k)
	}
	b.WriteString("\n|---|---|---:|" + strings.Repeat("---:|", len(keys)) + "\n")
	for _, r := range rows {
		fmt.Fprintf(b, "| %s | %s | %d |", r.Config, r.modeLabel(), r.Nodes)
		for _, k := range keys {
			text := "–"
			if i := slices.IndexFunc(of(r), func(q Quantiles) bool { return q.Key == k }); i >= 0 {
				q := of(r)[i]
				text = fmt.Sprintf("%.1f / "+p99Verb+" (%.0f)", q.P50Ms, q.P99Ms, q.Count)
			}
			fmt.Fprintf(b, " %s |", text)
		}
		b.WriteString("\n")
	}
}

func writeClusterLatency(b *strings.Builder, rows []Row) {
	// The keys most requests went to, over every row.
	counts := map[string]float64{}
	for _, r := range rows {
		for _, l := range r.Latency {
			counts[l.Key] += l.Count
		}
	}
	keys := sortedKeys(counts)
	slices.SortStableFunc(keys, func(a, b string) int { return report.CompareFloat(counts[b], counts[a]) })
	keys = keys[:min(len(keys), 8)]
	slices.Sort(keys)
	b.WriteString("\n## Pod request latency by verb and scope\n\n`apiserver_request_duration_seconds` deltas over the window for pods (every client: kubelets, controllers, scheduler, informers, the benchmark), the apiservers summed; p50 / p99 ms interpolated inside the histogram's buckets (5, 25, 50, 100, 200, 400, 600, 800 ms, 1 s ...), so a p50 under 5 ms only says \"under 5 ms\". Count in parentheses.\n\n")
	writeQuantileColumns(b, rows, keys, "%.0f", func(r Row) []Quantiles { return r.Latency })
}

func writeClusterClients(b *strings.Builder, rows []Row) {
	b.WriteString("\n## The benchmark's LIST clients and the informers\n\nLIST clients (client-side, open loop; sent / answered, p50 / p99 ms, mean items):\n\n| configuration | mode | nodes |")
	var kinds []string
	if len(rows) > 0 {
		for _, rd := range rows[0].Reads {
			kinds = append(kinds, rd.Kind+" "+rvLabel(rd.RV))
		}
	}
	for _, k := range kinds {
		fmt.Fprintf(b, " %s |", k)
	}
	b.WriteString(" errors |\n|---|---|---:|" + strings.Repeat("---:|", len(kinds)+1) + "\n")
	for _, r := range rows {
		fmt.Fprintf(b, "| %s | %s | %d |", r.Config, r.modeLabel(), r.Nodes)
		var errs int64
		first := ""
		for _, rd := range r.Reads {
			fmt.Fprintf(b, " %d / %d, %.1f / %.1f, %.0f |", rd.Sent, rd.OK, rd.P50Ms, rd.P99Ms, rd.Items)
			errs += rd.Errors
			if first == "" && rd.FirstError != "" {
				first = " (" + strings.ReplaceAll(rd.FirstError, "|", "/") + ")"
			}
		}
		fmt.Fprintf(b, " %d%s |\n", errs, first)
	}
	b.WriteString("\nInformers (per WatchListClient value, as each child's client-go reported it; the requests its informers sent for pods, counted in the child's transport; the children's own CPU over their life, not in the servers' figures):\n\n| configuration | mode | nodes | WatchListClient | informers | syncs | sync p50 / p99 ms | events | child CPU s | requests |\n|---|---|---:|---|---:|---:|---:|---:|---:|---|\n")
	for _, r := range rows {
		for _, inf := range r.Informers {
			sync := slices.Clone(inf.SyncMs)
			slices.Sort(sync)
			var req []string
			for _, k := range sortedKeys(inf.Requests) {
				req = append(req, fmt.Sprintf("%s: %d", k, inf.Requests[k]))
			}
			kind := fmt.Sprint(inf.Informers)
			if inf.PerNode {
				kind += " node watches"
			}
			fmt.Fprintf(b, "| %s | %s | %d | %v | %s | %d | %.0f / %.0f | %d | %.1f | %s |\n", r.Config, r.modeLabel(), r.Nodes, inf.WatchListClient, kind, inf.Syncs,
				quantileSorted(sync, 0.5), quantileSorted(sync, 0.99), inf.Events, inf.CPUSeconds, strings.Join(req, ", "))
		}
	}
}

// quantileSorted is the nearest-rank quantile of sorted values.
func quantileSorted(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	k := int(math.Ceil(q*float64(len(v)))) - 1
	return v[max(0, min(k, len(v)-1))]
}

func writeClusterCalibration(b *strings.Builder, rows []Row) {
	b.WriteString("\n## Calibration: each read kind alone on the idle cluster\n\nAfter the window the Deployments settle, then the cluster idles (nodes, controllers and informers' watches only) and each read kind runs alone against kube-apiserver-1. A kind's cost per request is what the servers did beyond the idle rate, over the requests answered: the cost model's inputs. On a shared machine a cheap kind's figure can fall inside the idle rate's noise.\n\n| configuration | mode | nodes | idle apiserver / etcd cores | idle etcd reads/s | kind | requests | items | apiserver CPU ms/req | etcd CPU ms/req | etcd reads/req | p99 ms |\n|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		for i, c := range r.Calibration {
			idle, reads := "", ""
			if i == 0 {
				idle = fmt.Sprintf("%.3f / %.3f", r.Idle.APICPUPerSec, r.Idle.EtcdCPUPerSec)
				reads = fmt.Sprintf("%.1f", r.Idle.EtcdReadsPerSec)
			}
			fmt.Fprintf(b, "| %s | %s | %d | %s | %s | %s %s | %d | %.0f | %.2f | %.2f | %.2f | %.1f |\n", r.Config, r.modeLabel(), r.Nodes, idle, reads,
				c.Kind, rvLabel(c.RV), c.Requests, c.Items, c.APICPUMsPerReq, c.EtcdCPUMsPerReq, c.EtcdReadsPerReq, c.P99Ms)
		}
	}
}

func writeCostModel(b *strings.Builder, r Report) {
	if len(r.Estimates) == 0 {
		return
	}
	m0 := r.Models[0]
	fmt.Fprintf(b, "\n## Cost model: %d nodes, %d pods\n\nEach configuration's terms, measured at the largest single-apiserver node count every configuration ran (%d nodes, %d pods), extrapolated to %d nodes and %d pods (KEP-2340's scale): %.0fx the nodes, %.0fx the pods. Cores are CPU seconds per second. The further the factor, the more the figures are the model's arithmetic rather than a forecast; compare the configurations with each other, not with a real cluster.\n\n",
		kepScale.Nodes, kepScale.Pods, m0.Nodes, m0.Pods, kepScale.Nodes, kepScale.Pods, ratio(float64(kepScale.Nodes), float64(m0.Nodes)), ratio(float64(kepScale.Pods), float64(m0.Pods)))
	b.WriteString("| configuration | apiserver cores | etcd cores | etcd reads/s | apiserver vs upstream | etcd CPU vs upstream | etcd reads vs upstream |\n|---|---:|---:|---:|---:|---:|---:|\n")
	var up *CostEstimate
	for i := range r.Estimates {
		if r.Estimates[i].Config == Upstream {
			up = &r.Estimates[i]
		}
	}
	vs := func(a, b float64) string {
		if p := ratioPtr(a, b); p != nil {
			return fmt.Sprintf("%.2f", *p)
		}
		return "–"
	}
	for _, e := range r.Estimates {
		rel := [3]string{"–", "–", "–"}
		if up != nil {
			rel = [3]string{vs(e.APICores, up.APICores), vs(e.EtcdCores, up.EtcdCores), vs(e.EtcdReadsPerSec, up.EtcdReadsPerSec)}
		}
		fmt.Fprintf(b, "| %s | %.2f | %.2f | %.0f | %s | %s | %s |\n", e.Config, e.APICores, e.EtcdCores, e.EtcdReadsPerSec, rel[0], rel[1], rel[2])
	}
	fmt.Fprintf(b, "\nKEP-2340 published, at 5,000 nodes, for consistent reads from cache against consistent reads from etcd: about %.0f%% less kube-apiserver CPU (ratio %.2f), %.0f%% less etcd CPU (%.2f), and pod LIST p99 from %.0f s to %.1f s. Those compare with *etcd* reads; upstream 1.37, the baseline here, already serves consistent LISTs from its cache (ConsistentListFromCache), so the ratios above are what freshcache adds on top of the KEP, not the KEP's own gain. LIST latency is not extrapolated; the measured pod LIST p99 ratio is in the targets table.\n\n",
		(1-kepAPICPURatio)*100, kepAPICPURatio, (1-kepEtcdCPURatio)*100, kepEtcdCPURatio, kepListP99From, kepListP99To)
	b.WriteString("The terms (at the target; a * marks a per-request cost measured below zero and taken as zero):\n\n| configuration | term | scale | rate where measured /s | apiserver ms/req | etcd ms/req | etcd reads/req | apiserver cores | etcd cores | etcd reads/s |\n|---|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for i, m := range r.Models {
		e := r.Estimates[i]
		p0 := e.Parts[0]
		fmt.Fprintf(b, "| %s | idle cluster: apiserver %.4f + %.5f/node, etcd %.4f + %.5f/node cores (%d points) | nodes | | | | | %.2f | %.2f | %.0f |\n",
			m.Config, m.IdleAPI.A, m.IdleAPI.B, m.IdleEtcd.A, m.IdleEtcd.B, m.IdleAPI.Points, p0.APICores, p0.EtcdCores, p0.EtcdReadsPerSec)
		for j, t := range m.Terms {
			p := e.Parts[j+1]
			mark := ""
			if t.Clamped {
				mark = "*"
			}
			fmt.Fprintf(b, "| %s | %s%s | %s | %.2f | %.3f | %.3f | %.3f | %.2f | %.2f | %.0f |\n", m.Config, t.Name, mark, t.Scale, t.Rate,
				t.APICPU*1000, t.EtcdCPU*1000, t.EtcdReads, p.APICores, p.EtcdCores, p.EtcdReadsPerSec)
		}
		for _, p := range e.Parts[min(len(e.Parts), len(m.Terms)+1):] {
			fmt.Fprintf(b, "| %s | %s | coalescing | | | | | | | %.0f |\n", m.Config, p.Name, p.EtcdReadsPerSec)
		}
	}
	b.WriteString("\nWhat the extrapolation assumes:\n\n")
	for _, a := range costModelAssumptions {
		fmt.Fprintf(b, "- %s\n", a)
	}
}

// clusterLimits is what the report cannot measure here, and why.
const clusterLimits = `
## What this cannot measure, and why

- **etcd CPU alone.** local-up runs etcd embedded in its own process (lab/pkg/etcdlocal; all three members in HA), so "etcd CPU" is that process: the members plus local-up's supervision of its children, which is idle once they run. Nothing is subtracted.
- **Linearizable vs serializable Range.** etcd v3.7's metrics count Range by gRPC method only (grpc_server_handled_total, etcd_mvcc_range_total); no label says which. Every Range kube-apiserver sends here is linearizable (the etcd3 store never asks for serializable; freshcache's revision fetch is linearizable by design), so Range is the count of linearizable reads, GETs, LISTs and revision fetches together; the apiservers' etcd_requests_total splits them by operation.
- **Progress requests.** etcd counts them only as messages on Watch streams, together with watch creations and cancellations. freshcache counts its own; upstream's cacher exports no such counter.
- **Pod start latency to the millisecond from the pods themselves.** Pod conditions and status times have whole seconds (metav1.Time), so the status figure (scheduled→started) moves in steps of a second; the millisecond one (bound→Running) is when a watch saw each state, which adds the watch's delivery variation.
- **A quiet machine.** Every process, the benchmark's clients and informer children included, shares the same cores; the CPU figures are per process and hold up better than the latencies.
`

func fmtList(v []float64, format string) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprintf(format, x)
	}
	return strings.Join(parts, ", ")
}
