package search

import (
	"context"
	"fmt"
	"testing"

	"github.com/optd/optd/policy/placement"
)

// BenchmarkSearchFig9 times a CMA-ES search of state-threshold on the Fig. 9
// setting at ρ = 0.6 (1000 slots, K = 100), sized down so that one
// iteration stays well under a minute: 20 evaluations × 10 replications of
// 5000 jobs. It reports the wall time per evaluation (10 simulations run
// on GOMAXPROCS workers) and the simulated jobs per second; a full search
// of 200 evaluations × 10 replications × 50,000 jobs costs about 100 times
// one iteration.
func BenchmarkSearchFig9(b *testing.B) {
	s, err := loadScenarioB("fig9-rho0.6.json")
	if err != nil {
		b.Fatal(err)
	}
	s.Jobs, s.WarmupJobs = 5000, 500
	const evals, reps = 20, 10
	b.Run(fmt.Sprintf("slots=1000/jobs=%d/evals=%d/reps=%d", s.Jobs, evals, reps), func(b *testing.B) {
		b.ReportAllocs()
		var simulated int
		for b.Loop() {
			p := &PlacementProblem{Scenario: s, Family: placement.NameStateThreshold}
			res, err := Run(context.Background(), p, Options{Evaluations: evals, Replications: reps, Validation: -1, Seed: 1})
			if err != nil {
				b.Fatal(err)
			}
			simulated += res.Simulated
		}
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(simulated), "ms/evaluation")
		b.ReportMetric(float64(simulated*reps*(s.Jobs-s.WarmupJobs))/b.Elapsed().Seconds(), "jobs/s")
	})
}
