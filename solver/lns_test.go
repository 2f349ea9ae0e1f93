package solver

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"gonum.org/v1/gonum/floats/scalar"
)

// ffdLNS is a large neighbourhood search on in from the FFD-DP assignment
// x, not yet run, with the root bound it may stop at.
func ffdLNS(in *Instance, seed uint64) (l *lns, x [][]int, root float64) {
	m := newModel(in)
	_, sorted, _ := sortNodes(m, nodeCaps(in))
	base := baseTables(m, sorted, m.supply)
	x = ffdAssign(m, sorted, m.supply)
	bounds, _ := rootBounds(context.Background(), m, sorted, x, base, Options{})
	root = m.floorBound(lagValue(bounds[len(bounds)-1], sorted, m.supply))
	return newLNS(m, sorted, m.supply, bounds, x, rand.New(rand.NewPCG(seed, lnsStream))), x, root
}

// lnsFrom runs the large neighbourhood search on in from the FFD-DP
// assignment (stalled: as after its first idle pause, drawing by the LP
// duals' loss) and returns the search and its starting value.
func lnsFrom(in *Instance, seed uint64, stalled bool) (*lns, float64) {
	l, _, root := ffdLNS(in, seed)
	l.stalled = stalled
	start := l.val
	l.run(context.Background(), root)
	return l, start
}

// TestLNSFeasibleAndNeverWorse: on small random instances the search keeps
// every node within capacity and every type within supply, never loses
// value and never exceeds the exhaustive optimum, also stalled (the
// neighbourhoods drawn by the LP duals' loss).
func TestLNSFeasibleAndNeverWorse(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	withDuals := 0 // stalled cases whose draw used the LP duals
	for c := 0; c < 400; c++ {
		in := smallInstance(rng)
		opt := exhaustive(in)
		stalled := c%2 == 1
		l, start := lnsFrom(in, uint64(c), stalled)
		if stalled && lpBoundOf(l.bounds) != nil {
			withDuals++
		}
		checkLNS(t, c, l, start, opt)
	}
	if withDuals == 0 {
		t.Fatal("no stalled case had the LP duals to draw by")
	}
}

// checkLNS asserts that l's assignment keeps every node within capacity
// and every type within supply (with l.free what no node holds), that l.val
// is its value, and that the value lies between start and the optimum.
func checkLNS(t *testing.T, c int, l *lns, start, opt float64) {
	t.Helper()
	if l.val < start-objTol || l.val > opt+objTol {
		t.Fatalf("case %d: lns %v from %v, optimum %v", c, l.val, start, opt)
	}
	// (weights such as 0.1 make the sums depend on their order)
	if v := assignmentValue(l.m, l.x); !scalar.EqualWithinAbsOrRel(v, l.val, objTol, objTol) {
		t.Fatalf("case %d: value %v, assignment worth %v", c, l.val, v)
	}
	used := make([]int, len(l.m.dem))
	for j, a := range l.x {
		r := append([]int64(nil), l.nodes[j]...)
		for i, k := range a {
			if k < 0 {
				t.Fatalf("case %d: node %d holds %d of type %d", c, j, k, i)
			}
			used[i] += k
			for p, d := range l.m.dem[i] {
				r[p] -= int64(k) * d
			}
		}
		for p := range r {
			if r[p] < 0 {
				t.Fatalf("case %d: node %d over capacity", c, j)
			}
		}
	}
	for i, u := range used {
		if u > l.m.supply[i] || u+l.free[i] != l.m.supply[i] {
			t.Fatalf("case %d: type %d used %d, free %d, supply %d", c, i, u, l.free[i], l.m.supply[i])
		}
	}
}

// TestLNSRuinFeasibleAndNeverWorse: partial ruins alone, from the FFD-DP
// assignment of small random instances, keep the assignment feasible and
// its value between the start and the exhaustive optimum after every
// ruin, and improve some of them.
func TestLNSRuinFeasibleAndNeverWorse(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 13))
	improved := 0
	for c := 0; c < 200; c++ {
		in := smallInstance(rng)
		opt := exhaustive(in)
		l, _, _ := ffdLNS(in, uint64(c))
		start := l.val
		for range 20 {
			if l.ruin(context.Background(), time.Time{}) {
				improved++
			}
			checkLNS(t, c, l, start, opt)
		}
	}
	if improved == 0 {
		t.Fatal("no ruin improved any assignment")
	}
	t.Logf("%d ruins improved an assignment", improved)
}

// TestLNSRepairsPerNode: on the example, per-node's 12 (both ⟨3,3⟩
// on the large node) is improved to the optimum 16 by exchanging between
// the two nodes.
func TestLNSRepairsPerNode(t *testing.T) {
	in := &Instance{
		Weights: []float64{1, 1},
		Nodes:   []Node{{ID: "a", Capacity: []int64{6, 6}}, {ID: "b", Capacity: []int64{3, 3}}},
		Tasks:   []TaskType{{ID: "big", Demand: []int64{5, 5}, Count: 1}, {ID: "small", Demand: []int64{3, 3}, Count: 2}},
	}
	m := newModel(in)
	_, sorted, _ := sortNodes(m, nodeCaps(in))
	base := baseTables(m, sorted, m.supply)
	x, _, _ := perNodeAssign(context.Background(), m, sorted, m.supply, time.Time{}, base)
	bounds, _ := rootBounds(context.Background(), m, sorted, x, base, Options{NoLP: true})
	l := newLNS(m, sorted, m.supply, bounds, x, rand.New(rand.NewPCG(1, lnsStream)))
	if l.val != 12 {
		t.Fatalf("per-node start %v, want 12", l.val)
	}
	l.run(context.Background(), 16)
	if l.val != 16 {
		t.Fatalf("lns %v, want 16", l.val)
	}
}

// TestLNSPausesAndGoesOn: on small random instances a search that pauses
// at every improvement (pauseAt just above its value) pauses only at
// pauseAt, and run again from where it paused never loses value nor
// exceeds the exhaustive optimum; it ends (not paused) like an
// uninterrupted search. (The idle pause is not reached here: every run
// returns at its first improvement, before idleness can be judged.) A
// search that adopts another assignment (as after a pause in which the
// DP or the branch and price found a better one) has its value and the
// whole supply, and goes on from it.
func TestLNSPausesAndGoesOn(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 11))
	clk := newWorkClock(0)
	ctx := withWorkClock(context.Background(), clk)
	defer clk.stop()
	pauses := 0
	for c := 0; c < 100; c++ {
		in := smallInstance(rng)
		opt := exhaustive(in)
		l, x, _ := ffdLNS(in, uint64(c))
		m := l.m
		l.clk = clk
		for run := 0; ; run++ {
			if run == 1000 {
				t.Fatalf("case %d: still pausing after %d runs", c, run)
			}
			v0 := l.val
			l.pauseAt = v0 + objTol
			l.run(ctx, opt)
			if l.val < v0-objTol || l.val > opt+objTol {
				t.Fatalf("case %d: lns %v from %v, optimum %v", c, l.val, v0, opt)
			}
			if !l.paused {
				break
			}
			pauses++
			// (an idle pause may come without an improvement of this
			// run's: its last improvement counts across runs, see
			// TestLNSIdleAfterPauseAt)
			if !l.idle && l.val < l.pauseAt {
				t.Fatalf("case %d: paused at %v from %v, pause at %v", c, l.val, v0, l.pauseAt)
			}
		}
		if v := assignmentValue(m, l.x); !scalar.EqualWithinAbsOrRel(v, l.val, objTol, objTol) {
			t.Fatalf("case %d: value %v, assignment worth %v", c, l.val, v)
		}
		// Adopting another assignment (as after a pause that found a
		// better one elsewhere): its value, the supply whole, and the
		// search goes on from it.
		l.adopt(x)
		v0 := assignmentValue(m, x)
		if !scalar.EqualWithinAbsOrRel(l.val, v0, objTol, objTol) {
			t.Fatalf("case %d: adopted value %v, assignment worth %v", c, l.val, v0)
		}
		for k := range m.supply {
			used := 0
			for j := range x {
				used += x[j][k]
			}
			if l.free[k]+used != m.supply[k] {
				t.Fatalf("case %d: type %d: %d free + %d placed, supply %d", c, k, l.free[k], used, m.supply[k])
			}
		}
		l.pauseAt = 0
		l.run(context.Background(), opt)
		if l.val < v0-objTol || l.val > opt+objTol {
			t.Fatalf("case %d: lns %v after adopting %v, optimum %v", c, l.val, v0, opt)
		}
	}
	if pauses == 0 {
		t.Fatal("no search paused")
	}
}

// TestLNSIdlePause: with a work clock (which its sub-searches advance), a
// search that has improved and then worked longer without improving than
// the whole solve had until that improvement pauses, idle, keeping its
// value; run again it goes on (its neighbourhood size and stall count
// kept) and ends within the exhaustive optimum.
func TestLNSIdlePause(t *testing.T) {
	idle := 0
	clockedLNSCases(rand.New(rand.NewPCG(9, 13)), func(c int, l *lns, ctx context.Context, opt float64) {
		runIdle(t, c, l, ctx, opt, func(v0 float64) {
			if l.val <= v0 {
				t.Fatalf("case %d: idle pause at %v without improving on %v", c, l.val, v0)
			}
			idle++
		})
	})
	if idle == 0 {
		t.Fatal("no search paused idle")
	}
	t.Logf("%d idle pauses in 100 searches", idle)
}

// TestLNSIdleAfterPauseAt: a search paused at pauseAt and run again
// (the solve's loop does so after a DP step) counts its last improvement
// from before the pause, so it pauses idle once it has worked longer than
// the solve had until that improvement, even when it cannot improve (the
// incumbent is often the optimum there); and after an idle pause the next
// run waits for an improvement of its own (it never pauses idle twice in a
// row without one, which would spin the solve's loop).
func TestLNSIdleAfterPauseAt(t *testing.T) {
	unimproved := 0
	clockedLNSCases(rand.New(rand.NewPCG(21, 7)), func(c int, l *lns, ctx context.Context, opt float64) {
		l.pauseAt = l.val + objTol // the first improvement pauses it
		l.run(ctx, opt+1e9)
		if !l.paused || l.idle {
			return // it never improved
		}
		l.pauseAt = 0
		lastIdle := false
		runIdle(t, c, l, ctx, opt, func(v0 float64) {
			improved := l.val > v0+objTol
			if !improved {
				if lastIdle {
					t.Fatalf("case %d: two idle pauses in a row at %v without an improvement", c, l.val)
				}
				unimproved++
			}
			lastIdle = !improved
		})
	})
	if unimproved == 0 {
		t.Fatal("no search resumed after its pause paused idle without improving")
	}
	t.Logf("%d idle pauses without an improvement of the run's own", unimproved)
}

// runIdle runs l (no pauseAt) until it ends, calling idle with the value
// before each run that paused idle: every run keeps its value and stays
// within the optimum opt, and without a pauseAt every pause is idle. A
// target above the optimum: the search runs to its stall limit, where
// idleness is judged, instead of stopping at the optimum.
func runIdle(t *testing.T, c int, l *lns, ctx context.Context, opt float64, idle func(v0 float64)) {
	t.Helper()
	for run := 0; ; run++ {
		if run == 1000 {
			t.Fatalf("case %d: still pausing after %d runs", c, run)
		}
		v0 := l.val
		l.run(ctx, opt+1e9)
		if l.val < v0-objTol || l.val > opt+objTol {
			t.Fatalf("case %d: lns %v from %v, optimum %v", c, l.val, v0, opt)
		}
		if !l.paused {
			return
		}
		if !l.idle {
			t.Fatalf("case %d: paused, not idle, without a pauseAt", c)
		}
		idle(v0)
	}
}

// clockedLNSCases calls fn on 100 small instances drawn from rng: case
// c's ffdLNS search with a work clock of its own, the context that
// carries the clock, and the exhaustive optimum.
func clockedLNSCases(rng *rand.Rand, fn func(c int, l *lns, ctx context.Context, opt float64)) {
	for c := 0; c < 100; c++ {
		in := smallInstance(rng)
		opt := exhaustive(in)
		l, _, _ := ffdLNS(in, uint64(c))
		l.clk = newWorkClock(0)
		fn(c, l, withWorkClock(context.Background(), l.clk), opt)
	}
}
