package bound

import (
	"context"
	"errors"
	"fmt"

	"github.com/optd/optd/mdp"
	"github.com/optd/optd/models"
	"github.com/optd/optd/sim"
)

// mdpBackend is package mdp's implementation of Backend.
type mdpBackend struct{}

// DefaultBackend is package mdp's MDP solver and hindsight LP.
func DefaultBackend() Backend { return mdpBackend{} }

func (mdpBackend) SolvePlacement(ctx context.Context, s *sim.Scenario, bins, maxStates int, progress func(done, total int)) (*MDPSolution, bool, error) {
	m, err := mdp.ModelOf(s)
	if err != nil {
		return nil, false, err
	}
	sol, err := mdp.SolvePlacement(ctx, m, mdp.SolveOptions{Bins: bins, MaxStates: maxStates, Progress: progress})
	if errors.Is(err, mdp.ErrTooLarge) {
		return nil, true, nil
	}
	if err != nil {
		return nil, false, err
	}
	return mdpSolution(sol), false, nil
}

func mdpSolution(sol *mdp.PlacementSolution) *MDPSolution {
	return &MDPSolution{
		Optimal: sol.Optimal, Lower: sol.Lower, Upper: sol.Upper, Exact: sol.Exact, States: sol.States,
		Policy: sol.Policy, PolicyCosts: sol.PolicyCosts,
	}
}

func (mdpBackend) HindsightBound(ctx context.Context, jobs []sim.JobRecord, slotCosts []float64, maxClasses int) (float64, error) {
	return mdp.HindsightBoundOfRecords(ctx, jobs, slotCosts, maxClasses)
}

func (mdpBackend) HindsightLagrangian(ctx context.Context, jobs []sim.JobRecord, slotCosts []float64, steps int) (float64, error) {
	return mdp.HindsightLagrangianOfRecords(ctx, jobs, slotCosts, mdp.LagrangeOptions{Iterations: steps})
}

func (mdpBackend) EmptyClusterBound(w *models.Workload, slotCosts []float64) float64 {
	return mdp.EmptyClusterBound(w, slotCosts)
}

func (mdpBackend) ValueBound(ctx context.Context, s *sim.Scenario, bins, maxStates int) (float64, string, error) {
	_, v, skipped, err := valueBound(ctx, s, bins, maxStates, false, nil)
	return v, skipped, err
}

func (mdpBackend) SolvePlacementAndValueBound(ctx context.Context, s *sim.Scenario, bins, maxStates int, progress func(done, total int)) (*MDPSolution, float64, string, error) {
	return valueBound(ctx, s, bins, maxStates, true, progress)
}

// valueBound is the value-penalty bound of s (and skipped: why it has
// none), with the MDP solved on the same chain when withMDP
// (mdp.SolvePlacementAndValueBound, reporting to progress if not nil).
func valueBound(ctx context.Context, s *sim.Scenario, bins, maxStates int, withMDP bool, progress func(done, total int)) (*MDPSolution, float64, string, error) {
	m, err := mdp.ModelOf(s)
	var no *mdp.NoModelError
	if errors.As(err, &no) {
		return nil, 0, no.Reason, nil
	}
	if err != nil {
		return nil, 0, "", err
	}
	opts := mdp.ValueBoundOptions{Seed: s.Seed, Solve: mdp.SolveOptions{Bins: bins, MaxStates: maxStates}}
	var sol *mdp.PlacementSolution
	var res *mdp.ValueBoundResult
	if withMDP {
		opts.Solve.Progress = progress
		sol, res, err = mdp.SolvePlacementAndValueBound(ctx, m, opts.Solve, opts)
	} else {
		res, err = mdp.ValueBound(ctx, m, opts)
	}
	var bad *mdp.ModelError
	switch {
	case errors.Is(err, mdp.ErrTooLarge):
		return nil, 0, fmt.Sprintf("the MDP's chain has more than max-states = %d states", maxStates), nil
	case errors.As(err, &bad) && bad.Field == mdp.FieldWorkload:
		return nil, 0, bad.Reason, nil
	case err != nil:
		return nil, 0, "", err
	}
	if sol == nil {
		return nil, res.Mean, "", nil
	}
	return mdpSolution(sol), res.Mean, "", nil
}

func (mdpBackend) FitPenalty(ctx context.Context, s *sim.Scenario, steps, lagrangeSteps int, progress func(done, total int)) (PenalizedBounder, string, error) {
	pen, err := mdp.FitPenalty(ctx, s, mdp.PenaltyFit{Steps: steps, Progress: progress})
	var no *mdp.NoModelError
	if errors.As(err, &no) {
		return nil, no.Reason, nil
	}
	if err != nil {
		return nil, "", err
	}
	pen.Lagrange.Iterations = lagrangeSteps
	return pen, "", nil
}
