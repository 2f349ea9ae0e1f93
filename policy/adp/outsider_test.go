package adp

import (
	"context"
	"testing"

	"github.com/optd/optd/mdp"
	"github.com/optd/optd/mdp/mdptest"
	"github.com/optd/optd/policy"
	"github.com/optd/optd/sim/simtest"
)

// TestNotWorseThanGreedyOnGeneratedScenarios: on generated MDP-solvable
// scenarios (simtest.DistinctCostScenario, seeds no test was tuned on),
// each fitted policy at its default value scale, evaluated exactly on the
// MDP, costs at least the optimum and at most greedy's cost (within the
// check runs' resolution, 1%): where its fitted values lose to greedy it
// backs off towards greedy (without the back-off, adp-penalty at scale 1
// cost up to 5% more than greedy on such scenarios).
func TestNotWorseThanGreedyOnGeneratedScenarios(t *testing.T) {
	ctx := context.Background()
	seeds := 8
	if testing.Short() {
		seeds = 3
	}
	for seed := uint64(6000); seed < 6000+uint64(seeds); seed++ {
		s, data := simtest.DistinctCostScenario(t, seed, 2000, 4)
		m, sol := mdptest.Solve(t, s)
		greedy := sol.PolicyCosts["greedy"]
		for _, name := range []string{Name, NameBidPrice} {
			cfg := policy.PlacementConfig{Params: light[name], Model: s.PlacementModel()}
			pol, err := policy.NewPlacement(name, cfg)
			if err != nil {
				t.Fatalf("seed %d: %s: %v\n%s", seed, name, err, data)
			}
			c, err := mdp.EvaluatePolicy(ctx, m, pol, mdp.SolveOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("seed %d: %s × optimum %.4f (greedy × %.4f)", seed, name, c/sol.Optimal, greedy/sol.Optimal)
			if c < sol.Optimal*(1-1e-9) {
				t.Errorf("seed %d: %s costs %.9g, below the optimum %.9g\n%s", seed, name, c, sol.Optimal, data)
			}
			if c > greedy*1.01 {
				t.Errorf("seed %d: %s costs %.6g, more than 1%% above greedy's %.6g\n%s", seed, name, c, greedy, data)
			}
		}
	}
}
