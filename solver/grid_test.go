package solver

import (
	"math/rand/v2"
	"slices"
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

// TestDroppedSinglesDoNotBound checks that the views of single resources
// which viewGrids leaves out (dropDominatedSingles: an exact pair covers
// them) would never have lowered the tables' value: on random instances
// of 3-5 resources (narrow capacities, where every pair fits the cell
// budget, and wide ones, where some do not and their singles stay), at
// random residuals and layers, with the values of π
// = 0 and of random multipliers, the tables over the chosen views and the
// same tables with every single resource's view added back give the same
// value, to the last bit.
func TestDroppedSinglesDoNotBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 11))
	dropped := 0
	kept := 0
	partial := false // some single kept and some dropped in one instance
	for trial := range 20 {
		wide := int64(200) // exact pairs of every two resources fit the cell budget
		if trial%5 == 4 {
			wide = 5000 // some do not: their singles stay
		}
		in, err := RandomInstance(rng, RandomSpec{Nodes: 2 + rng.IntN(4), Types: 2 + rng.IntN(3), Resources: 3 + trial%3,
			CapMin: 8, CapMax: 8 + rng.Int64N(wide), DemandMaxFrac: 0.2 + 0.6*rng.Float64()})
		if err != nil {
			t.Fatal(err)
		}
		if trial%5 == 3 {
			// Resource 0 alone wide, with demands of GCD 1: no pair with
			// it is exact, so its single view must stay beside the
			// narrow resources' pairs.
			for j := range in.Nodes {
				in.Nodes[j].Capacity[0] = 100_000 + rng.Int64N(1000)
			}
			for i := range in.Tasks {
				in.Tasks[i].Demand[0] = 1 + rng.Int64N(20_000)
			}
			in.Tasks[0].Demand[0] = 1
		}
		m := newModel(in)
		caps := nodeCaps(in)
		cm := capMax(caps, m.k)
		grids := viewGrids(cm, m.dem)
		all := slices.Clone(grids)
		droppedHere, keptHere := 0, 0
		for p := range m.k {
			if !slices.ContainsFunc(grids, func(g *grid) bool { return len(g.res) == 1 && g.res[0] == p }) {
				all = append(all, newGrid(cm, m.dem, []int{p}, cellBudget(len(m.dem))))
				if !grids[0].exact { // built, then left out (not an exact full grid alone)
					droppedHere++
				}
			} else {
				keptHere++
			}
		}
		dropped, kept = dropped+droppedHere, kept+keptHere
		partial = partial || droppedHere > 0 && keptHere > 0
		u := slices.Clone(m.val)
		if trial%2 == 1 {
			for i := range u {
				u[i] -= rng.Float64() * u[i]
			}
		}
		b := countBounds(m.dem, m.supply, caps)
		chosen, full := tablesOn(grids, m.dem, u, b), tablesOn(all, m.dem, u, b)
		for range 100 {
			r := make([]int64, m.k)
			for p := range r {
				r[p] = rng.Int64N(cm[p] + 1)
			}
			i := rng.IntN(len(m.dem) + 1)
			if got, want := chosen.value(i, r), full.value(i, r); got != want {
				t.Fatalf("trial %d: value(%d, %v) = %v over the chosen views, %v with every single resource", trial, i, r, got, want)
			}
		}
	}
	if dropped == 0 || kept == 0 || !partial {
		t.Fatalf("%d single resources' views dropped, %d kept, both in one instance %v: the test must reach all three", dropped, kept, partial)
	}
}
