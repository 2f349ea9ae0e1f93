package solver

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// halfUnitInstance draws a small instance like yarn's (memory of weight
// 1/2, cores of weight 1: the value unit is 1/2 and the LP duals are often
// multiples of it): 1-3 nodes of 4-16 half units of memory and 2-8 cores,
// 2-4 types of 1-8 and 1-4, counts 1-4.
func halfUnitInstance(rng *rand.Rand) *Instance {
	in := &Instance{Weights: []float64{0.5, 1}}
	for j := range 1 + rng.IntN(3) {
		in.Nodes = append(in.Nodes, Node{ID: fmt.Sprintf("n%d", j), Capacity: []int64{4 + rng.Int64N(13), 2 + rng.Int64N(7)}})
	}
	for i := range 2 + rng.IntN(3) {
		in.Tasks = append(in.Tasks, TaskType{ID: fmt.Sprintf("t%d", i), Demand: []int64{1 + rng.Int64N(8), 1 + rng.Int64N(4)}, Count: 1 + rng.IntN(4)})
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
