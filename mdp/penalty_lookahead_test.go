package mdp

import (
	"context"
	"testing"

	"github.com/optd/optd/sim"
)

// TestLookaheadFitClimbs: FitPenaltyStochastic (the lookahead policies'
// value function) maximizes the concave E[LP(cost + z(θ))], so its θ must
// not give a penalized LP below θ = 0's (the hindsight LP) on fresh runs
// the fit has not seen, beyond noise. On the Fig. 9 cluster (K = 100,
// 1000 slot costs grouped as the policy groups them, R up to 10) its
// earlier step rule fell to about −3000 per job against +90; the
// scenarios here are that cluster at two loads and mdp-small (few
// classes, rich queue terms). Each case's runs are shorter than the
// policy's defaults (a light fit under -race); the check runs are
// replications of another seed.
func TestLookaheadFitClimbs(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		path        string
		steps, jobs int
	}{
		{"../search/testdata/fig9-rho0.6.json", 40, 300},
		{"../search/testdata/fig9-rho0.9.json", 40, 300},
		{"../search/testdata/mdp-small.json", 60, 300},
	} {
		s, err := sim.LoadScenario(c.path)
		if err != nil {
			t.Fatal(err)
		}
		train := *s
		train.Jobs, train.WarmupJobs, train.Replications, train.Seed = c.jobs, 0, c.steps, s.Seed+17
		run := func(t0 int) ([]sim.JobRecord, error) {
			return cheapestRecords(t, &train, t0).Records, nil
		}
		// Grouped as policy/adp groups the slots before its fit.
		first, _ := run(0)
		grouped := train
		grouped.SlotCosts = GroupCheapest(s.SlotCosts, ContendedSlots(first, s.Workload.MaxReduces()), 15)
		pen, err := FitPenaltyStochastic(ctx, &grouped, c.steps, run)
		if err != nil {
			t.Fatal(err)
		}
		check := grouped
		check.Seed, check.Replications = s.Seed+29, 4
		var with, without float64
		for rep := range check.Replications {
			recs := cheapestRecords(t, &check, rep).Records
			v, err := pen.BoundOfRecords(ctx, recs)
			if err != nil {
				t.Fatal(err)
			}
			v0, err := pen.zero().BoundOfRecords(ctx, recs)
			if err != nil {
				t.Fatal(err)
			}
			with += v
			without += v0
		}
		t.Logf("%s: penalized LP %.4g, θ = 0 %.4g (ratio %.4f) over %d runs after %d steps", c.path, with, without, with/without, check.Replications, c.steps)
		if with <= without {
			t.Errorf("%s: the fitted θ's penalized LP %.6g is not above θ = 0's %.6g on fresh runs: the fit did not climb", c.path, with, without)
		}
	}
}
