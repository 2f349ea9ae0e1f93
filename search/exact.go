package search

import (
	"context"
	"fmt"

	"github.com/optd/optd/mdp"
	"github.com/optd/optd/policy"
)

var _ Problem = (*ExactPlacementProblem)(nil)

// ExactPlacementProblem tunes a placement family on a scenario small enough
// for its MDP: the metric is the family's exact long-run mean cost per job
// (mdp.EvaluatePolicy), the same for every replication, so search it with
// Options{Replications: 1, Validation: -1}. The family is built with the
// known workload (PolicyConfig.Workload = Model.Workload), which makes a
// family such as "state-threshold" a stationary decision rule the MDP can
// evaluate. Compare the result with mdp.SolvePlacement's optimum and its
// greedy cost to see how much of the greedy → optimum gap the family closes.
// One difference from simulation: the MDP's state does not remember what a
// job saw on arrival, so JobsInSystem is the number in the system at the
// decision (in service plus waiting), where the simulator passes the N_i
// the job saw on arrival.
type ExactPlacementProblem struct {
	Model  mdp.PlacementModel
	Family string
	// Params is the space searched (nil: the family's declared parameters).
	Params Space
	Config policy.PlacementConfig
	Solve  mdp.SolveOptions
}

// Space implements Problem.
func (p *ExactPlacementProblem) Space() Space {
	if p.Params == nil {
		p.Params, _ = SpaceOf(p.Family)
	}
	return p.Params
}

// build is the family's policy with the parameters x, built with the
// known workload under ctx.
func (p *ExactPlacementProblem) build(ctx context.Context, x []float64) (policy.Placement, map[string]float64, error) {
	cfg := p.Config
	cfg.Workload = p.Model.Workload
	cfg.Params = p.Space().Map(x)
	cfg.Context = ctx // the build (mdp-optimal's solve, the adp fits) stops with the search
	if cfg.Model == nil {
		m := p.Model
		cfg.Model = &policy.PlacementModel{ArrivalRate: m.Lambda, ServiceRate: m.Mu, MaxJobsInService: m.K,
			MaxWaiting: m.MaxWaiting, Workload: m.Workload, SlotCosts: m.SlotCosts}
	}
	pol, err := policy.NewPlacement(p.Family, cfg)
	return pol, cfg.Params, err
}

// Check refuses, before any MDP is solved, a family the MDP cannot
// evaluate: one that does not build with its default parameters, or one
// that learns from the jobs it places (policy.Estimating: its decision is
// not a function of the MDP's state).
func (p *ExactPlacementProblem) Check(ctx context.Context) error {
	pol, _, err := p.build(ctx, p.Space().Defaults())
	if err != nil {
		return invalidUnlessStopped(ctx, err, "")
	}
	if _, ok := pol.(policy.Estimating); ok {
		return fmt.Errorf("%w: %s learns from the jobs it has placed (a sliding-window estimate), so its decision is not a function of the MDP's state and the MDP cannot evaluate it exactly; simulate it instead", ErrInvalid, p.Family)
	}
	return nil
}

// Metric implements Problem; rep is ignored (the evaluation is exact).
func (p *ExactPlacementProblem) Metric(ctx context.Context, x []float64, _ int) (float64, error) {
	pol, params, err := p.build(ctx, x)
	if err != nil {
		return 0, err
	}
	c, err := mdp.EvaluatePolicy(ctx, p.Model, pol, p.Solve)
	if err != nil {
		return 0, fmt.Errorf("search: exact evaluation of %s: %w", policy.FormatPlacementSpec(p.Family, params), err)
	}
	return c, nil
}
