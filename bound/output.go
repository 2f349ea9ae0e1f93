package bound

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/optd/optd/sim"
)

// Names of the lower bounds.
const (
	// BoundHindsight is the LP relaxation of the offline assignment that
	// knows the whole trace (mdp.HindsightBound), per job, averaged over
	// replications, on the very traces the policies were simulated on.
	BoundHindsight = "hindsight-lp"
	// BoundEmptyCluster is E[Y·(sum of the R cheapest slot costs)]: every
	// job alone in an empty cluster (mdp.EmptyClusterBound for a workload;
	// the per-job mean over the simulated jobs for a trace).
	BoundEmptyCluster = "empty-cluster"
	// BoundLagrangian is the hindsight LP bounded from below by Lagrangian
	// relaxation (mdp.HindsightBoundLagrangian): per replication, like
	// hindsight-lp, at most it, in time linear in the jobs.
	BoundLagrangian = "hindsight-lagrangian"
	// BoundPenalized is the hindsight LP with an information-relaxation
	// penalty (mdp.FitPenalty): a lower bound on every policy's expected
	// mean cost per job (not trace by trace), averaged over replications.
	BoundPenalized = "hindsight-penalized"
	// BoundValuePenalty is the information relaxation of the MDP's own
	// uniformized chain with the penalty of a value function built from
	// greedy's bias (mdp.ValueBound): a lower bound on every policy's
	// expected mean cost per job, for scenarios whose chain can be built
	// (explicit slot costs, a finite waiting room, a discrete workload),
	// computed on sample paths of its own.
	BoundValuePenalty = "value-penalty"
	// BoundMDPOptimal is the exact optimum of the MDP (also "optimal").
	BoundMDPOptimal = "mdp-optimal"
	// BoundMDPLower and BoundMDPUpper bracket the optimum of a continuous
	// workload (two-point spread and conditional-mean discretizations).
	BoundMDPLower = "mdp-lower"
	BoundMDPUpper = "mdp-upper"
)

// PolicyFigure is one policy's figure: the mean over replications of the
// per-replication mean cost per job, and the half-width of its 95% Student-t
// confidence interval (null with one replication).
type PolicyFigure struct {
	MeanCost float64  `json:"mean_cost"`
	CI95     *float64 `json:"ci95"`
}

// MDPInfo reports on the MDP of the scenario.
type MDPInfo struct {
	// Solved reports that the MDP was solved; Skipped says why not.
	Solved  bool   `json:"solved"`
	Skipped string `json:"skipped,omitempty"`
	// Exact: a discrete workload (optimal is exact); otherwise the
	// mdp-lower/mdp-upper bracket.
	Exact  bool `json:"exact,omitempty"`
	States int  `json:"states,omitempty"`
	// PolicyCosts are exact long-run costs of named policies on the chain.
	PolicyCosts map[string]float64 `json:"policy_costs,omitempty"`
}

// Output is what `optd bound` prints (docs/formats.md#bound-output), with added fields.
type Output struct {
	Policies    map[string]PolicyFigure `json:"policies"`
	LowerBounds map[string]float64      `json:"lower_bounds"`
	UpperBounds map[string]float64      `json:"upper_bounds,omitempty"`
	Optimal     *float64                `json:"optimal"`
	// Gaps are (mean_cost − best lower bound)/best lower bound; null when
	// there is no positive lower bound.
	Gaps map[string]*float64 `json:"gaps"`
	// BestBound names the largest lower bound (the one Gaps use) and
	// CertifiedGaps are the gaps to the best bound that does not solve the
	// MDP (what is certified where the MDP cannot be solved).
	BestBound     string              `json:"best_bound,omitempty"`
	CertifiedGaps map[string]*float64 `json:"certified_gaps,omitempty"`
	// BoundRatios are, when the exact optimum is known, each lower bound's
	// ratio to it (1 for the optimum itself).
	BoundRatios map[string]float64 `json:"bound_ratios,omitempty"`
	// Replications is the number of replications the figures are over,
	// JobsSimulated the jobs counted in them (all policies see the same
	// jobs) and Events the events the engine processed for all policies.
	Replications  int      `json:"replications"`
	JobsSimulated int64    `json:"jobs_simulated"`
	Events        uint64   `json:"events"`
	MDP           *MDPInfo `json:"mdp,omitempty"`
	Shard         *Shard   `json:"shard,omitempty"`
}

// RepFigures are the raw figures of one replication.
type RepFigures struct {
	Replication int `json:"replication"`
	JobsCounted int `json:"jobs_counted"`
	// MeanCost is each policy's mean cost per counted job.
	MeanCost map[string]float64 `json:"mean_cost"`
	// LowerBounds are the per-replication (pathwise) bounds on the mean cost
	// per counted job of this replication.
	LowerBounds map[string]float64 `json:"lower_bounds"`
	Events      uint64             `json:"events"`
}

// Fixed is the part of the result that does not depend on the
// replications (the MDP, exact expectations).
type Fixed struct {
	Optimal     *float64           `json:"optimal"`
	LowerBounds map[string]float64 `json:"lower_bounds"`
	UpperBounds map[string]float64 `json:"upper_bounds,omitempty"`
	MDP         *MDPInfo           `json:"mdp,omitempty"`
}

// Settings are everything that must agree between shards for their merge to
// equal an unsharded run.
type Settings struct {
	ScenarioSHA256 string   `json:"scenario_sha256"`
	Replications   int      `json:"replications"`
	Policies       []string `json:"policies"`
	Bounds         []string `json:"bounds"`
	Window         int      `json:"window"`
	Horizon        int      `json:"horizon"`
	Bins           int      `json:"bins"`
	MaxStates      int      `json:"max_states"`
	// HindsightClasses is --hindsight-classes.
	HindsightClasses int `json:"hindsight_classes"`
	// PenaltySteps is --penalty-steps (0: mdp.DefaultPenaltySteps).
	PenaltySteps int `json:"penalty_steps,omitempty"`
	// LagrangeSteps is --lagrange-steps (0: mdp.DefaultLagrangeIterations).
	LagrangeSteps int `json:"lagrange_steps,omitempty"`
}

// Shard is the raw material of a sharded run.
type Shard struct {
	Index    int          `json:"index"`
	Count    int          `json:"count"`
	Settings Settings     `json:"settings"`
	Fixed    Fixed        `json:"fixed"`
	Reps     []RepFigures `json:"replications"`
}

// aggregate builds the output from the fixed part and the replications (in
// replication order). The unsharded run and the merge of shards both call
// it, on the same numbers in the same order, so they print the same JSON.
func aggregate(policies []string, fixed Fixed, reps []RepFigures) (*Output, error) {
	out := &Output{
		Policies:     make(map[string]PolicyFigure, len(policies)),
		LowerBounds:  map[string]float64{},
		Optimal:      fixed.Optimal,
		Gaps:         make(map[string]*float64, len(policies)),
		Replications: len(reps),
		MDP:          fixed.MDP,
	}
	if len(reps) == 0 {
		return nil, fmt.Errorf("bound: no replications")
	}
	pathwise := slices.Sorted(maps.Keys(reps[0].LowerBounds))
	xs := make([]float64, len(reps))
	for _, name := range policies {
		for k, r := range reps {
			v, ok := r.MeanCost[name]
			if !ok {
				return nil, fmt.Errorf("bound: replication %d has no figure for policy %q", r.Replication, name)
			}
			xs[k] = v
		}
		m, h := sim.MeanCI95(xs)
		f := PolicyFigure{MeanCost: m}
		if !math.IsNaN(h) {
			f.CI95 = &h
		}
		out.Policies[name] = f
	}
	for _, r := range reps {
		if len(r.LowerBounds) != len(pathwise) {
			return nil, fmt.Errorf("bound: replication %d has bounds %v, replication %d has %v",
				r.Replication, slices.Sorted(maps.Keys(r.LowerBounds)), reps[0].Replication, pathwise)
		}
	}
	for _, name := range pathwise {
		for k, r := range reps {
			v, ok := r.LowerBounds[name]
			if !ok {
				return nil, fmt.Errorf("bound: replication %d has no %q bound", r.Replication, name)
			}
			xs[k] = v
		}
		m, _ := sim.MeanCI95(xs)
		out.LowerBounds[name] = m
	}
	maps.Copy(out.LowerBounds, fixed.LowerBounds)
	if len(fixed.UpperBounds) > 0 {
		out.UpperBounds = maps.Clone(fixed.UpperBounds)
	}
	for _, r := range reps {
		out.JobsSimulated += int64(r.JobsCounted)
		out.Events += r.Events
	}
	best, bestName := math.Inf(-1), ""
	cert, certName := math.Inf(-1), ""
	for _, name := range slices.Sorted(maps.Keys(out.LowerBounds)) {
		v := out.LowerBounds[name]
		if v > best {
			best, bestName = v, name
		}
		if v > cert && !solvesMDP(name) {
			cert, certName = v, name
		}
	}
	out.BestBound = bestName
	out.Gaps = gapsTo(policies, out.Policies, best)
	if certName != "" && certName != bestName {
		out.CertifiedGaps = gapsTo(policies, out.Policies, cert)
	}
	if opt := fixed.Optimal; opt != nil && *opt > 0 {
		out.BoundRatios = make(map[string]float64, len(out.LowerBounds))
		for name, v := range out.LowerBounds {
			out.BoundRatios[name] = v / *opt
		}
	}
	return out, nil
}

// solvesMDP reports that a bound comes from solving the MDP.
func solvesMDP(name string) bool {
	return name == BoundMDPOptimal || name == BoundMDPLower
}

// gapsTo is each policy's (mean_cost − lb)/lb, nil when lb ≤ 0.
func gapsTo(policies []string, figs map[string]PolicyFigure, lb float64) map[string]*float64 {
	out := make(map[string]*float64, len(policies))
	for _, name := range policies {
		if lb > 0 {
			g := (figs[name].MeanCost - lb) / lb
			out[name] = &g
		} else {
			out[name] = nil
		}
	}
	return out
}
