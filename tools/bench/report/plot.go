package report

import (
	"image/color"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Color keeps one color per implementation across every plot: name is a
// storage backend ("etcd", "upstream", "freshcache") or a cluster
// configuration ("upstream", "freshcache", "freshcache-fresh-rv0"); any
// other name gets one more color.
func Color(name string) color.Color {
	switch name {
	case "etcd":
		return color.RGBA{R: 0x99, G: 0x99, B: 0x99, A: 0xff}
	case "upstream":
		return color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	case "freshcache":
		return color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	case "freshcache-fresh-rv0":
		return color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}
	}
	return plotutil.Color(5)
}

// SaveGrid lays plots out cols wide under a title and writes a PNG at
// path. It writes nothing for no plots.
func SaveGrid(plots []*plot.Plot, cols int, path, title string) error {
	if len(plots) == 0 {
		return nil
	}
	rows := (len(plots) + cols - 1) / cols
	grid := make([][]*plot.Plot, rows)
	for i := range grid {
		grid[i] = make([]*plot.Plot, cols)
		for j := range cols {
			if k := i*cols + j; k < len(plots) {
				grid[i][j] = plots[k]
			}
		}
	}
	const tileW, tileH = 4.2 * vg.Inch, 3.2 * vg.Inch
	titleH := 0.6 * vg.Inch
	img := vgimg.New(tileW*vg.Length(cols), tileH*vg.Length(rows)+titleH)
	dc := draw.New(img)
	dc.SetColor(color.White)
	dc.Fill(dc.Path())
	heading := plot.New()
	sty := heading.Title.TextStyle
	sty.Font.Size = vg.Points(14)
	sty.XAlign = draw.XCenter
	dc.FillText(sty, vg.Point{X: dc.Center().X, Y: dc.Max.Y - titleH*0.5}, title)
	body := dc
	body.Max.Y -= titleH
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Points(12), PadY: vg.Points(12),
		PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(8)}
	canvases := plot.Align(grid, tiles, body)
	for i := range grid {
		for j := range grid[i] {
			if grid[i][j] != nil {
				grid[i][j].Draw(canvases[i][j])
			}
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
