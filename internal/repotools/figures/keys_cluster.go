package figures

import (
	"fmt"
	"slices"
)

// The cluster benchmark's figures (cluster.json): ratios of the gate's
// cells over upstream's at the ratio node count, as the report's closing
// line computes them, and the probe's stale answers.

func clusterFigures() []Figure {
	fig := reportFigure("cluster.json")
	two := func(x float64) Value { return F(x, 2) }
	ratio := func(name, what string, f func(clusterCell) (float64, bool)) []Figure {
		return []Figure{
			fig("cluster.ratio."+name, what+", the gate over upstream, median over the pairs", func(r *clusterReport) (Value, error) {
				rs, err := r.pairRatios(f)
				return two(median(rs)), err
			}),
			fig("cluster.ratio."+name+".pairs", what+", the gate over upstream, each pair in repeat order", func(r *clusterReport) (Value, error) {
				rs, err := r.pairRatios(f)
				var vs []Value
				for _, x := range rs {
					vs = append(vs, two(x))
				}
				return List(", ", vs...), err
			}),
		}
	}
	figs := slices.Concat(
		ratio("apiserver-cpu", "apiserver CPU", cpuOf),
		ratio("etcd-reads", "etcd reads", readsOf),
		ratio("list-p99", "pod LIST p99", listP99Of),
		[]Figure{fig("cluster.ratio.list-p99.pairs-range", "pod LIST p99, the gate over upstream, the pairs' range", func(r *clusterReport) (Value, error) {
			rs, err := r.pairRatios(listP99Of)
			return Range(rs, 2), err
		})},
	)
	listP99Secs := func(config string) func(*clusterReport) (Value, error) {
		return func(r *clusterReport) (Value, error) {
			n, err := r.ratioNodes()
			if err != nil {
				return Value{}, err
			}
			var secs []float64
			for _, c := range r.cells(config, modeSingle, n) {
				if p, ok := listP99Of(c); ok {
					secs = append(secs, p/1000)
				}
			}
			if len(secs) == 0 {
				return Value{}, fmt.Errorf("%w: no pod LIST p99 of %s at %d nodes", ErrNotInResults, config, n)
			}
			return Range(secs, 1), nil
		}
	}
	// smaller are the single-apiserver node counts below the ratios' at
	// which upstream and the gate both ran.
	smaller := func(r *clusterReport) ([]int, error) {
		n, err := r.ratioNodes()
		if err != nil {
			return nil, err
		}
		var out []int
		for _, g := range r.upstreamGroups() {
			if g.mode == modeSingle && g.nodes < n && len(r.cells(cfgGate, modeSingle, g.nodes)) > 0 {
				out = append(out, g.nodes)
			}
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("%w: no node count below %d where both ran", ErrNotInResults, n)
		}
		return out, nil
	}
	// largest is the largest single-apiserver cell of config.
	largest := func(r *clusterReport, config string) (clusterCell, error) {
		var best *clusterCell
		for i, c := range r.Cells {
			if c.Config == config && c.Mode == modeSingle && (best == nil || c.Nodes > best.Nodes) {
				best = &r.Cells[i]
			}
		}
		if best == nil {
			return clusterCell{}, fmt.Errorf("%w: no single-apiserver cell of %s", ErrNotInResults, config)
		}
		return *best, nil
	}
	largestP99 := func(config string) func(*clusterReport) (Value, error) {
		return func(r *clusterReport) (Value, error) {
			c, err := largest(r, config)
			if err != nil {
				return Value{}, err
			}
			p, ok := listP99Of(c)
			if !ok {
				return Value{}, fmt.Errorf("%w: %s at %d nodes has no pod LIST p99", ErrNotInResults, config, c.Nodes)
			}
			return sig3(p / 1000), nil
		}
	}
	staleRange := func(config string) func(*clusterReport) (Value, error) {
		return func(r *clusterReport) (Value, error) {
			v, err := r.staleRV0Range(config)
			return RangeOf(v, Pct), err
		}
	}
	staleAt := func(config string) func(*clusterReport) (Value, error) {
		return func(r *clusterReport) (Value, error) {
			n, err := r.ratioNodes()
			if err != nil {
				return Value{}, err
			}
			v, ok := r.staleRV0(config, group{modeSingle, n})
			if !ok {
				return Value{}, fmt.Errorf("%w: no rv=0 probe reads of %s at %d nodes", ErrNotInResults, config, n)
			}
			return Pct(v), nil
		}
	}
	return append(figs,
		fig("cluster.ratio.nodes", "the node count the ratios are at: the largest at which upstream and the gate both ran", (*clusterReport).ratioNodesFigure),
		fig("cluster.ratio.pair-count", "how many pairs of cells the ratios are medians of, spelt", func(r *clusterReport) (Value, error) {
			rs, err := r.pairRatios(cpuOf)
			return Word(len(rs)), err
		}),
		fig("cluster.targets-met", `how many of the four targets the medians meet ("All four", "Three of four")`, func(r *clusterReport) (Value, error) {
			n := 0
			for _, t := range []struct {
				f     func(clusterCell) (float64, bool)
				bound float64
			}{{cpuOf, 1.05}, {readsOf, 0.5}, {listP99Of, 1}} {
				rs, err := r.pairRatios(t.f)
				if err != nil {
					return Value{}, err
				}
				if median(rs) <= t.bound {
					n++
				}
			}
			if r.promisedStale() == 0 {
				n++
			}
			if n == 4 {
				return Text("All four"), nil
			}
			return Join(Capitalized(Word(n)), " of four"), nil
		}),
		fig("cluster.promised-stale", `stale answers to reads freshcache promised fresh, every freshcache cell ("No" when none)`, (*clusterReport).promisedStaleValue),
		fig("cluster.answered-by-writes", "share of the gate's fresh reads at the ratio node count answered by a write's revision (RevisionsFromWrites), %, over the cells", func(r *clusterReport) (Value, error) {
			n, err := r.ratioNodes()
			if err != nil {
				return Value{}, err
			}
			var shares []float64
			for _, c := range r.cells(cfgGate, modeSingle, n) {
				if c.FreshReads > 0 {
					shares = append(shares, 100*c.WriteReads/c.FreshReads)
				}
			}
			return Range(shares, 0), nil
		}),
		fig("cluster.smaller-node-counts", "the node counts below the ratios' at which upstream and the gate both ran", func(r *clusterReport) (Value, error) {
			ns, err := smaller(r)
			var vs []Value
			for _, n := range ns {
				vs = append(vs, Count(n))
			}
			if len(vs) > 1 {
				return Join(List(", ", vs[:len(vs)-1]...), " and ", vs[len(vs)-1]), err
			}
			return List("", vs...), err
		}),
		fig("cluster.smaller.gate-etcd-reads", "etcd reads, the gate over upstream, at the node counts below the ratios'", func(r *clusterReport) (Value, error) {
			ns, err := smaller(r)
			var rs []float64
			for _, n := range ns {
				g, u := r.cells(cfgGate, modeSingle, n), r.cells(cfgUpstream, modeSingle, n)
				rs = append(rs, g[0].EtcdReads/u[0].EtcdReads)
			}
			return Range(rs, 2), err
		}),
		fig("cluster.smaller.gate-reads-per-fetch", "reads a revision fetch answered, the gate, at the node counts below the ratios'", func(r *clusterReport) (Value, error) {
			ns, err := smaller(r)
			var rs []float64
			for _, n := range ns {
				g := r.cells(cfgGate, modeSingle, n)[0]
				if g.Fetches > 0 {
					rs = append(rs, g.FetchReads/g.Fetches)
				}
			}
			return Range(rs, 2), err
		}),
		fig("cluster.stale-rv0.upstream", "share of upstream's rv=0 probe reads answered stale, %, over the node counts and modes it ran", staleRange(cfgUpstream)),
		fig("cluster.stale-rv0.freshcache", "share of freshcache's (no gate) rv=0 probe reads answered stale, %, over the node counts and modes upstream ran", staleRange(cfgFreshcache)),
		fig("cluster.stale-rv0.upstream.at-ratio-nodes", "share of upstream's rv=0 probe reads answered stale at the ratio node count, %, over its cells", staleAt(cfgUpstream)),
		fig("cluster.stale-rv0.freshcache.at-ratio-nodes", "share of freshcache's (no gate) rv=0 probe reads answered stale at the ratio node count, %", staleAt(cfgFreshcache)),
		fig("cluster.upstream.list-p99-s", "upstream's pod LIST p99 at the ratio node count, s, over its cells", listP99Secs(cfgUpstream)),
		fig("cluster.gate.list-p99-s", "the gate's pod LIST p99 at the ratio node count, s, over its cells", listP99Secs(cfgGate)),
		fig("cluster.largest-nodes", "the largest single-apiserver node count any configuration ran", func(r *clusterReport) (Value, error) {
			n := 0
			for _, c := range r.Cells {
				if c.Mode == modeSingle {
					n = max(n, c.Nodes)
				}
			}
			return Count(n), nil
		}),
		fig("cluster.freshcache.largest.list-p99-s", "freshcache's (no gate) pod LIST p99 at its largest node count, s", largestP99(cfgFreshcache)),
		fig("cluster.gate.largest.list-p99-s", "the gate's pod LIST p99 at its largest node count, s", largestP99(cfgGate)),
		fig("cluster.kep-table", "the KEP's table: per node count upstream ran, CPU / etcd reads / pod LIST p99 over upstream's, and the stale rv=0 shares", func(r *clusterReport) (Value, error) {
			return r.kepTable()
		}),
	)
}

// promisedStale sums promisedStale over every freshcache cell that probed.
func (r *clusterReport) promisedStale() int64 {
	var n int64
	for _, c := range r.Cells {
		if c.Probe.Writes > 0 {
			n += promisedStale(c)
		}
	}
	return n
}
