package mdp

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/optd/optd/sim"
)

// This file is the information relaxation of the placement MDP on its own
// uniformized chain, with the penalty of an approximate value function of
// the MDP's states (Brown, Smith and Sun 2010, §2.3 and Theorem 2.3; the
// penalized LP of penalty.go is the same idea with a value function linear
// in each job's own placement, on the simulator's continuous-time traces).
//
// # The noise and the relaxation
//
// Write one step of the chain of placementMDP (uniformized at Λ = λ + μ,
// one decision step inserted at each entry into service) as a function of
// the state, the action and a noise ξ drawn independently of everything
// before it: ξ = (arrival or departure, the atom k of the job that would
// enter, u uniform in [0, 1)). An arrival (probability λ/Λ) enters service
// with atom k if n < K, else waits if w < W, else is lost; a departure
// (μ/Λ) removes the job at position ⌊u·n⌋ of the state's sorted multiset of
// held sets (a self-loop when n = 0), and the head of the queue enters with
// atom k if w > 0. Each of the n jobs leaves with probability 1/n and the
// atoms have their laws, so this is a representation of the chain's
// transition law P(·|s) (any representation of the noise gives a valid
// relaxation; this one makes the hindsight problem a path in the MDP's own
// states). A decision step is deterministic: action a of decision state d
// moves to the regular state d ⊎ {a}.
//
// Knowing the whole noise path ξ_1..ξ_T in advance, a decision maker
// chooses every action; a non-anticipative policy chooses a_t from ξ_1..ξ_{t−1}
// and the state. For any function V on the states, the penalty
//
//	Z = Σ_t (V(s_{t+1}) − (PV)(s_t, a_t)),  (PV)(s, a) = Σ_{s'} P(s'|s, a)·V(s'),   (V1)
//
// has E[Z] = 0 under every non-anticipative policy (each term has
// conditional mean zero given the past, a_t being known then; bounded
// terms on a finite horizon), so
//
//	E[min_{a_1..a_T} Σ_t (c(s_t, a_t) + (PV)(s_t, a_t) − V(s_{t+1}))] ≤ min_π E[Σ_t c(s_t, a_t)]   (V2)
//
// (the min is over every action sequence, knowing ξ; the right side is
// the optimal expected T-step cost from the empty system, which over T
// tends to T·g*: (V2)/T is a lower bound on g* up to O(span(h*)/T), like
// every finite simulation of the model). With V = h* (the optimal bias)
// each term of (V2) is g* + h*(s_t) − h*(s_{t+1}) plus a non-negative
// slack that is zero for the optimal action, so the inner minimum is
// T·g* + h*(s_0) − h*(s_T) on every path: the bound is exact (strong
// duality) and has no variance. With V = 0 it is the perfect-information
// bound on the chain.
//
// The inner minimum is a forward dynamic program over the path: at each
// step, the least penalized cost of reaching every state. At a regular
// step the noise moves every state deterministically (the cost of the step
// is (PV)(s) − V(s')); at a decision step each state branches into its
// actions (cost c(d, a); the penalty is zero there, the step being
// deterministic). States that meet keep the least cost. The states of one
// step share n and w (placement never changes the queue), so the DP holds
// at most the MDP's states of one (n, w).
//
// # Which V (what is solved)
//
// boundWithValue takes any V. ValueBound builds V from h^greedy, the
// relative value (bias) of the greedy placement (the R cheapest free
// slots) on the same chain: one policy evaluation, a linear system of the
// chain's size (an exact state reduction within its limits, else value
// iteration on the chain), not the optimization over policies that
// SolvePlacement does (relative value iteration over every action of
// every state). The candidates are V_α = α·h^greedy on the regular states
// and the one-step lookahead V_α(d) = min_a [c(d, a) + α·h^greedy(d ⊎ {a})]
// on the decision states, α on a grid from 0 to 1 (valueAlphas): where
// greedy is far from optimal its bias overstates the value of keeping
// cheap slots free, and a smaller α does better (on the generated seed
// 1008 of the penalty report, greedy 46% above the optimum: 97.7% of the
// optimum at α = 0, 89.2% at α = 1). α is chosen on pilot paths drawn from
// a seed apart from the reported ones, so the choice does not depend on
// their noise and (V2) holds for the chosen V.
//
// With α = 0 alone (ValueBoundOptions.Alphas = {0}) nothing is solved or
// evaluated: V is 0 on the regular states and min_a c(d, a), the cheapest
// placement's cost, on the decision states, and the bound is the path DP
// of the chain's relaxation itself. It is often tighter than the
// hindsight LP because of what this noise reveals: which position of the
// sorted held sets leaves, not which job (whose end the hindsight LP
// knows); knowing that the cheapest held set leaves next is worth little
// when the decision maker chooses which set is the cheapest. On the
// generated seed 1007 it gives 98.6% of the optimum where the penalized
// LP gives 93.6%.
//
// Cost: the chain is the MDP's (built as SolvePlacement builds it), the DP
// visits the chain's states of one (n, w) per step, so this is a bound
// for scenarios whose chain can be built (the MDP-solvable ones), not one
// for large clusters: there the penalized LP (penalty.go) is the bound.
// On the penalty report's scenarios it takes up to seconds (5 paths of 10⁵
// steps; mdp-8slots, 9047 states, the longest: BenchmarkValueBound) where
// the MDP's solve takes at most 0.2 s: it shows how much of the hindsight LP's gap is the
// value of information a penalty can take away, not a faster way to the
// optimum.

// pathNoise is one regular step's noise ξ.
type pathNoise struct {
	arrival bool
	atom    int32
	u       float64
}

// samplePath draws the noise of steps regular steps.
func (p *placementMDP) samplePath(rng *rand.Rand, steps int) []pathNoise {
	lam, mu := p.model.Lambda, p.model.Mu
	pa := lam / (lam + mu)
	cum := make([]float64, len(p.atoms))
	sum := 0.0
	for k, a := range p.atoms {
		sum += a.Prob
		cum[k] = sum
	}
	out := make([]pathNoise, steps)
	for t := range out {
		x := rng.Float64() * sum
		k, _ := slices.BinarySearch(cum, x)
		out[t] = pathNoise{arrival: rng.Float64() < pa, atom: int32(min(k, len(cum)-1)), u: rng.Float64()}
	}
	return out
}

// pathStepper maps (regular state, noise) to the next state, memoized.
// It depends on the chain only, not on V: one serves every V tried.
//
// The memo holds, per regular state met on a path, one entry per outcome
// that decides the next state and no more: an arrival (its atom only when
// it enters service, n < K) and each position that may leave, counted by
// its first position among equal types in the sorted set (equal types
// leave the same state behind; the atom only when the head of the queue
// enters, w > 0). A dense row per state, indexed without hashing: the
// lookup was most of a path's time as a map keyed by (state, position,
// atom).
type pathStepper struct {
	p    *placementMDP
	memo [][]int32 // per state: nil until met, else its row (−1: not yet)
	key  []byte
}

func newPathStepper(p *placementMDP) *pathStepper {
	return &pathStepper{p: p, memo: make([][]int32, p.m.NumStates())}
}

// next returns the state after regular state s under noise e: a regular
// or a decision state.
func (ps *pathStepper) next(s int32, e pathNoise) int32 {
	p := ps.p
	set, w := p.set[s], p.waiting[s]
	n := len(set)
	pos := -1 // an arrival
	if !e.arrival {
		if n == 0 {
			return s // a self-loop
		}
		pos = min(int(e.u*float64(n)), n-1)
		for pos > 0 && set[pos-1] == set[pos] {
			pos-- // equal types: the first one's entry
		}
	}
	// Row layout: the arrival's entries (A atoms if it enters service, else
	// one), then each position's (A if the head of the queue enters, else
	// one).
	A := len(p.atoms)
	arr, dep := 1, 1
	if n < p.model.K {
		arr = A
	}
	if w > 0 {
		dep = A
	}
	idx := 0
	switch {
	case pos < 0 && arr > 1:
		idx = int(e.atom)
	case pos >= 0:
		idx = arr + pos*dep
		if dep > 1 {
			idx += int(e.atom)
		}
	}
	row := ps.memo[s]
	if row == nil {
		row = make([]int32, arr+n*dep)
		for k := range row {
			row[k] = -1
		}
		ps.memo[s] = row
	}
	if to := row[idx]; to >= 0 {
		return to
	}
	var to int32
	switch {
	case pos >= 0 && w > 0:
		to = ps.lookup(p.decision, slices.Concat(set[:pos], set[pos+1:]), w-1, e.atom)
	case pos >= 0:
		to = ps.lookup(p.regular, slices.Concat(set[:pos], set[pos+1:]), 0, -1)
	case n < p.model.K:
		to = ps.lookup(p.decision, set, 0, e.atom)
	case int(w) < p.model.MaxWaiting:
		to = ps.lookup(p.regular, set, w+1, -1)
	default:
		to = s
	}
	row[idx] = to
	return to
}

// lookup finds the state of (set, w) (a regular state when atom < 0, else
// the decision state of that atom); it exists, the MDP holding every state
// reachable from the empty system.
func (ps *pathStepper) lookup(m map[string]int32, set []int32, w, atom int32) int32 {
	if atom >= 0 {
		ps.key = decisionKey(ps.key, set, w, atom)
	} else {
		ps.key = stateKey(ps.key, set, w)
	}
	s, ok := m[string(ps.key)]
	if !ok {
		panic(fmt.Sprintf("mdp: path state (%v, %d, %d) not in the MDP", set, w, atom))
	}
	return s
}

// expectedNext returns (PV)(s) for every regular state s (its one action)
// and NaN for decision states (deterministic steps, no penalty).
func (p *placementMDP) expectedNext(v []float64) []float64 {
	pv := make([]float64, len(v))
	for s := range pv {
		if p.atomOf[s] >= 0 {
			pv[s] = math.NaN()
			continue
		}
		lo, _ := p.m.ActionRange(s)
		next, prob := p.m.Transitions(lo)
		for k, x := range next {
			pv[s] += prob[k] * v[x]
		}
	}
	return pv
}

// pathBound is the inner minimum of (V2) on one noise path from the empty
// system: the least Σ (c + PV − V(next)) over every action sequence, and
// the number of steps (regular and decision).
func (p *placementMDP) pathBound(ctx context.Context, ps *pathStepper, path []pathNoise, v, pv []float64) (total float64, steps int, err error) {
	S := p.m.NumStates()
	cost := make([]float64, S)
	for s := range cost {
		cost[s] = math.Inf(1)
	}
	nextCost := slices.Clone(cost)
	active := []int32{0}
	cost[0] = 0
	var nextActive []int32
	move := func(to int32, c float64) {
		if math.IsInf(nextCost[to], 1) {
			nextActive = append(nextActive, to)
		}
		if c < nextCost[to] {
			nextCost[to] = c
		}
	}
	swap := func() {
		for _, s := range active {
			cost[s] = math.Inf(1)
		}
		cost, nextCost = nextCost, cost
		active, nextActive = nextActive, active[:0]
	}
	for t, e := range path {
		if t&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return 0, 0, fmt.Errorf("mdp: value-penalty bound: %w", err)
			}
		}
		for _, s := range active {
			to := ps.next(s, e)
			move(to, cost[s]+pv[s]-v[to])
		}
		swap()
		steps++
		if p.atomOf[active[0]] < 0 {
			continue
		}
		// A decision step: every state branches into its actions.
		for _, d := range active {
			lo, hi := p.m.ActionRange(int(d))
			for a := lo; a < hi; a++ {
				next, _ := p.m.Transitions(a)
				move(next[0], cost[d]+p.m.Cost(a))
			}
		}
		swap()
		steps++
	}
	total = math.Inf(1)
	for _, s := range active {
		total = min(total, cost[s])
	}
	return total, steps, nil
}

// lookaheadDecisions returns v with each decision state's value replaced
// by min_a [c(d, a) + v(d ⊎ {a})].
func (p *placementMDP) lookaheadDecisions(v []float64) []float64 {
	out := slices.Clone(v)
	for s := range out {
		if p.atomOf[s] < 0 {
			continue
		}
		lo, hi := p.m.ActionRange(s)
		best := math.Inf(1)
		for a := lo; a < hi; a++ {
			next, _ := p.m.Transitions(a)
			best = min(best, p.m.Cost(a)+v[next[0]])
		}
		out[s] = best
	}
	return out
}

// ValueBoundOptions configure ValueBound.
type ValueBoundOptions struct {
	// Steps is the number of regular steps of the uniformized chain per
	// replication (default DefaultValueBoundSteps).
	Steps int
	// Replications is the number of independent noise paths (default 5).
	Replications int
	// Seed seeds the paths (replication r uses sim.ReplicationSeed(Seed, r)).
	Seed uint64
	// Solve bounds the chain's size and the policy evaluation's accuracy
	// (Bins, MaxStates, Tolerance as for SolvePlacement).
	Solve SolveOptions
	// Alphas are the scales of greedy's bias to choose from (nil: 0, 0.25,
	// 0.5, 0.75 and 1). With {0} alone no policy is evaluated: V is zero
	// on the regular states and the cheapest placement's cost on the
	// decision states, and the bound is the chain's relaxation itself.
	Alphas []float64
}

// DefaultValueBoundSteps is the default path length: about 10⁵ steps of
// the uniformized chain, tens of thousands of jobs at moderate loads.
const DefaultValueBoundSteps = 100_000

// ValueBoundResult is a value-penalty bound on the mean cost per job.
type ValueBoundResult struct {
	// Mean and HalfWidth: the bound per job (mean over the replications)
	// and its 95% half-width.
	Mean, HalfWidth float64
	// PerReplication is each path's bound per job.
	PerReplication []float64
	// Reference is the exact mean cost per job of greedy, whose bias V is
	// built from: the bound is at most it up to noise (NaN when α = 0 was
	// the only choice: no policy evaluated).
	Reference float64
	// Alpha is the chosen scale of greedy's bias (see "Which V").
	Alpha float64
	// States is the chain's number of states.
	States int
}

// ValueBound is the information-relaxation bound (V2) with the penalty of
// V_α built from h^greedy (see "Which V"): a lower bound, in expectation,
// on the mean cost per job of every non-anticipative placement policy of
// model m. The workload must be discrete with at most opts.Solve.Bins atoms
// per R (the chain then is the model itself, not a discretization); else a
// *ModelError.
func ValueBound(ctx context.Context, m PlacementModel, opts ValueBoundOptions) (*ValueBoundResult, error) {
	pm, err := valueBoundChain(ctx, m, &opts)
	if err != nil {
		return nil, err
	}
	return pm.valueBound(ctx, opts, nil)
}

// SolvePlacementAndValueBound is SolvePlacement(ctx, m, opts) and
// ValueBound(ctx, m, vb) with vb.Solve = opts, on one build of the chain
// and one evaluation of greedy, which both need (`optd bound --bounds
// value-penalty,mdp` built the chain and evaluated greedy twice): the same
// two results. vb is checked first, so a model without a value bound (a
// *ModelError naming the field) is refused before anything is solved.
func SolvePlacementAndValueBound(ctx context.Context, m PlacementModel, opts SolveOptions, vb ValueBoundOptions) (*PlacementSolution, *ValueBoundResult, error) {
	vb.Solve = opts
	if _, _, err := checkValueBound(m, &vb); err != nil {
		return nil, nil, err
	}
	sol, up, greedy, err := solvePlacement(ctx, m, opts)
	if err != nil {
		return nil, nil, err
	}
	res, err := up.valueBound(ctx, vb, greedy)
	if err != nil {
		return nil, nil, err
	}
	return sol, res, nil
}

// valueBound is ValueBound on its chain p (opts checked, defaults filled
// in); greedy, if not nil, is greedy's evaluation on p.
func (p *placementMDP) valueBound(ctx context.Context, opts ValueBoundOptions, greedy *Evaluation) (*ValueBoundResult, error) {
	pm := p
	alphas := opts.Alphas
	if alphas == nil {
		alphas = valueAlphas
	}
	h := make([]float64, pm.m.NumStates())
	reference := math.NaN()
	if slices.ContainsFunc(alphas, func(a float64) bool { return a != 0 }) {
		if greedy == nil {
			ev, err := Evaluate(ctx, pm.m, pm.greedyPolicy(), Options{Tolerance: opts.Solve.Tolerance})
			if err != nil {
				return nil, fmt.Errorf("mdp: evaluating greedy: %w", err)
			}
			greedy = ev
		}
		h, reference = greedy.Bias, pm.perJob(greedy.Gain)
	}
	// One stepper for every α and path: it does not depend on V, and its
	// memo, filled on the pilot paths, serves the reported ones.
	ps := newPathStepper(pm)
	// α on pilot paths apart from the reported ones.
	bestAlpha := alphas[0]
	if len(alphas) > 1 {
		pilot := ValueBoundOptions{Steps: max(opts.Steps/valuePilotShare, 1), Replications: valuePilotPaths, Seed: opts.Seed ^ valuePilotSalt}
		best := math.Inf(-1)
		for _, alpha := range alphas {
			r, err := pm.boundWithValue(ctx, ps, pm.scaledValue(h, alpha), pilot)
			if err != nil {
				return nil, err
			}
			if r.Mean > best {
				best, bestAlpha = r.Mean, alpha
			}
		}
	}
	res, err := pm.boundWithValue(ctx, ps, pm.scaledValue(h, bestAlpha), opts)
	if err != nil {
		return nil, err
	}
	res.Reference, res.Alpha = reference, bestAlpha
	return res, nil
}

// valueAlphas is the grid of scales of h^greedy that ValueBound tries.
var valueAlphas = []float64{0, 0.25, 0.5, 0.75, 1}

// ValueBound's pilot: valuePilotPaths paths of 1/valuePilotShare of the
// reported ones' length per α, from the seed xor valuePilotSalt.
const (
	valuePilotPaths = 2
	valuePilotShare = 5
	valuePilotSalt  = 0x9a1e_b0d5_7e57_c0de
)

// scaledValue is V_α: α·h on the regular states, the one-step lookahead
// min_a [c(d, a) + α·h(d ⊎ {a})] on the decision states.
func (p *placementMDP) scaledValue(h []float64, alpha float64) []float64 {
	v := make([]float64, len(h))
	for s, x := range h {
		v[s] = alpha * x
	}
	return p.lookaheadDecisions(v)
}

// valueBoundChain checks m and opts (defaults filled in) and builds the
// chain.
func valueBoundChain(ctx context.Context, m PlacementModel, opts *ValueBoundOptions) (*placementMDP, error) {
	cls, d, err := checkValueBound(m, opts)
	if err != nil {
		return nil, err
	}
	return buildPlacement(ctx, m, cls, d.upper, opts.Solve.MaxStates)
}

// checkValueBound checks m and opts, with their defaults filled in: the
// options, and a workload whose chain is the model itself; it returns the
// slot classes and the workload's atoms.
func checkValueBound(m PlacementModel, opts *ValueBoundOptions) (*classes, discretization, error) {
	var d discretization
	cls, err := m.validate()
	if err != nil {
		return nil, d, err
	}
	if opts.Solve, err = opts.Solve.withDefaults(); err != nil {
		return nil, d, err
	}
	if opts.Steps == 0 {
		opts.Steps = DefaultValueBoundSteps
	}
	if opts.Replications == 0 {
		opts.Replications = 5
	}
	switch {
	case opts.Steps < 1:
		return nil, d, modelErr("ValueBoundOptions.Steps", opts.Steps, "must be ≥ 1")
	case opts.Replications < 1:
		return nil, d, modelErr("ValueBoundOptions.Replications", opts.Replications, "must be ≥ 1")
	case opts.Alphas != nil && len(opts.Alphas) == 0:
		return nil, d, modelErr("ValueBoundOptions.Alphas", "[]", "give at least one scale (nil: the default grid)")
	}
	for k, a := range opts.Alphas {
		if !(a >= 0) || math.IsInf(a, 0) {
			return nil, d, modelErr(fmt.Sprintf("ValueBoundOptions.Alphas[%d]", k), a, "must be finite and ≥ 0")
		}
	}
	if d = discretize(m.Workload, opts.Solve.Bins); !d.exact {
		return nil, d, modelErr(FieldWorkload, "continuous or more atoms than SolveOptions.Bins",
			"it needs the chain of the model itself: a discrete workload with at most %d atoms of data per R (bins)", opts.Solve.Bins)
	}
	return cls, d, nil
}

// boundWithValue is (V2) per job with the penalty of v (any function of
// the chain's states) over opts.Replications paths, stepped by ps (the
// chain's).
func (p *placementMDP) boundWithValue(ctx context.Context, ps *pathStepper, v []float64, opts ValueBoundOptions) (*ValueBoundResult, error) {
	pv := p.expectedNext(v)
	res := &ValueBoundResult{States: p.m.NumStates()}
	for r := range opts.Replications {
		path := p.samplePath(sim.NewRand(sim.ReplicationSeed(opts.Seed, r), sim.StreamJobs), opts.Steps)
		total, steps, err := p.pathBound(ctx, ps, path, v, pv)
		if err != nil {
			return nil, err
		}
		res.PerReplication = append(res.PerReplication, p.perJob(total/float64(steps)))
	}
	res.Mean, res.HalfWidth = sim.MeanCI95(res.PerReplication)
	return res, nil
}
