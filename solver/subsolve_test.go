package solver

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// TestDiveTailSolvedOnItsOwn checks the first dive's tail on
// hetero-3r-8009, where the branch and bound with the root's bounds
// found 392.0 of the tail's 397.7 and the solve needed 1.1 s of work
// (neighbourhood search) to find the optimum: with the tail's own solve
// the dive finds it, and the instance is proven within half a second of
// work.
func TestDiveTailSolvedOnItsOwn(t *testing.T) {
	if testing.Short() {
		t.Skip("a whole solve")
	}
	provenWithinWork(t, "hetero-3r", 8009, 500*time.Millisecond)
}

// TestSolveSubIsExactOnSmallSubproblems checks the sub-solve against a
// second method: on small instances, a random subset of the nodes with a
// random part of the supply, its assignment fits the nodes and the supply
// and is worth the exhaustive optimum of that sub-problem (its work
// budget is ample there). Its work counts on the solve's clock: a budget
// of the solve that the sub-solve's work exhausts ends.
func TestSolveSubIsExactOnSmallSubproblems(t *testing.T) {
	rng := rand.New(rand.NewPCG(8009, 2))
	cases := 200
	if testing.Short() {
		cases = 60
	}
	withLP := 0  // sub-solves that went as far as the LP
	counted := 0 // sub-solves whose work the solve's clock saw (the tiny ones may count none)
	for c := range cases {
		in := smallInstance(rng)
		m := newModel(in)
		if len(m.dem) == 0 {
			continue
		}
		caps := nodeCaps(in)
		var subCaps [][]int64
		for _, cp := range caps {
			if rng.IntN(3) > 0 || len(subCaps) == 0 {
				subCaps = append(subCaps, cp)
			}
		}
		supply := make([]int, len(m.supply))
		sub := &Instance{Weights: m.w}
		for r, cp := range subCaps {
			sub.Nodes = append(sub.Nodes, Node{ID: fmt.Sprint("n", r), Capacity: cp})
		}
		for i, s := range m.supply {
			supply[i] = rng.IntN(s + 1)
			sub.Tasks = append(sub.Tasks, TaskType{ID: fmt.Sprint("t", i), Demand: m.dem[i], Count: supply[i]})
		}
		opt := exhaustive(sub)
		solve := newWorkClock(time.Minute)
		ctx := withWorkClock(context.Background(), solve)
		x, lps := solveSub(ctx, m, subCaps, supply, time.Second)
		if lps > 0 {
			withLP++
		}
		what := fmt.Sprintf("case %d (%d of %d nodes, supply %v of %v)", c, len(subCaps), len(caps), supply, m.supply)
		checkModelAssignment(t, what, m.withSupply(supply), subCaps, x, opt)
		if v := assignmentValue(m, x); m.canImprove(opt, v) {
			t.Fatalf("%s: worth %v, the optimum %v", what, v, opt)
		}
		if solve.now() > 0 {
			counted++
		}
	}
	if counted == 0 || withLP == 0 {
		t.Fatalf("of %d sub-solves, %d counted work on the solve's clock, %d solved an LP", cases, counted, withLP)
	}
	t.Logf("of %d sub-solves, %d counted work on the solve's clock, %d solved an LP", cases, counted, withLP)
	// a budget of the solve ends by the sub-solve's work
	solve := newWorkClock(time.Minute)
	budget, cancel := solve.within(withWorkClock(context.Background(), solve), time.Nanosecond)
	defer cancel()
	sub := newWorkClock(time.Minute)
	sub.parent = solve
	sub.add(workNode, 1)
	if budget.Err() == nil || sub.now() != solve.now() {
		t.Fatalf("the sub-solve's work %v, the solve's %v, its budget open: %v", sub.now(), solve.now(), budget.Err() == nil)
	}
}
