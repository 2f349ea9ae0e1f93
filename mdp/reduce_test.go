package mdp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// The exact evaluation (state reduction in a band order) is checked against
// two other methods on generated chains: the dense LU solve it replaced
// (denseEvaluation, kept here as the oracle), and, on nearly decomposable
// birth-death chains where a dense solve loses its digits, the product
// form of the stationary distribution and the evaluation equation's
// residual.

// denseEvaluation solves the evaluation equations of a chain directly: with
// h(0) = 0 the unknowns z = (g, h(1), …, h(S−1)) solve A·z = c_π where A is
// I − P_π with its column 0 replaced by ones, and Aᵀ·π = e₀ gives the
// stationary distribution. A singular A means several recurrent classes.
func denseEvaluation(ch *MDP) (*Evaluation, error) {
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

// generatedChain is a chain of one of several families: sparse random
// (some states transient: nothing enters them), dense random, and a ring
// with chords, each with a random order of its states.
func generatedChain(t testing.TB, rng *rand.Rand, family, states int) *MDP {
	t.Helper()
	b := NewBuilder()
	perm := rng.Perm(states)
	for s := range states {
		b.AddState()
		var next []int
		switch family {
		case 0: // sparse: to 1-3 states among the first 80%, so the rest are transient
			for range 1 + rng.IntN(3) {
				next = append(next, perm[rng.IntN(max(1, states*4/5))])
			}
		case 1: // dense
			for range states / 2 {
				next = append(next, rng.IntN(states))
			}
		default: // ring with a chord
			next = append(next, perm[(slicesIndex(perm, s)+1)%states], rng.IntN(states))
		}
		prob := make([]float64, len(next))
		sum := 0.0
		for i := range prob {
			prob[i] = 0.01 + rng.Float64()
			sum += prob[i]
		}
		for i := range prob {
			prob[i] /= sum
		}
		b.AddAction(100*rng.Float64(), next, prob)
	}
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func slicesIndex(p []int, v int) int {
	for i, x := range p {
		if x == v {
			return i
		}
	}
	return -1
}

// residual is the largest |g + h(s) − c(s) − Σ P(s, s')·h(s')| over the
// states, relative to the largest |c| + |h|.
func residual(ch *MDP, ev *Evaluation) float64 {
	scale, worst := 0.0, 0.0
	for s := range ch.NumStates() {
		r := ev.Gain + ev.Bias[s] - ch.q(s, ev.Bias)
		worst = max(worst, math.Abs(r))
		scale = max(scale, math.Abs(ch.Cost(s))+math.Abs(ev.Bias[s]))
	}
	return worst / scale
}

func TestReductionMatchesDenseLU(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(41, 42))
	for i := range 60 {
		family, states := i%3, 2+rng.IntN(120)
		t.Run(fmt.Sprintf("family=%d/states=%d", family, states), func(t *testing.T) {
			ch := generatedChain(t, rng, family, states)
			want, wantErr := denseEvaluation(ch)
			o := newBandOrder(ch)
			got, err := evaluateByReduction(ctx, ch, o, nil)
			if (err != nil) != (wantErr != nil) {
				t.Fatalf("reduction: %v; dense LU: %v", err, wantErr)
			}
			if err != nil {
				if !errors.Is(err, ErrMultichain) {
					t.Fatalf("error %v, want ErrMultichain", err)
				}
				return
			}
			if d := math.Abs(got.Gain - want.Gain); d > 1e-10*max(1, math.Abs(want.Gain)) {
				t.Errorf("gain %.15g, dense LU %.15g", got.Gain, want.Gain)
			}
			for s := range states {
				if d := math.Abs(got.Bias[s] - want.Bias[s]); d > 1e-8*max(1, math.Abs(want.Bias[s])) {
					t.Fatalf("state %d: bias %.12g, dense LU %.12g", s, got.Bias[s], want.Bias[s])
				}
				if d := math.Abs(got.Stationary[s] - want.Stationary[s]); d > 1e-10 {
					t.Fatalf("state %d: π %.12g, dense LU %.12g", s, got.Stationary[s], want.Stationary[s])
				}
			}
			if r := residual(ch, got); r > 1e-12 {
				t.Errorf("evaluation equation's residual %.3g of the scale", r)
			}
		})
	}
}

// TestReductionOnNearlyDecomposableChains: a birth-death chain on 0..n−1
// whose middle link has probability ε, the slowly mixing kind on which
// relative value iteration crawls. Its stationary distribution has the
// product form π(i+1)/π(i) = up(i)/down(i+1), and its bias the flux form
// h(i+1) − h(i) = Σ_{j>i} π(j)·(c(j) − g) / (π(i)·up(i)) (from
// g − c(i) = up(i)·Δ_i − down(i)·Δ_{i−1} and detailed balance), summed
// over the smaller side (−Σ_{j≤i} …) to avoid cancellation. The reduction
// must match both to rounding, relatively, however small ε is (the dense
// LU is singular to working precision at ε = 1e-14).
func TestReductionOnNearlyDecomposableChains(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(43, 44))
	for _, eps := range []float64{1e-2, 1e-6, 1e-10, 1e-14, 1e-300} {
		n := 20 + rng.IntN(60)
		up, down := make([]float64, n), make([]float64, n)
		b := NewBuilder()
		for i := range n {
			b.AddState()
			if i+1 < n {
				up[i] = 0.1 + 0.3*rng.Float64()
				if i == n/2 {
					up[i] = eps
				}
			}
			if i > 0 {
				down[i] = 0.1 + 0.3*rng.Float64()
				if i == n/2+1 {
					down[i] = eps
				}
			}
			next, prob := []int{i}, []float64{1 - up[i] - down[i]}
			if up[i] > 0 {
				next, prob = append(next, i+1), append(prob, up[i])
			}
			if down[i] > 0 {
				next, prob = append(next, i-1), append(prob, down[i])
			}
			b.AddAction(float64(i), next, prob)
		}
		ch, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		ev, err := evaluateByReduction(ctx, ch, newBandOrder(ch), nil)
		if err != nil {
			t.Fatal(err)
		}
		pi := make([]float64, n)
		pi[0] = 1
		total := 1.0
		for i := 1; i < n; i++ {
			pi[i] = pi[i-1] * up[i-1] / down[i]
			total += pi[i]
		}
		g := 0.0
		for i := range n {
			pi[i] /= total
			g += pi[i] * float64(i)
			if d := math.Abs(ev.Stationary[i] - pi[i]); d > 1e-12*pi[i] {
				t.Fatalf("ε = %g: π(%d) = %.15g, product form %.15g", eps, i, ev.Stationary[i], pi[i])
			}
		}
		if d := math.Abs(ev.Gain - g); d > 1e-12*g {
			t.Errorf("ε = %g: gain %.15g, product form %.15g", eps, ev.Gain, g)
		}
		for i := range n - 1 {
			flux := 0.0
			if i < n/2 {
				for j := 0; j <= i; j++ {
					flux -= pi[j] * (float64(j) - g)
				}
			} else {
				for j := i + 1; j < n; j++ {
					flux += pi[j] * (float64(j) - g)
				}
			}
			want := flux / (pi[i] * up[i])
			// To 1e-9 of Δ, beyond the rounding of the stored biases
			// themselves (|h| ~ 1/ε: at ε = 1e-10 a bias of 1e12 holds a
			// difference of 190 to 1e-4).
			tol := 1e-9*math.Abs(want) + 4*epsilon*(math.Abs(ev.Bias[i])+math.Abs(ev.Bias[i+1]))
			if got := ev.Bias[i+1] - ev.Bias[i]; math.Abs(got-want) > tol {
				t.Fatalf("ε = %g: h(%d) − h(%d) = %.15g, flux form %.15g", eps, i+1, i, got, want)
			}
		}
	}
}

// exactOptimum solves m by policy iteration (state reduction) and checks the
// answer with the dense LU solve, a second method: the optimal policy's
// gain evaluated densely agrees to 1e-12, and the dense bias certifies
// optimality (one Bellman sweep on it stays within 1e-11 of the gain:
// Odoni's bounds). Clp's LP is no reference on the slowly mixing chains
// this serves: its tolerances put its gain 4e-8 off at λ/μ = 95.
func exactOptimum(t testing.TB, m *MDP) *Solution {
	t.Helper()
	sol, err := PolicyIteration(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	dense, err := denseEvaluation(chainOf(m, Policy{Action: sol.Policy}))
	if err != nil {
		t.Fatal(err)
	}
	if d := math.Abs(dense.Gain - sol.Gain); d > 1e-12*math.Abs(sol.Gain) {
		t.Fatalf("policy iteration's gain %.15g, its policy evaluated by dense LU %.15g", sol.Gain, dense.Gain)
	}
	lo, hi := bellmanBounds(m, dense.Bias)
	if hi-lo > 2e-11*math.Abs(sol.Gain) {
		t.Fatalf("the dense bias of policy iteration's policy: one Bellman sweep spans [%.15g, %.15g], not optimal", lo, hi)
	}
	return sol
}
