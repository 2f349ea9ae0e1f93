package solver

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/floats/scalar"
)

// TestSurrogateKeepsEveryPattern: on random single nodes of 2-4
// resources, every feasible pattern (enumerated) satisfies the surrogate
// constraint withSurrogate adds; the count search with the surrogate's
// tables, run to the end, finds the enumeration's optimum (most of these
// nodes are small enough for quickOneNode's first stage, so the search
// with the surrogate is run here directly); and so does the exact method.
func TestSurrogateKeepsEveryPattern(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 17))
	built := 0
	for c := range 300 {
		k := 2 + rng.IntN(3)
		in := &Instance{Weights: make([]float64, k), Nodes: []Node{{ID: "n0", Capacity: make([]int64, k)}}}
		for p := range k {
			in.Weights[p] = []float64{1, 0.5, 2, 3}[rng.IntN(4)]
			in.Nodes[0].Capacity[p] = 5 + rng.Int64N(40)
		}
		for i := range 2 + rng.IntN(4) {
			d := make([]int64, k)
			for p := range d {
				d[p] = rng.Int64N(min(in.Nodes[0].Capacity[p], 12) + 1)
			}
			d[rng.IntN(k)] = max(d[0], 1)
			in.Tasks = append(in.Tasks, TaskType{ID: fmt.Sprintf("t%d", i), Demand: d, Count: 1 + rng.IntN(6)})
		}
		if err := in.Validate(); err != nil {
			t.Fatalf("case %d: %v", c, err)
		}
		m := newModel(in)
		if len(m.dem) == 0 {
			continue
		}
		cap0 := in.Nodes[0].Capacity
		sm, scap, ok := withSurrogate(context.Background(), m, cap0)
		if ok {
			built++
			if sm.k != m.k+1 || len(scap) != m.k+1 || scap[m.k] <= 0 {
				t.Fatalf("case %d: surrogate model of %d resources, capacities %v", c, sm.k, scap)
			}
			// every pattern within the capacities within the surrogate's
			a := make([]int, len(m.dem))
			var walk func(i int)
			walk = func(i int) {
				if i == len(a) {
					used := make([]int64, sm.k)
					for t2, n := range a {
						for p := range sm.k {
							used[p] += int64(n) * sm.dem[t2][p]
						}
					}
					fits := true
					for p := range m.k {
						fits = fits && used[p] <= cap0[p]
					}
					if fits && used[m.k] > scap[m.k] {
						t.Fatalf("case %d: pattern %v fits the node but not the surrogate (%d > %d)", c, a, used[m.k], scap[m.k])
					}
					return
				}
				for n := 0; n <= m.supply[i]; n++ {
					a[i] = n
					walk(i + 1)
				}
			}
			walk(0)
		}
		want := exhaustive(in)
		if ok {
			scaps := [][]int64{scap}
			srch := newSearch(context.Background(), sm, scaps, []bool{false}, sm.supply, []*lagBound{{tab: oneNodeTables(sm, scaps, true)}, {pi: sm.val}})
			srch.run()
			if srch.stopped != "" || !scalar.EqualWithinAbsOrRel(srch.bestVal, want, objTol, objTol) {
				t.Fatalf("case %d: search with the surrogate %v (stopped %q), exhaustive %v\n%+v", c, srch.bestVal, srch.stopped, want, in)
			}
		}
		r, err := Exact(context.Background(), in, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !r.Optimal || !scalar.EqualWithinAbsOrRel(r.Objective, want, objTol, objTol) {
			t.Fatalf("case %d: exact %v (optimal %v), exhaustive %v\n%+v", c, r.Objective, r.Optimal, want, in)
		}
	}
	t.Logf("surrogate built on %d of 300 nodes", built)
	if built < 100 {
		t.Fatalf("the surrogate was built on %d of 300 nodes, want most (capacities bind)", built)
	}
}
