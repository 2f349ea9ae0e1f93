package benchmarks

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/optd/optd/policy/placement"
	"github.com/optd/optd/sim"
)

// randomRuns are made-up runs of every grown-cluster placement over seeds
// seeds, each series drawn around its own mean.
func randomRuns(rng *rand.Rand, seeds int) map[string]*placedRuns {
	runs := map[string]*placedRuns{}
	draw := func(m float64) []float64 {
		xs := make([]float64, seeds)
		for i := range xs {
			xs[i] = m * (0.9 + 0.2*rng.Float64())
		}
		return xs
	}
	for _, pl := range grownPlacements {
		runs[pl] = &placedRuns{makespan: draw(500), response: draw(100), crossRack: draw(2048), maps: draw(30), shuffleTail: draw(5),
			reduce: draw(3), reduceSlots: draw(0.2)}
	}
	return runs
}

// TestGrownTableAndVerdicts: on made-up runs, the grown-cluster table has
// a row per placement whose paired cells are the mean ± 95% half-width of
// the per-seed differences, computed here a second way (by hand from the
// differences), and the prose's verdict follows the interval's sign.
func TestGrownTableAndVerdicts(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 3))
	for _, seeds := range []int{2, 3, 10} {
		runs := randomRuns(rng, seeds)
		table := grownTable(runs)
		for _, pl := range grownPlacements {
			r, rnd := runs[pl], runs[placement.NameRandom]
			d := make([]float64, seeds)
			for i := range d {
				d[i] = r.response[i] - rnd.response[i]
			}
			row := "| " + placementLabel(pl) + " | " + ci(sim.MeanCI95(r.response)) + " | " + ci(sim.MeanCI95(d)) + " |"
			if !strings.Contains(table, row) {
				t.Fatalf("%d seeds: table lacks the row start %q:\n%s", seeds, row, table)
			}
		}
		why := grownWhy(runs, runs[placement.NameRandom])
		for _, pl := range []string{placement.NameStateThreshold, placement.NameRecedingHorizon, placement.NameRollingHorizon} {
			d, h := paired(runs[pl].response, runs[placement.NameRandom].response)
			verdict := "no different from"
			if d+h < 0 {
				verdict = "faster than"
			} else if d-h > 0 {
				verdict = "slower than"
			}
			if want := fmt.Sprintf("%s is %s random", pl, verdict); !strings.Contains(why, want) {
				t.Fatalf("%d seeds: %q lacks %q", seeds, why, want)
			}
		}
	}
}

// TestPairedRounding: the same sums taken in another order differ by
// rounding only and pair to exactly 0 ± 0; a real difference, however
// small against the values, is kept.
func TestPairedRounding(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	var a, b, c []float64
	for range 10 {
		xs := make([]float64, 50)
		for i := range xs {
			xs[i] = rng.Float64() * 100
		}
		sum := func(order []int) float64 {
			s := 0.0
			for _, i := range order {
				s += xs[i] / 3
			}
			return s
		}
		fwd, rev := make([]int, len(xs)), make([]int, len(xs))
		for i := range xs {
			fwd[i], rev[i] = i, len(xs)-1-i
		}
		a, b = append(a, sum(fwd)), append(b, sum(rev))
		c = append(c, sum(fwd)*(1+1e-6))
	}
	if slices.Equal(a, b) {
		t.Fatal("the reordered sums are equal bit for bit: the check tells nothing")
	}
	if d, h := paired(a, b); d != 0 || h != 0 {
		t.Errorf("paired(reordered sums) = %v ± %v, want 0 ± 0", d, h)
	}
	if d, _ := paired(c, a); d <= 0 {
		t.Errorf("paired(a real 1e-6 difference) = %v, want it kept (> 0)", d)
	}
}
