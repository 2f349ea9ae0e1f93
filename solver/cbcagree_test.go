package solver

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// TestExactAgreesWithCBC solves random medium instances (up to 20 nodes,
// 10 task types, 2 resources) with exact and with CBC on the compact
// integer program written by WriteLP. Both get a short time limit; on every
// instance where both prove optimality the objectives must be equal (CBC's
// objective is recomputed exactly from its integer solution), and at least
// 200 such instances (40 with -short) are required. Where one of them stops
// on its time limit the solutions must still be consistent with the other's
// bound, and the case is logged.
func TestExactAgreesWithCBC(t *testing.T) {
	want, tries := 200, 260
	if testing.Short() {
		want, tries = 40, 60
	}
	const limit = time.Second
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(2026, 9))
	var cbcTime, exactTime time.Duration
	agree, exactOpen, cbcOpen := 0, 0, 0
	for c := 0; c < tries && agree < want; c++ {
		spec := RandomSpec{
			Nodes:         1 + rng.IntN(20),
			Types:         1 + rng.IntN(10),
			Resources:     2,
			Classes:       rng.IntN(4), // 0: heterogeneous
			CapMin:        4 + rng.Int64N(6),
			DemandMaxFrac: 0.3 + 0.6*rng.Float64(),
			Supply:        0.4 + 1.6*rng.Float64(),
		}
		spec.CapMax = spec.CapMin + rng.Int64N(9)
		in, err := RandomInstance(rng, spec)
		if err != nil {
			t.Fatal(err)
		}
		ex, err := Exact(context.Background(), in, Options{TimeLimit: limit})
		if err != nil {
			t.Fatal(err)
		}
		checkFeasible(t, in, ex)
		cb, err := runCBC(context.Background(), dir, fmt.Sprintf("case%d", c), in, limit)
		if err == errNoCBC {
			t.Skip("cbc is not on PATH (Debian package coinor-cbc); skipping the CBC agreement test")
		}
		if err != nil {
			t.Fatalf("case %d: %v", c, err)
		}
		cbcTime += cb.elapsed
		exactTime += time.Duration(ex.ElapsedMS * float64(time.Millisecond))
		if cb.objective > ex.UpperBound || (cb.optimal && ex.Objective > cb.objective) {
			t.Fatalf("case %d: inconsistent: exact %v (bound %v), cbc %v (%s)", c, ex.Objective, ex.UpperBound, cb.objective, cb.status)
		}
		switch {
		case !ex.Optimal:
			exactOpen++
			t.Logf("case %d (%d nodes, %d types, %d classes): exact stopped at %v ≤ opt ≤ %v after %d nodes; cbc %v (%s)",
				c, len(in.Nodes), len(in.Tasks), spec.Classes, ex.Objective, ex.UpperBound, ex.Stats.NodesExplored, cb.objective, cb.status)
		case !cb.optimal:
			cbcOpen++
		case ex.Objective != cb.objective:
			t.Fatalf("case %d (%d nodes, %d types): exact %v, cbc %v", c, len(in.Nodes), len(in.Tasks), ex.Objective, cb.objective)
		default:
			agree++
		}
	}
	t.Logf("%d instances with equal proven optima; %d not proven by exact, %d not proven by cbc within %v; cbc %v, exact %v in total",
		agree, exactOpen, cbcOpen, limit, cbcTime.Round(time.Millisecond), exactTime.Round(time.Millisecond))
	if agree < want {
		t.Fatalf("only %d instances with both optima proven, want %d", agree, want)
	}
}
