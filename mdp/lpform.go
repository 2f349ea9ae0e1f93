package mdp

import (
	"context"
	"fmt"
	"math"

	"github.com/optd/optd/solver/lp"
)

// SolveLP solves the MDP through the linear program of occupation measures
// (Puterman §8.8, the dual of the LP in g and h): with x(a) ≥ 0 the long-run
// fraction of steps at which action a is taken,
//
//	minimize    Σ_a c(a)·x(a)
//	subject to  Σ_{a∈A(s)} x(a) − Σ_{a'} P(s|a')·x(a') = 0   for every state s,
//	            Σ_a x(a) = 1,
//
// solved with COIN-OR Clp (package solver/lp). Its optimum is g*. The duals of
// the balance rows are a bias h (the dual LP is max g subject to
// g + h(s) − Σ P(s'|a)·h(s') ≤ c(a), which with lp's sign convention
// d = c − Aᵀy gives y_s = h(s) and y_norm = g); Solution.Bias is shifted so
// that h(0) = 0. These duals satisfy g + h(s) ≤ c(a) + Σ P(s'|a)·h(s') for
// every action, with equality (the optimality equation) at the states the
// optimal occupation measure visits; at the others the LP leaves h free
// within those inequalities. The normalization row is Σ x = S rather than 1
// (objective divided by S afterwards), which keeps the variables near 1 and
// the LP's absolute feasibility tolerance (1e-7 in Clp) from costing
// accuracy in g. The policy takes, in each state visited by the optimal
// occupation measure, its most frequent action, and elsewhere the action
// attaining min_a c(a) + Σ P(s'|a)·h(s'). The balance rows are linearly
// dependent (they sum to zero); Clp handles the redundancy.
func SolveLP(ctx context.Context, m *MDP) (*Solution, error) {
	S := m.NumStates()
	p := &lp.Problem{Sense: lp.Minimize}
	for range S {
		p.AddRow(0, 0)
	}
	norm := p.AddRow(float64(S), float64(S))
	var rows []int
	var vals []float64
	for s := range S {
		lo, hi := m.ActionRange(s)
		for a := lo; a < hi; a++ {
			rows, vals = rows[:0], vals[:0]
			self := 1.0
			next, prob := m.Transitions(a)
			for k, n := range next {
				if int(n) == s {
					self -= prob[k]
					continue
				}
				rows = append(rows, int(n))
				vals = append(vals, -prob[k])
			}
			if self != 0 {
				rows = append(rows, s)
				vals = append(vals, self)
			}
			rows = append(rows, norm)
			vals = append(vals, 1)
			p.AddCol(m.Cost(a), 0, math.Inf(1), rows, vals)
		}
	}
	sol, err := lp.Solve(ctx, p, lp.Options{})
	if err != nil {
		return nil, fmt.Errorf("mdp: occupation-measure LP: %w", err)
	}
	h := make([]float64, S)
	for s := range S {
		h[s] = sol.RowDuals[s] - sol.RowDuals[0]
	}
	pol := greedyPolicy(m, h)
	for s := range S {
		lo, hi := m.ActionRange(s)
		best, arg := 0.0, -1
		for a := lo; a < hi; a++ {
			if x := sol.Primal[a]; x > best {
				best, arg = x, a
			}
		}
		if arg >= 0 && best > 1e-12 {
			pol[s] = arg
		}
	}
	return &Solution{Gain: sol.Objective / float64(S), Bias: h, Policy: pol, Iterations: sol.Iterations}, nil
}
