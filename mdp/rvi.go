package mdp

import (
	"context"
	"fmt"
	"math"
)

// Defaults of Options (zero fields mean these).
const (
	DefaultTolerance     = 1e-10
	DefaultMaxIterations = 10_000_000
	DefaultAperiodicity  = 0.9
)

// Options control the iterative methods. Zero fields mean the defaults.
type Options struct {
	// Tolerance is the relative accuracy of the average cost: relative value
	// iteration stops when the span bounds of g* satisfy
	// hi − lo ≤ Tolerance·max(|lo|, |hi|) (or when hi − lo is below 1e-15 times
	// the largest cost, for a gain of zero), or at its rounding floor (see
	// stallWindow), with Solution.GainError saying what was reached.
	// Default 1e-10.
	Tolerance float64
	// MaxIterations bounds the iterations (default 10⁷); reaching it returns
	// ErrNotConverged.
	MaxIterations int
	// Aperiodicity is τ of the aperiodicity transform P̃ = τ·P + (1−τ)·I
	// (Puterman §8.5.4), 0 < τ ≤ 1, default 0.9. It leaves g and the optimal
	// policies unchanged and makes every chain aperiodic, which relative
	// value iteration needs to converge.
	Aperiodicity float64
	// Progress, if not nil, is called now and then with the iterations done
	// and an estimate of the total (from the observed geometric rate at which
	// the span shrinks); total never exceeds MaxIterations.
	Progress func(done, total int)
}

func (o Options) withDefaults() (Options, error) {
	if o.Tolerance == 0 {
		o.Tolerance = DefaultTolerance
	}
	if o.MaxIterations == 0 {
		o.MaxIterations = DefaultMaxIterations
	}
	if o.Aperiodicity == 0 {
		o.Aperiodicity = DefaultAperiodicity
	}
	switch {
	case !(o.Tolerance > 0) || math.IsInf(o.Tolerance, 0):
		return o, fmt.Errorf("%w: Options.Tolerance %v must be finite and > 0", ErrInvalidMDP, o.Tolerance)
	case o.MaxIterations < 0:
		return o, fmt.Errorf("%w: Options.MaxIterations %d must be ≥ 0", ErrInvalidMDP, o.MaxIterations)
	case !(o.Aperiodicity > 0 && o.Aperiodicity <= 1):
		return o, fmt.Errorf("%w: Options.Aperiodicity %v must be in (0, 1]", ErrInvalidMDP, o.Aperiodicity)
	}
	return o, nil
}

// Solution is an optimal (or, for Evaluate, a given) policy of an MDP.
type Solution struct {
	// Gain is the optimal average cost per step g*.
	Gain float64
	// GainError bounds |Gain − g*|: half the final span for relative value
	// iteration, 0 for the exact methods (up to rounding and the LP
	// solver's tolerances).
	GainError float64
	// Bias is a solution h of the optimality equation with h(0) = 0.
	Bias []float64
	// Policy is an optimal deterministic stationary policy: one action per
	// state, attaining the minimum of the optimality equation.
	Policy []int
	// Iterations is the number of iterations (value iteration sweeps, policy
	// improvement steps or simplex iterations).
	Iterations int
}

// RelativeValueIteration solves the average-cost optimality equation by
// relative value iteration on the aperiodicity-transformed MDP
// (Puterman §8.5.5): with T̃h(s) = min_a [c(a) + τ·Σ P(s'|a)·h(s')] + (1−τ)·h(s),
//
//	h_{k+1} = T̃h_k − T̃h_k(0),
//
// and the bounds min_s (T̃h_k − h_k)(s) ≤ g* ≤ max_s (T̃h_k − h_k)(s) (Odoni)
// stop it. The transformed MDP has the same g* and optimal policies and bias
// h̃ = h/τ; Solution.Bias is the untransformed h. ctx is checked at every
// sweep.
func RelativeValueIteration(ctx context.Context, m *MDP, opts Options) (*Solution, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	var order *bandOrder // computed at the first slow window only
	finishable := func() bool {
		if order == nil {
			order = newBandOrder(m)
		}
		return order.exact()
	}
	h, lo, hi, it, stalled, err := relativeValueIteration(ctx, m, opts, finishable)
	if err != nil {
		return nil, err
	}
	if stalled && order != nil && order.exact() {
		// Within the exact evaluation's limits: policy iteration finishes
		// what the sweeps could not.
		sol, err := finishByPolicyIteration(ctx, m, lo, hi, order, h, opts.Aperiodicity)
		if err != nil {
			return nil, err
		}
		if sol != nil {
			sol.Iterations += it
			return sol, nil
		}
		// It failed, or its gain fell outside the sweeps' bounds: sweep
		// on to the tolerance or the rounding floor, from the start.
		var more int
		h, lo, hi, more, _, err = relativeValueIteration(ctx, m, opts, nil)
		if err != nil {
			return nil, err
		}
		it += more
	}
	tau := opts.Aperiodicity
	for s := range h {
		h[s] *= tau
	}
	return &Solution{
		Gain: (lo + hi) / 2, GainError: (hi - lo) / 2,
		Bias: h, Policy: greedyPolicy(m, h), Iterations: it,
	}, nil
}

// relativeValueIteration runs the iteration and returns the transformed bias
// h̃ (h̃(0) = 0) and the final bounds on g*, and whether it stopped because
// the span stopped shrinking (see stallWindow): at a flat floor at most
// stallAccept of the gain, or slowly at any span if finishable is not nil
// and says true (asked at the first slow window: the caller can then
// finish otherwise).
func relativeValueIteration(ctx context.Context, m *MDP, opts Options, finishable func() bool) (h []float64, lo, hi float64, it int, stalled bool, err error) {
	S := m.NumStates()
	tau := opts.Aperiodicity
	h = make([]float64, S)
	th := make([]float64, S)
	maxCost := 0.0
	for _, c := range m.cost {
		maxCost = max(maxCost, math.Abs(c))
	}
	floor := 1e-15 * maxCost
	prevSpan, rate := math.Inf(1), 0.0
	windowSpan := math.Inf(1) // the span at the last multiple of stallWindow
	for it = 1; it <= opts.MaxIterations; it++ {
		if err := ctx.Err(); err != nil {
			return nil, 0, 0, it, false, fmt.Errorf("mdp: relative value iteration interrupted after %d sweeps: %w", it-1, err)
		}
		lo, hi = math.Inf(1), math.Inf(-1)
		for s := range S {
			best := math.Inf(1)
			for a := m.actStart[s]; a < m.actStart[s+1]; a++ {
				v := 0.0
				for k := m.trStart[a]; k < m.trStart[a+1]; k++ {
					v += m.prob[k] * h[m.next[k]]
				}
				best = min(best, m.cost[a]+tau*v)
			}
			t := best + (1-tau)*h[s]
			th[s] = t
			d := t - h[s]
			lo, hi = min(lo, d), max(hi, d)
		}
		span := hi - lo
		ref := th[0]
		for s := range S {
			h[s] = th[s] - ref
		}
		scale := max(math.Abs(lo), math.Abs(hi))
		converged := span <= opts.Tolerance*scale || span <= floor
		if it%stallWindow == 0 {
			slow := span > stallProgress*windowSpan && finishable != nil && finishable()
			flat := span > floorProgress*windowSpan && span <= stallAccept*scale
			stalled = !converged && (slow || flat)
			windowSpan = span
		}
		if converged || stalled {
			if opts.Progress != nil {
				opts.Progress(it, it)
			}
			return h, lo, hi, it, stalled, nil
		}
		if opts.Progress != nil && it&15 == 0 {
			if span > 0 && prevSpan < math.Inf(1) {
				r := span / prevSpan
				if rate == 0 {
					rate = r
				} else {
					rate = 0.9*rate + 0.1*r
				}
			}
			opts.Progress(it, estimateTotal(it, span, opts.Tolerance*max(math.Abs(lo), math.Abs(hi), floor), rate, opts.MaxIterations))
		}
		prevSpan = span
	}
	return nil, lo, hi, opts.MaxIterations, false, fmt.Errorf("%w: relative value iteration: span %g after %d sweeps (Options.MaxIterations)",
		ErrNotConverged, hi-lo, opts.MaxIterations)
}

// Relative value iteration also stops when its span stops shrinking, two
// ways, checked every stallWindow sweeps. A chain one of whose modes mixes
// at a rate 1 − γ per sweep with γ tiny shrinks its span by 1 − γ a sweep,
// and the rounding of each sweep (about 1e-16 of the bias) amplified by
// about 1/γ is a floor no sweep lowers. On overloaded placement models (K
// = 3, 550 states) the span fell to 4.07e-10 of the gain in 5000 sweeps at
// λ/μ = 95 and stayed there for 10⁷ sweeps (a minute) to fail with "not
// converged" against the default 1e-10; at λ/μ = 20 it shrank by 4.6e-6 a
// sweep from 8e-7 of the gain. Policy iteration's exact solutions satisfy
// the optimality equation to 2e-13. So:
//
//   - slow: on a chain within the exact evaluation's limits (bandOrder),
//     a span that shrank by less than a factor stallProgress over the
//     window hands over to policy iteration (finishByPolicyIteration),
//     exact; should that fail or disagree with the sweeps' bounds, the
//     sweeps go on (the K = 4, λ/μ = 20 model of 1030 states: 2.6·10⁶
//     sweeps and half a minute before, a few policy iteration steps now);
//   - flat: on any chain, a span that shrank by less than a factor
//     floorProgress (no net progress: the rounding floor) while at most
//     stallAccept of the gain stops the sweeps there, GainError saying
//     what was reached. A larger chain that converges slowly but surely
//     sweeps on to the tolerance (or to MaxIterations).
const (
	stallWindow   = 1024
	stallProgress = 0.9
	floorProgress = 0.999
	stallAccept   = 1e-7
)

// finishByPolicyIteration solves m exactly (its states in order o) once
// relative value iteration has stalled with the bounds lo ≤ g* ≤ hi, or returns
// nil if policy iteration fails (an ill-conditioned or multichain
// evaluation) or its gain is not within [lo, hi] (the evaluation's
// rounding): then the sweeps must go on. Its GainError is the half-span
// of one Bellman sweep on its bias around its gain (Odoni's bounds), not
// an assumed 0. Policy iteration starts from the policy greedy for the
// sweeps' bias (h̃ of the transformed MDP, τ·h̃ the untransformed), usually
// optimal or nearly so by then.
func finishByPolicyIteration(ctx context.Context, m *MDP, lo, hi float64, o *bandOrder, ht []float64, tau float64) (*Solution, error) {
	h := make([]float64, len(ht))
	for s, x := range ht {
		h[s] = tau * x
	}
	pi, err := policyIteration(ctx, m, o, greedyPolicy(m, h))
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, nil
	}
	eps := 1e-12 * max(math.Abs(lo), math.Abs(hi))
	if pi.Gain < lo-eps || pi.Gain > hi+eps {
		return nil, nil
	}
	blo, bhi := bellmanBounds(m, pi.Bias)
	pi.GainError = max(pi.Gain-blo, bhi-pi.Gain, 0)
	return pi, nil
}

// bellmanBounds returns Odoni's bounds on g* from one Bellman sweep on h:
// the least and the largest over the states of min_a [c(a) + P·h] − h(s).
func bellmanBounds(m *MDP, h []float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for s := range m.NumStates() {
		a0, a1 := m.ActionRange(s)
		best := math.Inf(1)
		for a := a0; a < a1; a++ {
			best = min(best, m.q(a, h))
		}
		lo, hi = min(lo, best-h[s]), max(hi, best-h[s])
	}
	return lo, hi
}

// estimateTotal predicts the sweeps needed for span to reach target when it
// shrinks by rate per sweep.
func estimateTotal(done int, span, target, rate float64, limit int) int {
	if !(rate > 0 && rate < 1) || !(target > 0) {
		return limit
	}
	more := math.Log(target/span) / math.Log(rate)
	if !(more >= 0) || more > float64(limit-done) {
		return limit
	}
	return done + int(math.Ceil(more))
}

// greedyPolicy returns, per state, the first action attaining
// min_a c(a) + Σ P(s'|a)·h(s') (ties within 1e-12 relative go to the lowest
// index, so that the choice is stable under rounding).
func greedyPolicy(m *MDP, h []float64) []int {
	S := m.NumStates()
	pol := make([]int, S)
	for s := range S {
		lo, hi := m.ActionRange(s)
		best, arg := math.Inf(1), lo
		for a := lo; a < hi; a++ {
			v := m.q(a, h)
			if a == lo || v < best-1e-12*math.Abs(best) {
				best, arg = v, a
			}
		}
		pol[s] = arg
	}
	return pol
}
