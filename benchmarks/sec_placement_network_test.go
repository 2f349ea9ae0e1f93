package benchmarks

import (
	"fmt"
	"math/rand/v2"
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
