package simulate

import (
	"fmt"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/optd/optd/sim"
)

func checkPlotExt(path string) error {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".png", ".svg":
		return nil
	}
	return fmt.Errorf("--plot %q: the file name must end in .png or .svg", path)
}

// writePlot draws the utilization series, one line per resource, in
// percent over simulated time (the style of benchmarks/figure.go).
func writePlot(path, title string, s *sim.UtilizationSeries) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "time (s)"
	p.Y.Label.Text = "utilization (%)"
	p.Y.Min, p.Y.Max = 0, 100
	p.Legend.Top = true
	for k, name := range s.Names {
		pts := make(plotter.XYs, len(s.TimesS))
		for i, t := range s.TimesS {
			pts[i] = plotter.XY{X: t, Y: 100 * s.Values[k][i]}
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return fmt.Errorf("--plot: %s: %w", name, err)
		}
		l.Color = plotutil.Color(k)
		p.Add(l)
		p.Legend.Add(name, l)
	}
	p.Add(plotter.NewGrid())
	if err := p.Save(6*vg.Inch, 4*vg.Inch, path); err != nil {
		return fmt.Errorf("--plot: %w", err)
	}
	return nil
}
