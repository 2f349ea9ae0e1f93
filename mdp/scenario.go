package mdp

import (
	"context"
	"math"
	"slices"

	"github.com/optd/optd/internal/errkind"
	"github.com/optd/optd/sim"
)

// This file adapts the placement simulator's scenarios and records (package
// sim) to this package's models: the one place that says which scenario
// has an MDP and how a simulated run becomes a hindsight LP.

// NoModelError says why a scenario has no MDP.
type NoModelError struct {
	// Reason is the whole message ("a trace scenario has no MDP").
	Reason string
}

func (e *NoModelError) Error() string { return e.Reason }

// Kind marks the error as the input's (errkind.Invalid).
func (e *NoModelError) Kind() errkind.Kind { return errkind.Invalid }

// ModelOf is the reduce-placement MDP of a placement scenario. A scenario
// has one when its jobs come from a workload (not a trace), its slot costs
// are listed (not drawn from a law) and its waiting room is finite; else
// the error is a *NoModelError saying which condition fails.
func ModelOf(s *sim.Scenario) (PlacementModel, error) {
	switch {
	case s.Trace != nil:
		return PlacementModel{}, &NoModelError{"a trace scenario has no MDP"}
	case !s.SlotsExplicit:
		return PlacementModel{}, &NoModelError{"slots are drawn from a law; the MDP needs slots.costs"}
	case s.MaxWaiting < 0:
		return PlacementModel{}, &NoModelError{"max_waiting is unlimited; the MDP needs a finite waiting room"}
	}
	return PlacementModel{
		SlotCosts: s.SlotCosts, K: s.K, Lambda: s.ArrivalRate, Mu: s.ServiceRate,
		MaxWaiting: s.MaxWaiting, Workload: s.Workload,
	}, nil
}

// HindsightBoundOfRecords is the total-cost lower bound of the offline LP
// over the jobs of a simulated run, each holding its slots during
// [Start, End) (HindsightBound; with maxClasses > 0 and more distinct slot
// costs than that, HindsightBoundCoarse with maxClasses classes rounded
// down). A job with zero work holds its slots for no time: leaving it out
// of the LP relaxes the LP, and it costs at least Y·(sum of its R cheapest
// slots), which is added, so the sum is still a bound.
func HindsightBoundOfRecords(ctx context.Context, jobs []sim.JobRecord, slotCosts []float64, maxClasses int) (float64, error) {
	return ofRecords(jobs, slotCosts, func(tj []TraceJob) (float64, error) {
		if maxClasses > 0 && distinct(slotCosts) > maxClasses {
			return HindsightBoundCoarse(ctx, tj, slotCosts, maxClasses)
		}
		return HindsightBound(ctx, tj, slotCosts)
	})
}

// HindsightLagrangianOfRecords is HindsightBoundOfRecords with the LP
// bounded from below by HindsightBoundLagrangian (exact slot costs).
func HindsightLagrangianOfRecords(ctx context.Context, jobs []sim.JobRecord, slotCosts []float64, opts LagrangeOptions) (float64, error) {
	return ofRecords(jobs, slotCosts, func(tj []TraceJob) (float64, error) {
		res, err := HindsightBoundLagrangian(ctx, tj, slotCosts, opts)
		return res.Bound, err
	})
}

// ofRecords applies a trace bound to the jobs of positive length and adds
// the others at their cheapest slots.
func ofRecords(jobs []sim.JobRecord, slotCosts []float64, lb func([]TraceJob) (float64, error)) (float64, error) {
	tj := make([]TraceJob, 0, len(jobs))
	var sorted []float64
	extra := 0.0
	for _, j := range jobs {
		if j.End > j.Start {
			tj = append(tj, TraceJob{Start: j.Start, End: j.End, Y: j.Y(), R: j.R})
			continue
		}
		if sorted == nil {
			sorted = slices.Sorted(slices.Values(slotCosts))
		}
		sum := 0.0
		for _, c := range sorted[:j.R] {
			sum += c
		}
		extra += j.Y() * sum
	}
	if len(tj) == 0 {
		return extra, nil
	}
	v, err := lb(tj)
	if err != nil {
		return math.NaN(), err
	}
	return v + extra, nil
}

func distinct(xs []float64) int {
	s := slices.Sorted(slices.Values(xs))
	return len(slices.Compact(s))
}
