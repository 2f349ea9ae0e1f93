package mdp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/floats/scalar"
)

// Named tolerances of the tests.
const (
	agreeTol = 1e-8  // RVI, LP and direct evaluation agree to this (abs or rel)
	exactTol = 1e-10 // two exact computations of the same number
)

// randomMDP returns a unichain MDP: every action moves to state 0 with
// probability at least 0.05, plus up to three random successors.
func randomMDP(t testing.TB, rng *rand.Rand, states, maxActions int) *MDP {
	t.Helper()
	b := NewBuilder()
	for range states {
		b.AddState()
		for range 1 + rng.IntN(maxActions) {
			next := []int{0}
			prob := []float64{0.05 + 0.2*rng.Float64()}
			rest := 1 - prob[0]
			k := 1 + rng.IntN(3)
			for j := range k {
				next = append(next, rng.IntN(states))
				if j == k-1 {
					prob = append(prob, rest)
				} else {
					p := rest * rng.Float64()
					prob = append(prob, p)
					rest -= p
				}
			}
			b.AddAction(10*rng.Float64(), next, prob)
		}
	}
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// bruteForce returns the smallest gain over all deterministic stationary
// policies of m, evaluated directly.
func bruteForce(t testing.TB, m *MDP) float64 {
	t.Helper()
	S := m.NumStates()
	pol := make([]int, S)
	for s := range S {
		pol[s], _ = m.ActionRange(s)
	}
	best := math.Inf(1)
	for {
		ev, err := Evaluate(context.Background(), m, Policy{Action: pol}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		best = min(best, ev.Gain)
		s := 0
		for ; s < S; s++ {
			lo, hi := m.ActionRange(s)
			if pol[s]+1 < hi {
				pol[s]++
				break
			}
			pol[s] = lo
		}
		if s == S {
			return best
		}
	}
}

func TestRandomMDPsMethodsAgree(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 12 {
		states := 2 + rng.IntN(6)
		if i >= 8 {
			states = 40 + rng.IntN(60)
		}
		t.Run(fmt.Sprintf("case=%d/states=%d", i, states), func(t *testing.T) {
			m := randomMDP(t, rng, states, 3)
			rvi, err := RelativeValueIteration(ctx, m, Options{Tolerance: 1e-12})
			if err != nil {
				t.Fatal(err)
			}
			lps, err := SolveLP(ctx, m)
			if err != nil {
				t.Fatal(err)
			}
			pi, err := PolicyIteration(ctx, m)
			if err != nil {
				t.Fatal(err)
			}
			if !scalar.EqualWithinAbsOrRel(rvi.Gain, lps.Gain, agreeTol, agreeTol) {
				t.Errorf("RVI gain %.12g, LP gain %.12g", rvi.Gain, lps.Gain)
			}
			if !scalar.EqualWithinAbsOrRel(rvi.Gain, pi.Gain, agreeTol, agreeTol) {
				t.Errorf("RVI gain %.12g, policy iteration %.12g", rvi.Gain, pi.Gain)
			}
			// Each method's policy, evaluated directly, attains the optimum.
			for name, pol := range map[string][]int{"rvi": rvi.Policy, "lp": lps.Policy, "pi": pi.Policy} {
				ev, err := Evaluate(ctx, m, Policy{Action: pol}, Options{})
				if err != nil {
					t.Fatal(err)
				}
				if !scalar.EqualWithinAbsOrRel(ev.Gain, pi.Gain, agreeTol, agreeTol) {
					t.Errorf("%s policy costs %.12g, optimum %.12g", name, ev.Gain, pi.Gain)
				}
			}
			// The biases of RVI and policy iteration solve the optimality
			// equation; the LP duals satisfy it with ≤, with equality where the
			// LP's policy is recurrent.
			ev, err := Evaluate(ctx, m, Policy{Action: lps.Policy}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			for name, sol := range map[string]*Solution{"rvi": rvi, "lp": lps, "pi": pi} {
				for s := range m.NumStates() {
					lo, hi := m.ActionRange(s)
					best := math.Inf(1)
					for a := lo; a < hi; a++ {
						best = min(best, m.q(a, sol.Bias))
					}
					lhs := sol.Gain + sol.Bias[s]
					tight := name != "lp" || ev.Stationary[s] > 1e-9
					if (tight && !scalar.EqualWithinAbsOrRel(lhs, best, 1e-7, 1e-7)) || lhs > best+1e-7*max(1, math.Abs(best)) {
						t.Errorf("%s: state %d: g+h = %.10g, min_a Q = %.10g", name, s, lhs, best)
						break
					}
				}
			}
			if states <= 7 {
				if bf := bruteForce(t, m); !scalar.EqualWithinAbsOrRel(bf, pi.Gain, exactTol, exactTol) {
					t.Errorf("brute force %.12g, policy iteration %.12g", bf, pi.Gain)
				}
			}
		})
	}
}

func TestEvaluateExactMatchesIterative(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 4))
	m := randomMDP(t, rng, 30, 3)
	S := m.NumStates()
	mix := make([][]float64, S)
	act := make([]int, S)
	for s := range S {
		lo, hi := m.ActionRange(s)
		act[s] = lo
		if s%2 == 0 {
			w := make([]float64, hi-lo)
			sum := 0.0
			for i := range w {
				w[i] = rng.Float64()
				sum += w[i]
			}
			for i := range w {
				w[i] /= sum
			}
			mix[s] = w
		}
	}
	p := Policy{Action: act, Mix: mix}
	dense, err := Evaluate(ctx, m, p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	h, lo, hi, _, _, err := relativeValueIteration(ctx, chainOf(m, p), Options{Tolerance: 1e-13, MaxIterations: 1e6, Aperiodicity: 0.5}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if g := (lo + hi) / 2; !scalar.EqualWithinAbsOrRel(g, dense.Gain, agreeTol, agreeTol) {
		t.Errorf("iterative gain %.12g, dense %.12g", g, dense.Gain)
	}
	for s := range S {
		if !scalar.EqualWithinAbsOrRel(h[s]*0.5, dense.Bias[s], 1e-7, 1e-7) {
			t.Fatalf("state %d: iterative bias %.10g, dense %.10g", s, h[s]*0.5, dense.Bias[s])
		}
	}
	// g = π·c_π.
	ch := chainOf(m, p)
	g, total := 0.0, 0.0
	for s, x := range dense.Stationary {
		g += x * ch.Cost(s)
		total += x
	}
	if !scalar.EqualWithinAbsOrRel(g, dense.Gain, exactTol, exactTol) || math.Abs(total-1) > exactTol {
		t.Errorf("π·c = %.12g (Σπ = %.12g), gain %.12g", g, total, dense.Gain)
	}
}

func TestBuilderErrors(t *testing.T) {
	cases := []struct {
		name  string
		build func(b *Builder)
	}{
		{"no states", func(b *Builder) {}},
		{"action before state", func(b *Builder) { b.AddAction(1, []int{0}, []float64{1}) }},
		{"state without action", func(b *Builder) { b.AddState() }},
		{"bad sum", func(b *Builder) { b.AddState(); b.AddAction(1, []int{0}, []float64{0.5}) }},
		{"negative prob", func(b *Builder) { b.AddState(); b.AddAction(1, []int{0, 0}, []float64{1.5, -0.5}) }},
		{"NaN cost", func(b *Builder) { b.AddState(); b.AddAction(math.NaN(), []int{0}, []float64{1}) }},
		{"missing successor", func(b *Builder) { b.AddState(); b.AddAction(1, []int{3}, []float64{1}) }},
		{"length mismatch", func(b *Builder) { b.AddState(); b.AddAction(1, []int{0}, []float64{0.5, 0.5}) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBuilder()
			tc.build(b)
			if _, err := b.Build(); !errors.Is(err, ErrInvalidMDP) {
				t.Fatalf("Build() error = %v, want ErrInvalidMDP", err)
			}
		})
	}
}

func TestBuilderMergesSuccessors(t *testing.T) {
	b := NewBuilder()
	b.AddState()
	b.AddAction(1, []int{1, 0, 1}, []float64{0.25, 0.5, 0.25})
	b.AddState()
	b.AddAction(2, []int{0}, []float64{1})
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	next, prob := m.Transitions(0)
	if len(next) != 2 || next[0] != 0 || next[1] != 1 || prob[0] != 0.5 || prob[1] != 0.5 {
		t.Fatalf("transitions %v %v", next, prob)
	}
	if m.StateOf(1) != 1 || m.StateOf(0) != 0 {
		t.Fatalf("StateOf: %d %d", m.StateOf(0), m.StateOf(1))
	}
	// Period-2 chain: RVI still converges thanks to the aperiodicity transform.
	sol, err := RelativeValueIteration(context.Background(), m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Stationary π = (2/3, 1/3): g = 2/3·1 + 1/3·2 = 4/3.
	if !scalar.EqualWithinAbsOrRel(sol.Gain, 4.0/3, agreeTol, agreeTol) {
		t.Fatalf("gain %.12g, want 4/3", sol.Gain)
	}
}

func TestMultichainDetected(t *testing.T) {
	b := NewBuilder()
	b.AddState()
	b.AddAction(1, []int{0}, []float64{1})
	b.AddState()
	b.AddAction(2, []int{1}, []float64{1})
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Evaluate(context.Background(), m, Policy{Action: []int{0, 1}}, Options{}); !errors.Is(err, ErrMultichain) {
		t.Fatalf("error %v, want ErrMultichain", err)
	}
}

func TestRVICancelled(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	m := randomMDP(t, rng, 20, 2)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := RelativeValueIteration(ctx, m, Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if _, err := SolveLP(ctx, m); !errors.Is(err, context.Canceled) {
		t.Fatalf("LP error %v, want context.Canceled", err)
	}
}

func TestRVIProgressAndLimits(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	m := randomMDP(t, rng, 50, 3)
	calls, last := 0, 0
	_, err := RelativeValueIteration(context.Background(), m, Options{Progress: func(done, total int) {
		calls++
		if done > total || done < last {
			t.Errorf("progress %d/%d after %d", done, total, last)
		}
		last = done
	}})
	if err != nil {
		t.Fatal(err)
	}
	if calls == 0 {
		t.Error("Progress never called")
	}
	if _, err := RelativeValueIteration(context.Background(), m, Options{MaxIterations: 2}); !errors.Is(err, ErrNotConverged) {
		t.Errorf("error %v, want ErrNotConverged", err)
	}
	if _, err := RelativeValueIteration(context.Background(), m, Options{Aperiodicity: 2}); !errors.Is(err, ErrInvalidMDP) {
		t.Errorf("error %v, want ErrInvalidMDP", err)
	}
}
