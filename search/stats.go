package search

import (
	"math"

	"github.com/optd/optd/sim"
)

// Estimate is a mean over replications with the half-width of its 95%
// Student-t confidence interval (null with fewer than two replications or
// when the replications agree exactly, as for an exact evaluation).
type Estimate struct {
	Mean float64  `json:"mean"`
	CI95 *float64 `json:"ci95"`
}

// estimate is sim.MeanCI95 as an Estimate.
func estimate(xs []float64) Estimate {
	m, h := sim.MeanCI95(xs)
	e := Estimate{Mean: m}
	if !math.IsNaN(h) {
		e.CI95 = &h
	}
	return e
}

// paired is the estimate of the mean of a[k] − b[k]: the paired difference
// of two policies on the same replications (common random numbers make its
// interval far narrower than the intervals of a and b).
func paired(a, b []float64) Estimate {
	d := make([]float64, len(a))
	for k := range a {
		d[k] = a[k] - b[k]
	}
	return estimate(d)
}

// Excludes0 reports that the 95% interval of e does not contain 0.
func (e Estimate) Excludes0() bool {
	return e.CI95 != nil && (e.Mean-*e.CI95 > 0 || e.Mean+*e.CI95 < 0)
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}
