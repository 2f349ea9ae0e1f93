package solver

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestCanImproveDecidesAsTheRounding checks canImprove's shortcuts (the
// bounds it decides without rounding them) against the rounding itself,
// floorBound(b) > inc + g/2, on value units g of every kind (integral,
// binary and decimal fractions, six decimal digits) and bounds on the
// lattice of g, a hair off it (the LP's duals), and far from it, up to
// and beyond fastPruneUnits units, with incumbents on the lattice and off.
func TestCanImproveDecidesAsTheRounding(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 10))
	units := [][2]float64{{1, 1}, {1, 2}, {1, 10}, {3, 1}, {1, 8000}, {7, 1000}, {125, 1}}
	decided := map[bool]int{}
	for trial := range 200000 {
		u := units[trial%len(units)]
		m := &model{unitNum: u[0], unitDen: u[1], unit: u[0] / u[1]}
		scale := math.Pow(10, float64(rng.IntN(9))) // up to 10⁸ units
		inc := math.Round(rng.Float64()*scale) * m.unit
		if rng.IntN(4) == 0 {
			inc += (rng.Float64() - 0.5) * m.unit
		}
		if rng.IntN(3) == 0 {
			inc = -inc
		}
		b := inc + float64(rng.IntN(9)-4)*0.5*m.unit // on the half-lattice near inc
		switch rng.IntN(4) {
		case 0:
			b += (rng.Float64() - 0.5) * 1e-6 * math.Max(1, math.Abs(b)) // a hair off it
		case 1:
			b += (rng.Float64() - 0.5) * 6 * m.unit // anywhere near
		}
		want := m.floorBound(b) > inc+0.5*m.unit
		if got := m.canImprove(b, inc); got != want {
			t.Fatalf("unit %v/%v: canImprove(%v, %v) = %v, the rounding says %v", u[0], u[1], b, inc, got, want)
		}
		decided[want]++
	}
	if decided[true] == 0 || decided[false] == 0 {
		t.Fatalf("decisions %v: the test must reach both", decided)
	}
}
