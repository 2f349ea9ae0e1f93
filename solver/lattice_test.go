package solver

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
)

// halfUnitInstance draws a small instance like yarn's (a first resource of
// weight 1/2, a second of weight 1: the value unit is 1/2 and the LP duals
// are often multiples of it): 1-3 nodes of capacities 4-12, 2-4 types.
func halfUnitInstance(rng *rand.Rand) *Instance {
	in, err := RandomInstance(rng, RandomSpec{Nodes: 1 + rng.IntN(3), Types: 2 + rng.IntN(3), Resources: 2,
		CapMin: 4, CapMax: 12, DemandMaxFrac: 1, Supply: 1.2, Weights: []float64{0.5, 1}})
	if err != nil {
		panic(err)
	}
	return in
}

// TestValueLatticeHoldsEveryValue checks the value lattice (lattice.go)
// against every feasible assignment, enumerated exhaustively apart from
// the model: on small instances (yarn-like ones with a half unit, and the
// exact tests' random ones), every feasible value z is at most the
// lattice's top and is a value the lattice admits (wholeBound(z) = z), so
// that no bound b ≥ z steps down below z; and the exact method proves the
// exhaustive optimum. Some instances must have a
// lattice that rules values out (else the test checks nothing).
func TestValueLatticeHoldsEveryValue(t *testing.T) {
	cases := 400
	if testing.Short() {
		cases = 150
	}
	rng := rand.New(rand.NewPCG(15, 21))
	lattices, stepped := 0, 0
	for c := range cases {
		in := halfUnitInstance(rng)
		if c%3 == 2 {
			in = smallInstance(rng)
		}
		m := newModel(in)
		if len(m.dem) == 0 {
			continue
		}
		_, sorted, _ := sortNodes(m, nodeCaps(in))
		base := baseTables(m, sorted, m.supply)
		bounds, _ := rootBounds(context.Background(), m, sorted, ffdAssign(m, sorted, m.supply), base, Options{})
		m.lattice = newValueLattice(m, sorted, lpBoundOf(bounds))
		if m.lattice == nil {
			continue
		}
		lattices++
		top := float64(m.lattice.top) * m.lattice.delta
		ruledOut := false
		eachAssignmentValue(in, func(z float64) {
			if z > top+1e-9*math.Max(1, top) {
				t.Fatalf("case %d: value %v above the lattice's top %v", c, z, top)
			}
			for up := range 4 {
				b := z + float64(up)*m.unit
				w := m.wholeBound(b)
				if w < z-1e-9*math.Max(1, z) {
					t.Fatalf("case %d: the bound %v steps down to %v, below the feasible value %v (top %v, δ %v)", c, b, w, z, top, m.lattice.delta)
				}
				ruledOut = ruledOut || w < m.floorBound(b)
			}
		})
		if ruledOut {
			stepped++
		}
		// and the exact method, whose bounds step down to the lattice,
		// proves the exhaustive optimum
		r, err := Exact(context.Background(), in, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if opt := exhaustive(in); !r.Optimal || math.Abs(r.Objective-opt) > objTol*math.Max(1, opt) {
			t.Fatalf("case %d: exact %v (optimal %v), exhaustive optimum %v", c, r.Objective, r.Optimal, opt)
		}
	}
	if stepped == 0 {
		t.Fatalf("%d of %d cases had a lattice, none ruled a value out", lattices, cases)
	}
	t.Logf("%d of %d cases had a lattice, %d ruled values out", lattices, cases, stepped)
}
