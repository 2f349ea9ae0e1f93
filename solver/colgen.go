package solver

import (
	"context"
	"errors"
	"math"
	"slices"
	"strconv"

	"github.com/optd/optd/solver/lp"
)

// Column generation limits.
const (
	// cgMaxIterations caps the master LP solves of one column generation.
	cgMaxIterations = 200
	// cgPricingNodes caps the branch-and-bound nodes of one pricing problem;
	// beyond it the DP table value is used as the (valid) pricing bound.
	cgPricingNodes = 20000
	// cgReducedCostTol is the relative reduced cost above which a column
	// enters the master.
	cgReducedCostTol = 1e-9
)

var errNoLPBound = errors.New("solver: no LP bound")

// nodeClass is a set of identical nodes (capacity C, m nodes).
type nodeClass struct {
	cap   []int64
	count int
}

func classesOf(sorted [][]int64) []nodeClass {
	var cl []nodeClass
	for j, c := range sorted {
		if j > 0 && slices.Equal(c, sorted[j-1]) {
			cl[len(cl)-1].count++
			continue
		}
		cl = append(cl, nodeClass{cap: c, count: 1})
	}
	return cl
}

// lpBound solves the LP relaxation of the pattern (Dantzig-Wolfe)
// formulation by column generation:
//
//	max Σ_c Σ_a v(a)·y_ca
//	s.t. Σ_a y_ca ≤ m_c                  for each node class c   (dual μ_c)
//	     Σ_c Σ_a a_i·y_ca ≤ s_i          for each task type i    (dual π_i)
//	     y ≥ 0,
//
// where a ranges over the feasible single-node patterns of class c (integer
// a ≥ 0, Σ_i a_i·R[i,·] ≤ C_c). Pricing is the single-node knapsack
// max_a Σ_i (v_i − π_i)·a_i − μ_c, solved by the branch and bound with the
// DP bound. Whatever the convergence, every π ≥ 0 gives the valid bound
//
//	L(π) = Σ_i π_i s_i + Σ_c m_c · max_a Σ_i (v_i − π_i)·a_i,
//
// which equals the LP optimum at the final duals; the π with the smallest
// L(π) seen is returned as a lagBound. The LP master solution, rounded down
// and completed by per-node fills, is returned as an incumbent candidate.
func lpBound(ctx context.Context, m *model, sorted [][]int64, incumbent [][]int, base *tables) (*lagBound, lpStats, error) {
	var st lpStats
	classes := classesOf(sorted)
	n := len(m.dem)
	pool := newColumnPool()
	classOfNode := classOfNodes(sorted)
	for j, a := range incumbent {
		pool.add(classOfNode[j], a)
	}
	bestL := math.Inf(1)
	var bestPi []float64
	var bestTab *tables
	var bestTops map[string]float64
	var y []float64
	pi := make([]float64, n)
	u := make([]float64, n)
	counts := countBounds(m.dem, m.supply, sorted)
	for iter := 0; iter < cgMaxIterations; iter++ {
		if ctx.Err() != nil {
			break
		}
		// pricing at the current π (π = 0 on the first pass)
		for i := range u {
			u[i] = m.val[i] - pi[i]
		}
		tab := tablesOn(pricingGrids(base), m.dem, u, counts)
		addTableWork(ctx, tab)
		L := 0.0
		for i := range pi {
			L += pi[i] * float64(m.supply[i])
		}
		added := false
		tops := make(map[string]float64, len(classes))
		for c, cl := range classes {
			a, k := pricePattern(ctx, m, u, tab, cl.cap, m.supply, cgPricingNodes)
			L += float64(cl.count) * k
			tops[demandKey(cl.cap)] = k
			if a != nil && m.patternValue(a)-dot(pi, a) > 0 {
				added = pool.add(c, a) || added
			}
		}
		if L < bestL {
			bestL, bestPi, bestTab, bestTops = L, slices.Clone(pi), tab, tops
		}
		if iter > 0 && !added {
			break
		}
		// master LP
		sol, err := solveMaster(ctx, m, m.supply, classCounts(classes), pool)
		st.LPSolves++
		if err != nil {
			break
		}
		y = sol.Primal
		for i := range pi {
			pi[i] = math.Max(0, sol.RowDuals[i])
		}
		// stop early when the LP value already meets the best Lagrangian
		// bound (the LP is then optimal)
		if sol.Objective >= bestL-cgReducedCostTol*math.Max(1, bestL) {
			break
		}
	}
	if bestPi == nil {
		return nil, st, errNoLPBound
	}
	if y != nil {
		xr := make([][]int, len(sorted))
		for j := range xr {
			xr[j] = make([]int, n)
		}
		supply := slices.Clone(m.supply)
		next := make([]int, len(classes)) // next free node of each class
		start := make([]int, len(classes))
		for j := len(sorted) - 1; j >= 0; j-- {
			start[classOfNode[j]] = j
		}
		order := make([]int, len(y)) // columns added after the last LP solve have no value
		for k := range order {
			order[k] = k
		}
		slices.SortStableFunc(order, func(a, b int) int { return -cmpFloat(y[a], y[b]) })
		floorCopies(pool.cols, y, order, func(col patternColumn) bool {
			return next[col.class] < classes[col.class].count && fitsSupply(col.a, supply)
		}, func(col patternColumn) {
			copy(xr[start[col.class]+next[col.class]], col.a)
			for i, ai := range col.a {
				supply[i] -= ai
			}
			next[col.class]++
		})
		// complete the nodes left empty with per-node fills
		var restIdx []int
		var restCaps [][]int64
		for j := range sorted {
			if classOfNode[j] >= 0 && j-start[classOfNode[j]] >= next[classOfNode[j]] {
				restIdx = append(restIdx, j)
				restCaps = append(restCaps, sorted[j])
			}
		}
		deadline, _ := ctx.Deadline()
		fill, _, _ := fillEachNode(ctx, m, restCaps, supply, deadline, base)
		for r, j := range restIdx {
			xr[j] = fill[r]
		}
		st.rounded = xr
	}
	st.columns = pool
	if all := cheapGrids(viewGrids(capMax(sorted, m.k), m.dem)); len(bestTab.views) < len(all) {
		// the search's tables: every view (but the coarsened full grid
		// of four resources or more, see cheapGrids), at the best π
		for i := range u {
			u[i] = m.val[i] - bestPi[i]
		}
		bestTab = tablesOn(all, m.dem, u, counts)
		addTableWork(ctx, bestTab)
	}
	return &lagBound{pi: bestPi, tab: bestTab, tops: bestTops}, st, nil
}

// floorCopies calls place(col) ⌊y_k⌋ times for each column k of cols (in
// order; every column in turn when order is nil), as long as fits(col)
// holds: the integral part of a master solution y, pattern by pattern (the
// rounding of the root LP, a dive's fixings, the integer master's
// solutions).
func floorCopies(cols []patternColumn, y []float64, order []int, fits func(patternColumn) bool, place func(patternColumn)) {
	each := func(k int) {
		for r := math.Floor(y[k] + diveIntTol); r >= 1 && fits(cols[k]); r-- {
			place(cols[k])
		}
	}
	if order == nil {
		for k := range y {
			each(k)
		}
		return
	}
	for _, k := range order {
		each(k)
	}
}

// pricingGrids are the views of the pricing tables: those of base without
// the coarsened full grid when base has other views (many resources, wide
// capacities), whose table costs most to build and, coarsened, bounds the
// pricing knapsack little better than the exact grids of single resources
// and pairs. The search gets the full set once, at the best π. The full
// grid is base's first view over more resources than any other; where
// cheapGrids has already left it out (four resources or more) the first
// view is a single resource's or a pair's, which stays: it may be the only
// view of a wide resource that no exact pair covers.
func pricingGrids(base *tables) []*grid {
	gs := base.grids()
	if len(gs) == 1 || gs[0].exact {
		return gs
	}
	for _, g := range gs[1:] {
		if g.k >= gs[0].k {
			return gs
		}
	}
	return gs[1:]
}

// patternColumn is a column of the pattern master: pattern a on a node of
// class class.
type patternColumn struct {
	class int
	a     []int
}

// columnPool holds the distinct non-empty columns of a column generation.
type columnPool struct {
	cols []patternColumn
	seen map[string]bool
}

func newColumnPool() *columnPool { return &columnPool{seen: map[string]bool{}} }

// add adds pattern a of class c unless it is empty or already there, and
// reports whether it did.
func (p *columnPool) add(c int, a []int) bool {
	key := columnKey(c, a)
	if p.seen[key] || slices.Max(a) == 0 {
		return false
	}
	p.seen[key] = true
	p.cols = append(p.cols, patternColumn{c, slices.Clone(a)})
	return true
}

// columnKey is the key of pattern a of class c in columnPool.seen.
func columnKey(c int, a []int) string { return strconv.Itoa(c) + ":" + patternKey(a) }

// classOfNodes returns the class (classesOf) of each sorted node.
func classOfNodes(sorted [][]int64) []int {
	classOfNode := make([]int, len(sorted))
	for j, c := 0, -1; j < len(sorted); j++ {
		if j == 0 || !slices.Equal(sorted[j], sorted[j-1]) {
			c++
		}
		classOfNode[j] = c
	}
	return classOfNode
}

func classCounts(classes []nodeClass) []int {
	n := make([]int, len(classes))
	for c, cl := range classes {
		n[c] = cl.count
	}
	return n
}

// solveMaster solves the LP relaxation of the pattern master over the
// columns of pool with supplies supply (rows 0..n−1, duals π) and class
// counts count (rows n.., duals μ).
func solveMaster(ctx context.Context, m *model, supply, count []int, pool *columnPool) (*lp.Solution, error) {
	p := masterRows(supply, count)
	for _, col := range pool.cols {
		rows, vals := masterEntries(len(supply), col)
		p.AddCol(m.patternValue(col.a), 0, math.Inf(1), rows, vals)
	}
	return solveLP(ctx, p)
}

// masterRows returns the pattern master without columns: the supply rows
// (0..n−1) and the class rows (n..).
func masterRows(supply, count []int) *lp.Problem {
	p := &lp.Problem{Sense: lp.Maximize}
	for _, s := range supply {
		p.AddRow(math.Inf(-1), float64(s))
	}
	for _, c := range count {
		p.AddRow(math.Inf(-1), float64(c))
	}
	return p
}

// masterEntries returns the rows and coefficients of column col in the
// master of masterRows over n task types: its class row and the supply
// rows of the types it holds.
func masterEntries(n int, col patternColumn) ([]int, []float64) {
	rows := []int{n + col.class}
	vals := []float64{1}
	for i, ai := range col.a {
		if ai > 0 {
			rows = append(rows, i)
			vals = append(vals, float64(ai))
		}
	}
	return rows, vals
}

// pricePattern solves max Σ_i u_i·a_i over the feasible patterns of a node
// with capacity c (a_i ≤ supply_i) by branch and bound with the DP bound tab. It
// returns the best pattern found and a valid upper bound on the maximum
// (the maximum itself when the search completes within nodeLimit
// branch-and-bound nodes).
func pricePattern(ctx context.Context, m *model, u []float64, tab *tables, c []int64, supply []int, nodeLimit int64) ([]int, float64) {
	pm := &model{k: m.k, w: m.w, dem: m.dem, val: u, supply: slices.Clone(supply)}
	for i := range u {
		if u[i] <= 0 {
			pm.supply[i] = 0
		}
	}
	one := [][]int64{c}
	s := newSearch(ctx, pm, one, []bool{false}, pm.supply, []*lagBound{{tab: tab}})
	s.nodeLimit = nodeLimit
	open := s.run()
	if s.stopped != "" {
		return s.best[0], math.Max(s.bestVal, math.Min(open, s.rootBound()))
	}
	return s.best[0], s.bestVal
}

func patternKey(a []int) string {
	b := make([]byte, 0, 4*len(a))
	for _, x := range a {
		b = append(b, byte(x), byte(x>>8), byte(x>>16), byte(x>>24))
	}
	return string(b)
}

func dot(pi []float64, a []int) float64 {
	s := 0.0
	for i, x := range a {
		s += pi[i] * float64(x)
	}
	return s
}

func fitsSupply(a, supply []int) bool {
	for i, x := range a {
		if x > supply[i] {
			return false
		}
	}
	return true
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
