package solver

import (
	"math/rand/v2"
	"testing"
)

// TestGridIndexIsTheDivision checks the cell of a residual, where the
// grid's units are powers of two (a shift) and where they are not, against
// ⌊r_p/q_p⌋ on random grids (exact and coarsened, over all resources and
// subsets) and random residuals within the capacity, and index after a
// count c of a demand d against the cell of r − c·d.
func TestGridIndexIsTheDivision(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 8))
	shifted, divided := 0, 0
	for trial := range 400 {
		k := 1 + rng.IntN(3)
		capMax := make([]int64, k)
		for p := range capMax {
			capMax[p] = 1 + rng.Int64N(1<<(4+rng.IntN(14)))
		}
		unit := []int64{1, 2, 3, 8, 512, 1000}[rng.IntN(6)] // demands share a factor: GCD grids
		dem := make([][]int64, 1+rng.IntN(5))
		for i := range dem {
			dem[i] = make([]int64, k)
			for p := range dem[i] {
				dem[i][p] = unit * rng.Int64N(1+capMax[p]/unit)
			}
		}
		var res []int
		if trial%2 == 1 {
			res = []int{rng.IntN(k)}
		}
		g := newGrid(capMax, dem, res, 1+rng.IntN(defaultCellBudget))
		if g.pow2 {
			shifted++
		} else {
			divided++
		}
		for range 20 {
			r := make([]int64, k)
			for p := range r {
				r[p] = rng.Int64N(capMax[p] + 1)
			}
			want := 0
			for p, rp := range g.res {
				want += int(r[rp]/g.q[p]) * g.stride[p]
			}
			if got := g.index(r); got != want || got < 0 || got >= g.cells {
				t.Fatalf("grid q %v over %v: index(%v) = %d, want %d of %d cells", g.q, g.res, r, got, want, g.cells)
			}
			d := dem[rng.IntN(len(dem))]
			c := min(maxFit(d, r), 1<<20) // a zero demand fits without limit
			if c > 0 {
				c = rng.Int64N(c + 1)
			}
			after := make([]int64, k)
			for p := range r {
				after[p] = r[p] - c*d[p]
			}
			if got, want := g.indexAfter(r, d, c), g.index(after); got != want {
				t.Fatalf("grid q %v: indexAfter(%v, %v, %d) = %d, index(%v) = %d", g.q, r, d, c, got, after, want)
			}
		}
	}
	if shifted == 0 || divided == 0 {
		t.Fatalf("%d grids with power-of-two units, %d without: the test must reach both", shifted, divided)
	}
}
