package mdp

import (
	"context"
	"fmt"
	"math"
)

// evaluateByReduction evaluates a chain (one action per state) exactly by
// state reduction, the Grassmann-Taksar-Heyman elimination (Grassmann,
// Taksar and Heyman, "Regenerative analysis and steady state distributions
// for Markov chains", Operations Research 33(5), 1985), carried over to
// costs as in semi-Markov reduction. It eliminates the states in the order
// o; the positions below are o's.
//
// While states k, …, S−1 remain, the chain watched only when it is in one
// of them is again a chain: a(i, j) is the probability that the next
// remaining state visited after i is j. Eliminating k (with a(k, k) its
// return probability, s_k = 1 − a(k, k) = Σ_{j>k} a(k, j), the chain
// staying 1/s_k visits at k once there) gives, for the states i, j > k,
//
//	a(i, j) += a(i, k)·a(k, j)/s_k.
//
// Every operation adds products of nonnegative numbers: s_k is a sum, not
// the subtraction 1 − a(k, k), which is what keeps the elimination exact
// to rounding on nearly decomposable (slowly mixing) chains, where a
// direct solve of I − P or relative value iteration loses digits or time.
//
// The first position r found with s_r = 0 returns to itself whatever it
// does next: it is recurrent, the reference. Positions after r are
// transient (a second such position would be a second recurrent class:
// ErrMultichain); the mass a(i, r) of a later i becomes sink(i), a step
// into r, counted in s_i. The stationary distribution is the number of
// visits per cycle of r: v(r) = 1, v = 0 after r and
// v(k) = Σ_{i>k} v(i)·a(i, k)/s_k before it, normalized; g = π·c. The bias,
// with h(r) = 0, solves h = (c − g) + P·h: d = c − g is carried through
// the elimination like a cost (d(i) += a(i, k)·d(k)/s_k: d(k) is then the
// expected cost less g until the next remaining state), and h follows back
// from the last position,
//
//	h(k) = (d(k) + Σ_{j>k} a(k, j)·h(j)) / s_k,
//
// refined (see maxRefinements). The band of o bounds every a(i, j) that is
// ever nonzero, so the elimination works in S·(o.lower + o.upper + 1)
// numbers and about S·o.lower·o.upper operations.
//
// scratch, if not nil, holds storage for the elimination that it reuses
// and leaves grown for the next call.
func evaluateByReduction(ctx context.Context, ch *MDP, o *bandOrder, scratch *[]float64) (*Evaluation, error) {
	red, err := eliminate(ctx, ch, o, scratch)
	if err != nil {
		return nil, err
	}
	S := ch.NumStates()
	pi := red.stationary()
	g := 0.0
	for s := range S {
		g += pi[o.pos[s]] * ch.cost[s]
	}
	// h from d = c − g, then iterative refinement: the residual of the
	// computed h, less its π-mean (the system is consistent only for
	// π·ρ = 0), solved for with the same elimination while it shrinks.
	d := make([]float64, S)
	scale := 0.0
	for s := range S {
		d[o.pos[s]] = ch.cost[s] - g
		scale = max(scale, math.Abs(ch.cost[s]-g))
	}
	h := red.solve(d)
	prev := math.Inf(1)
	for range maxRefinements {
		worst := red.residual(ch, g, h, pi, d)
		if worst <= 16*epsilon*scale || worst >= prev/2 {
			break
		}
		prev = worst
		for i, x := range red.solve(d) {
			h[i] += x
		}
	}
	ev := &Evaluation{Gain: g, Bias: make([]float64, S), Stationary: make([]float64, S)}
	h0 := h[o.pos[0]]
	for s := range S {
		i := o.pos[s]
		ev.Bias[s] = h[i] - h0
		ev.Stationary[s] = pi[i]
	}
	return ev, nil
}

// maxRefinements bounds the steps of iterative refinement of the bias. The
// elimination expresses h through the paths to the reference state r, so
// the rounding of a solve grows with the time the chain takes to reach r:
// on the overloaded K = 4, λ/μ = 95 placement model, with r a rarely
// visited state, the evaluation equation's residual was 2e-8 of the scale
// after the solve, 4e-16 (a dense LU solve's) after one refinement.
// Refinement helps only if the residual is computed more accurately than
// the solve (Higham, "Accuracy and Stability of Numerical Algorithms",
// §12.1): reduction.residual sums the differences h(s') − h(s), exact
// where neighbours' biases are within a factor 2 (Sterbenz), not h(s)
// against P·h, whose rounding is of |h|'s size; on a nearly decomposable
// chain (|h| ~ 1/ε) that rounding, amplified by the slow mode's 1/ε, made
// the bias 1% wrong at ε = 1e-14 where the solve alone was exact to 1e-15.
// Steps stop when the residual is at rounding or stops halving.
const maxRefinements = 3

// epsilon is the unit roundoff of float64.
const epsilon = 0x1p-53

// residual puts into d, by position, ρ = c − g + Σ_{s'≠s} P(s, s')·(h(s') −
// h(s)) less its π-mean (the evaluation equation of the chain whose
// self-loops are 1 − the rest, as the elimination reads it) and returns
// the largest |ρ| before the mean is taken out.
func (red *reduction) residual(ch *MDP, g float64, h, pi, d []float64) float64 {
	pos := red.o.pos
	worst, mean := 0.0, 0.0
	for s := range ch.NumStates() {
		i := pos[s]
		rho := ch.cost[s] - g
		next, prob := ch.Transitions(s)
		for k, n := range next {
			if j := pos[n]; j != i {
				rho += prob[k] * (h[j] - h[i])
			}
		}
		d[i] = rho
		worst = max(worst, math.Abs(rho))
		mean += pi[i] * rho
	}
	for i := range d {
		d[i] -= mean
	}
	return worst
}

// reduction is the state reduction of a chain in the order o, every
// position's row and column frozen as they were when it was eliminated.
type reduction struct {
	o    *bandOrder
	w    int       // o.lower + o.upper + 1
	a    []float64 // a(i, j) at a[i*w + j − i + o.lower]
	sk   []float64 // s_k at k's elimination
	sink []float64 // probability of a step into r
	r    int       // the reference: the first position found recurrent
}

func (red *reduction) at(i, j int) float64 { return red.a[i*red.w+j-i+red.o.lower] }

// eliminate reduces the chain ch in the order o (scratch as for
// evaluateByReduction).
func eliminate(ctx context.Context, ch *MDP, o *bandOrder, scratch *[]float64) (*reduction, error) {
	S := ch.NumStates()
	L, U := o.lower, o.upper
	w := L + U + 1
	var band []float64
	if scratch != nil && cap(*scratch) >= S*w {
		band = (*scratch)[:S*w]
		clear(band)
	} else {
		band = make([]float64, S*w)
		if scratch != nil {
			*scratch = band
		}
	}
	red := &reduction{o: o, w: w, a: band, sk: make([]float64, S), sink: make([]float64, S), r: -1}
	a := red.a
	for s := range S {
		i := int(o.pos[s])
		next, prob := ch.Transitions(s)
		for k, n := range next {
			if j := int(o.pos[n]); j != i {
				a[i*w+j-i+L] += prob[k]
			}
		}
	}
	for k := range S {
		if k&255 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("mdp: evaluation interrupted: %w", err)
			}
		}
		rowK := a[k*w : (k+1)*w]
		jEnd := min(k+U, S-1)
		s := red.sink[k]
		for j := k + 1; j <= jEnd; j++ {
			s += rowK[j-k+L]
		}
		red.sk[k] = s
		iEnd := min(k+L, S-1)
		if s == 0 {
			if red.r >= 0 {
				return nil, fmt.Errorf("%w: states %d and %d are in different recurrent classes", ErrMultichain, o.order[red.r], o.order[k])
			}
			red.r = k
			for i := k + 1; i <= iEnd; i++ {
				red.sink[i] += a[i*w+k-i+L]
			}
			continue
		}
		for i := k + 1; i <= iEnd; i++ {
			aik := a[i*w+k-i+L]
			if aik == 0 {
				continue
			}
			f := aik / s
			rowI := a[i*w : (i+1)*w]
			for j := k + 1; j <= jEnd; j++ {
				if j != i {
					rowI[j-i+L] += f * rowK[j-k+L]
				}
			}
			red.sink[i] += f * red.sink[k]
		}
	}
	return red, nil
}

// stationary returns π by position: the visits per cycle of r, normalized.
func (red *reduction) stationary() []float64 {
	S := len(red.sk)
	v := make([]float64, S)
	v[red.r] = 1
	total := 1.0
	for k := red.r - 1; k >= 0; k-- {
		x := 0.0
		for i := k + 1; i <= min(k+red.o.lower, red.r); i++ {
			x += v[i] * red.at(i, k)
		}
		v[k] = x / red.sk[k]
		total += v[k]
	}
	for i := range v {
		v[i] /= total
	}
	return v
}

// solve returns, by position, the h with h(r) = 0 of h = d + P·h on the
// states other than r, for d by position with π·d = 0 (overwritten): d
// carried through the elimination like c and t (the multipliers
// a(i, k)/s_k are the frozen column k), then the back substitution.
func (red *reduction) solve(d []float64) []float64 {
	S, L, U := len(red.sk), red.o.lower, red.o.upper
	for k := range S {
		if k == red.r || d[k] == 0 {
			continue
		}
		f := d[k] / red.sk[k]
		for i := k + 1; i <= min(k+L, S-1); i++ {
			d[i] += red.at(i, k) * f
		}
	}
	h := make([]float64, S)
	for k := S - 1; k >= 0; k-- {
		if k == red.r {
			continue
		}
		v := d[k]
		for j := k + 1; j <= min(k+U, S-1); j++ {
			v += red.at(k, j) * h[j]
		}
		h[k] = v / red.sk[k]
	}
	return h
}
