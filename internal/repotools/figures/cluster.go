package figures

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// The cluster benchmark's configurations and modes, as cluster.json
// spells them.
const (
	cfgUpstream   = "upstream"
	cfgFreshcache = "freshcache"
	cfgGate       = "freshcache-fresh-rv0"
	modeSingle    = "single"
	modeHA        = "ha"
)

// clusterReport is `freshcache-bench cluster`, and `freshcache-bench
// scale`, which writes the same cells with a restart storm each.
type clusterReport struct {
	header
	Cells []clusterCell `json:"cells"`
	// file is the report's name in docs/results, for errors.
	file string
}

type clusterCell struct {
	Config     string   `json:"config"`
	Mode       string   `json:"mode"`
	Nodes      int      `json:"nodes"`
	Repeat     int      `json:"repeat"`
	APICPUSec  float64  `json:"apiserver_cpu_seconds"`
	EtcdReads  float64  `json:"etcd_reads"`
	ListP99Ms  *float64 `json:"list_p99_ms"`
	FreshReads float64  `json:"fresh_reads"`
	Fetches    float64  `json:"revision_fetches"`
	FetchReads float64  `json:"fetch_reads"`
	WriteReads float64  `json:"write_reads"`
	// Storm is the restart storm after the window (scale cells only).
	Storm *struct {
		SyncP99Ms float64            `json:"sync_p99_ms"`
		EtcdReads float64            `json:"etcd_reads"`
		Rejected  map[string]float64 `json:"rejected"`
	} `json:"storm"`
	FreshWaitP99Ms *float64 `json:"fresh_wait_p99_ms"`
	// Reads are the benchmark's LIST clients, client side.
	Reads []struct {
		Kind  string  `json:"kind"`
		RV    string  `json:"rv"`
		OK    int64   `json:"ok"`
		P99Ms float64 `json:"p99_ms"`
	} `json:"reads"`
	Probe struct {
		Writes int              `json:"writes"`
		Reads  map[string]int64 `json:"reads"`
		Stale  map[string]int64 `json:"stale"`
	} `json:"probe"`
}

// The probe's read kinds.
const (
	probeGetZero        = "get rv=0"
	probeListZero       = "list rv=0"
	probeGetConsistent  = `get rv=""`
	probeListConsistent = `list rv=""`
)

// reportFigure returns the builder of figures computed from file, a
// cluster report (cluster.json, scale.json).
func reportFigure(file string) func(key, what string, get func(*clusterReport) (Value, error)) Figure {
	return func(key, what string, get func(*clusterReport) (Value, error)) Figure {
		return Figure{Key: key, From: []string{file}, What: what, Get: func(s *Source) (Value, error) {
			r, err := loadJSON[clusterReport](s, file)
			if err != nil {
				return Value{}, err
			}
			r.file = file
			return get(r)
		}}
	}
}

// cells are the cells of config in mode at nodes, by repeat.
func (r *clusterReport) cells(config, mode string, nodes int) []clusterCell {
	var out []clusterCell
	for _, c := range r.Cells {
		if c.Config == config && c.Mode == mode && c.Nodes == nodes {
			out = append(out, c)
		}
	}
	slices.SortStableFunc(out, func(a, b clusterCell) int { return a.Repeat - b.Repeat })
	return out
}

// ratioNodes is the node count the closing line's ratios are at: the
// largest single-apiserver count at which both upstream and the gate ran
// (as the cluster report picks it for its closing line).
func (r *clusterReport) ratioNodes() (int, error) {
	n := 0
	for _, c := range r.Cells {
		if c.Config == cfgGate && c.Mode == modeSingle && len(r.cells(cfgUpstream, modeSingle, c.Nodes)) > 0 {
			n = max(n, c.Nodes)
		}
	}
	if n == 0 {
		return 0, fmt.Errorf("%w: %s has no node count where upstream and %s both ran", ErrNotInResults, r.file, cfgGate)
	}
	return n, nil
}

// paired walks the pairs of the gate's and upstream's cells of the same
// repeat at the ratio node count, and keeps what pick makes of each pair
// (nothing where pick says no). It returns that node count too, for the
// callers' errors. pairRatios and pairedGate share it, so that the ratios
// and the gate's absolute figures are always over the same cells.
func (r *clusterReport) paired(pick func(g, u clusterCell) (float64, bool)) (int, []float64, error) {
	n, err := r.ratioNodes()
	if err != nil {
		return 0, nil, err
	}
	gs, us := r.cells(cfgGate, modeSingle, n), r.cells(cfgUpstream, modeSingle, n)
	var out []float64
	for i := range min(len(gs), len(us)) {
		if v, ok := pick(gs[i], us[i]); ok {
			out = append(out, v)
		}
	}
	return n, out, nil
}

// ratioNodesFigure is ratioNodes as a figure, the count the ratios are at.
func (r *clusterReport) ratioNodesFigure() (Value, error) {
	n, err := r.ratioNodes()
	return Count(n), err
}

// pairRatios are, for each pair of the gate's and upstream's cells of the
// same repeat at the ratio node count, the gate's f over upstream's f.
func (r *clusterReport) pairRatios(f func(clusterCell) (float64, bool)) ([]float64, error) {
	n, out, err := r.paired(func(gc, uc clusterCell) (float64, bool) {
		g, okG := f(gc)
		u, okU := f(uc)
		if okG && okU && u != 0 {
			return g / u, true
		}
		return 0, false
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s has no pair of cells at %d nodes", ErrNotInResults, r.file, n)
	}
	return out, nil
}

// pairedGate returns the median of f over the gate's cells that have an
// upstream pair at the ratios' node count: an absolute figure of the gate,
// over the same cells the ratios use.
func (r *clusterReport) pairedGate(f func(clusterCell) (float64, bool)) (float64, error) {
	n, out, err := r.paired(func(g, _ clusterCell) (float64, bool) { return f(g) })
	if err != nil {
		return 0, err
	}
	if len(out) == 0 {
		return 0, fmt.Errorf("%w: %s has no paired gate cell at %d nodes with that figure", ErrNotInResults, r.file, n)
	}
	return median(out), nil
}

// storm429Of is the storm's 429s that the freshness wait sent. The
// report keeps only the counters that moved, so a storm with no 429s has
// an empty map (none: a report from before the count existed).
func storm429Of(c clusterCell) (float64, bool) {
	if c.Storm == nil || c.Storm.Rejected == nil {
		return 0, false
	}
	return c.Storm.Rejected["freshness wait"], true
}

func waitP99Of(c clusterCell) (float64, bool) {
	if c.FreshWaitP99Ms == nil {
		return 0, false
	}
	return *c.FreshWaitP99Ms, true
}

func stormSyncOf(c clusterCell) (float64, bool) {
	if c.Storm == nil {
		return 0, false
	}
	return c.Storm.SyncP99Ms, true
}

func stormReadsOf(c clusterCell) (float64, bool) {
	if c.Storm == nil {
		return 0, false
	}
	return c.Storm.EtcdReads, true
}

func cpuOf(c clusterCell) (float64, bool)   { return c.APICPUSec, true }
func readsOf(c clusterCell) (float64, bool) { return c.EtcdReads, true }

// promisedStaleValue is promisedStale as the docs quote it: "No" when
// there is none.
func (r *clusterReport) promisedStaleValue() (Value, error) {
	if n := r.promisedStale(); n > 0 {
		return Count(int(n)), nil
	}
	return Text("No"), nil
}

// pairCount is how many pairs of cells the ratios are medians of.
func (r *clusterReport) pairCount() (Value, error) {
	rs, err := r.pairRatios(cpuOf)
	return Count(len(rs)), err
}

// nodeListRV0P99Of is the client-side p99 of the LISTs of one node's pods
// at rv=0.
func nodeListRV0P99Of(c clusterCell) (float64, bool) {
	for _, x := range c.Reads {
		if x.Kind == "list-node" && x.RV == "0" && x.OK > 0 {
			return x.P99Ms, true
		}
	}
	return 0, false
}

func listP99Of(c clusterCell) (float64, bool) {
	if c.ListP99Ms == nil {
		return 0, false
	}
	return *c.ListP99Ms, true
}

// promisedStale counts the probe's stale answers to reads c's
// configuration promises fresh: rv="" on freshcache, every read with the
// gate (as the closing line's stale= counts them).
func promisedStale(c clusterCell) int64 {
	switch c.Config {
	case cfgFreshcache:
		return c.Probe.Stale[probeGetConsistent] + c.Probe.Stale[probeListConsistent]
	case cfgGate:
		var n int64
		for _, v := range c.Probe.Stale {
			n += v
		}
		return n
	}
	return 0
}

// group is the cells of one configuration at one mode and node count.
type group struct {
	mode  string
	nodes int
}

func (g group) String() string {
	if g.mode == modeHA {
		return fmt.Sprintf("HA %d", g.nodes)
	}
	return fmt.Sprint(g.nodes)
}

// upstreamGroups are the mode and node counts at which upstream has a
// cell: the rows a comparison with upstream can have. Single before HA,
// by nodes.
func (r *clusterReport) upstreamGroups() []group {
	var out []group
	for _, c := range r.Cells {
		g := group{c.Mode, c.Nodes}
		if c.Config == cfgUpstream && !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	rank := func(g group) int {
		if g.mode == modeSingle {
			return 0
		}
		return 1
	}
	slices.SortFunc(out, func(a, b group) int {
		if c := cmp.Compare(rank(a), rank(b)); c != 0 {
			return c
		}
		return cmp.Compare(a.nodes, b.nodes)
	})
	return out
}

// staleRV0 is the share of config's rv=0 probe reads at g answered
// stale, over all its cells there; ok is false when it has none.
func (r *clusterReport) staleRV0(config string, g group) (share float64, ok bool) {
	var stale, reads int64
	for _, c := range r.cells(config, g.mode, g.nodes) {
		stale += c.Probe.Stale[probeGetZero] + c.Probe.Stale[probeListZero]
		reads += c.Probe.Reads[probeGetZero] + c.Probe.Reads[probeListZero]
	}
	if reads == 0 {
		return 0, false
	}
	return float64(stale) / float64(reads), true
}

// staleRV0Range is the range of config's stale rv=0 share over the groups
// upstream also ran.
func (r *clusterReport) staleRV0Range(config string) ([]float64, error) {
	var out []float64
	for _, g := range r.upstreamGroups() {
		if v, ok := r.staleRV0(config, g); ok {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s has no rv=0 probe reads of %s", ErrNotInResults, r.file, config)
	}
	return out, nil
}

// kepTable renders the KEP's table of the cluster benchmark: per group
// upstream ran, each freshcache configuration's CPU / etcd reads / pod
// LIST p99 over upstream's of the same repeat (or the median over the
// pairs), and the share of rv=0 probe reads answered stale.
func (r *clusterReport) kepTable() (Value, error) {
	parts := []any{"| nodes | freshcache | + `FreshResourceVersionZero` | stale rv=0: upstream, freshcache, + gate |\n|---:|---|---|---|\n"}
	for _, g := range r.upstreamGroups() {
		us := r.cells(cfgUpstream, g.mode, g.nodes)
		parts = append(parts, "| "+g.String()+" | ")
		for _, cfg := range []string{cfgFreshcache, cfgGate} {
			parts = append(parts, ratioCell(r.cells(cfg, g.mode, g.nodes), us), " | ")
		}
		var stale []any
		for i, cfg := range []string{cfgUpstream, cfgFreshcache, cfgGate} {
			if i > 0 {
				stale = append(stale, ", ")
			}
			v, ok := r.staleRV0(cfg, g)
			switch {
			case !ok:
				stale = append(stale, "–")
			case cfg == cfgGate && v == 0:
				stale = append(stale, "0")
			default:
				stale = append(stale, Pct(v), "%")
			}
		}
		parts = append(parts, Join(stale...), " |\n")
	}
	v := Join(parts...)
	v.Text = strings.TrimSuffix(v.Text, "\n")
	return v, nil
}

// ratioCell is "cpu / reads / p99" of cs over us, pairing cells by
// repeat: one pair gives its ratios, several their medians.
func ratioCell(cs, us []clusterCell) Value {
	if len(cs) == 0 {
		return Text("–")
	}
	var cpu, reads, p99 []float64
	for _, c := range cs {
		for _, u := range us {
			if u.Repeat != c.Repeat {
				continue
			}
			cpu = append(cpu, c.APICPUSec/u.APICPUSec)
			reads = append(reads, c.EtcdReads/u.EtcdReads)
			if c.ListP99Ms != nil && u.ListP99Ms != nil {
				p99 = append(p99, *c.ListP99Ms / *u.ListP99Ms)
			}
		}
	}
	if len(cpu) == 0 {
		return Text("(another run's cell)")
	}
	p := Text("–")
	if len(p99) > 0 {
		p = F(median(p99), 2)
	}
	v := Join(F(median(cpu), 2), " / ", F(median(reads), 2), " / ", p)
	if len(cpu) > 1 {
		v = Join(v, ", medians of ", Count(len(cpu)), " pairs")
	}
	return v
}
