package solver

import (
	"context"
	"math"
	"slices"
	"time"

	"github.com/optd/optd/solver/lp"
)

// surrogateCells bounds the cells of the surrogate resource's grid (newGrid
// coarsens its unit to fit), so that its one-dimensional table costs at
// most (types+1)·surrogateCells cells, a small fraction of a single node's
// full table (single-node-2 of the suite: 106 524 cells per layer).
const surrogateCells = 1 << 13

// surrogateScale is the smallest positive surrogate multiplier: the
// others keep their ratio to it to about 1/surrogateScale.
const surrogateScale = 1024

// withSurrogate returns the single-node model m with one more resource,
// the surrogate constraint of the node's capacities c,
//
//	Σ_i a_i·(Σ_p u_p·d_ip) ≤ Σ_p u_p·c_p,
//
// which every feasible pattern a satisfies (it is a nonnegative sum of the
// capacity rows), so the model has the same solutions and values (the
// surrogate resource has weight 0), and the capacities with the surrogate's
// appended. Its one-resource table bounds the knapsack far better than any
// resource's alone where the resources bind together: the multipliers u
// are the LP relaxation's capacity duals, at which the surrogate
// knapsack's LP bound equals the LP relaxation's (Glover, "Surrogate
// constraints", Operations Research 16(4), 1968: the surrogate dual is at
// least as strong as the Lagrangian one), rounded to integers, the
// smallest positive one scaled to surrogateScale (any nonnegative integers
// give a valid constraint; the rounding only moves the bound); the
// surrogate's grid (oneNodeTables) then has at most surrogateCells cells.
// ok is false where no capacity binds in the LP (its duals are 0), the LP
// fails, or the scaled products could overflow.
func withSurrogate(ctx context.Context, m *model, c []int64) (sm *model, caps []int64, ok bool) {
	if m.k < 2 {
		return nil, nil, false // one resource is its own surrogate
	}
	p := &lp.Problem{Sense: lp.Maximize}
	for _, cp := range c {
		p.AddRow(math.Inf(-1), float64(cp))
	}
	for i, d := range m.dem {
		var rows []int
		var vals []float64
		for q, dq := range d {
			if dq > 0 {
				rows = append(rows, q)
				vals = append(vals, float64(dq))
			}
		}
		p.AddCol(m.val[i], 0, float64(m.supply[i]), rows, vals)
	}
	sol, err := solveLP(ctx, p)
	if err != nil {
		return nil, nil, false
	}
	// u ∝ y, the smallest positive multiplier scaled to surrogateScale
	// (the ratios to about 0.1%); the surrogate's grid then coarsens its
	// unit to about surrogateCells cells (newGrid: demands rounded down,
	// still a relaxation)
	y := make([]float64, m.k)
	ymin := math.Inf(1)
	for q := range y {
		if y[q] = math.Abs(sol.RowDuals[q]); y[q] > 1e-9 {
			ymin = min(ymin, y[q])
		}
	}
	if math.IsInf(ymin, 1) {
		return nil, nil, false
	}
	u := make([]int64, m.k)
	var capS int64
	for q := range u {
		f := math.Round(y[q] / ymin * surrogateScale)
		// u_p·c_p ≤ 2^62/k keeps every sum of products in int64 (and a
		// NaN from the LP fails the test)
		if !(f >= 0 && f*float64(c[q]) <= math.Ldexp(1, 62)/float64(m.k)) {
			return nil, nil, false
		}
		u[q] = int64(f)
		capS += u[q] * c[q]
	}
	s := *m
	s.k = m.k + 1
	s.w = append(slices.Clone(m.w), 0)
	s.dem = make([][]int64, len(m.dem))
	for i, d := range m.dem {
		var di int64
		for q, dq := range d {
			di += u[q] * dq
		}
		s.dem[i] = append(slices.Clone(d), di)
	}
	return &s, append(slices.Clone(c), capS), true
}

// quickOneNode searches the counts of a single node (caps: its one
// capacity vector) with cheap bounds in two stages: each resource's table
// alone for oneNodeFirstNodes search nodes, then with the surrogate
// constraint (withSurrogate) from the first stage's incumbent, up to
// oneNodeQuickNodes (without a surrogate, one resource or an LP that
// fails, the same tables: one stage of that many nodes). It returns the
// best pattern found, the search nodes explored, and whether a stage
// completed (its pattern is then optimal).
func quickOneNode(ctx context.Context, m *model, caps [][]int64, deadline time.Time) (x [][]int, explored int64, proven bool) {
	limit := int64(oneNodeQuickNodes)
	if m.k >= 2 {
		limit = oneNodeFirstNodes
	}
	one := newSearch(ctx, m, caps, []bool{false}, m.supply, []*lagBound{{tab: oneNodeTables(m, caps, false)}, {pi: m.val}})
	one.deadline, one.nodeLimit = deadline, limit
	one.run()
	if one.stopped == "" {
		return one.best, one.explored, true
	}
	if m.k < 2 || one.stopped != StopNodeLimit {
		return one.best, one.explored, false // the time limit or ctx: no second stage
	}
	sm, c, ok := withSurrogate(ctx, m, caps[0])
	bounds := one.bounds
	if ok {
		bounds = []*lagBound{{tab: oneNodeTables(sm, [][]int64{c}, true)}, {pi: sm.val}}
	} else {
		sm, c = m, caps[0]
	}
	two := newSearch(ctx, sm, [][]int64{c}, []bool{false}, sm.supply, bounds)
	two.setIncumbent(one.best, one.bestVal)
	two.deadline, two.nodeLimit = deadline, oneNodeQuickNodes
	two.run()
	return two.best, one.explored + two.explored, two.stopped == ""
}
