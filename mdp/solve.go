package mdp

import (
	"context"
	"fmt"
	"math"

	"github.com/optd/optd/policy"
)

// Method selects how SolvePlacement solves an MDP.
type Method int

const (
	// MethodRVI is relative value iteration (the default): its bias solves
	// the optimality equation in every state, which the optimal Policy
	// needs on live states.
	MethodRVI Method = iota
	// MethodLP is the occupation-measure LP solved with Clp.
	MethodLP
	// MethodPolicyIteration is Howard's policy iteration with exact
	// evaluation by state reduction (within its limits: see bandOrder).
	MethodPolicyIteration
)

// String returns "rvi", "lp" or "policy-iteration".
func (m Method) String() string {
	switch m {
	case MethodRVI:
		return "rvi"
	case MethodLP:
		return "lp"
	case MethodPolicyIteration:
		return "policy-iteration"
	}
	return fmt.Sprintf("Method(%d)", int(m))
}

// Defaults of SolveOptions.
const (
	DefaultBins      = 16
	DefaultMaxStates = 1_000_000
)

// SolveOptions control SolvePlacement and EvaluatePolicy. Zero fields mean
// the defaults.
type SolveOptions struct {
	// Bins is the number of bins per value of R for a law of Y that is
	// continuous or has more than Bins atoms (default 16); a discrete law
	// with at most Bins atoms is used exactly.
	Bins int
	// Tolerance is the relative accuracy of relative value iteration
	// (default 1e-10).
	Tolerance float64
	// MaxStates bounds the number of MDP states (default 10⁶); beyond it the
	// solve fails with ErrTooLarge.
	MaxStates int
	// Progress, if not nil, receives (done, total) in arbitrary units over
	// the whole solve (each MDP solved or evaluated is one phase).
	Progress func(done, total int)
	// Method solves the MDP (default MethodRVI).
	Method Method
}

func (o SolveOptions) withDefaults() (SolveOptions, error) {
	if o.Bins == 0 {
		o.Bins = DefaultBins
	}
	if o.Tolerance == 0 {
		o.Tolerance = DefaultTolerance
	}
	if o.MaxStates == 0 {
		o.MaxStates = DefaultMaxStates
	}
	switch {
	case o.Bins < 1:
		return o, modelErr("SolveOptions.Bins", o.Bins, "must be ≥ 1")
	case !(o.Tolerance > 0) || math.IsInf(o.Tolerance, 0):
		return o, modelErr("SolveOptions.Tolerance", o.Tolerance, "must be finite and > 0")
	case o.MaxStates < 1:
		return o, modelErr("SolveOptions.MaxStates", o.MaxStates, "must be ≥ 1")
	case o.Method < MethodRVI || o.Method > MethodPolicyIteration:
		return o, modelErr("SolveOptions.Method", o.Method, "unknown method")
	}
	return o, nil
}

// progress splits SolveOptions.Progress into phases of phaseUnits each.
type progress struct {
	fn     func(done, total int)
	phase  int
	phases int
}

const phaseUnits = 1000

func (p *progress) sub() func(done, total int) {
	if p.fn == nil {
		return nil
	}
	base := p.phase * phaseUnits
	return func(done, total int) {
		if total <= 0 {
			return
		}
		p.fn(base+int(float64(phaseUnits)*float64(min(done, total))/float64(total)), p.phases*phaseUnits)
	}
}

func (p *progress) next() {
	p.phase++
	if p.fn != nil {
		p.fn(p.phase*phaseUnits, p.phases*phaseUnits)
	}
}

// PlacementSolution is the optimum of the stable system's placement MDP.
type PlacementSolution struct {
	// Optimal is the exact optimal long-run mean cost per job that entered
	// service (discrete workloads); NaN when the workload had to be
	// bracketed (Exact false).
	Optimal float64
	// Lower ≤ optimum ≤ Upper: the two-point-spread and conditional-mean
	// discretizations (equal to Optimal when Exact).
	Lower, Upper float64
	// Exact reports that every conditional law of Y given R was used as is.
	Exact bool
	// States is the number of MDP states (of the upper discretization):
	// regular states (jobs in service, waiting) and decision states.
	States int
	// Policy is the optimal decision rule, Name() "mdp-optimal" (see
	// SolvePlacement).
	Policy policy.Placement
	// PolicyCosts holds the exact mean cost per job of "greedy" (the R
	// cheapest free slots) and "random" (a uniformly random R-subset of the
	// free slots) on the same chain.
	PolicyCosts map[string]float64
}

// SolvePlacement computes the optimal long-run mean reduce-placement cost per
// job of the stable system (Tan et al., INFOCOM 2013, §III-B, Theorem 3),
// exactly for discrete workloads and bracketed for continuous ones.
//
// # Cost per job
//
// The figure of merit is C̄ = lim (1/n)·Σ_{i≤n} Y_i·H(A_i) over the jobs that
// entered service (Lemma 2, eq. (8)). The MDP (see placementMDP) is the chain
// uniformized at Λ = λ + μ with one decision step inserted at each entry into
// service. Inserting steps does not change the law of the sequence of
// states and decisions, so C̄ is the same; and since placement never delays
// service, the number N in system is the M/M/1/(K+W) birth-death chain under
// every policy: per step of the uniformized chain a job enters service with
// probability e (PlacementModel.entryRate), independent of the policy. Over
// T uniformized steps there are e·T entries and (1+e)·T steps, so
//
//	C̄ = g·(1 + e)/e,
//
// g the average cost per step of the MDP. C̄ is an affine image of g with a
// policy-independent factor: minimizing g minimizes C̄ (and the cost rate per
// unit of time, g·Λ·(1+e)). The tests check e/(1+e) against the stationary
// fraction of decision states.
//
// # Continuous Y
//
// With h the relative values of the regular states, the decision for a job
// (y, r) in state (M, w) minimizes y·H(A) + h(M ⊎ A, w) over the r-subsets A
// (Theorem 3's linear functions; ANY subset, not only contiguous blocks), so
// φ(y) = min_A [y·H(A) + h(M ⊎ A, w)] is concave in y. Replacing Y by
// conditional means on bins makes the Bellman operator larger (Jensen), by
// two-point spreads onto the bins' ends smaller (chords), so by monotonicity
// of value iteration Lower ≤ C̄* ≤ Upper (see discretize). Upper is
// attained by a real policy: the upper MDP's decision per bin.
//
// # The optimal policy
//
// Policy decides for any live state by the one-step lookahead
// argmin_A [y·H(A) + h(M ⊎ A, w)] with the bias h of the exact (or upper)
// MDP, for any y: at the atoms of a discrete workload this is the optimal
// decision; for a continuous one it is a policy-improvement step on the
// upper MDP's per-bin policy, hence costs at most Upper. It maps a
// PlacementRequest to an MDP state through the cost classes of the slots it
// holds (Held, by slot Index = position in SlotCosts) and Waiting (the jobs
// still waiting once this job has entered service, capped at MaxWaiting).
// States outside the model (K jobs already in service, an R or a held set
// the model never produces, unknown slot costs) get the greedy placement,
// with the reason saying so. It is safe for concurrent use.
func SolvePlacement(ctx context.Context, m PlacementModel, opts SolveOptions) (*PlacementSolution, error) {
	sol, _, _, err := solvePlacement(ctx, m, opts)
	return sol, err
}

// solvePlacement is SolvePlacement, which also returns the chain it solved
// (of the upper discretization, the model itself when Exact) and greedy's
// evaluation on it.
func solvePlacement(ctx context.Context, m PlacementModel, opts SolveOptions) (*PlacementSolution, *placementMDP, *Evaluation, error) {
	cls, err := m.validate()
	if err != nil {
		return nil, nil, nil, err
	}
	if opts, err = opts.withDefaults(); err != nil {
		return nil, nil, nil, err
	}
	d := discretize(m.Workload, opts.Bins)
	pr := &progress{fn: opts.Progress, phases: 3}
	if !d.exact {
		pr.phases = 4
	}
	up, err := buildPlacement(ctx, m, cls, d.upper, opts.MaxStates)
	if err != nil {
		return nil, nil, nil, err
	}
	upSol, err := solveMDP(ctx, up.m, opts, pr.sub())
	if err != nil {
		return nil, nil, nil, err
	}
	pr.next()
	sol := &PlacementSolution{
		Exact:  d.exact,
		States: up.m.NumStates(),
		Upper:  up.perJob(upSol.Gain),
	}
	sol.Lower, sol.Optimal = sol.Upper, sol.Upper
	if !d.exact {
		sol.Optimal = math.NaN()
		lo, err := buildPlacement(ctx, m, cls, d.lower, opts.MaxStates)
		if err != nil {
			return nil, nil, nil, err
		}
		loSol, err := solveMDP(ctx, lo.m, opts, pr.sub())
		if err != nil {
			return nil, nil, nil, err
		}
		pr.next()
		sol.Lower = lo.perJob(loSol.Gain)
	}
	sol.Policy = newOptimalPolicy(up, upSol.Bias)
	sol.PolicyCosts = map[string]float64{}
	var greedy *Evaluation
	for _, named := range []struct {
		name string
		pol  Policy
	}{{"greedy", up.greedyPolicy()}, {"random", up.randomPolicy()}} {
		ev, err := Evaluate(ctx, up.m, named.pol, Options{Tolerance: opts.Tolerance, Progress: pr.sub()})
		if err != nil {
			return nil, nil, nil, fmt.Errorf("mdp: evaluating %s: %w", named.name, err)
		}
		pr.next()
		sol.PolicyCosts[named.name] = up.perJob(ev.Gain)
		if named.name == "greedy" {
			greedy = ev
		}
	}
	return sol, up, greedy, nil
}

// solveMDP dispatches on opts.Method.
func solveMDP(ctx context.Context, m *MDP, opts SolveOptions, prog func(done, total int)) (*Solution, error) {
	switch opts.Method {
	case MethodLP:
		return SolveLP(ctx, m)
	case MethodPolicyIteration:
		return PolicyIteration(ctx, m)
	default:
		return RelativeValueIteration(ctx, m, Options{Tolerance: opts.Tolerance, Progress: prog})
	}
}

// RandomPolicyName is the registry name of the uniformly random placement,
// which EvaluatePolicy evaluates as the law it samples from.
const RandomPolicyName = "random"

// EvaluatePolicy returns the exact long-run mean cost per job that entered
// service of a deterministic stationary placement policy p on the MDP of m
// (same chain as SolvePlacement). p is asked once per decision state with a
// PlacementRequest built from the state: Free is the free slots cheapest
// first (ties by Index; which slots of a cost class are held is immaterial,
// so the jobs in service hold the lowest indices of each class), Held the
// slots of each job in service, Waiting the jobs still waiting, X = y·R,
// and JobsInSystem the jobs in service plus those waiting (the job's count
// at its own arrival is not part of the state). Its answer must depend on
// the slots only through their costs, as every policy of optd does.
//
// A policy named "random" (RandomPolicyName) is evaluated as the uniform law
// over R-subsets of the free slots that it samples from. A policy that
// learns from the jobs it places (policy.Estimating) is refused: its
// decision is not a function of the state.
//
// For a workload with continuous Y (or more than SolveOptions.Bins atoms) the
// chain is the conditional-mean discretization: exact for policies whose
// decision does not vary with Y within a bin (greedy, random), an
// approximation otherwise.
func EvaluatePolicy(ctx context.Context, m PlacementModel, p policy.Placement, opts SolveOptions) (float64, error) {
	cls, err := m.validate()
	if err != nil {
		return 0, err
	}
	if opts, err = opts.withDefaults(); err != nil {
		return 0, err
	}
	if p == nil {
		return 0, modelErr("policy", nil, "missing")
	}
	if _, ok := p.(policy.Estimating); ok {
		// Asked once per state in the chain's order, it would learn from
		// requests that are no trajectory and decide differently in the
		// same state at different times: its cost is not this chain's.
		return 0, modelErr("policy", p.Name(), "learns from the jobs it has placed (a sliding-window estimate), so its decision is not a function of the MDP's state; simulate it instead")
	}
	d := discretize(m.Workload, opts.Bins)
	pm, err := buildPlacement(ctx, m, cls, d.upper, opts.MaxStates)
	if err != nil {
		return 0, err
	}
	var pol Policy
	if p.Name() == RandomPolicyName {
		pol = pm.randomPolicy()
	} else if pol, err = pm.policyOf(ctx, p); err != nil {
		return 0, err
	}
	ev, err := Evaluate(ctx, pm.m, pol, Options{Tolerance: opts.Tolerance, Progress: opts.Progress})
	if err != nil {
		return 0, err
	}
	return pm.perJob(ev.Gain), nil
}
