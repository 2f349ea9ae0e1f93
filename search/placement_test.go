package search

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/optd/optd/mdp"
	"github.com/optd/optd/mdp/mdptest"
	"github.com/optd/optd/policy"
	"github.com/optd/optd/policy/adp"
	"github.com/optd/optd/policy/placement"
	"github.com/optd/optd/policy/rollout"
	"github.com/optd/optd/sim"
)

func loadScenario(t *testing.T, name string) *sim.Scenario {
	t.Helper()
	s, err := loadScenarioB(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func loadScenarioB(name string) (*sim.Scenario, error) { return sim.LoadScenario("testdata/" + name) }

// TestPlacementMetricIsTheSimulation: the metric of the default parameters
// is the simulated mean cost of the family built by name, the same as a
// reference of that name, and the lower bounds never exceed any policy's
// cost on the same replication (random candidates, references).
func TestPlacementMetricAndBounds(t *testing.T) {
	s := loadScenario(t, "mdp-small.json")
	s.Jobs, s.WarmupJobs = 1500, 100
	p := &PlacementProblem{Scenario: s, Family: placement.NameStateThreshold, Refs: []string{"greedy", "receding-horizon", "random"}, Bounds: true}
	if err := p.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sp := p.Space()
	rng := rand.New(rand.NewPCG(1, 2))
	for rep := range 2 {
		def, err := p.Metric(ctx, sp.Defaults(), rep)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := p.ReferenceMetric(ctx, placement.NameStateThreshold, rep)
		if err != nil {
			t.Fatal(err)
		}
		if def != ref {
			t.Errorf("rep %d: metric of the defaults %v, the family by name %v", rep, def, ref)
		}
		lb, err := p.LowerBounds(ctx, rep)
		if err != nil {
			t.Fatal(err)
		}
		if len(lb) != 2 {
			t.Fatalf("bounds %v", lb)
		}
		costs := []float64{def}
		for _, r := range p.Refs {
			c, err := p.ReferenceMetric(ctx, r, rep)
			if err != nil {
				t.Fatal(err)
			}
			costs = append(costs, c)
		}
		for range 6 {
			u := make([]float64, len(sp))
			for k := range u {
				u[k] = rng.Float64()
			}
			c, err := p.Metric(ctx, sp.ToParams(u), rep)
			if err != nil {
				t.Fatal(err)
			}
			costs = append(costs, c)
		}
		for name, b := range lb {
			for _, c := range costs {
				if b > c*(1+1e-9) {
					t.Errorf("rep %d: bound %s = %v above a policy's cost %v", rep, name, b, c)
				}
			}
		}
	}
	bad := &PlacementProblem{Scenario: s, Family: placement.NameStateThreshold, Refs: []string{"state-threshold:nope=1"}}
	if err := bad.Check(context.Background()); err == nil {
		t.Error("a reference with an unknown parameter passed Check")
	}
	if _, err := SpaceOf(placement.NameGreedy); err == nil {
		t.Error("greedy has a search space")
	}
}

// TestExactSearchClosesTheGap tunes state-threshold on a solvable MDP and
// checks the figures against second methods: the family with m = 0 costs
// exactly what mdp.SolvePlacement reports for greedy; the tuned cost lies
// between the optimum and the defaults' cost; and the simulation of the
// tuned policy agrees with its exact cost within the 95% interval.
func TestExactSearchClosesTheGap(t *testing.T) {
	s, prob, sol := exactSmall(t, placement.NameStateThreshold, "window=200,free-fraction=1")
	ctx := context.Background()
	sp := prob.Params
	g, err := prob.Metric(ctx, withValues(sp, map[string]float64{"base": 0, "per_job": 0, "per_waiting": 0}), 0)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(g-sol.PolicyCosts["greedy"]) > 1e-9*g {
		t.Errorf("m = 0 costs %v, greedy %v", g, sol.PolicyCosts["greedy"])
	}
	res, err := Run(ctx, prob, Options{Evaluations: 60, Replications: 1, Validation: -1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	best, def := res.Search.Best.Mean, res.Search.Default.Mean
	if best < sol.Optimal*(1-1e-9) || best > def {
		t.Errorf("tuned %v outside [optimum %v, default %v]", best, sol.Optimal, def)
	}
	closed := (sol.PolicyCosts["greedy"] - best) / (sol.PolicyCosts["greedy"] - sol.Optimal)
	t.Logf("optimum %.4g, greedy %.4g, defaults %.4g, tuned %.4g: %.1f%% of the greedy → optimum gap closed (%s)",
		sol.Optimal, sol.PolicyCosts["greedy"], def, best, 100*closed, policy.FormatPlacementSpec(placement.NameStateThreshold, res.Params))
	if closed < 0.5 {
		t.Errorf("the tuned family closes only %.1f%% of the gap", 100*closed)
	}
	// Second method: simulate the tuned rule (known law, so the same
	// stationary rule the MDP evaluated).
	s.Jobs = 6000
	sim := &PlacementProblem{Scenario: s, Family: placement.NameStateThreshold, Params: sp, Config: policy.PlacementConfig{Workload: s.Workload}}
	xs := make([]float64, s.Replications)
	x := make([]float64, len(sp))
	for k, p := range sp {
		x[k] = res.Params[p.Name]
	}
	for rep := range xs {
		if xs[rep], err = sim.Metric(ctx, x, rep); err != nil {
			t.Fatal(err)
		}
	}
	e := estimate(xs)
	if math.Abs(e.Mean-best) > *e.CI95 {
		t.Errorf("simulated %v ± %v, exact %v", e.Mean, *e.CI95, best)
	}
}

// TestExactSearchOfFittedPolicy: a fitted family's value scale searched
// alone (the fit parameters fixed, so the fit is made once) on the MDP of
// mdp-small: scale 0 is greedy exactly, and the tuned scale costs between
// the optimum and the fitted scale's cost.
func TestExactSearchOfFittedPolicy(t *testing.T) {
	_, prob, sol := exactSmall(t, adp.NameBidPrice, "classes=6,fit_steps=10,fit_jobs=300")
	ctx := context.Background()
	for _, p := range prob.Params {
		if (p.Min < p.Max) != (p.Name == "value_scale") {
			t.Fatalf("parameter %+v: want value_scale alone searched", p)
		}
	}
	g, err := prob.Metric(ctx, withValues(prob.Params, map[string]float64{"value_scale": 0}), 0)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(g-sol.PolicyCosts["greedy"]) > 1e-9*g {
		t.Errorf("value_scale = 0 costs %v, greedy %v", g, sol.PolicyCosts["greedy"])
	}
	res, err := Run(ctx, prob, Options{Evaluations: 12, Replications: 1, Validation: -1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	best, def := res.Search.Best.Mean, res.Search.Default.Mean
	t.Logf("optimum %.4g, greedy %.4g, fitted scale %.4g, tuned %.4g (%s)", sol.Optimal, g, def, best, policy.FormatPlacementSpec(adp.NameBidPrice, res.Params))
	if best < sol.Optimal*(1-1e-9) || best > def {
		t.Errorf("tuned %v outside [optimum %v, fitted %v]", best, sol.Optimal, def)
	}
}

// exactSmall is the exact problem of family on mdp-small with its space
// restricted by spec, with the scenario and the MDP's solution.
func exactSmall(t *testing.T, family, spec string) (*sim.Scenario, *ExactPlacementProblem, *mdp.PlacementSolution) {
	t.Helper()
	s := loadScenario(t, "mdp-small.json")
	m, sol := mdptest.Solve(t, s)
	prob := &ExactPlacementProblem{Model: m, Family: family}
	var err error
	if prob.Params, err = prob.Space().Restrict(spec); err != nil {
		t.Fatal(err)
	}
	return s, prob, sol
}

// withValues is the space's defaults with the named parameters set.
func withValues(sp Space, vals map[string]float64) []float64 {
	x := sp.Defaults()
	for k, p := range sp {
		if v, ok := vals[p.Name]; ok {
			x[k] = v
		}
	}
	return x
}

// TestExactSearchOfRollout: `optd search` of the rollout searches its
// decision's own knobs (levels, confidence) with the futures' number and
// length and its base pinned (given here, as --params would), and the
// tuned rollout costs between the MDP's optimum and the rollout at its
// defaults, evaluated exactly on mdp-small.
func TestExactSearchOfRollout(t *testing.T) {
	_, prob, sol := exactSmall(t, rollout.Name, "samples=8,horizon=10")
	for _, p := range prob.Params {
		if searched := p.Min < p.Max; searched != (p.Name == "levels" || p.Name == "confidence") {
			t.Fatalf("parameter %+v: want levels and confidence alone searched", p)
		}
	}
	res, err := Run(context.Background(), prob, Options{Evaluations: 8, Replications: 1, Validation: -1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	best, def := res.Search.Best.Mean, res.Search.Default.Mean
	t.Logf("optimum %.4g, greedy %.4g, rollout defaults %.4g, tuned %.4g (%s)", sol.Optimal, sol.PolicyCosts["greedy"], def, best, policy.FormatPlacementSpec(rollout.Name, res.Params))
	if best < sol.Optimal*(1-1e-9) || best > def {
		t.Errorf("tuned %v outside [optimum %v, defaults %v]", best, sol.Optimal, def)
	}
}

// TestCheckStopsWithItsContext: a reference whose build fits (adp-penalty)
// is built under Check's context, and a build so stopped is the context's
// error, not an invalid problem (a caller's deadline is not a bad input).
func TestCheckStopsWithItsContext(t *testing.T) {
	s := loadScenario(t, "mdp-small.json")
	s.ArrivalRate *= 1.0123 // a model no other test built: the process-wide memo holds no fit of it
	p := &PlacementProblem{Scenario: s, Family: placement.NameStateThreshold, Refs: []string{adp.Name + ":fit_steps=20;fit_jobs=50"}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := p.Check(ctx)
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrInvalid) {
		t.Fatalf("Check under a cancelled context: %v, want the context's error and not ErrInvalid", err)
	}
	if err := p.Check(context.Background()); err != nil {
		t.Fatalf("the same problem without a deadline: %v", err)
	}
}

// TestExactRefusesLearningPolicies: a family that learns from the jobs it
// places (receding-horizon, rolling-horizon, a rollout drawing its futures
// from the jobs seen) is refused by the exact problem's Check and by the
// MDP's evaluation itself, naming the family; stationary families pass.
func TestExactRefusesLearningPolicies(t *testing.T) {
	s := loadScenario(t, "mdp-small.json")
	m, err := mdp.ModelOf(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		family, params string
		learning       bool
	}{
		{placement.NameRecedingHorizon, "", true},
		{placement.NameRollingHorizon, "", true},
		{rollout.Name, "future_law=1", true},
		{placement.NameStateThreshold, "", false},
		{rollout.Name, "", false},
	} {
		prob := &ExactPlacementProblem{Model: m, Family: c.family}
		if prob.Params, err = prob.Space().Restrict(c.params); err != nil {
			t.Fatal(err)
		}
		err = prob.Check(context.Background())
		if refused := errors.Is(err, ErrInvalid) && strings.Contains(err.Error(), c.family+" learns"); refused != c.learning {
			t.Errorf("%s %s: Check = %v, want refused %v", c.family, c.params, err, c.learning)
		}
		if !c.learning {
			continue
		}
		pol, err := policy.NewPlacement(c.family, policy.PlacementConfig{Params: prob.Space().Map(prob.Space().Defaults()), Workload: m.Workload, Model: s.PlacementModel()})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := mdp.EvaluatePolicy(context.Background(), m, pol, mdp.SolveOptions{}); err == nil || !strings.Contains(err.Error(), "learns from the jobs") {
			t.Errorf("%s %s: EvaluatePolicy = %v, want the refusal", c.family, c.params, err)
		}
	}
}
