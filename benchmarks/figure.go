package benchmarks

import (
	"fmt"
	"math"
	"path/filepath"
	"strconv"

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
	dx := p.X.Max - p.X.Min
	if dx == 0 {
		dx = 1
	}
	// Room at both ends so that the first and last markers are whole.
	p.X.Min, p.X.Max = p.X.Min-0.04*dx, p.X.Max+0.04*dx
	p.X.Tick.Marker = niceTicks{lo: p.X.Min, hi: p.X.Max}
	legendRoom(p, len(ss))
	return p, nil
}

// Legend geometry: the legend's font, and the height of one of its lines
// as a share of the data area's height (figHeight less the title, the
// axis and its labels, about 1.1 inch).
const (
	legendFont  = vg.Length(9)
	legendShare = 1.25 * 9 / (4*72 - 80)
)

// legendRoom raises the top of the y axis by exactly what the legend (top
// right, one line per entry) needs so that it covers no data, and ticks
// the y axis over the data only: no tick label in the legend's room (a
// percentage axis is not labelled 120%).
func legendRoom(p *plot.Plot, entries int) {
	p.Legend.TextStyle.Font.Size = legendFont
	lo, hi := p.Y.Min, p.Y.Max
	if hi == lo {
		hi = lo + 1
	}
	h := min(0.6, float64(entries)*legendShare+0.03)
	p.Y.Max = hi + (hi-lo)*h/(1-h)
	p.Y.Min = lo - 0.02*(hi-lo)
	p.Y.Tick.Marker = niceTicks{lo: lo, hi: hi}
}

// niceTicks labels 4 to 9 round values between lo and hi (the data's
// range), with unlabelled minor ticks between them; gonum's default gives
// two or three.
type niceTicks struct{ lo, hi float64 }

func (n niceTicks) Ticks(min, max float64) []plot.Tick {
	lo, hi := math.Max(n.lo, min), math.Min(n.hi, max)
	if !(hi > lo) {
		return plot.DefaultTicks{}.Ticks(min, max)
	}
	step := niceStep((hi - lo) / 8)
	var ticks []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9; v += step {
		v := math.Round(v/step) * step
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', 6, 64)})
		if m := v + step/2; m < max {
			ticks = append(ticks, plot.Tick{Value: m})
		}
	}
	return ticks
}

// niceStep rounds a raw step up to 1, 2, 2.5 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 || math.IsInf(raw, 0) || math.IsNaN(raw) {
		return 1
	}
	e := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if raw <= m*e {
			return m * e
		}
	}
	return 10 * e
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
	// The categories sit at 0 … n−1 and a group of bars is 60 points
	// wide: half a category of room at each end keeps the outer bars whole.
	p.X.Min, p.X.Max = -0.5, float64(len(categories))-0.5
	legendRoom(p, len(members))
	return p, nil
}
