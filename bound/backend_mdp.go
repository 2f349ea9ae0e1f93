package bound

import (
	"context"
	"errors"
	"slices"

	"github.com/optd/optd/mdp"
	"github.com/optd/optd/models"
	"github.com/optd/optd/sim"
)

// mdpBackend is package mdp's implementation of Backend.
type mdpBackend struct{}

// DefaultBackend is package mdp's MDP solver and hindsight LP.
func DefaultBackend() Backend { return mdpBackend{} }

func (mdpBackend) SolvePlacement(ctx context.Context, s *sim.Scenario, bins, maxStates int, progress func(done, total int)) (*MDPSolution, bool, error) {
	m := mdp.PlacementModel{
		SlotCosts: s.SlotCosts, K: s.K, Lambda: s.ArrivalRate, Mu: s.ServiceRate,
		MaxWaiting: s.MaxWaiting, Workload: s.Workload,
	}
	sol, err := mdp.SolvePlacement(ctx, m, mdp.SolveOptions{Bins: bins, MaxStates: maxStates, Progress: progress})
	if errors.Is(err, mdp.ErrTooLarge) {
		return nil, true, nil
	}
	if err != nil {
		return nil, false, err
	}
	return &MDPSolution{
		Optimal: sol.Optimal, Lower: sol.Lower, Upper: sol.Upper, Exact: sol.Exact, States: sol.States,
		Policy: sol.Policy, PolicyCosts: sol.PolicyCosts,
	}, false, nil
}

func (mdpBackend) HindsightBound(ctx context.Context, jobs []sim.JobRecord, slotCosts []float64, maxClasses int) (float64, error) {
	tj := make([]mdp.TraceJob, 0, len(jobs))
	var instant []sim.JobRecord
	for _, j := range jobs {
		if j.End > j.Start {
			tj = append(tj, mdp.TraceJob{Start: j.Start, End: j.End, Y: j.Y(), R: j.R})
		} else {
			instant = append(instant, j)
		}
	}
	// A job with zero work (a trace job with no input bytes) holds its slots
	// for no time. Leaving it out of the LP relaxes the LP, and it costs at
	// least Y·(sum of its R cheapest slots), so the sum is still a bound.
	extra := 0.0
	if len(instant) > 0 {
		sorted := slices.Clone(slotCosts)
		slices.Sort(sorted)
		for _, j := range instant {
			sum := 0.0
			for _, c := range sorted[:j.R] {
				sum += c
			}
			extra += j.Y() * sum
		}
	}
	if len(tj) == 0 {
		return extra, nil
	}
	var lb float64
	var err error
	if maxClasses > 0 && distinct(slotCosts) > maxClasses {
		lb, err = mdp.HindsightBoundCoarse(ctx, tj, slotCosts, maxClasses)
	} else {
		lb, err = mdp.HindsightBound(ctx, tj, slotCosts)
	}
	return lb + extra, err
}

func (mdpBackend) EmptyClusterBound(w *models.Workload, slotCosts []float64) float64 {
	return mdp.EmptyClusterBound(w, slotCosts)
}

func distinct(xs []float64) int {
	s := slices.Clone(xs)
	slices.Sort(s)
	return len(slices.Compact(s))
}
