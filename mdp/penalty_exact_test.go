package mdp

import (
	"context"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// TestLagrangianPackingsSupergradient checks (E1) of fitExact: at fixed
// multipliers u (the cold start, which does not depend on the penalty),
// the packings' slots per job and group x_{i,b} are a supergradient of
// the Lagrangian in the penalty s: L(u, s') ≤ L(u, s) + Σ x_{i,b}·(s'_{i,b} − s_{i,b})
// for random s' far from s, and equality for a small step from s (the
// packings then stay optimal, unless tied). Random traces, random groups
// of classes, penalties of either sign up to the slot costs' scale.
func TestLagrangianPackingsSupergradient(t *testing.T) {
	ctx := context.Background()
	checked, tight, small := 0, 0, 0
	eachRandomTrace(t, 23, 3, func(trial int, rng *rand.Rand, jobs []TraceJob, costs []float64, _ float64) {
		G, grp := randomGroups(rng, newClasses(costs))
		scale := slices.Max(costs)
		random := func() []float64 {
			s := make([]float64, len(jobs)*G)
			for k := range s {
				s[k] = (rng.Float64() - 0.5) * scale
			}
			return s
		}
		// at is L(u_cold, s) and the packings at u_cold.
		at := func(s []float64) (float64, []float64) {
			adj := &groupAdj{grp: grp, G: G, s: s, packs: make([]float64, len(s))}
			first := math.NaN()
			_, err := lagrangian(ctx, jobs, costs, adj, LagrangeOptions{Iterations: 1, Cold: true, Progress: func(_ int, b float64) { first = b }})
			if err != nil {
				t.Fatal(err)
			}
			return first, adj.packs
		}
		s := random()
		l0, x := at(s)
		for r := range 4 {
			s1 := random()
			if r == 0 {
				// A small step from s.
				for k := range s1 {
					s1[k] = s[k] + 1e-6*(s1[k]/scale)
				}
			}
			l1, _ := at(s1)
			lin := l0
			for k := range s {
				lin += x[k] * (s1[k] - s[k])
			}
			tol := 1e-9 * (1 + math.Abs(l0) + math.Abs(l1))
			if l1 > lin+tol {
				t.Fatalf("trial %d: L(s') = %.12g above the supergradient's line %.12g", trial, l1, lin)
			}
			checked++
			if r == 0 {
				small++
				if l1 >= lin-tol {
					tight++
				}
			}
		}
	})
	// Not vacuous: the line touches L near s on most traces.
	if tight*2 < small {
		t.Errorf("the supergradient's line touches L after a small step on only %d of %d traces", tight, small)
	}
	t.Logf("%d checks, tight after a small step on %d of %d traces", checked, tight, small)
}

// TestLagrangianIndependentOfWorkers: the penalized Lagrangian's bound and
// its averaged packings (the exact fit's direction) are the same to the
// bit with one worker and with three: each class's packing value is summed
// in class order, not per worker, so the fitted θ does not depend on the
// machine's GOMAXPROCS (with the per-worker sums before, 18 of these
// traces differed).
func TestLagrangianIndependentOfWorkers(t *testing.T) {
	ctx := context.Background()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	eachRandomTrace(t, 29, 3, func(trial int, rng *rand.Rand, jobs []TraceJob, costs []float64, _ float64) {
		G, grp := randomGroups(rng, newClasses(costs))
		s := make([]float64, len(jobs)*G)
		for k := range s {
			s[k] = (rng.Float64() - 0.5) * slices.Max(costs)
		}
		run := func(workers int) (float64, []float64) {
			runtime.GOMAXPROCS(workers)
			adj := &groupAdj{grp: grp, G: G, s: s, packs: make([]float64, len(s)), packFrom: 20}
			res, err := lagrangian(ctx, jobs, costs, adj, LagrangeOptions{Iterations: 60})
			if err != nil {
				t.Fatal(err)
			}
			return res.Bound, adj.packs
		}
		b1, x1 := run(1)
		b3, x3 := run(3)
		if b1 != b3 || !slices.Equal(x1, x3) {
			t.Errorf("trial %d: bound %.17g with one worker, %.17g with three (packings equal: %v)", trial, b1, b3, slices.Equal(x1, x3))
		}
	})
}

// randomGroups puts the classes into 1 to 4 groups at random.
func randomGroups(rng *rand.Rand, cls *classes) (G int, grp []int) {
	G = 1 + rng.IntN(4)
	grp = make([]int, cls.num())
	for c := range grp {
		grp[c] = rng.IntN(G)
	}
	return G, grp
}
