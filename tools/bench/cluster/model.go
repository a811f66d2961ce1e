package cluster

// The cost model: what the measured per-request costs say about a cluster
// of 5,000 nodes and 150,000 pods (KEP-2340's scale). Pure arithmetic on
// ClusterRows; what it assumes is in costModelAssumptions, which the report
// prints.

import (
	"fmt"
	"math"
	"slices"

	"github.com/freshcache/freshcache/tools/bench/report"
)

// CostTarget is the cluster the model extrapolates to.
type CostTarget struct {
	Nodes int `json:"nodes"`
	Pods  int `json:"pods"`
}

// kepScale is KEP-2340's 5,000-node figure.
var kepScale = CostTarget{Nodes: 5000, Pods: 150000}

// KEP-2340's published gains of consistent reads from cache at 5,000
// nodes, against consistent reads from etcd.
const (
	kepAPICPURatio  = 0.70 // ~30% less kube-apiserver CPU
	kepEtcdCPURatio = 0.75 // ~25% less etcd CPU
	kepListP99From  = 5.0  // pod LIST p99, seconds, before
	kepListP99To    = 1.5  // and after
)

// Line is y = A + B*x, from a least-squares fit.
type Line struct {
	A      float64 `json:"a"`
	B      float64 `json:"b"`
	Points int     `json:"points"`
}

func (l Line) at(x float64) float64 { return l.A + l.B*x }

// fitLine fits y = A + B*x. With one distinct x the line goes through the
// origin (everything is taken as growing with x); with none it is zero.
func fitLine(xs, ys []float64) Line {
	n := float64(len(xs))
	l := Line{Points: len(xs)}
	if len(xs) == 0 {
		return l
	}
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx, sy, sxx, sxy = sx+xs[i], sy+ys[i], sxx+xs[i]*xs[i], sxy+xs[i]*ys[i]
	}
	den := n*sxx - sx*sx
	if math.Abs(den) < 1e-12 {
		if sx != 0 {
			l.B = sy / sx
		}
		return l
	}
	l.B = (n*sxy - sx*sy) / den
	l.A = (sy - l.B*sx) / n
	return l
}

// How a term's rate and per-request cost grow from the measured cluster
// to the target.
const (
	// scaleNodes: one client per node (kubelet-like LISTs of a node's
	// pods, GETs); rate grows with nodes, cost with pods per node.
	scaleNodes = "per-node"
	// scaleNodesOne: per-node clients reading one object (GETs): rate
	// grows with nodes, cost stays.
	scaleNodesOne = "per-node, one object"
	// scaleCluster: a fixed set of cluster-wide clients (monitoring,
	// informers); rate stays, cost grows with pods.
	scaleCluster = "cluster-wide"
	// scaleChurn: the pod churn; grows with pods (the same share of pods
	// replaced per second), cost per pod change constant.
	scaleChurn = "churn"
)

// CostTerm is one part of the load: its rate and costs where measured.
type CostTerm struct {
	Name  string  `json:"name"`
	Scale string  `json:"scale"`
	Rate  float64 `json:"rate"` // requests (churn: pods created or deleted) per second where measured
	// Per request where measured: apiserver and etcd CPU (seconds) and
	// etcd reads.
	APICPU    float64 `json:"apiserver_cpu"`
	EtcdCPU   float64 `json:"etcd_cpu"`
	EtcdReads float64 `json:"etcd_reads"`
	// Clamped notes a negative measurement (noise below the idle rate)
	// taken as zero.
	Clamped bool `json:"clamped,omitempty"`
}

// clamp takes a negative cost (calibration noise below the idle rate) as
// zero, and says so.
func (t *CostTerm) clamp() {
	for _, v := range []*float64{&t.APICPU, &t.EtcdCPU, &t.EtcdReads} {
		if *v < 0 {
			*v, t.Clamped = 0, true
		}
	}
}

// CostModel is one configuration's measured costs.
type CostModel struct {
	Config string `json:"config"`
	// Nodes and Pods are where the terms were measured (the largest
	// single-apiserver node count every configuration ran).
	Nodes int `json:"nodes"`
	Pods  int `json:"pods"`
	// Idle* are the idle cluster's rates (cores, reads/s) against nodes,
	// fitted over the sweep.
	IdleAPI   Line       `json:"idle_apiserver"`
	IdleEtcd  Line       `json:"idle_etcd"`
	IdleReads Line       `json:"idle_etcd_reads"`
	Terms     []CostTerm `json:"terms"`
	// FetchShare is the share of the measured window's etcd reads that
	// were freshcache's revision fetches, FetchRoundTrip a fetch's mean
	// round trip there (seconds). Both are zero for upstream, which has no
	// fetches to share.
	FetchShare     float64 `json:"fetch_share,omitempty"`
	FetchRoundTrip float64 `json:"fetch_round_trip_seconds,omitempty"`
}

// sharedFetchRate is how many revision fetches per second answer fresh
// reads arriving at rate (per second, independent arrivals) when one fetch
// of round trip rtt is in flight at a time and each answers every read
// that arrived before it was sent: a fetch answers the reads that arrived
// during the one before it, or, if none did, the single read that starts
// it, so it answers rate*rtt + exp(-rate*rtt) reads on average. Slow reads
// get a fetch each; fast ones at most one fetch per round trip.
func sharedFetchRate(rate, rtt float64) float64 {
	if rate <= 0 {
		return 0
	}
	if rtt <= 0 {
		return rate
	}
	x := rate * rtt
	return rate / (x + math.Exp(-x))
}

// CostEstimate is a model at a target: cores and etcd reads per second.
type CostEstimate struct {
	Config          string      `json:"config"`
	Target          CostTarget  `json:"target"`
	APICores        float64     `json:"apiserver_cores"`
	EtcdCores       float64     `json:"etcd_cores"`
	EtcdReadsPerSec float64     `json:"etcd_reads_per_sec"`
	Parts           []CostShare `json:"parts"`
}

// CostShare is one term (or the idle cluster) at the target.
type CostShare struct {
	Name            string  `json:"name"`
	APICores        float64 `json:"apiserver_cores"`
	EtcdCores       float64 `json:"etcd_cores"`
	EtcdReadsPerSec float64 `json:"etcd_reads_per_sec"`
}

// extrapolate applies the model at t.
func (m CostModel) extrapolate(t CostTarget) CostEstimate {
	e := CostEstimate{Config: m.Config, Target: t}
	add := func(s CostShare) {
		e.Parts = append(e.Parts, s)
		e.APICores += s.APICores
		e.EtcdCores += s.EtcdCores
		e.EtcdReadsPerSec += s.EtcdReadsPerSec
	}
	n := float64(t.Nodes)
	add(CostShare{Name: "idle cluster", APICores: max(0, m.IdleAPI.at(n)), EtcdCores: max(0, m.IdleEtcd.at(n)), EtcdReadsPerSec: max(0, m.IdleReads.at(n))})
	for _, term := range m.Terms {
		rate, cost := term.Rate, 1.0
		switch term.Scale {
		case scaleNodes:
			rate *= ratio(float64(t.Nodes), float64(m.Nodes))
			cost = ratio(float64(t.Pods)/float64(max(t.Nodes, 1)), float64(m.Pods)/float64(max(m.Nodes, 1)))
		case scaleNodesOne:
			rate *= ratio(float64(t.Nodes), float64(m.Nodes))
		case scaleCluster:
			cost = ratio(float64(t.Pods), float64(m.Pods))
		case scaleChurn:
			rate *= ratio(float64(t.Pods), float64(m.Pods))
		}
		// etcd reads per request do not grow with the answer's size: an
		// etcd read is one Range however many keys it returns.
		add(CostShare{Name: term.Name, APICores: rate * term.APICPU * cost, EtcdCores: rate * term.EtcdCPU * cost, EtcdReadsPerSec: rate * term.EtcdReads})
	}
	// The terms charge each read the fetches it needed where measured,
	// where reads came slowly and a fetch answered about one. At the
	// target those reads share fetches: the fetch share of the reads is
	// replaced by the fetches that rate of reads needs.
	if m.FetchShare > 0 && m.FetchRoundTrip > 0 {
		fresh := e.EtcdReadsPerSec * m.FetchShare
		shared := sharedFetchRate(fresh, m.FetchRoundTrip)
		add(CostShare{Name: fmt.Sprintf("revision fetches shared: %.0f reads/s needing a fetch, one fetch of %.1f ms in flight", fresh, m.FetchRoundTrip*1000),
			EtcdReadsPerSec: shared - fresh})
	}
	return e
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// modelNodes is the node count every configuration's model is measured
// at: the largest single-apiserver count at which every configuration
// with single-apiserver rows has one, so that the models compare clusters
// of one size. 0 when there is none.
func modelNodes(rows []Row) int {
	have := map[string]map[int]bool{}
	for _, r := range rows {
		if r.Mode != modeSingle {
			continue
		}
		if have[r.Config] == nil {
			have[r.Config] = map[int]bool{}
		}
		have[r.Config][r.Nodes] = true
	}
	best := 0
	for _, r := range rows {
		if r.Mode != modeSingle || r.Nodes <= best {
			continue
		}
		all := true
		for _, ns := range have {
			all = all && ns[r.Nodes]
		}
		if all {
			best = r.Nodes
		}
	}
	return best
}

// medianRepeat is, of a cell's repeats, the one with the median apiserver
// CPU (the lower of the middle two for an even count): the model's terms
// come from one cluster's calibration, and this one is neither repeat's
// outlier.
func medianRepeat(rows []Row) Row {
	s := slices.Clone(rows)
	slices.SortStableFunc(s, func(a, b Row) int { return report.CompareFloat(a.APICPUSec, b.APICPUSec) })
	return s[(len(s)-1)/2]
}

// buildCostModel makes config's model from its single-apiserver rows:
// the idle lines over every node count, the terms at nodes. ok is false
// when config has no row there.
func buildCostModel(rows []Row, config string, nodes int) (CostModel, bool) {
	var mine []Row
	found := false
	for _, r := range rows {
		if r.Config == config && r.Mode == modeSingle {
			mine = append(mine, r)
			found = found || r.Nodes == nodes
		}
	}
	if !found {
		return CostModel{}, false
	}
	var xs, api, etcd, reads []float64
	for _, r := range mine {
		xs = append(xs, float64(r.Nodes))
		api, etcd, reads = append(api, r.Idle.APICPUPerSec), append(etcd, r.Idle.EtcdCPUPerSec), append(reads, r.Idle.EtcdReadsPerSec)
	}
	var at []Row
	for _, r := range mine {
		if r.Nodes == nodes {
			at = append(at, r)
		}
	}
	top := medianRepeat(at)
	m := CostModel{Config: config, Nodes: top.Nodes, Pods: top.Pods, IdleAPI: fitLine(xs, api), IdleEtcd: fitLine(xs, etcd), IdleReads: fitLine(xs, reads)}
	if top.RevisionFetches > 0 && top.EtcdReads > 0 {
		m.FetchShare = min(1, top.RevisionFetches/top.EtcdReads)
		m.FetchRoundTrip = top.FetchSeconds / top.RevisionFetches
	}

	calib := map[string]CalibRow{}
	for _, c := range top.Calibration {
		calib[c.Kind+" "+c.RV] = c
	}
	var readAPI, readEtcd, readReads float64
	term := func(name, scale, kind, rv string, rate float64) {
		c, ok := calib[kind+" "+rv]
		if !ok || rate <= 0 {
			return
		}
		t := CostTerm{Name: name, Scale: scale, Rate: rate, APICPU: c.APICPUMsPerReq / 1000, EtcdCPU: c.EtcdCPUMsPerReq / 1000, EtcdReads: c.EtcdReadsPerReq}
		t.clamp()
		readAPI += rate * t.APICPU
		readEtcd += rate * t.EtcdCPU
		readReads += rate * t.EtcdReads
		m.Terms = append(m.Terms, t)
	}
	for _, rd := range top.Reads {
		scale := scaleCluster
		if rd.Kind == readListNode {
			scale = scaleNodes
		}
		term(fmt.Sprintf("LIST %s %s", rd.Kind, rvLabel(rd.RV)), scale, rd.Kind, rd.RV, rd.Rate)
	}
	// The probe's reads: GETs as per-node clients, its LISTs by name cost
	// about what a LIST of one node's pods does.
	if w := top.WindowSeconds; w > 0 && top.Probe.Writes > 0 {
		rate := float64(top.Probe.Writes) / w
		term(`probe GET rv=""`, scaleNodesOne, readGet, rvConsistent, rate)
		term("probe GET rv=0", scaleNodesOne, readGet, rvZero, rate)
		term(`probe LIST by name rv=""`, scaleNodesOne, readListNode, rvConsistent, rate)
		term("probe LIST by name rv=0", scaleNodesOne, readListNode, rvZero, rate)
	}
	// Informer relists: a watch-list costs about a consistent LIST of
	// every pod, a relist without it is a LIST of every pod at rv=0. The
	// restarts span the warm-up and the window; each informer's first
	// sync came before them.
	for _, inf := range top.Informers {
		relists := inf.Syncs - int64(inf.Informers)
		// Node watches restart only in the storm, after the window.
		if inf.PerNode || top.WindowSeconds <= 0 || relists <= 0 {
			continue
		}
		rate := float64(relists) / (top.WindowSeconds + top.WarmupSeconds)
		if inf.WatchListClient {
			term("informer relist (watch-list)", scaleCluster, readListAll, rvConsistent, rate)
		} else {
			term("informer relist (LIST rv=0)", scaleCluster, readListAll, rvZero, rate)
		}
	}
	// The rest of the window over the idle cluster and the reads above is
	// the churn's: controllers, scheduler, kubelets and the watches that
	// carry their writes, charged per pod created or deleted.
	if w := top.WindowSeconds; w > 0 && top.PodsCreated+top.PodsDeleted > 0 {
		rate := float64(top.PodsCreated+top.PodsDeleted) / w
		t := CostTerm{Name: "pod churn and its watches, per pod created or deleted", Scale: scaleChurn, Rate: rate,
			APICPU:    (top.APICPUSec/w - top.Idle.APICPUPerSec - readAPI) / rate,
			EtcdCPU:   (top.EtcdCPUSec/w - top.Idle.EtcdCPUPerSec - readEtcd) / rate,
			EtcdReads: (top.EtcdReads/w - top.Idle.EtcdReadsPerSec - readReads) / rate}
		t.clamp()
		m.Terms = append(m.Terms, t)
	}
	return m, true
}

// costModelAssumptions is printed under the model's table.
var costModelAssumptions = []string{
	"The idle cluster (node heartbeats and status, leases, controllers, the informers' watches) grows along a straight line in nodes, fitted over the sweep's idle windows; with one node count the line goes through zero.",
	"Per-node clients (LISTs of one node's pods, GETs, the probe) send as many requests per node as here, so their rate grows with nodes; a LIST of a node's pods costs in proportion to the pods per node, a GET or the probe's one-pod LIST what it cost here.",
	"Cluster-wide clients (LISTs of every pod, informer relists) keep their rate; each request costs in proportion to the pods it returns. A watch-list is costed as a consistent LIST of every pod.",
	"The churn replaces the same share of pods per second, so its rate grows with pods, at a constant cost per pod change. It is what the window cost beyond the idle rate and the reads above.",
	"etcd reads per request are what calibration measured (about one revision fetch per fresh read, at 20 reads/s); upstream sends one per consistent LIST and per GET at rv=\"\" at any rate. freshcache's revision fetches are then shared: the share of its extrapolated reads that were fetches in the measured window is taken as fresh reads arriving independently at that rate, and replaced by the fetches one fetch in flight needs for them, with the round trip measured in the window (rate / (rate×rtt + e^(−rate×rtt)); at most one fetch per round trip). The report's freshness table sets this formula beside the reads per fetch measured in every cell. A busier etcd at 5,000 nodes would lengthen the round trip and so need fewer fetches still; reads arriving in bursts share more than independent ones.",
	"etcd CPU is local-up's process (all embedded members); per request it is what calibration measured beyond the idle rate. Writes cost the same on both implementations and are in the churn term.",
	"A negative per-request cost (calibration noise below the idle rate) is taken as zero and marked.",
	"Latency is not extrapolated: queueing at 5,000 nodes depends on the cores the servers get, which this model does not know.",
}
