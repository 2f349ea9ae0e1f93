package benchmarks

import (
	"fmt"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Figure size, for both formats.
const (
	figWidth  = 6 * vg.Inch
	figHeight = 4 * vg.Inch
)

// saveFigure writes dir/NAME.png and dir/NAME.svg.
func saveFigure(f Figure, dir string) error {
	if f.Plot == nil {
		return fmt.Errorf("no plot")
	}
	for _, ext := range []string{".png", ".svg"} {
		if err := f.Plot.Save(figWidth, figHeight, filepath.Join(dir, f.Name+ext)); err != nil {
			return err
		}
	}
	return nil
}

// series is one line of a figure: y (with the half-widths of 95%
// confidence intervals, or nil) over x.
type series struct {
	name   string
	x, y   []float64
	halves []float64
	dashed bool
}

// ciPoints are the points of a series with their error bars.
type ciPoints struct{ s series }

func (c ciPoints) Len() int                    { return len(c.s.x) }
func (c ciPoints) XY(i int) (float64, float64) { return c.s.x[i], c.s.y[i] }
func (c ciPoints) YError(i int) (float64, float64) {
	h := c.s.halves[i]
	if h != h { // NaN: one replication
		h = 0
	}
	return h, h
}

// linePlot draws the series as lines with points (and error bars where
// given) with a legend.
func linePlot(title, xLabel, yLabel string, ss []series) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	p.Legend.Top = true
	for i, s := range ss {
		pts := ciPoints{s}
		l, sc, err := plotter.NewLinePoints(pts)
		if err != nil {
			return nil, fmt.Errorf("series %s: %w", s.name, err)
		}
		l.Color = plotutil.Color(i)
		sc.Color = plotutil.Color(i)
		sc.Shape = plotutil.Shape(i)
		if s.dashed {
			l.Dashes = plotutil.Dashes(1)
		}
		p.Add(l, sc)
		p.Legend.Add(s.name, l, sc)
		if s.halves != nil {
			eb, err := plotter.NewYErrorBars(pts)
			if err != nil {
				return nil, fmt.Errorf("series %s: %w", s.name, err)
			}
			eb.Color = plotutil.Color(i)
			p.Add(eb)
		}
	}
	p.Add(plotter.NewGrid())
	legendRoom(p)
	return p, nil
}

// legendRoom raises the top of the y axis so that the legend (top right)
// does not cover the data.
func legendRoom(p *plot.Plot) {
	p.Y.Max += 0.35 * (p.Y.Max - p.Y.Min)
}

// barPlot draws groups of bars: one bar per group member for each
// category on the x axis.
func barPlot(title, yLabel string, categories, members []string, values [][]float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = yLabel
	p.Legend.Top = true
	w := vg.Points(60 / float64(max(1, len(members))))
	for k, m := range members {
		vs := make(plotter.Values, len(categories))
		for c := range categories {
			vs[c] = values[c][k]
		}
		b, err := plotter.NewBarChart(vs, w)
		if err != nil {
			return nil, fmt.Errorf("bars %s: %w", m, err)
		}
		b.Color = plotutil.Color(k)
		b.LineStyle.Width = 0
		b.Offset = w * vg.Length(float64(k)-float64(len(members)-1)/2)
		p.Add(b)
		p.Legend.Add(m, b)
	}
	p.NominalX(categories...)
	p.Add(plotter.NewGrid())
	legendRoom(p)
	return p, nil
}
