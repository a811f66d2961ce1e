package storage

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/freshcache/freshcache/tools/bench/report"
)

func rvDashes(rv string) []vg.Length {
	switch rv {
	case RVZero:
		return []vg.Length{vg.Points(6), vg.Points(3)}
	case RVNewest:
		return []vg.Length{vg.Points(2), vg.Points(2)}
	}
	return nil
}

func rvLabel(rv string) string {
	if rv == RVConsistent {
		return `rv=""`
	}
	return "rv=" + rv
}

// plotCols is the width of the storage figure's grid: one column per
// scenario.
const plotCols = 3

// Plot draws the storage report's figure, NAME.png in dir, and returns its
// path. Its rows of panels:
//   - throughput: ops/s per backend for every scenario and rv mode, at the
//     highest concurrency;
//   - p99 latency against concurrency, per scenario;
//   - freshness: freshness wait p99 and LIST-by-node p99 against the write
//     rate of another resource (the sweep rows), when the run swept it.
func Plot(r Report, dir, name string) ([]string, error) {
	var panels []*plot.Plot
	// row adds a row of panels, padded to whole grid rows.
	row := func(ps []*plot.Plot) {
		panels = append(panels, ps...)
		for len(panels)%plotCols != 0 {
			panels = append(panels, nil)
		}
	}
	backends, scenarios, rvs, concs := dims(r.Rows)
	if len(concs) == 0 {
		return nil, nil
	}
	top := concs[len(concs)-1]
	// mainRow is the main (not extra) row of one backend, scenario, rv
	// mode and concurrency, as both plots place them.
	mainRow := func(b, sc, rv string, c int) (Row, bool) {
		return find(r.Rows, func(x Row) bool {
			return !x.extra() && x.Backend == b && x.Scenario == sc && x.RV == rv && x.Concurrency == c
		})
	}

	// Throughput: one panel per scenario, log scale (backends differ by
	// orders of magnitude); x groups are rv modes, one marker per backend.
	var tput []*plot.Plot
	for _, sc := range scenarios {
		p := plot.New()
		p.Title.Text = fmt.Sprintf("%s: ops/s at c=%d (higher is better)", sc, top)
		p.Y.Label.Text = "ops/s (log)"
		logAxis(&p.Y)
		minY, maxY := math.Inf(1), 0.0
		for bi, b := range backends {
			var pts plotter.XYs
			for ri, rv := range rvs {
				if row, ok := mainRow(b, sc, rv, top); ok && row.OpsPerSec > 0 {
					x := float64(ri) + 0.22*float64(bi-(len(backends)-1)/2)
					pts = append(pts, plotter.XY{X: x, Y: row.OpsPerSec})
					minY, maxY = math.Min(minY, row.OpsPerSec), math.Max(maxY, row.OpsPerSec)
				}
			}
			if len(pts) == 0 {
				continue
			}
			sct, err := plotter.NewScatter(pts)
			if err != nil {
				return nil, err
			}
			sct.Color = report.Color(b)
			sct.Shape = draw.BoxGlyph{}
			sct.Radius = vg.Points(5)
			p.Add(sct)
			p.Legend.Add(b, sct)
		}
		if maxY == 0 {
			minY, maxY = 1, 1
		}
		p.Y.Min, p.Y.Max = minY/2, maxY*2
		p.X.Min, p.X.Max = -0.6, float64(len(rvs))-0.4
		labels := make([]string, len(rvs))
		for i, rv := range rvs {
			labels[i] = rvLabel(rv)
		}
		p.NominalX(labels...)
		p.Add(plotter.NewGrid())
		p.Legend.Top = true
		p.Legend.TextStyle.Font.Size = vg.Points(7)
		tput = append(tput, p)
	}
	row(tput)

	// Latency against concurrency.
	var latp []*plot.Plot
	for _, sc := range scenarios {
		p := plot.New()
		p.Title.Text = sc + ": p99 against concurrency (lower is better)"
		p.X.Label.Text = "concurrency"
		p.Y.Label.Text = "p99 ms (log)"
		// Log axes need explicit positive ranges: a single concurrency or
		// latency would otherwise give a zero-width range.
		logAxis(&p.X)
		p.X.Min, p.X.Max = float64(concs[0])*0.8, float64(concs[len(concs)-1])*1.25
		logAxis(&p.Y)
		minY, maxY := math.Inf(1), 0.0
		for _, b := range backends {
			for _, rv := range rvs {
				var pts plotter.XYs
				for _, c := range concs {
					if row, ok := mainRow(b, sc, rv, c); ok && row.P99Ms > 0 {
						pts = append(pts, plotter.XY{X: float64(c), Y: row.P99Ms})
					}
				}
				if len(pts) == 0 {
					continue
				}
				l, pm, err := plotter.NewLinePoints(pts)
				if err != nil {
					return nil, err
				}
				pm.Color = report.Color(b)
				p.Add(pm)
				for _, pt := range pts {
					minY, maxY = math.Min(minY, pt.Y), math.Max(maxY, pt.Y)
				}
				l.Color = report.Color(b)
				l.Dashes = rvDashes(rv)
				l.Width = vg.Points(1.5)
				p.Add(l)
				p.Legend.Add(b+" "+rvLabel(rv), l)
			}
		}
		if maxY == 0 {
			minY, maxY = 1, 1
		}
		p.Y.Min, p.Y.Max = minY*0.8, maxY*1.25
		p.Legend.TextStyle.Font.Size = vg.Points(6)
		p.Legend.Top = true
		p.Legend.Left = true
		latp = append(latp, p)
	}
	row(latp)

	// Freshness sweep.
	sweep := slices.DeleteFunc(slices.Clone(r.Rows), func(x Row) bool { return !x.Sweep })
	if len(sweep) > 0 {
		wait := plot.New()
		wait.Title.Text = "freshness wait p99 (backend's own histogram)"
		wait.X.Label.Text = "lease writes/s (another resource)"
		wait.Y.Label.Text = "ms"
		lat := plot.New()
		lat.Title.Text = `LIST by node rv="" p99 latency`
		lat.X.Label.Text = wait.X.Label.Text
		lat.Y.Label.Text = "ms"
		anyWait := false
		for _, b := range backends {
			var wp, lp plotter.XYs
			for _, x := range sweep {
				if x.Backend != b {
					continue
				}
				lp = append(lp, plotter.XY{X: x.Load.LeaseWritesPerSec, Y: x.P99Ms})
				if x.FreshWaitP99Ms != nil {
					anyWait = true
					wp = append(wp, plotter.XY{X: x.Load.LeaseWritesPerSec, Y: *x.FreshWaitP99Ms})
				}
			}
			for _, pair := range []struct {
				p   *plot.Plot
				pts plotter.XYs
			}{{wait, wp}, {lat, lp}} {
				if len(pair.pts) == 0 {
					continue
				}
				slices.SortFunc(pair.pts, func(a, b plotter.XY) int { return report.CompareFloat(a.X, b.X) })
				l, s, err := plotter.NewLinePoints(pair.pts)
				if err != nil {
					return nil, err
				}
				l.Color, s.Color = report.Color(b), report.Color(b)
				l.Width = vg.Points(1.5)
				pair.p.Add(l, s)
				pair.p.Legend.Add(b, l, s)
			}
		}
		if !anyWait {
			wait.Title.Text += "\n(no backend reported one)"
			wait.X.Min, wait.X.Max = 0, 1
		}
		for _, p := range []*plot.Plot{wait, lat} {
			p.Legend.Top = true
			p.Legend.Left = true
			p.Y.Min = 0
		}
		row([]*plot.Plot{wait, lat})
	}
	path := filepath.Join(dir, name+".png")
	if err := report.SaveGrid(panels, plotCols, path, "Storage level: throughput, p99 latency, freshness against another resource's writes"); err != nil {
		return nil, err
	}
	return []string{path}, nil
}

// dims lists the backends, scenarios, rv modes and concurrencies present in
// rows, in their canonical order.
func dims(rows []Row) (backends, scenarios, rvs []string, concs []int) {
	seen := map[string]bool{}
	add := func(list *[]string, kind, v string) {
		if !seen[kind+v] {
			seen[kind+v] = true
			*list = append(*list, v)
		}
	}
	cs := map[int]bool{}
	for _, r := range rows {
		add(&backends, "b", r.Backend)
		if !r.extra() {
			add(&scenarios, "s", r.Scenario)
			add(&rvs, "r", r.RV)
			if !cs[r.Concurrency] {
				cs[r.Concurrency] = true
				concs = append(concs, r.Concurrency)
			}
		}
	}
	slices.Sort(concs)
	return
}

func find(rows []Row, f func(Row) bool) (Row, bool) {
	for _, r := range rows {
		if f(r) {
			return r, true
		}
	}
	return Row{}, false
}

// logAxis gives a an axis on a log scale, ticked at the powers of ten.
func logAxis(a *plot.Axis) {
	a.Scale = plot.LogScale{}
	a.Tick.Marker = plot.LogTicks{Prec: -1}
}
