package search

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/optd/optd/mdp"
	"github.com/optd/optd/policy"
	_ "github.com/optd/optd/policy/adp" // the fitted placement policies, searchable like the others
	"github.com/optd/optd/policy/placement"
	_ "github.com/optd/optd/policy/rollout" // the rollout placement policy, too
	"github.com/optd/optd/sim"
)

var (
	_ Problem    = (*PlacementProblem)(nil)
	_ Referenced = (*PlacementProblem)(nil)
	_ Bounded    = (*PlacementProblem)(nil)
)

// PlacementProblem is the adapter for reduce placement: a scenario of
// package sim (the stable system of docs/formats.md#placement-scenario) and a parameterized
// placement family of package policy; the metric is the replication's mean
// fetch cost per job (sim.Result.MeanCost) after the scenario's warm-up.
// Replication rep is the scenario's replication rep (sim.Scenario.Source,
// the same streams whatever the policy; the policy's own randomness is
// seeded by sim.PolicySeed), so every candidate and reference sees the same
// jobs.
type PlacementProblem struct {
	Scenario *sim.Scenario
	// Family is a registered placement policy with parameters
	// (policy.PlacementParams).
	Family string
	// Params is the space searched; nil means the family's declared
	// parameters (see SpaceOf).
	Params Space
	// Config is the rest of the policies' configuration (Params is set per
	// candidate; a nil Model is the scenario's, sim.Scenario.PlacementModel).
	Config policy.PlacementConfig
	// Refs are reference policies in policy.ParsePlacementSpec form
	// ("receding-horizon", "greedy", "state-threshold:base=2").
	Refs []string
	// Bounds turns on the lower bounds of the validation: the hindsight LP
	// on the replication's jobs (HindsightBound, with HindsightClasses
	// cost classes, 0 for exact costs) and the empty-cluster bound.
	Bounds           bool
	HindsightClasses int
}

// Families are the placement families with parameters to search, in the
// order of policy.PlacementNames.
func Families() []string {
	var out []string
	for _, n := range policy.PlacementNames() {
		if _, err := SpaceOf(n); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// SpaceOf converts a placement family's declared parameters.
func SpaceOf(family string) (Space, error) {
	if !slices.Contains(policy.PlacementNames(), family) {
		return nil, fmt.Errorf("%w: unknown placement policy %q (known: %v)", ErrInvalid, family, policy.PlacementNames())
	}
	// A fit's size (policy.Param.Fixed) is pinned at its default: not
	// searched unless --params names it.
	var specs []policy.Param
	searched := 0
	for _, p := range policy.PlacementParams(family) {
		if p.Fixed {
			p.Min, p.Max = p.Default, p.Default
		} else {
			searched++
		}
		specs = append(specs, p)
	}
	if searched == 0 {
		return nil, fmt.Errorf("%w: placement policy %q has no parameters to search", ErrInvalid, family)
	}
	return Space(specs), nil
}

// Space implements Problem.
func (p *PlacementProblem) Space() Space {
	if p.Params == nil {
		sp, err := SpaceOf(p.Family)
		if err != nil {
			return nil
		}
		p.Params = sp
	}
	return p.Params
}

// Check validates the problem before a search: the family, the space and
// every reference, each built once (a fitted family's fit, mdp-optimal's
// solve) under ctx. A build stopped by ctx returns ctx's error, not
// ErrInvalid: the problem was not found wrong.
func (p *PlacementProblem) Check(ctx context.Context) error {
	if p.Scenario == nil {
		return fmt.Errorf("%w: no scenario", ErrInvalid)
	}
	if _, err := SpaceOf(p.Family); err != nil {
		return err
	}
	if err := p.Space().Validate(); err != nil {
		return err
	}
	cfg := p.config(ctx, 0, p.Space().Map(p.Space().Defaults()))
	if _, err := policy.NewPlacement(p.Family, cfg); err != nil {
		return invalidUnlessStopped(ctx, err, "")
	}
	for _, r := range p.Refs {
		if _, err := p.newRef(ctx, r, 0); err != nil {
			return invalidUnlessStopped(ctx, err, fmt.Sprintf("reference %q: ", r))
		}
	}
	return nil
}

// run simulates replication rep under pol.
func (p *PlacementProblem) run(ctx context.Context, pol policy.Placement, rep int, record bool) (*sim.Result, error) {
	s := p.Scenario
	return s.Model().Run(ctx, s.Source(rep), pol, sim.RunOptions{Warmup: s.WarmupJobs, Record: record})
}

func (p *PlacementProblem) policySeed(rep int) uint64 {
	return sim.PolicySeed(sim.ReplicationSeed(p.Scenario.Seed, rep))
}

// config is the configuration of a policy with params on replication rep,
// its build (the adp fits, mdp-optimal's solve) bounded by ctx like the
// simulation that follows.
func (p *PlacementProblem) config(ctx context.Context, rep int, params map[string]float64) policy.PlacementConfig {
	cfg := p.Config
	cfg.Seed, cfg.Params, cfg.Context = p.policySeed(rep), params, ctx
	if cfg.Model == nil {
		cfg.Model = p.Scenario.PlacementModel()
	}
	return cfg
}

// Metric implements Problem.
func (p *PlacementProblem) Metric(ctx context.Context, x []float64, rep int) (float64, error) {
	cfg := p.config(ctx, rep, p.Space().Map(x))
	pol, err := policy.NewPlacement(p.Family, cfg)
	if err != nil {
		return 0, err
	}
	res, err := p.run(ctx, pol, rep, false)
	if err != nil {
		return 0, err
	}
	return res.MeanCost, nil
}

// References implements Referenced.
func (p *PlacementProblem) References() []string { return p.Refs }

func (p *PlacementProblem) newRef(ctx context.Context, spec string, rep int) (policy.Placement, error) {
	name, params, err := policy.ParsePlacementSpec(spec)
	if err != nil {
		return nil, err
	}
	return policy.NewPlacement(name, p.config(ctx, rep, params))
}

// ReferenceMetric implements Referenced.
func (p *PlacementProblem) ReferenceMetric(ctx context.Context, spec string, rep int) (float64, error) {
	pol, err := p.newRef(ctx, spec, rep)
	if err != nil {
		return 0, err
	}
	res, err := p.run(ctx, pol, rep, false)
	if err != nil {
		return 0, err
	}
	return res.MeanCost, nil
}

// Names of the placement lower bounds (as in `optd bound`).
const (
	BoundHindsight    = "hindsight-lp"
	BoundEmptyCluster = "empty-cluster"
)

// LowerBounds implements Bounded: on the jobs of replication rep (their
// service intervals do not depend on the policy), the hindsight LP per
// counted job and the mean empty-cluster cost Y·(R cheapest slots); both
// are at most the mean cost of every policy on this replication.
func (p *PlacementProblem) LowerBounds(ctx context.Context, rep int) (map[string]float64, error) {
	if !p.Bounds {
		return nil, nil
	}
	res, err := p.run(ctx, placement.Greedy{}, rep, true)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{BoundEmptyCluster: res.EmptyClusterMean}
	if res.Counted == 0 {
		return out, nil
	}
	jobs := make([]sim.JobRecord, 0, res.Counted)
	for _, j := range res.Records {
		if j.Counted {
			jobs = append(jobs, j)
		}
	}
	total, err := mdp.HindsightBoundOfRecords(ctx, jobs, p.Scenario.SlotCosts, p.HindsightClasses)
	if err != nil {
		return nil, err
	}
	out[BoundHindsight] = total / float64(res.Counted)
	return out, nil
}

// invalidUnlessStopped marks a failed build as ErrInvalid (prefixed with
// what was built), unless ctx stopped it: then it is ctx's error.
func invalidUnlessStopped(ctx context.Context, err error, what string) error {
	if ctx.Err() != nil {
		if errors.Is(err, ctx.Err()) {
			return fmt.Errorf("%s%w", what, err)
		}
		return fmt.Errorf("%w: %s%w", ctx.Err(), what, err)
	}
	return fmt.Errorf("%w: %s%w", ErrInvalid, what, err)
}
