package cluster

// The cluster report's figure: three panels (apiserver CPU, etcd reads,
// pod LIST p99) against the node count, one line per configuration (single
// apiserver), the HA runs as lone diamonds. One file per report keeps
// docs/results small.

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

// clusterPlot is one panel: a value per row, absent when ok is false.
type clusterPlot struct {
	title, ylabel string
	value         func(Row) (float64, bool)
}

var clusterPlots = []clusterPlot{
	{"kube-apiserver CPU in the window (all apiservers)", "cores", func(r Row) (float64, bool) {
		return r.APICPUSec / r.WindowSeconds, r.WindowSeconds > 0
	}},
	{"etcd reads (Range + RangeStream)", "reads/s", func(r Row) (float64, bool) {
		return r.EtcdReads / r.WindowSeconds, r.WindowSeconds > 0
	}},
	{"pod LIST p99 (apiserver_request_duration_seconds)", "ms", func(r Row) (float64, bool) {
		if r.ListP99Ms == nil {
			return 0, false
		}
		return *r.ListP99Ms, true
	}},
}

// Plot writes NAME.png into dir, one panel per clusterPlots entry with its
// x axis labelled by the node kind ("hollow" or "kwok"), and returns its
// path; nothing (and no path) when no row has a value to draw.
func Plot(rows []Row, dir, name, nodeKind string) ([]string, error) {
	if nodeKind == "" {
		nodeKind = NodesHollow
	}
	var panels []*plot.Plot
	for _, cp := range clusterPlots {
		// The legend only on the first panel: the colours are the same in all.
		p, ok, err := clusterPanel(rows, cp, nodeKind+" nodes", len(panels) == 0)
		if err != nil {
			return nil, err
		}
		if ok {
			panels = append(panels, p)
		}
	}
	if len(panels) == 0 {
		return nil, nil
	}
	path := filepath.Join(dir, name+".png")
	if err := report.SaveGrid(panels, len(panels), path, name+": the steady-state window against the node count"); err != nil {
		return nil, err
	}
	return []string{path}, nil
}

// clusterPanel draws cp's value against the node count, one line per
// configuration, with a legend if legend is set; ok is false when no row
// has a value.
func clusterPanel(rows []Row, cp clusterPlot, xlabel string, legend bool) (*plot.Plot, bool, error) {
	p := plot.New()
	p.Title.Text = cp.title
	p.Title.TextStyle.Font.Size = vg.Points(9)
	p.X.Label.Text = xlabel
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
				return nil, false, err
			}
			l.Color, s.Color = report.Color(config), report.Color(config)
			l.Width = vg.Points(1.5)
			p.Add(l, s)
			if legend {
				p.Legend.Add(config, l, s)
			}
			if len(mid) < len(line) {
				each, err := plotter.NewScatter(line)
				if err != nil {
					return nil, false, err
				}
				each.Color, each.Shape, each.Radius = report.Color(config), draw.RingGlyph{}, vg.Points(2.5)
				p.Add(each)
			}
			any = true
		}
		if len(ha) > 0 {
			s, err := plotter.NewScatter(ha)
			if err != nil {
				return nil, false, err
			}
			s.Color = report.Color(config)
			s.Shape = draw.PyramidGlyph{}
			s.Radius = vg.Points(5)
			p.Add(s)
			if legend {
				p.Legend.Add(config+" HA", s)
			}
			any = true
		}
	}
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.TextStyle.Font.Size = vg.Points(7)
	return p, any, nil
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
	slices.SortFunc(out, func(a, b plotter.XY) int { return report.CompareFloat(a.X, b.X) })
	return out
}
