package solver

import (
	"cmp"
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// Solve runs one method on a validated copy of in. A time limit or a
// cancelled context is not an error: the result then holds the best
// assignment found, its proven upper bound, Optimal = false and
// Stats.Stopped says why. Errors are validation errors (ErrInvalidInstance)
// and ErrUnknownMethod.
func Solve(ctx context.Context, in *Instance, method Method, opts Options) (*Result, error) {
	if _, err := ParseMethod(string(method)); err != nil {
		return nil, err
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	start := time.Now()
	if opts.TimeLimit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.TimeLimit)
		defer cancel()
	}
	m := newModel(in)
	caps := nodeCaps(in)
	var (
		x     [][]int
		ub    float64
		stats Stats
	)
	switch method {
	case MethodExact:
		x, ub, stats = exactAssign(ctx, m, caps, opts)
	case MethodPerNode:
		base := baseTables(m, caps, m.supply)
		deadline, _ := ctx.Deadline()
		x, stats.NodesExplored, stats.Stopped = perNodeAssign(ctx, m, caps, m.supply, deadline, base)
		ub, stats = heuristicBound(ctx, m, caps, x, base, opts, stats)
	case MethodFFDDP:
		x = ffdAssign(m, caps, m.supply)
		ub, stats = heuristicBound(ctx, m, caps, x, nil, opts, stats)
	}
	res := newResult(in, m, method, x, ub)
	res.Stats = stats
	res.Optimal = method == MethodExact && stats.Stopped == "" && !m.canImprove(res.UpperBound, res.Objective)
	if res.Optimal {
		res.UpperBound, res.Gap = res.Objective, 0
	}
	res.ElapsedMS = float64(time.Since(start).Microseconds()) / 1000
	return res, nil
}

// Exact, PerNode and FFDDP are Solve with a fixed method.
func Exact(ctx context.Context, in *Instance, opts Options) (*Result, error) {
	return Solve(ctx, in, MethodExact, opts)
}

// PerNode is Solve with MethodPerNode.
func PerNode(ctx context.Context, in *Instance, opts Options) (*Result, error) {
	return Solve(ctx, in, MethodPerNode, opts)
}

// FFDDP is Solve with MethodFFDDP.
func FFDDP(ctx context.Context, in *Instance, opts Options) (*Result, error) {
	return Solve(ctx, in, MethodFFDDP, opts)
}

// heuristicBound computes the root upper bound reported with a heuristic
// solution x (nodes in input order).
func heuristicBound(ctx context.Context, m *model, caps [][]int64, x [][]int, base *tables, opts Options, stats Stats) (float64, Stats) {
	order, sorted, _ := sortNodes(m, caps)
	if base == nil {
		base = baseTables(m, caps, m.supply)
	}
	bounds, lpStats := rootBounds(ctx, m, sorted, permuteRows(x, order), base, opts)
	stats.LPSolves, stats.LPBound = lpStats.LPSolves, lpStats.LPBound
	ub := math.Inf(1)
	for _, b := range bounds {
		ub = math.Min(ub, lagValue(b, sorted, m.supply))
	}
	return m.floorBound(ub), stats
}

// sortNodes orders nodes for the exact search: larger capacity first
// (by Σ_p w_p·C[j,p], then lexicographically), identical capacities
// adjacent. same[j] reports node j identical to node j−1.
func sortNodes(m *model, caps [][]int64) (order []int, sorted [][]int64, same []bool) {
	order = make([]int, len(caps))
	for j := range order {
		order[j] = j
	}
	weighted := func(c []int64) float64 {
		v := 0.0
		for p, q := range c {
			v += m.w[p] * float64(q)
		}
		return v
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if c := cmp.Compare(weighted(caps[b]), weighted(caps[a])); c != 0 {
			return c
		}
		return slices.Compare(caps[b], caps[a])
	})
	sorted = make([][]int64, len(caps))
	same = make([]bool, len(caps))
	for j, o := range order {
		sorted[j] = caps[o]
		same[j] = j > 0 && slices.Equal(sorted[j], sorted[j-1])
	}
	return order, sorted, same
}

// permuteRows returns rows[order[j]] for each j.
func permuteRows(rows [][]int, order []int) [][]int {
	out := make([][]int, len(order))
	for j, o := range order {
		out[j] = rows[o]
	}
	return out
}

// exactAssign solves the multiple multi-dimensional bounded knapsack to
// optimality (or until ctx ends) and returns x in input node order.
//
// 1. Incumbent: the best of FFD-DP, per-node in input order and per-node
// in search order (largest nodes first), plus the rounding of the LP,
// improved by large neighbourhood search (lns) unless the bounds already
// prove it optimal.
// 2. Bounds: Lagrangian bounds (see lagBound) for π = 0 (sum of single-node
// knapsack DPs), π = v (total value of the supply) and, unless
// Options.NoLP, π = the duals of the LP relaxation of the pattern
// formulation, solved by column generation with solver/lp.
// 3. Depth-first branch and bound (search), which stops as soon as no open
// subtree can beat the incumbent by one value unit.
func exactAssign(ctx context.Context, m *model, caps [][]int64, opts Options) ([][]int, float64, Stats) {
	var stats Stats
	deadline, _ := ctx.Deadline()
	order, sorted, same := sortNodes(m, caps)
	base := baseTables(m, sorted, m.supply)

	bestX := ffdAssign(m, caps, m.supply)
	bestVal := assignmentValue(m, bestX)
	tryIncumbent := func(x [][]int) {
		if v := assignmentValue(m, x); v > bestVal {
			bestX, bestVal = x, v
		}
	}
	xp, ex, _ := perNodeAssign(ctx, m, caps, m.supply, deadline, base)
	stats.NodesExplored += ex
	tryIncumbent(xp)
	xs, ex, _ := perNodeAssign(ctx, m, sorted, m.supply, deadline, base)
	stats.NodesExplored += ex
	tryIncumbent(unpermuteRows(xs, order))

	bounds, lpStats := rootBounds(ctx, m, sorted, permuteRows(bestX, order), base, opts)
	stats.LPSolves, stats.LPBound = lpStats.LPSolves, lpStats.LPBound
	if lpStats.rounded != nil {
		tryIncumbent(unpermuteRows(lpStats.rounded, order))
	}

	s := newSearch(ctx, m, sorted, same, m.supply, bounds)
	s.deadline = deadline
	s.progress = opts.Progress
	s.setIncumbent(permuteRows(bestX, order), bestVal)
	result := func() [][]int { return unpermuteRows(s.best, order) }
	root := m.floorBound(s.rootBound())
	if !m.canImprove(root, s.bestVal) {
		return result(), s.bestVal, stats
	}
	root = improveAndProve(ctx, m, sorted, bounds, s, root, opts.Seed, deadline, &stats)
	if !m.canImprove(root, s.bestVal) {
		return result(), s.bestVal, stats
	}
	open := s.run()
	stats.NodesExplored += s.explored
	stats.Stopped = s.stopped
	ub := s.bestVal
	if s.stopped != "" {
		ub = math.Min(root, math.Max(s.bestVal, m.floorBound(open)))
	}
	return result(), ub, stats
}

// improveAndProve alternates large neighbourhood search on the incumbent
// of s with the reduced-cost DP (costDPBound), which lowers the bound one
// value unit at a time while it proves that nothing reaches it. Each LNS
// round uses larger neighbourhoods than the one before and runs until the
// value reaches the bound or stalls; a round follows the first search and
// every step of the DP that lowered the bound (up to lnsRounds), so the
// cheap DP steps (small budgets) come first and the expensive ones only
// when the incumbent still falls short. It returns the bound; the
// incumbent of s is updated in place.
func improveAndProve(ctx context.Context, m *model, sorted [][]int64, bounds []*lagBound, s *search, root float64, seed uint64, deadline time.Time, stats *Stats) float64 {
	var lb *lagBound // the LP duals' bound, the one the DP needs
	if b := bounds[len(bounds)-1]; b.pi != nil && b.tab != nil {
		lb = b
	}
	round := 0
	improve := func() {
		if round == lnsRounds || !m.canImprove(root, s.bestVal) {
			return
		}
		l := newLNS(m, sorted, m.supply, bounds, s.best, rand.New(rand.NewPCG(seed, lnsStream+uint64(round))))
		l.size = lnsMaxSize + 2*round
		round++
		l.run(ctx, lnsDeadline(deadline), root)
		stats.NodesExplored += l.explored
		s.setIncumbent(l.x, l.val)
	}
	improve()
	for lb != nil && m.canImprove(root, s.bestVal) && ctx.Err() == nil {
		// prove z ≤ target, one unit below the bound
		target := s.bestVal
		if m.unit > 0 {
			target = math.Max(s.bestVal, root-m.unit)
		}
		ub, ok := costDPWithin(ctx, m, sorted, lb, target, deadline)
		if !ok {
			break
		}
		if ub = m.floorBound(ub); m.canImprove(ub, target) {
			root = math.Min(root, ub) // a relaxed solution reaches ub
			break
		}
		root = math.Min(root, target)
		improve()
	}
	for round < lnsRounds && m.canImprove(root, s.bestVal) && ctx.Err() == nil {
		improve()
	}
	return root
}

// lnsDeadline gives the large neighbourhood search at most half of the
// time left before deadline, so that the branch and bound, which alone
// improves the bound, keeps the other half.
func lnsDeadline(deadline time.Time) time.Time {
	if deadline.IsZero() {
		return deadline
	}
	return time.Now().Add(time.Until(deadline) / 2)
}

// costDPWithin runs costDPBound with at most a quarter of the time left
// before deadline (if any), so that a DP which cannot prove its target
// leaves time to the search.
func costDPWithin(ctx context.Context, m *model, sorted [][]int64, lb *lagBound, target float64, deadline time.Time) (float64, bool) {
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, time.Now().Add(time.Until(deadline)/4))
		defer cancel()
	}
	return costDPBound(ctx, m, sorted, lb, target)
}

// lagValue returns L(π) = Σ_t π_t s_t + Σ_j max-pattern bound of node j.
func lagValue(b *lagBound, nodes [][]int64, supply []int) float64 {
	v := 0.0
	for t, sup := range supply {
		v += b.piOf(t) * float64(sup)
	}
	for _, c := range nodes {
		v += b.term(0, c)
	}
	return v
}

// unpermuteRows is the inverse of permuteRows.
func unpermuteRows(rows [][]int, order []int) [][]int {
	out := make([][]int, len(order))
	for j, o := range order {
		out[o] = rows[j]
	}
	return out
}

// lpStats reports what the LP bound computation did.
type lpStats struct {
	LPSolves int
	LPBound  float64
	rounded  [][]int // an assignment from rounding the LP (search node order), or nil
}

// rootBounds returns the Lagrangian bounds for the search over sorted nodes:
// π = 0, π = v and, unless opts.NoLP or the LP fails, the LP duals.
// incumbent (search node order) seeds the LP's columns.
func rootBounds(ctx context.Context, m *model, sorted [][]int64, incumbent [][]int, base *tables, opts Options) ([]*lagBound, lpStats) {
	bounds := []*lagBound{{tab: base}, {pi: m.val}}
	var st lpStats
	if !opts.NoLP {
		if b, s, err := lpBound(ctx, m, sorted, incumbent, base); err == nil {
			bounds = append(bounds, b)
			st = s
		}
	}
	return bounds, st
}
