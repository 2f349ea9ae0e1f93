package bound

import (
	"context"

	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
	"github.com/optd/optd/sim"
)

// MDPSolution is what bound uses of the MDP's solution.
type MDPSolution struct {
	Optimal, Lower, Upper float64
	Exact                 bool
	States                int
	// Policy is the optimal decision table ("mdp-optimal"); it must be
	// stateless, since every replication reuses it.
	Policy      policy.Placement
	PolicyCosts map[string]float64
}

// Backend is what `optd bound` needs from package mdp, behind a small
// interface so that the command can be tested (and built) on its own.
type Backend interface {
	// SolvePlacement solves the scenario's MDP. tooLarge reports that the
	// model exceeds maxStates (then the solution is nil and err is nil).
	SolvePlacement(ctx context.Context, s *sim.Scenario, bins, maxStates int, progress func(done, total int)) (sol *MDPSolution, tooLarge bool, err error)
	// HindsightBound is the total-cost lower bound of the offline LP over
	// the given jobs (each held its slots during [Start, End)). With
	// maxClasses > 0 and more distinct slot costs than that, the slots are
	// grouped into maxClasses classes, each rounded down to its cheapest
	// cost (a smaller LP and a weaker, still valid, bound).
	HindsightBound(ctx context.Context, jobs []sim.JobRecord, slotCosts []float64, maxClasses int) (float64, error)
	// HindsightLagrangian bounds HindsightBound's LP from below by its
	// Lagrangian relaxation with steps subgradient steps (0: the default),
	// exact slot costs, time linear in the jobs per step.
	HindsightLagrangian(ctx context.Context, jobs []sim.JobRecord, slotCosts []float64, steps int) (float64, error)
	// EmptyClusterBound is E[Y·(sum of the R cheapest slot costs)].
	EmptyClusterBound(w *models.Workload, slotCosts []float64) float64
	// FitPenalty fits the information-relaxation penalty of the scenario
	// with steps training runs (0: the default); skipped (non-empty) says
	// why the scenario has none (then the bounder is nil). On a large
	// cluster (more slot classes than the penalty gives a coefficient each)
	// the bounder bounds each replication's penalized LP by its Lagrangian
	// relaxation with lagrangeSteps steps (0: the default).
	FitPenalty(ctx context.Context, s *sim.Scenario, steps, lagrangeSteps int, progress func(done, total int)) (b PenalizedBounder, skipped string, err error)
	// ValueBound is the value-penalty bound on the MDP's chain (bins and
	// maxStates as for SolvePlacement); skipped (non-empty) says why the
	// scenario has none.
	ValueBound(ctx context.Context, s *sim.Scenario, bins, maxStates int) (mean float64, skipped string, err error)
	// SolvePlacementAndValueBound is SolvePlacement and ValueBound on one
	// build of the MDP's chain: skipped (non-empty) says why the scenario
	// has no value-penalty bound (then nothing is solved: sol is nil), as
	// ValueBound would, a chain beyond maxStates included. progress
	// covers the solve; the value bound's paths run after it, silent.
	SolvePlacementAndValueBound(ctx context.Context, s *sim.Scenario, bins, maxStates int, progress func(done, total int)) (sol *MDPSolution, value float64, skipped string, err error)
}

// PenalizedBounder computes the penalized hindsight LP of one run.
type PenalizedBounder interface {
	// BoundOfRecords takes the records of every arrival of the run and
	// returns a total whose expectation bounds the counted jobs' expected
	// total cost from below.
	BoundOfRecords(ctx context.Context, recs []sim.JobRecord) (float64, error)
}
