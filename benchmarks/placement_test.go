package benchmarks

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/optd/optd/policy"
	"github.com/optd/optd/policy/adp"
	"github.com/optd/optd/policy/rollout"
)

// TestPlacementBestBound: on Fig. 9 settings of several loads, K and
// seeds (quick sizes), the best lower bound runPlacement reports, with the
// Lagrangian bound on the exact hindsight LP beside the coarse LP, is at
// most every policy's cost on every replication, and the Lagrangian is
// computed, with at least one step, on each.
func TestPlacementBestBound(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates 2×2000 jobs under every placement policy per case; skipped with -short")
	}
	names := policy.PlacementNames()
	// The check is of the bound, not of the policies: the rollout light (its
	// decisions cost about 1 ms at its defaults, ten times that under
	// -race) and the fitted policies on short fits (at their defaults the
	// fits were nine tenths of this test's time).
	for name, light := range map[string]string{
		rollout.Name:     "samples=2;horizon=5;levels=1",
		adp.NameBidPrice: "fit_steps=5;fit_jobs=100",
		adp.Name:         "fit_steps=20;fit_jobs=100",
	} {
		names[slices.Index(names, name)] = name + ":" + light
	}
	for _, c := range []struct {
		k    int
		rho  float64
		seed uint64
	}{{100, 0.6, 1}, {100, 0.9, 2}, {10, 0.9, 3}, {100, 0.2, 4}} {
		t.Run(fmt.Sprintf("K=%d,rho=%g,seed=%d", c.k, c.rho, c.seed), func(t *testing.T) {
			env := &Env{Config: Config{Quick: true, Seed: c.seed}}
			s, err := fig9ScenarioK(c.k, c.rho, 2000, 200, 2, c.seed)
			if err != nil {
				t.Fatal(err)
			}
			pb := lagrangeBudget(20, 5*time.Second)
			pb.classes = 20
			r, err := runPlacement(context.Background(), env, "test", s, names, pb)
			if err != nil {
				t.Fatal(err)
			}
			best := r.bests()
			for rep := range s.Replications {
				if math.IsNaN(r.lagrangian[rep]) || r.lagrangeSteps[rep] < 1 {
					t.Errorf("replication %d: Lagrangian %v after %d steps, want a bound", rep, r.lagrangian[rep], r.lagrangeSteps[rep])
				}
				if best[rep] < r.hindsight[rep] || best[rep] < r.empty[rep] || best[rep] < r.lagrangian[rep] {
					t.Errorf("replication %d: best %v below one of hindsight %v, empty %v, Lagrangian %v",
						rep, best[rep], r.hindsight[rep], r.empty[rep], r.lagrangian[rep])
				}
				if len(r.policies) != len(names) {
					t.Fatalf("policies %v, want %v", r.policies, names)
				}
				for _, n := range r.policies {
					if cost := r.cost[n][rep]; best[rep] > cost*(1+1e-9) {
						t.Errorf("replication %d: best bound %v exceeds %s's cost %v", rep, best[rep], n, cost)
					}
				}
			}
		})
	}
}

// TestCheckBounds: a run whose best bound exceeds a policy's cost on one
// replication is rejected, naming the replication and the policy; a NaN
// Lagrangian (not computed) never wins.
func TestCheckBounds(t *testing.T) {
	r := &placementRun{
		policies:   []string{"a", "b"},
		cost:       map[string][]float64{"a": {10, 12}, "b": {11, 9}},
		hindsight:  []float64{8, 8},
		empty:      []float64{5, 5},
		lagrangian: []float64{math.NaN(), 9.5},
	}
	err := r.checkBounds()
	if err == nil || !strings.Contains(err.Error(), "replication 1") || !strings.Contains(err.Error(), "b's cost") {
		t.Errorf("err = %v, want one naming replication 1 and policy b", err)
	}
	if got := r.best(0); got != 8 {
		t.Errorf("best(0) = %v with a NaN Lagrangian, want the hindsight LP 8", got)
	}
	r.lagrangian[1] = 9
	if err := r.checkBounds(); err != nil {
		t.Errorf("bounds at most every cost: err = %v", err)
	}
}

// TestPenalizedBoundBelowMeanCosts: on small Fig. 9 settings (K = 100 at
// ρ = 0.6, K = 10 at ρ = 0.9, other seeds), the penalized bound the
// beyond-Fig. 9 section computes (a short fit, its Lagrangian on every
// replication) is computed on every replication and is at most every
// policy's mean cost within the CI of the paired difference, its
// Lagrangian on its own budget (beyondPenaltyLagrange); the check
// that judges it (penaltyViolations) flags a bound above a policy's costs.
func TestPenalizedBoundBelowMeanCosts(t *testing.T) {
	if testing.Short() {
		t.Skip("fits a penalty and simulates 3×2000 jobs per case; skipped with -short")
	}
	names := []string{"greedy", "state-threshold", "receding-horizon"}
	for _, c := range []struct {
		k    int
		rho  float64
		seed uint64
	}{{100, 0.6, 5}, {10, 0.9, 6}} {
		t.Run(fmt.Sprintf("K=%d,rho=%g,seed=%d", c.k, c.rho, c.seed), func(t *testing.T) {
			ctx := context.Background()
			env := &Env{Config: Config{Quick: true, Seed: c.seed}}
			s, err := fig9ScenarioK(c.k, c.rho, 2000, 200, 3, c.seed)
			if err != nil {
				t.Fatal(err)
			}
			pb := lagrangeBudget(10, 5*time.Second)
			pb.classes = 20
			// The penalized bound's own budget (the section's), its
			// steps counted: more than the pathwise bounds' 10.
			pb.penaltyLagrange = beyondPenaltyLagrange(env)
			// its steps only, not its time guard: this checks the
			// budget's wiring, which a loaded machine must not fail
			pb.penaltyLagrange.TimeLimit = 0
			most := 0
			pb.penaltyLagrange.Progress = func(step int, _ float64) { most = max(most, step) }
			if pb, _, err = withPenalty(ctx, env, "test", s, pb, penaltyBudget(env)); err != nil {
				t.Fatal(err)
			}
			r, err := runPlacement(ctx, env, "test", s, names, pb)
			if err != nil {
				t.Fatal(err)
			}
			if want := pb.penaltyLagrange.Iterations; most <= pb.lagrange.Iterations || most > want {
				t.Errorf("the penalized bound's Lagrangian took at most %d steps, want more than the pathwise bounds' %d and at most its own %d",
					most, pb.lagrange.Iterations, want)
			}
			if got := slices.Max(r.penalizedSteps); got != most {
				t.Errorf("the penalized bound's steps per replication %v, want the largest to be the %d counted", r.penalizedSteps, most)
			}
			for rep, v := range r.penalized {
				if math.IsNaN(v) || v <= 0 {
					t.Errorf("replication %d: penalized bound %v, want a positive number", rep, v)
				}
			}
			if len(r.penalized) != s.Replications {
				t.Fatalf("%d penalized bounds for %d replications", len(r.penalized), s.Replications)
			}
			if v := r.penaltyViolations(); len(v) > 0 {
				t.Errorf("the penalized bound is above a policy's mean cost: %v", v)
			}
			for _, n := range names {
				m, h := paired(r.cost[n], r.penalized)
				t.Logf("%s: mean cost − penalized bound %.4g ± %.2g", n, m, h)
			}
			// The check itself: a bound 10% above every policy's cost.
			for rep := range r.penalized {
				r.penalized[rep] = 1.1 * r.cost[names[0]][rep]
			}
			if v := r.penaltyViolations(); !slices.ContainsFunc(v, func(s string) bool { return strings.HasPrefix(s, names[0]+":") }) {
				t.Errorf("a bound 10%% above %s's cost not flagged: %v", names[0], v)
			}
		})
	}
}

// TestPenaltyViolationsNotComputed: no penalized bound (NaN) or one
// replication (no CI) flags nothing.
func TestPenaltyViolationsNotComputed(t *testing.T) {
	for _, pen := range [][]float64{{math.NaN(), math.NaN()}, {100}, nil} {
		cost := make([]float64, max(len(pen), 1))
		r := &placementRun{policies: []string{"a"}, cost: map[string][]float64{"a": cost}, penalized: pen}
		if v := r.penaltyViolations(); len(v) > 0 {
			t.Errorf("penalized %v: flagged %v", pen, v)
		}
	}
}
