package mdp

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// DenseLimit is the largest number of states for which Evaluate and
// PolicyIteration solve the evaluation equations directly (an LU
// factorization of a dense S×S matrix); larger chains are evaluated by
// relative value iteration.
const DenseLimit = 1000

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
	// iteratively (more than DenseLimit states).
	Stationary []float64
}

// Evaluate computes the average cost of the stationary policy p on m. Chains
// of at most DenseLimit states are solved directly: with h(0) = 0 the
// unknowns z = (g, h(1), …, h(S−1)) solve A·z = c_π where A is I − P_π with
// its column 0 replaced by ones, and the same factorization gives the
// stationary distribution from Aᵀ·π = e₀ (the columns s ≠ 0 say π(I − P_π) = 0,
// column 0 says Σπ = 1). A singular A means the chain has several recurrent
// classes (ErrMultichain). Larger chains are evaluated by relative value
// iteration on the chain (opts as for RelativeValueIteration).
func Evaluate(ctx context.Context, m *MDP, p Policy, opts Options) (*Evaluation, error) {
	if err := p.check(m); err != nil {
		return nil, err
	}
	ch := chainOf(m, p)
	if ch.NumStates() <= DenseLimit {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("mdp: evaluation interrupted: %w", err)
		}
		return evaluateDense(ch)
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	h, lo, hi, _, _, err := relativeValueIteration(ctx, ch, opts, false)
	if err != nil {
		return nil, err
	}
	for s := range h {
		h[s] *= opts.Aperiodicity
	}
	return &Evaluation{Gain: (lo + hi) / 2, GainError: (hi - lo) / 2, Bias: h}, nil
}

// evaluateDense solves the evaluation equations of a chain (one action per
// state) directly.
func evaluateDense(ch *MDP) (*Evaluation, error) {
	S := ch.NumStates()
	a := mat.NewDense(S, S, nil)
	for s := range S {
		a.Set(s, s, 1)
		next, prob := ch.Transitions(s)
		for k, n := range next {
			a.Set(s, int(n), a.At(s, int(n))-prob[k])
		}
		a.Set(s, 0, 1)
	}
	var lu mat.LU
	lu.Factorize(a)
	c := mat.NewVecDense(S, append([]float64(nil), ch.cost...))
	var z mat.VecDense
	// gonum reports a condition number beyond 1e16 as an error: the matrix is
	// singular to working precision, i.e. the chain is multichain.
	if err := lu.SolveVecTo(&z, false, c); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMultichain, err)
	}
	e0 := mat.NewVecDense(S, nil)
	e0.SetVec(0, 1)
	var pi mat.VecDense
	if err := lu.SolveVecTo(&pi, true, e0); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMultichain, err)
	}
	ev := &Evaluation{Bias: make([]float64, S), Stationary: make([]float64, S)}
	ev.Gain = z.AtVec(0)
	for s := 1; s < S; s++ {
		ev.Bias[s] = z.AtVec(s)
	}
	for s := range S {
		ev.Stationary[s] = max(pi.AtVec(s), 0)
	}
	if math.IsNaN(ev.Gain) || math.IsInf(ev.Gain, 0) {
		return nil, fmt.Errorf("%w: singular evaluation system", ErrMultichain)
	}
	return ev, nil
}

// PolicyIteration solves an MDP of at most DenseLimit states exactly by
// Howard's policy iteration for unichain MDPs (Puterman §8.6): evaluate the
// current policy directly, then switch each state to an action improving
// c(a) + Σ P(s'|a)·h(s') by more than a relative 1e-12 (keeping the current
// action on ties, which guarantees termination), until no state changes. It
// starts from the first action of every state.
func PolicyIteration(ctx context.Context, m *MDP) (*Solution, error) {
	return policyIteration(ctx, m, DenseLimit)
}

// policyIteration is PolicyIteration on MDPs of at most limit states (a
// test's exact reference may go beyond DenseLimit).
func policyIteration(ctx context.Context, m *MDP, limit int) (*Solution, error) {
	S := m.NumStates()
	if S > limit {
		return nil, fmt.Errorf("%w: policy iteration: %d states, more than its limit %d (DenseLimit: a dense solve per step)", ErrTooLarge, S, limit)
	}
	pol := make([]int, S)
	for s := range S {
		pol[s], _ = m.ActionRange(s)
	}
	for it := 1; ; it++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("mdp: policy iteration interrupted: %w", err)
		}
		ev, err := evaluateDense(chainOf(m, Policy{Action: pol}))
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
