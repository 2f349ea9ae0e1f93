package solver

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// TestDiveFeasibleAndBelowOptimum checks the price-and-dive heuristic
// against the optimum: on small instances (a third with identical nodes;
// at most diveExactNodes nodes, which the dive solves exactly) the
// exhaustive one, on medium instances (8-16 nodes in 1-16 classes, where
// the dive fixes patterns) the exact method's proven one. Every
// assignment it returns fits the nodes and the supply, is worth what it
// says and never more than the optimum; with the cut-off at 0 it always
// returns one, and on some instances the optimum itself.
func TestDiveFeasibleAndBelowOptimum(t *testing.T) {
	cases := 40 // light under -race: the medium instances' exact solves dominate
	if testing.Short() {
		cases = 16
	}
	rng := rand.New(rand.NewPCG(15, 2))
	optimal, ran, fixing := 0, 0, 0
	for c := range cases {
		in, opt, ok := optimumCase(t, rng, c, 3)
		if !ok {
			continue
		}
		if c%2 == 1 {
			fixing++
		}
		m := newModel(in)
		if len(m.dem) == 0 {
			continue
		}
		_, sorted, _ := sortNodes(m, nodeCaps(in))
		base := baseTables(m, sorted, m.supply)
		x0, _, _ := perNodeAssign(context.Background(), m, sorted, m.supply, time.Time{}, base)
		bounds, _ := rootBounds(context.Background(), m, sorted, x0, base, Options{})
		var drng *rand.Rand // deterministic and randomised dives, alternately
		if c%4 >= 2 {
			drng = rand.New(rand.NewPCG(uint64(c), 1))
		}
		x, val, _ := diveAssign(context.Background(), m, sorted, newColumnPool(), x0, bounds, 0, drng)
		if x == nil {
			t.Fatalf("case %d: no assignment with the cut-off at 0\n%+v", c, in)
		}
		ran++
		what := fmt.Sprintf("case %d: the dive's assignment", c)
		checkModelAssignment(t, what, m, sorted, x, opt)
		if v := assignmentValue(m, x); v != val {
			t.Fatalf("%s is worth %v, reported %v", what, v, val)
		}
		if !m.canImprove(opt, val) {
			optimal++
		}
	}
	if ran == 0 || optimal == 0 || fixing < cases/4 {
		t.Fatalf("%d dives (%d on medium instances), %d optimal", ran, fixing, optimal)
	}
	t.Logf("%d of %d dives (%d on medium instances) reached the optimum", optimal, ran, fixing)
}
