package models

import (
	"math"
	"testing"
)

// TestStopLossAgainstPartialMean checks each direct λ(q) against
// q·P[X < q] − E[X·1{X < q}] from the law's own closed forms, also for scaled
// laws (Y = X/r), over q from 1e-8 to 1e8.
func TestStopLossAgainstPartialMean(t *testing.T) {
	laws := map[string]Dist{
		"uniform":       must(NewUniform(1, 100)),
		"uniform-0":     must(NewUniform(0, 5)),
		"exponential":   must(NewExponential(50)),
		"lognormal":     must(NewLognormal(3, 1)),
		"lognormal-3":   must(NewLognormal(0, 3)),
		"lognormal-0.1": must(NewLognormal(2, 0.1)),
	}
	ninf := math.Inf(-1)
	for name, d := range laws {
		t.Run(name, func(t *testing.T) {
			for _, r := range []float64{1, 3, 10} {
				y := divide(d, r)
				sl, ok := y.(StopLosser)
				if !ok {
					t.Fatalf("%s divided by %v lost StopLoss", name, r)
				}
				for e := 8.0; e >= -8; e -= 0.05 {
					q := math.Pow(10, e)
					want := q*y.ProbIn(ninf, q) - y.PartialMean(ninf, q)
					got := sl.StopLoss(q)
					if tol := 1e-12 * max(q, y.Mean()); math.IsNaN(got) || math.Abs(got-want) > tol {
						t.Errorf("r = %v, q = %v: StopLoss %v, generic %v", r, q, got, want)
					}
				}
				if got := sl.StopLoss(0); got != 0 {
					t.Errorf("λ(0) = %v, want 0", got)
				}
			}
		})
	}
}
