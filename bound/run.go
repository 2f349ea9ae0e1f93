package bound

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/optd/optd/internal/errkind"
	"github.com/optd/optd/mdp"
	"github.com/optd/optd/policy"
	"github.com/optd/optd/policy/adp"
	_ "github.com/optd/optd/policy/builtin" // every placement policy --policies may name
	"github.com/optd/optd/sim"
)

// Defaults of a Request.
const (
	DefaultMaxStates = 200000
	DefaultBins      = 8
	// DefaultHindsightClasses: the hindsight LP uses the exact slot costs
	// (one class per distinct cost) unless asked otherwise. On the Fig. 9
	// setting (1000 distinct costs, 50,000 jobs) the exact LP takes about a
	// minute per replication and gives 88.5 where 100 rounded-down classes
	// give 73.2.
	DefaultHindsightClasses = 0
	// PolicyMDPOptimal is the MDP's optimal decision table.
	PolicyMDPOptimal = "mdp-optimal"
	// PolicyPenalty is the one-step lookahead on the value function of the
	// hindsight-penalized bound's penalty, a registered placement policy
	// (package policy/adp) fitted on the scenario's model when built.
	PolicyPenalty = adp.Name
	// BoundsMDP is the Bounds name that turns the MDP on.
	BoundsMDP = "mdp"
)

// DefaultPolicies and DefaultBounds are a Request's lists when none is given.
var (
	DefaultPolicies = []string{"random", "greedy", "receding-horizon"}
	DefaultBounds   = []string{BoundHindsight, BoundEmptyCluster, BoundsMDP}
)

// ErrInvalidRequest is wrapped by every error about the request itself
// (names, numbers, shards), as opposed to the scenario or the solvers.
var ErrInvalidRequest = errkind.New(errkind.Invalid, "invalid bound request")

// requestError prints its message alone and unwraps to ErrInvalidRequest.
type requestError struct{ msg string }

func (e *requestError) Error() string { return e.msg }
func (e *requestError) Unwrap() error { return ErrInvalidRequest }

func invalidf(format string, args ...any) error {
	return &requestError{msg: fmt.Sprintf(format, args...)}
}

// Request is one bound computation: the Settings (everything a shard must
// share) and which shard of the replications to run.
type Request struct {
	Settings
	// ShardIndex of ShardCount: run replications
	// [⌊i·N/n⌋, ⌊(i+1)·N/n⌋). ShardCount 0 runs them all and returns no
	// "shard" part.
	ShardIndex, ShardCount int
}

// Progress receives the computation's progress; either function may be nil.
type Progress struct {
	// Simulated reports policy-replications done out of total.
	Simulated func(done, total int)
	// MDP reports the MDP solver's progress.
	MDP func(done, total int)
	// Penalty reports the penalty fit's training runs.
	Penalty func(done, total int)
}

// PolicyNames are the policies a request may name: the registered
// placement policies and the scenario's solved MDP table, PolicyMDPOptimal
// (which a binary with package policy/mdpoptimal also has registered:
// bound uses its own solve, with the request's bins and max-states).
func PolicyNames() []string {
	known := policy.PlacementNames()
	if !slices.Contains(known, PolicyMDPOptimal) {
		known = append(known, PolicyMDPOptimal)
	}
	return known
}

// Validate checks the request's names and numbers (not the scenario).
func (r *Request) Validate() error {
	if len(r.Policies) == 0 {
		return invalidf("policies: give at least one policy")
	}
	known := PolicyNames()
	names := make([]string, len(r.Policies))
	for k, p := range r.Policies {
		name, _, err := policy.ParsePlacementSpec(p)
		if err != nil {
			return invalidf("policies: %v", err)
		}
		names[k] = name
	}
	// Known base names; no spec twice (one family with two parameter sets
	// is two policies).
	if err := checkNames("policies", "policy", names, known, false); err != nil {
		return err
	}
	if err := checkNames("policies", "policy", r.Policies, r.Policies, true); err != nil {
		return err
	}
	for k, p := range r.Policies {
		// A family's parameters are checked here, before the scenario is
		// read; Run builds every policy once, on the scenario's model,
		// before any simulation.
		if names[k] == PolicyMDPOptimal {
			continue
		}
		_, params, _ := policy.ParsePlacementSpec(p)
		if _, err := policy.ResolveParams(names[k], policy.PlacementParams(names[k]), params); err != nil {
			return invalidf("policies: %s: %v", p, err)
		}
	}
	if err := checkNames("bounds", "bound", r.Bounds, []string{BoundHindsight, BoundLagrangian, BoundPenalized, BoundValuePenalty, BoundEmptyCluster, BoundsMDP}, true); err != nil {
		return err
	}
	if r.Bins < 1 {
		return invalidf("bins = %d: must be ≥ 1", r.Bins)
	}
	if r.MaxStates < 1 {
		return invalidf("max-states = %d: must be ≥ 1", r.MaxStates)
	}
	if r.Window < 0 || r.Horizon < 0 || r.HindsightClasses < 0 || r.PenaltySteps < 0 || r.LagrangeSteps < 0 {
		return invalidf("window = %d, horizon = %d, hindsight-classes = %d, penalty-steps = %d, lagrange-steps = %d: must be ≥ 0",
			r.Window, r.Horizon, r.HindsightClasses, r.PenaltySteps, r.LagrangeSteps)
	}
	if r.PenaltySteps > mdp.MaxPenaltySteps {
		return invalidf("penalty-steps = %d: must be at most %d", r.PenaltySteps, mdp.MaxPenaltySteps)
	}
	if r.ShardCount < 0 || (r.ShardCount > 0 && (r.ShardIndex < 0 || r.ShardIndex >= r.ShardCount)) {
		return invalidf("shard %d/%d: want 0 ≤ i < n", r.ShardIndex, r.ShardCount)
	}
	return nil
}

// checkNames rejects unknown names and, with unique, repeated ones.
func checkNames(field, noun string, names, known []string, unique bool) error {
	for k, n := range names {
		if !slices.Contains(known, n) {
			return invalidf("%s: unknown %s %q (known: %s)", field, noun, n, strings.Join(known, ", "))
		}
		if unique && slices.Contains(names[:k], n) {
			return invalidf("%s: %q given twice", field, n)
		}
	}
	return nil
}

// shardRange is the replications [lo, hi) of shard i of n.
func shardRange(reps, i, n int) (lo, hi int) {
	return i * reps / n, (i + 1) * reps / n
}

// Run computes the request on scenario s with backend be (nil: no MDP and
// no hindsight LP, only simulation and the pathwise empty-cluster bound).
// req.ScenarioSHA256 identifies the scenario in a shard's settings;
// req.Replications is set from s.
func Run(ctx context.Context, be Backend, s *sim.Scenario, req Request, prog Progress) (*Output, error) {
	req.Replications = s.Replications
	if err := req.Validate(); err != nil {
		return nil, err
	}
	idx, n := req.ShardIndex, max(req.ShardCount, 1)
	lo, hi := shardRange(s.Replications, idx, n)
	if hi == lo {
		return nil, invalidf("shard %d/%d: no replication in this shard (the scenario has %d)", idx, n, s.Replications)
	}
	fixed, mdpPolicy, err := computeFixed(ctx, be, s, req.Settings, prog.MDP)
	if err != nil {
		return nil, err
	}
	if slices.Contains(req.Policies, PolicyMDPOptimal) && mdpPolicy == nil {
		why := "bounds do not include mdp"
		if fixed.MDP != nil {
			why = fixed.MDP.Skipped
		}
		return nil, invalidf("policies: %s needs the MDP of the scenario solved: %s", PolicyMDPOptimal, why)
	}
	var pen PenalizedBounder
	if slices.Contains(req.Bounds, BoundPenalized) {
		if be == nil {
			return nil, invalidf("bounds: %s: this build has no LP solver", BoundPenalized)
		}
		var skipped string
		pen, skipped, err = be.FitPenalty(ctx, s, req.PenaltySteps, req.LagrangeSteps, prog.Penalty)
		if err != nil {
			return nil, fmt.Errorf("penalty fit: %w", err)
		}
		if skipped != "" {
			return nil, invalidf("bounds: %s: %s", BoundPenalized, skipped)
		}
	}
	model := s.PlacementModel()
	for _, name := range req.Policies {
		// Each policy built once here, so that a bad configuration is
		// refused before any simulation (a fitted policy fits here, once:
		// later builds reuse the fit).
		if name == PolicyMDPOptimal {
			continue
		}
		if _, err := factory(ctx, name, req.Settings, nil, model)(0); err != nil {
			return nil, invalidf("policies: %s: %v", name, err)
		}
	}
	factories := make([]sim.NamedFactory, len(req.Policies))
	for k, name := range req.Policies {
		factories[k] = sim.NamedFactory{Name: name, New: factory(ctx, name, req.Settings, mdpPolicy, model)}
	}
	total := (hi - lo) * len(req.Policies)
	reps := make([]RepFigures, 0, hi-lo)
	for rep := lo; rep < hi; rep++ {
		r, err := runReplication(ctx, be, s, rep, factories, req.Settings, pen)
		if err != nil {
			return nil, err
		}
		reps = append(reps, r)
		if prog.Simulated != nil {
			prog.Simulated(len(reps)*len(req.Policies), total)
		}
	}
	out, err := aggregate(req.Policies, fixed, reps)
	if err != nil {
		return nil, err
	}
	if req.ShardCount > 0 {
		out.Shard = &Shard{Index: idx, Count: n, Settings: req.Settings, Fixed: fixed, Reps: reps}
	}
	return out, nil
}

// factory returns the policy factory of name: the registry's with the
// request's configuration and the scenario's model (name may carry a
// parameterized family's parameters, "state-threshold:base=2;per-job=1.5",
// as `optd search` prints its best policy), or the solved MDP's table. ctx
// bounds a build's fit or solve.
func factory(ctx context.Context, name string, st Settings, mdpPolicy policy.Placement, model *policy.PlacementModel) sim.PolicyFactory {
	if name == PolicyMDPOptimal {
		return func(uint64) (policy.Placement, error) { return mdpPolicy, nil }
	}
	return func(seed uint64) (policy.Placement, error) {
		base, params, err := policy.ParsePlacementSpec(name)
		if err != nil {
			return nil, err
		}
		return policy.NewPlacement(base, policy.PlacementConfig{Seed: seed, Window: st.Window, Horizon: st.Horizon, Params: params, Model: model, Context: ctx})
	}
}

// computeFixed computes the replication-independent bounds: the MDP, the
// value-penalty bound and the exact empty-cluster bound.
func computeFixed(ctx context.Context, be Backend, s *sim.Scenario, st Settings, mdpProgress func(done, total int)) (Fixed, policy.Placement, error) {
	f := Fixed{LowerBounds: map[string]float64{}}
	withMDP := slices.Contains(st.Bounds, BoundsMDP)
	if mdpProgress == nil {
		mdpProgress = func(int, int) {}
	}
	// With the MDP asked for too, the value-penalty bound comes with its
	// solve, on the same chain (built once).
	var both *MDPSolution
	if slices.Contains(st.Bounds, BoundValuePenalty) {
		if be == nil {
			return f, nil, invalidf("bounds: %s: this build has no MDP solver", BoundValuePenalty)
		}
		var v float64
		var skipped string
		var err error
		if withMDP {
			both, v, skipped, err = be.SolvePlacementAndValueBound(ctx, s, st.Bins, st.MaxStates, mdpProgress)
		} else {
			v, skipped, err = be.ValueBound(ctx, s, st.Bins, st.MaxStates)
		}
		if err != nil {
			what := BoundValuePenalty
			if withMDP {
				what = "MDP and " + what // one computation
			}
			return f, nil, fmt.Errorf("%s: %w", what, err)
		}
		if skipped != "" {
			return f, nil, invalidf("bounds: %s: %s", BoundValuePenalty, skipped)
		}
		f.LowerBounds[BoundValuePenalty] = v
	}
	if be == nil {
		if slices.Contains(st.Bounds, BoundsMDP) {
			f.MDP = &MDPInfo{Skipped: "this build has no MDP solver"}
		}
		return f, nil, nil
	}
	if slices.Contains(st.Bounds, BoundEmptyCluster) && !pathwiseEmptyCluster(be, s) {
		f.LowerBounds[BoundEmptyCluster] = be.EmptyClusterBound(s.Workload, s.SlotCosts)
	}
	if !withMDP {
		return f, nil, nil
	}
	info := &MDPInfo{}
	f.MDP = info
	var no *mdp.NoModelError
	if _, err := mdp.ModelOf(s); errors.As(err, &no) {
		info.Skipped = no.Reason
		return f, nil, nil
	}
	sol, tooLarge := both, false
	if sol == nil {
		var err error
		if sol, tooLarge, err = be.SolvePlacement(ctx, s, st.Bins, st.MaxStates, mdpProgress); err != nil {
			return f, nil, fmt.Errorf("MDP: %w", err)
		}
	}
	if tooLarge {
		info.Skipped = fmt.Sprintf("the MDP has more than max-states = %d states", st.MaxStates)
		return f, nil, nil
	}
	info.Solved, info.Exact, info.States, info.PolicyCosts = true, sol.Exact, sol.States, sol.PolicyCosts
	if sol.Exact {
		opt := sol.Optimal
		f.Optimal = &opt
		f.LowerBounds[BoundMDPOptimal] = opt
	} else {
		f.LowerBounds[BoundMDPLower] = sol.Lower
		f.UpperBounds = map[string]float64{BoundMDPUpper: sol.Upper}
	}
	return f, sol.Policy, nil
}

// pathwiseEmptyCluster reports that the empty-cluster bound is the mean
// over the simulated jobs (a trace, or no mdp backend) rather than the
// exact expectation over the workload.
func pathwiseEmptyCluster(be Backend, s *sim.Scenario) bool {
	return be == nil || s.Trace != nil
}

// runReplication simulates one replication under every policy and computes
// its pathwise bounds.
func runReplication(ctx context.Context, be Backend, s *sim.Scenario, rep int, factories []sim.NamedFactory, st Settings, pen PenalizedBounder) (RepFigures, error) {
	bounds := st.Bounds
	hindsight := be != nil && slices.Contains(bounds, BoundHindsight)
	lagrangian := be != nil && slices.Contains(bounds, BoundLagrangian)
	r, err := s.RunReplication(ctx, rep, factories, hindsight || lagrangian || pen != nil)
	if err != nil {
		return RepFigures{}, err
	}
	first := r.Results[factories[0].Name]
	out := RepFigures{
		Replication: rep,
		JobsCounted: first.Counted,
		MeanCost:    make(map[string]float64, len(factories)),
		LowerBounds: map[string]float64{},
	}
	for _, nf := range factories {
		res := r.Results[nf.Name]
		out.MeanCost[nf.Name] = res.MeanCost
		out.Events += res.Events
	}
	if slices.Contains(bounds, BoundEmptyCluster) && pathwiseEmptyCluster(be, s) {
		out.LowerBounds[BoundEmptyCluster] = first.EmptyClusterMean
	}
	if (hindsight || lagrangian) && first.Counted > 0 {
		jobs := make([]sim.JobRecord, 0, first.Counted)
		for _, j := range r.Records {
			if j.Counted {
				jobs = append(jobs, j)
			}
		}
		if hindsight {
			total, err := be.HindsightBound(ctx, jobs, s.SlotCosts, st.HindsightClasses)
			if err != nil {
				return RepFigures{}, fmt.Errorf("replication %d: hindsight bound: %w", rep, err)
			}
			out.LowerBounds[BoundHindsight] = total / float64(first.Counted)
		}
		if lagrangian {
			total, err := be.HindsightLagrangian(ctx, jobs, s.SlotCosts, st.LagrangeSteps)
			if err != nil {
				return RepFigures{}, fmt.Errorf("replication %d: Lagrangian hindsight bound: %w", rep, err)
			}
			out.LowerBounds[BoundLagrangian] = total / float64(first.Counted)
		}
	}
	if pen != nil && first.Counted > 0 {
		total, err := pen.BoundOfRecords(ctx, r.Records)
		if err != nil {
			return RepFigures{}, fmt.Errorf("replication %d: penalized hindsight bound: %w", rep, err)
		}
		out.LowerBounds[BoundPenalized] = total / float64(first.Counted)
	}
	return out, nil
}
