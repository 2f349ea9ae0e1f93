package mdp

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/optd/optd/models"
	"github.com/optd/optd/sim"
)

// benchModel has slots of distinct costs 1 + i² (no symmetry to exploit),
// R uniform on 1..maxR with Y ∈ {2, 40}, λ = 0.4·K, μ = 1.
func benchModel(tb testing.TB, slots, K, maxR, waiting int) PlacementModel {
	costs := make([]float64, slots)
	for i := range costs {
		costs[i] = float64(1 + i*i)
	}
	var pts []models.JointPoint
	for r := 1; r <= maxR; r++ {
		pts = append(pts,
			models.JointPoint{Data: float64(2 * r), Reduces: r, Prob: 0.5 / float64(maxR)},
			models.JointPoint{Data: float64(40 * r), Reduces: r, Prob: 0.5 / float64(maxR)})
	}
	return PlacementModel{SlotCosts: costs, K: K, Lambda: 0.4 * float64(K), Mu: 1, MaxWaiting: waiting, Workload: jointWorkload(tb, pts...)}
}

// BenchmarkSolvePlacement solves the placement MDP exactly (RVI, plus the
// exact evaluation of greedy and random) at growing sizes.
func BenchmarkSolvePlacement(b *testing.B) {
	for _, c := range []struct{ slots, K, maxR, waiting int }{
		{6, 3, 2, 2}, {8, 4, 2, 2}, {9, 3, 3, 2}, {10, 4, 2, 2}, {12, 4, 2, 1},
	} {
		m := benchModel(b, c.slots, c.K, c.maxR, c.waiting)
		if _, err := m.validate(); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("slots=%d/K=%d/maxR=%d/waiting=%d", c.slots, c.K, c.maxR, c.waiting), func(b *testing.B) {
			b.ReportAllocs()
			var sol *PlacementSolution
			for b.Loop() {
				var err error
				if sol, err = SolvePlacement(context.Background(), m, SolveOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(sol.States), "states")
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/solve")
		})
	}
}

// BenchmarkHindsightBound bounds a trace of the Fig. 9-like stable system
// (100 slots of distinct costs, coarsened to 20 classes).
func BenchmarkHindsightBound(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		rng := rand.New(rand.NewPCG(1, uint64(n)))
		costs := make([]float64, 100)
		for i := range costs {
			costs[i] = 1 + 99*rng.Float64()
		}
		jobs := randomTrace(rng, n, 3, 3)
		b.Run(fmt.Sprintf("slots=100/classes=20/jobs=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := HindsightBoundCoarse(context.Background(), jobs, costs, 20); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(n), "µs/job")
		})
	}
}

// BenchmarkHindsightLagrangian compares, on the same trace (1000 distinct
// slot costs, about 20 jobs in service of up to 10 reducers), the exact
// hindsight LP (Clp) with the Lagrangian bound (300 steps), and times one
// Lagrangian step at growing sizes (linear in the jobs).
func BenchmarkHindsightLagrangian(b *testing.B) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(9, 9))
	costs := make([]float64, 1000)
	for i := range costs {
		costs[i] = 1 + 99*rng.Float64()
	}
	small := randomTrace(rng, 300, 20, 10)
	b.Run("jobs=300/LP", func(b *testing.B) {
		for b.Loop() {
			if _, err := HindsightBound(ctx, small, costs); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("jobs=300/Lagrangian/steps=300", func(b *testing.B) {
		for b.Loop() {
			if _, err := HindsightBoundLagrangian(ctx, small, costs, LagrangeOptions{Iterations: 300}); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, n := range []int{1000, 4000, 16000} {
		jobs := randomTrace(rng, n, 20, 10)
		b.Run(fmt.Sprintf("jobs=%d/Lagrangian/steps=1", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := HindsightBoundLagrangian(ctx, jobs, costs, LagrangeOptions{Iterations: 1, Cold: true}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("jobs=%d/levels", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := HindsightBoundLevels(ctx, jobs, costs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkValueBound is ValueBound on mdp-small and mdp-8slots with
// shorter paths (10⁴ steps; greedy's evaluation, five scales of its bias
// on pilot paths, then the reported paths): the path stepper's memo and
// the chain's build dominate beside the path DP.
func BenchmarkValueBound(b *testing.B) {
	for _, name := range []string{"mdp-small", "mdp-8slots"} {
		s, err := sim.LoadScenario("../search/testdata/" + name + ".json")
		if err != nil {
			b.Fatal(err)
		}
		m, err := ModelOf(s)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ValueBound(context.Background(), m, ValueBoundOptions{Steps: 10_000, Seed: 1}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEvaluate evaluates the chain of every state's first action
// exactly, by state reduction in a band order (what Evaluate and policy
// iteration use) and by the dense LU solve it replaced, on a benchModel
// model and on the overloaded slowly mixing ones (λ/μ = 20, K = 3 and 4);
// and solves the K = 4 one by relative value iteration, which hands over
// to policy iteration when the sweeps crawl.
func BenchmarkEvaluate(b *testing.B) {
	ctx := context.Background()
	pm := benchModel(b, 4, 2, 2, 2)
	cls, err := pm.validate()
	if err != nil {
		b.Fatal(err)
	}
	up, err := buildPlacement(ctx, pm, cls, discretize(pm.Workload, DefaultBins).upper, DefaultMaxStates)
	if err != nil {
		b.Fatal(err)
	}
	overloaded := overloadedPlacement(b, 20, 4)
	for _, c := range []struct {
		name string
		m    *MDP
	}{{"slots=4/K=2/maxR=2/waiting=2", up.m}, {"overloaded/K=3", overloadedPlacement(b, 20, 3)}, {"overloaded/K=4", overloaded}} {
		first := make([]int, c.m.NumStates())
		for s := range first {
			first[s], _ = c.m.ActionRange(s)
		}
		ch := chainOf(c.m, Policy{Action: first})
		o := newBandOrder(ch)
		b.Run(c.name+"/reduction", func(b *testing.B) {
			for b.Loop() {
				if _, err := evaluateByReduction(ctx, ch, newBandOrder(ch), nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(ch.NumStates()), "states")
			b.ReportMetric(float64(o.lower+o.upper+1), "band")
		})
		b.Run(c.name+"/denseLU", func(b *testing.B) {
			for b.Loop() {
				if _, err := denseEvaluation(ch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(ch.NumStates()), "states")
		})
	}
	b.Run("overloaded/K=4/rvi", func(b *testing.B) {
		var sol *Solution
		for b.Loop() {
			var err error
			if sol, err = RelativeValueIteration(ctx, overloaded, Options{}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(sol.Iterations), "iterations")
	})
}
