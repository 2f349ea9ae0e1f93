package benchmarks

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/optd/optd/policy"
	"github.com/optd/optd/policy/placement"
	"github.com/optd/optd/sim"
)

// fig9Beyond are the settings beyond the paper's range: heavier loads at
// K = 100, and fewer jobs in service (so that jobs wait) at ρ = 0.9. Not
// ρ = 0.95: its busy periods are so long that one replication's hindsight
// LP takes about 18 minutes on 2 cores, beyond the report's budget.
var fig9Beyond = []struct {
	k   int
	rho float64
}{{100, 0.7}, {100, 0.8}, {100, 0.9}, {20, 0.9}, {10, 0.9}}

// placementFig9Beyond runs the Fig. 9 setting beyond the paper's range of
// K and ρ under every registered placement policy but random, and gives
// each policy's gap to the best lower bound on the same jobs: the most that
// any policy, online or offline, could still save.
func placementFig9Beyond(ctx context.Context, env *Env) (*Output, error) {
	jobs, warmup, reps := Pick(env, 2000, 50000), Pick(env, 200, 1000), Pick(env, 2, 3)
	classes := Pick(env, 20, 100)
	names := slices.DeleteFunc(policy.PlacementNames(), func(n string) bool { return n == placement.NameRandom })
	head := []string{"K", "ρ"}
	for _, n := range names {
		head = append(head, n)
	}
	head = append(head, "best lower bound")
	for _, n := range names {
		head = append(head, n+" gap to bound")
	}
	head = append(head, "receding-horizon saving vs greedy")
	t := newTable(head...)
	var events uint64
	for _, c := range fig9Beyond {
		s, err := fig9ScenarioK(c.k, c.rho, jobs, warmup, reps, env.Seed)
		if err != nil {
			return nil, err
		}
		r, err := runPlacement(ctx, env, fmt.Sprintf("K = %d, ρ = %g", c.k, c.rho), s, names, classes)
		if err != nil {
			return nil, err
		}
		events += r.events
		best := r.bests()
		row := []any{c.k, num(c.rho)}
		for _, n := range names {
			row = append(row, ci(sim.MeanCI95(r.cost[n])))
		}
		row = append(row, ci(sim.MeanCI95(best)))
		for _, n := range names {
			row = append(row, ci(sim.MeanCI95(gaps(r.cost[n], best)))+"%")
		}
		row = append(row, ci(sim.MeanCI95(savings(r.cost[placement.NameGreedy], r.cost[placement.NameRecedingHorizon])))+"%")
		t.add(row...)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "The Fig. 9 setting (1000 slots with costs U[1, 100], μ = 1, X ~ U[1, 100], R ~ U{1..10}) beyond the paper's range: "+
		"loads up to ρ = 0.9 with K = 100 jobs in service, and K = 20 and 10 at ρ = 0.9 (jobs then wait for service). "+
		"%d jobs per replication (%d warm-up), %d replications with common random numbers; the best lower bound is the larger of the "+
		"hindsight LP (slot costs rounded down to %d classes) and the empty-cluster bound on the same jobs, and a policy's gap is "+
		"(cost − bound)/bound, paired per replication: an upper limit on what a better policy could save.\n\n",
		jobs, warmup, reps, classes)
	b.WriteString(t.String())
	fmt.Fprintf(&b, "\nThe simulator processed %d events for this section.\n", events)
	return &Output{Markdown: b.String()}, nil
}
