package cluster

// The cluster report's plots: apiserver CPU, etcd reads and pod LIST p99
// against the node count, one line per configuration (single apiserver),
// the HA runs as lone diamonds.

import (
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/freshcache/freshcache/tools/bench/quantile"
	"github.com/freshcache/freshcache/tools/bench/report"
)

// clusterPlot is one figure: a value per row, absent when ok is false.
type clusterPlot struct {
	file, title, ylabel string
	value               func(Row) (float64, bool)
}

var clusterPlots = []clusterPlot{
	{"apiserver-cpu", "kube-apiserver CPU in the window (all apiservers)", "cores", func(r Row) (float64, bool) {
		return r.APICPUSec / r.WindowSeconds, r.WindowSeconds > 0
	}},
	{"etcd-reads", "etcd reads (Range + RangeStream)", "reads/s", func(r Row) (float64, bool) {
		return r.EtcdReads / r.WindowSeconds, r.WindowSeconds > 0
	}},
	{"list-p99", "pod LIST p99 (apiserver_request_duration_seconds)", "ms", func(r Row) (float64, bool) {
		if r.ListP99Ms == nil {
			return 0, false
		}
		return *r.ListP99Ms, true
	}},
}

// Plot writes NAME-<figure>.png into dir for each figure and
// returns their paths.
func Plot(rows []Row, dir, name string) ([]string, error) {
	var paths []string
	for _, cp := range clusterPlots {
		p := plot.New()
		p.X.Label.Text = "hollow nodes"
		p.Y.Label.Text = cp.ylabel
		p.X.Min, p.Y.Min = 0, 0
		for _, r := range rows {
			// Room right of the largest N, so its points are not on the edge.
			p.X.Max = max(p.X.Max, float64(r.Nodes)*1.08)
		}
		any := false
		for _, config := range AllConfigs {
			var line, ha plotter.XYs
			for _, r := range rows {
				v, ok := cp.value(r)
				if r.Config != config || !ok {
					continue
				}
				pt := plotter.XY{X: float64(r.Nodes), Y: v}
				if r.Mode == modeHA {
					ha = append(ha, pt)
				} else {
					line = append(line, pt)
				}
			}
			if len(line) > 0 {
				// Repeats of a cell: the line goes through their median,
				// and every repeat is a small ring around it.
				mid := medianByX(line)
				l, s, err := plotter.NewLinePoints(mid)
				if err != nil {
					return paths, err
				}
				l.Color, s.Color = report.Color(config), report.Color(config)
				l.Width = vg.Points(1.5)
				p.Add(l, s)
				p.Legend.Add(config, l, s)
				if len(mid) < len(line) {
					each, err := plotter.NewScatter(line)
					if err != nil {
						return paths, err
					}
					each.Color, each.Shape, each.Radius = report.Color(config), draw.RingGlyph{}, vg.Points(2.5)
					p.Add(each)
				}
				any = true
			}
			if len(ha) > 0 {
				s, err := plotter.NewScatter(ha)
				if err != nil {
					return paths, err
				}
				s.Color = report.Color(config)
				s.Shape = draw.PyramidGlyph{}
				s.Radius = vg.Points(5)
				p.Add(s)
				p.Legend.Add(config+" HA", s)
				any = true
			}
		}
		if !any {
			continue
		}
		p.Add(plotter.NewGrid())
		p.Legend.Top = true
		p.Legend.Left = true
		p.Legend.TextStyle.Font.Size = vg.Points(7)
		path := filepath.Join(dir, name+"-"+cp.file+".png")
		if err := report.SaveGrid([]*plot.Plot{p}, 1, path, cp.title); err != nil {
			return paths, err
		}
		paths = append(paths, path)
	}
	return paths, nil
}

// medianByX is pts with one point per X, the median of its Ys, in X order.
func medianByX(pts plotter.XYs) plotter.XYs {
	ys := map[float64][]float64{}
	for _, pt := range pts {
		ys[pt.X] = append(ys[pt.X], pt.Y)
	}
	var out plotter.XYs
	for x, v := range ys {
		out = append(out, plotter.XY{X: x, Y: quantile.Median(v)})
	}
	slices.SortFunc(out, func(a, b plotter.XY) int { return cmpFloat(a.X, b.X) })
	return out
}
