package mdp

import (
	"context"
	"fmt"
	"math"
)

// Evaluation is the average cost of a stationary policy.
type Evaluation struct {
	// Gain is the policy's average cost per step g^π.
	Gain float64
	// GainError bounds the error of Gain (0 for the direct solve, up to
	// rounding).
	GainError float64
	// Bias is h^π with h^π(0) = 0: g^π + h^π = c_π + P_π·h^π.
	Bias []float64
	// Stationary is the stationary distribution π of the policy's chain
	// (π·P_π = π, Σπ = 1, so g^π = π·c_π); nil when the chain was evaluated
	// iteratively (beyond the exact evaluation's limits).
	Stationary []float64
}

// Evaluate computes the average cost of the stationary policy p on m. A
// chain within the limits of the exact evaluation (exactWorkLimit,
// exactMemoryLimit: its states ordered so that its transitions lie in a
// narrow band, see bandOrder) is solved exactly by state reduction
// (evaluateByReduction), which also gives the stationary distribution; a
// chain with several recurrent classes is ErrMultichain. A larger chain is
// evaluated by relative value iteration on the chain (opts as for
// RelativeValueIteration).
func Evaluate(ctx context.Context, m *MDP, p Policy, opts Options) (*Evaluation, error) {
	if err := p.check(m); err != nil {
		return nil, err
	}
	ch := chainOf(m, p)
	if o := newBandOrder(ch); o.exact() {
		return evaluateByReduction(ctx, ch, o, nil)
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	h, lo, hi, _, _, err := relativeValueIteration(ctx, ch, opts, nil)
	if err != nil {
		return nil, err
	}
	for s := range h {
		h[s] *= opts.Aperiodicity
	}
	return &Evaluation{Gain: (lo + hi) / 2, GainError: (hi - lo) / 2, Bias: h}, nil
}

// PolicyIteration solves an MDP exactly by Howard's policy iteration for
// unichain MDPs (Puterman §8.6): evaluate the current policy exactly (state
// reduction, evaluateByReduction; an MDP whose chains are beyond its limits
// is ErrTooLarge), then switch each state to an action improving
// c(a) + Σ P(s'|a)·h(s') by more than a relative 1e-12 (keeping the current
// action on ties, which guarantees termination), until no state changes. It
// starts from the first action of every state.
func PolicyIteration(ctx context.Context, m *MDP) (*Solution, error) {
	o := newBandOrder(m)
	if !o.exact() {
		return nil, fmt.Errorf("%w: policy iteration: %d states whose transitions span %d positions back and %d ahead in the best order found: "+
			"an exact evaluation would take %.3g multiply-adds (limit %.3g) and %.3g stored numbers (limit %d); use relative value iteration",
			ErrTooLarge, m.NumStates(), o.lower, o.upper, float64(m.NumStates())*float64(o.lower)*float64(o.upper), exactWorkLimit,
			float64(m.NumStates())*float64(o.lower+o.upper+1), exactMemoryLimit)
	}
	pol := make([]int, m.NumStates())
	for s := range pol {
		pol[s], _ = m.ActionRange(s)
	}
	return policyIteration(ctx, m, o, pol)
}

// policyIteration is PolicyIteration with the states' order o (within the
// exact evaluation's limits) given, from the policy pol (overwritten). One
// elimination's storage serves every step.
func policyIteration(ctx context.Context, m *MDP, o *bandOrder, pol []int) (*Solution, error) {
	S := m.NumStates()
	var scratch []float64
	for it := 1; ; it++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("mdp: policy iteration interrupted: %w", err)
		}
		ev, err := evaluateByReduction(ctx, chainOf(m, Policy{Action: pol}), o, &scratch)
		if err != nil {
			return nil, err
		}
		changed := false
		for s := range S {
			cur := m.q(pol[s], ev.Bias)
			lo, hi := m.ActionRange(s)
			best, arg := cur, pol[s]
			for a := lo; a < hi; a++ {
				if v := m.q(a, ev.Bias); v < best-1e-12*max(math.Abs(best), 1e-300) {
					best, arg = v, a
				}
			}
			if arg != pol[s] {
				pol[s], changed = arg, true
			}
		}
		if !changed {
			return &Solution{Gain: ev.Gain, Bias: ev.Bias, Policy: pol, Iterations: it}, nil
		}
		if it > 10*S+100 {
			return nil, fmt.Errorf("%w: policy iteration still improving after %d steps", ErrNotConverged, it)
		}
	}
}
