package solver

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"gonum.org/v1/gonum/floats/scalar"
)

// wideInstance draws a small instance (1-3 nodes, 2-4 types, counts 1-3)
// with wide capacities (200-1000 in 2-3 resources, demands up to 300 with
// no common divisor) whose DP grids are coarsened: the tables then bound
// the single-node maxima loosely, and the exact per-node tops of the LP
// bound (lagBound.tops), the reduced-cost DP's paths and its repair carry
// the proof. Exhaustive search stays cheap because the supply is small.
func wideInstance(rng *rand.Rand) *Instance {
	k := 2 + rng.IntN(2)
	weights := []float64{1, 0.5, 2, 0.1}
	in := &Instance{Weights: make([]float64, k)}
	for p := range in.Weights {
		in.Weights[p] = weights[rng.IntN(len(weights))]
	}
	for j := range 1 + rng.IntN(3) {
		c := make([]int64, k)
		for p := range c {
			c[p] = 200 + rng.Int64N(801)
		}
		in.Nodes = append(in.Nodes, Node{ID: fmt.Sprintf("n%d", j), Capacity: c})
	}
	for i := range 2 + rng.IntN(3) {
		d := make([]int64, k)
		for p := range d {
			d[p] = 1 + rng.Int64N(300)
		}
		in.Tasks = append(in.Tasks, TaskType{ID: fmt.Sprintf("t%d", i), Demand: d, Count: 1 + rng.IntN(3)})
	}
	return in
}

// TestTopsKeepBoundsValid checks on wide instances (coarsened grids) that
// every root Lagrangian bound, with its exact per-node tops, stays at or
// above the exhaustive optimum, that the exact method proves that
// optimum, and that the reduced-cost DP's shortest path respects the
// capacities and, once repaired, the supplies too, never beating the
// optimum.
func TestTopsKeepBoundsValid(t *testing.T) {
	cases := 150
	if testing.Short() {
		cases = 40
	}
	rng := rand.New(rand.NewPCG(15, 15))
	coarse, paths := 0, 0
	for c := range cases {
		in := wideInstance(rng)
		opt := exhaustive(in)
		m := newModel(in)
		if len(m.dem) == 0 {
			continue
		}
		_, sorted, _ := sortNodes(m, nodeCaps(in))
		base := baseTables(m, sorted, m.supply)
		if !base.views[0].g.exact {
			coarse++
		}
		x, _, _ := perNodeAssign(context.Background(), m, sorted, m.supply, time.Time{}, base)
		bounds, _ := rootBounds(context.Background(), m, sorted, x, base, Options{})
		for b, lb := range bounds {
			if v := lagValue(lb, sorted, m.supply); v < opt-objTol {
				t.Fatalf("case %d: bound %d is %v, below the optimum %v\n%+v", c, b, v, opt, in)
			}
		}
		if lb := bounds[len(bounds)-1]; lb.pi != nil {
			step := m.unit
			if step == 0 {
				step = 0.5
			}
			for k := -1; k <= 2; k++ {
				_, path, ok := costDPBound(context.Background(), m, sorted, lb, opt-float64(k)*step, nil)
				if !ok || path == nil {
					continue
				}
				paths++
				for j, a := range path {
					if !fitsPattern(m, a, sorted[j]) {
						t.Fatalf("case %d: the DP's path puts %v on node %v: over capacity", c, a, sorted[j])
					}
				}
				checkModelAssignment(t, fmt.Sprintf("case %d: the repaired path", c), m, sorted, repairPath(m, sorted, path), opt)
			}
		}
		ex, err := Exact(context.Background(), in, Options{})
		if err != nil {
			t.Fatal(err)
		}
		checkFeasible(t, in, ex)
		if !ex.Optimal || !scalar.EqualWithinAbsOrRel(ex.Objective, opt, objTol, objTol) {
			t.Fatalf("case %d: exact %v (optimal %v), exhaustive %v\n%+v", c, ex.Objective, ex.Optimal, opt, in)
		}
	}
	if coarse < cases/4 || paths == 0 {
		t.Fatalf("the generator exercised %d coarse grids and %d DP paths over %d cases", coarse, paths, cases)
	}
	t.Logf("%d cases, %d with coarsened grids, %d DP paths checked", cases, coarse, paths)
}

// fitsPattern reports whether pattern a fits capacity c.
func fitsPattern(m *model, a []int, c []int64) bool {
	for p := range c {
		used := int64(0)
		for i, n := range a {
			used += int64(n) * m.dem[i][p]
		}
		if used > c[p] {
			return false
		}
	}
	return true
}

// checkModelAssignment fails unless x (model types, nodes in the order of
// nodes) fits every node and the supply and is worth at most opt.
func checkModelAssignment(t *testing.T, what string, m *model, nodes [][]int64, x [][]int, opt float64) {
	t.Helper()
	left := append([]int(nil), m.supply...)
	for j, a := range x {
		if !fitsPattern(m, a, nodes[j]) {
			t.Fatalf("%s is over capacity on node %d", what, j)
		}
		for i, n := range a {
			if left[i] -= n; left[i] < 0 {
				t.Fatalf("%s exceeds the supply of type %d", what, i)
			}
		}
	}
	if v := assignmentValue(m, x); v > opt+objTol {
		t.Fatalf("%s is worth %v above the optimum %v", what, v, opt)
	}
}
