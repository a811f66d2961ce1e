package figures

import "slices"

// The scale benchmark's figures (scale.json, `freshcache-bench scale` on
// kwok nodes): the closing line's ratios of the gate's cells over
// upstream's, the restart storm's among them, and the probe's stale
// answers to reads freshcache promised fresh.

func scaleFigures() []Figure {
	fig := reportFigure("scale.json")
	ratio := func(name, what string, f func(clusterCell) (float64, bool)) Figure {
		return fig("scale.ratio."+name, what+", the gate over upstream at the largest node count, median over the pairs", func(r *clusterReport) (Value, error) {
			rs, err := r.pairRatios(f)
			return F(median(rs), 2), err
		})
	}
	return slices.Concat([]Figure{
		commitFigure("scale"),
		fig("scale.ratio.nodes", "the kwok node count the ratios are at: the largest at which upstream and the gate both ran", (*clusterReport).ratioNodesFigure),
		fig("scale.ratio.pair-count", "how many pairs of cells the ratios are medians of", (*clusterReport).pairCount),
		ratio("apiserver-cpu", "apiserver CPU", cpuOf),
		ratio("etcd-reads", "etcd reads", readsOf),
		ratio("list-p99", "pod LIST p99", listP99Of),
		ratio("storm-sync-p99", "restart storm, all-synced p99", stormSyncOf),
		ratio("storm-etcd", "restart storm, etcd reads", stormReadsOf),
		fig("scale.gate.storm-429", "restart storm, 429s the gate's freshness wait sent, median over the paired gate cells", func(r *clusterReport) (Value, error) {
			v, err := r.pairedGate(storm429Of)
			return Count(int(v)), err
		}),
		fig("scale.gate.wait-p99-ms", "the gate's freshness wait p99 for pods in the window, ms, median over the paired gate cells", func(r *clusterReport) (Value, error) {
			v, err := r.pairedGate(waitP99Of)
			return Count(int(v + 0.5)), err
		}),
		fig("scale.promised-stale", `stale answers to reads freshcache promised fresh, every freshcache cell ("No" when none)`, (*clusterReport).promisedStaleValue),
	})
}

// lightFigures quote make bench-cluster-light (cluster-light.json): the
// cluster benchmark at 3 hollow nodes under light open-loop load, its
// ratios the gate over upstream, medians over the pairs.
func lightFigures() []Figure {
	fig := reportFigure("cluster-light.json")
	ratio := func(name, what string, f func(clusterCell) (float64, bool)) []Figure {
		return []Figure{
			fig("cluster-light.ratio."+name, what+", the gate over upstream, median over the pairs", func(r *clusterReport) (Value, error) {
				rs, err := r.pairRatios(f)
				return F(median(rs), 2), err
			}),
			fig("cluster-light.ratio."+name+".pairs-range", what+", the gate over upstream, the pairs' range", func(r *clusterReport) (Value, error) {
				rs, err := r.pairRatios(f)
				return Range(rs, 2), err
			}),
		}
	}
	return slices.Concat([]Figure{
		commitFigure("cluster-light"),
		fig("cluster-light.ratio.pair-count", "how many pairs of cells the ratios are medians of", (*clusterReport).pairCount),
		fig("cluster-light.promised-stale", `stale answers to reads freshcache promised fresh ("No" when none)`, (*clusterReport).promisedStaleValue),
	},
		ratio("apiserver-cpu", "apiserver CPU", cpuOf),
		ratio("etcd-reads", "etcd reads", readsOf),
		ratio("list-p99", "pod LIST p99 (server side)", listP99Of),
		ratio("node-list-rv0-p99", "LIST of one node's pods at rv=0, client-side p99", nodeListRV0P99Of),
	)
}
