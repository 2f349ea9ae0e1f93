package solver

import (
	"container/heap"
	"context"
	"math"
	"slices"

	"github.com/optd/optd/solver/lp"
)

// Branch and price on the pattern formulation (colgen.go).
//
// The search over counts (bb.go) prunes with bounds that are at best the
// LP bound of the pattern master at the root; where the optimum sits a unit
// or a few below it (yarn, hetero-3r), it cannot prove the incumbent. Here
// the master's LP is re-solved, by column generation, under branching
// constraints on the aggregate counts
//
//	X_ci = Σ_{patterns a of class c} a_i·y_ca     (type i on the nodes of class c),
//
// X_ci ≤ ⌊X̄_ci⌋ in one child and X_ci ≥ ⌈X̄_ci⌉ in the other, X̄ the LP's
// fractional value (Vanderbeck 2000 calls these branching on the original
// variables, aggregated over identical subproblems), and first on the
// totals X_i = Σ_c X_ci of the types: on the suite the LP has one or two
// fractional totals against 30-60 fractional X_ci, whose branches leave the
// LP value unchanged for dozens of levels (dual degeneracy), while a
// branch on a total moves it (it proved 11 of the 14 instances that the
// branching on X_ci alone left unproven at 10 s). Both are rows of the
// master over the existing columns; their duals d only shift the price of
// type i in class c's pricing, so the pricing stays the single-node
// knapsack: u_ci = v_i − π_i − Σ_{branches on (c, i) or on X_i} d_b. For any π ≥ 0,
// d ≥ 0 on the ≤ rows and d ≤ 0 on the ≥ rows, every assignment x of the
// subtree satisfies
//
//	z(x) ≤ L = Σ_i π_i s_i + Σ_b d_b·rhs_b + Σ_c m_c · max_a u_c·a,
//
// (the Lagrangian bound of the subtree: the maxima over the patterns of
// class c that the branches allow), so a column generation stopped at any
// iteration still bounds its subtree soundly, and the bound of the whole
// search is the largest L over the open subtrees (best first).
//
// A ≤ branch also caps a_i ≤ rhs in the pricing of class c (one node holds
// at most the class's total); on a class of one node, a ≥ branch forces
// a_i ≥ rhs in its pricing (the node holds the class's total). A subtree
// whose LP has integral X is solved when every class of several nodes can
// pack its X exactly on its nodes (a class of one node always can: X_c is
// a convex combination of its feasible patterns and of 0, an integral
// point of the convex hull of the knapsack's integer points is one of
// them), found by a price-and-dive on the class's sub-problem with the
// supply X_c, or the integer master over its columns, or the count search
// restricted to X_c (packClass); where all three fail, the subtree stays
// open with its bound (the proof then stops short, and the count search
// takes the rest of the time).

// Limits of the branch and price.
const (
	// bpPricingNodes caps the branch-and-bound nodes of one pricing
	// problem (beyond: its DP bound, still valid, enters L).
	bpPricingNodes = 20000
	// bpPackNodes caps the count search that packs an integral X_c on the
	// nodes of class c (packClass's last method).
	bpPackNodes = 200000
	// bpMaxOpen is the number of open subtrees at which the branch and
	// price gives up: measured on the suite, where it proves (identical)
	// it closes the tree within a few dozen subtrees; where the LP is
	// degenerate (yarn, hetero-3r: 30-60 fractional aggregates whose
	// branches leave the LP value unchanged for dozens of levels) the open
	// subtrees only grow, and the time is better spent on the other
	// methods.
	bpMaxOpen = 32
	// bpMaxNodes caps the subtrees evaluated for the same reason: on
	// live-cluster-0 the LP value stays 228.83 (the optimum 228) through
	// more than 14 levels while the infeasible branches keep fewer than
	// bpMaxOpen open (1776 LP solves, 0.7 s of CPU, for nothing); where it
	// proves, it took 15 (identical-9) and 31 (live-cluster-3) subtrees.
	bpMaxNodes = 32
	// bpProbe is the number of subtrees after which the branch and price
	// gives up if it has closed none of them (every one branched again):
	// so it failed on 35 of the 37 suite instances that reached it with a
	// 3 s limit, while the two it proved (identical-9, live-cluster-3)
	// closed subtrees from the first levels on.
	bpProbe = 8
	// bpFalling: a probe stopped by the limits above is still not
	// hopeless where its best open bound fell within its last bpFalling
	// subtrees: there branching alone closes the gap, however few
	// subtrees it prunes on the way (hetero-3r-5002: none closed in the
	// first 12 subtrees, while the bound fell every two or three, 3000.3
	// → 2999.82 in 69, which proves 2999.7 in 0.5 s where the limits left
	// it unproven at 10 s and HiGHS needs 8-19 s). The window is short
	// because a degenerate tree's bound often falls once in the first
	// levels and then stays: yarn-7's from 8396.5 to 8396 at the fourth
	// subtree, flat through the next thousand (a window of 8 kept it, and
	// its proof took 4.6 s instead of 1.5).
	bpFalling = 4
	// bpIntTol is how close to an integer an aggregate counts as one.
	bpIntTol = 1e-6
)

// aggBranch is one branching constraint: X_ci ≤ rhs (upper) or ≥ rhs;
// with class allClasses, on the total Σ_c X_ci.
type aggBranch struct {
	class, typ int
	upper      bool
	rhs        int
}

// allClasses is the class of a branch on a type's total.
const allClasses = -1

// covers reports whether the branch constrains class c's patterns.
func (b aggBranch) covers(c int) bool { return b.class == allClasses || b.class == c }

// bpNode is an open subtree: its branches and its proven bound.
type bpNode struct {
	branches []aggBranch
	bound    float64
}

func (nd *bpNode) upper() float64 { return nd.bound }

// bpQueue is a max-heap of open subtrees by bound (best first).
type bpQueue = boundQueue[*bpNode]

// boundQueue is a max-heap (container/heap) of open subtrees by their
// upper bound: best first, in the branch and price and in the integer
// master (pnb.go).
type boundQueue[T interface{ upper() float64 }] []T

func (q boundQueue[T]) Len() int           { return len(q) }
func (q boundQueue[T]) Less(a, b int) bool { return q[a].upper() > q[b].upper() }
func (q boundQueue[T]) Swap(a, b int)      { q[a], q[b] = q[b], q[a] }
func (q *boundQueue[T]) Push(x any)        { *q = append(*q, x.(T)) }
func (q *boundQueue[T]) Pop() any {
	old := *q
	n := old[len(old)-1]
	*q = old[:len(old)-1]
	return n
}

// branchPrice is one run of the branch and price.
type branchPrice struct {
	ctx     context.Context
	m       *model
	sorted  [][]int64
	classes []nodeClass
	classOf []int   // class of each sorted node
	byClass [][]int // sorted node indices of each class
	base    *tables
	grids   []*grid
	counts  []int
	pool    *columnPool
	s       *search // holds the incumbent (sorted node order)
	penalty float64 // objective of an artificial column of a ≥ row

	nodes   int64 // subtrees evaluated
	lpSolve int
	stuck   float64 // the largest bound of a subtree left open (packing failed, or closed by the gap)
	queue   *bpQueue
	// top is the lowest best open bound so far, reached when nodes was
	// topAt (falling)
	top   float64
	topAt int64
}

// newBranchPrice prepares the branch and price from the root LP's columns
// (pool) and the incumbent of s, with one open subtree, the root, of
// bound root.
func newBranchPrice(m *model, sorted [][]int64, base *tables, pool *columnPool, s *search, root float64) *branchPrice {
	bp := &branchPrice{m: m, sorted: sorted, classes: classesOf(sorted), base: base,
		grids: pricingGrids(base), counts: countBounds(m.dem, m.supply, sorted), pool: pool, s: s,
		stuck: math.Inf(-1), top: math.Inf(1), queue: &bpQueue{{bound: root}}}
	bp.classOf = classOfNodes(sorted)
	bp.byClass = make([][]int, len(bp.classes))
	for j, c := range bp.classOf {
		bp.byClass[c] = append(bp.byClass[c], j)
	}
	bp.penalty = 1 + m.patternValue(m.supply)
	return bp
}

// run explores the open subtrees, best first, until the bound meets the
// incumbent of s (or the gap), ctx ends, or, with probe set, the tree
// looks degenerate: more than bpMaxOpen subtrees opened, bpMaxNodes
// evaluated, or bpProbe evaluated without closing any, all counted in
// this call (run then reports hopeless, unless the best open bound is
// still falling). It can be called again to go on, also as a probe
// after a hopeless one (the subtrees' bounds hold whatever the
// incumbent). It returns the proven upper bound (at least s.bestVal)
// and whether the tree is closed (the bound is
// then the largest of the incumbent and the subtrees left open by a failed
// packing or closed by the gap).
func (bp *branchPrice) run(ctx context.Context, probe bool, stats *Stats, track *tracker) (ub float64, closed, hopeless bool) {
	bp.ctx = ctx
	m, s, q := bp.m, bp.s, bp.queue
	for j, a := range s.best {
		bp.pool.add(bp.classOf[j], a)
	}
	// done reports whether a subtree of bound b is closed (a subtree
	// closed by the gap tolerance keeps its bound in stuck)
	done := func(b float64) bool {
		if !m.canImproveWhole(b, s.bestVal) {
			return true
		}
		if withinGap(s.gap, b, s.bestVal) {
			bp.stuck = math.Max(bp.stuck, b)
			return true
		}
		return false
	}
	nodes0, lp0 := bp.nodes, bp.lpSolve
	open0, closedAny := q.Len(), false
	defer func() {
		stats.NodesExplored += bp.nodes - nodes0
		stats.LPSolves += bp.lpSolve - lp0
		track.addNodes(bp.nodes - nodes0)
		track.addLPSolves(bp.lpSolve - lp0)
	}()
	for q.Len() > 0 {
		if done((*q)[0].bound) {
			*q = (*q)[:0]
			return math.Max(s.bestVal, bp.stuck), true, false
		}
		if ctx.Err() != nil {
			break
		}
		open := math.Max((*q)[0].bound, bp.stuck)
		track.proven(open)
		bp.noteTop((*q)[0].bound)
		// counted in this call, which may go on with the tree a hopeless
		// probe left (a new tree starts with one subtree open, so there
		// wide means more than bpMaxOpen open)
		wide, n := q.Len()-open0 >= bpMaxOpen, bp.nodes-nodes0
		if probe && (wide || n >= bpMaxNodes || (n >= bpProbe && !closedAny)) {
			// the tree grows without pruning: the LP is degenerate,
			// unless branching still lowers the bound
			hopeless = (wide || !closedAny) && !bp.falling()
			break
		}
		nd := heap.Pop(q).(*bpNode)
		children := bp.evaluate(nd)
		pushed := 0
		for _, ch := range children {
			if !done(ch.bound) {
				heap.Push(q, ch)
				pushed++
			}
		}
		closedAny = closedAny || pushed < 2
		track.live = bp.nodes
		track.tick(false)
	}
	open := bp.stuck
	if q.Len() > 0 {
		open = math.Max(open, (*q)[0].bound)
	}
	return math.Max(s.bestVal, m.wholeBound(open)), q.Len() == 0 && ctx.Err() == nil, hopeless
}

// noteTop records t, the best open bound before the next subtree, where
// it is lower than any before (beyond the LP's rounding: a relative 1e-9).
func (bp *branchPrice) noteTop(t float64) {
	if t < bp.top-1e-9*math.Max(1, math.Abs(t)) {
		bp.top, bp.topAt = t, bp.nodes
	}
}

// falling reports whether the best open bound fell within the last
// bpFalling subtrees.
func (bp *branchPrice) falling() bool { return bp.nodes-bp.topAt < bpFalling }

// limits returns the per-class pattern bounds of the branches: hi[c][i]
// (a_i ≤ hi on every node of class c) and lo[c][i] (a_i ≥ lo, classes of
// one node only), the capacity room[c] that lo[c] leaves on a node of
// class c, and whether they are consistent.
func (bp *branchPrice) limits(branches []aggBranch) (lo, hi [][]int, room [][]int64, ok bool) {
	n := len(bp.m.dem)
	lo, hi, room = make([][]int, len(bp.classes)), make([][]int, len(bp.classes)), make([][]int64, len(bp.classes))
	for c := range bp.classes {
		lo[c], hi[c] = make([]int, n), slices.Clone(bp.m.supply)
	}
	for _, b := range branches {
		switch {
		case b.upper && b.class == allClasses:
			for c := range hi {
				hi[c][b.typ] = min(hi[c][b.typ], b.rhs)
			}
		case b.upper:
			hi[b.class][b.typ] = min(hi[b.class][b.typ], b.rhs)
		case b.class != allClasses && bp.classes[b.class].count == 1:
			lo[b.class][b.typ] = max(lo[b.class][b.typ], b.rhs)
		}
	}
	for c := range bp.classes {
		for i := range lo[c] {
			if lo[c][i] > hi[c][i] {
				return nil, nil, nil, false
			}
		}
		r := slices.Clone(bp.classes[c].cap)
		for i, l := range lo[c] {
			for p, d := range bp.m.dem[i] {
				r[p] -= int64(l) * d
			}
		}
		if slices.Min(r) < 0 {
			return nil, nil, nil, false
		}
		room[c] = r
	}
	return lo, hi, room, true
}

// allowed reports whether pattern a of class c respects lo and hi.
func allowed(a, lo, hi []int) bool {
	for i, x := range a {
		if x < lo[i] || x > hi[i] {
			return false
		}
	}
	return true
}

// evaluate solves the LP of subtree nd by column generation and returns
// its children (none when it is pruned or solved).
func (bp *branchPrice) evaluate(nd *bpNode) []*bpNode {
	bp.nodes++
	m, n := bp.m, len(bp.m.dem)
	lo, hi, room, ok := bp.limits(nd.branches)
	if !ok {
		return nil
	}
	rest := make([][]int, len(bp.classes)) // what the branches leave free above lo, per class
	for c := range rest {
		rest[c] = make([]int, n)
		for i, l := range lo[c] {
			rest[c][i] = hi[c][i] - l
		}
	}
	bestL := nd.bound
	var sol *lp.Solution
	var cols []int // pool indices of the master's columns
	u := make([][]float64, len(bp.classes))
	for c := range u {
		u[c] = make([]float64, n)
	}
	umax := make([]float64, n)
	scanned := 0 // the pool's columns already checked against the branches
	for iter := 0; iter < cgMaxIterations && bp.ctx.Err() == nil; iter++ {
		for ; scanned < len(bp.pool.cols); scanned++ {
			if col := bp.pool.cols[scanned]; allowed(col.a, lo[col.class], hi[col.class]) {
				cols = append(cols, scanned)
			}
		}
		var err error
		sol, err = bp.master(cols, nd.branches)
		bp.lpSolve++
		if err != nil {
			if bp.ctx.Err() != nil {
				return []*bpNode{{branches: nd.branches, bound: bestL}} // keep it open
			}
			bp.stuck = math.Max(bp.stuck, bestL) // the LP failed: the subtree stays open, unexplored
			return nil
		}
		// prices of each class at the duals
		pi := sol.RowDuals[:n]
		for c := range u {
			for i := range n {
				u[c][i] = m.val[i] - math.Max(0, pi[i])
			}
		}
		L := 0.0
		for i := range n {
			L += math.Max(0, pi[i]) * float64(m.supply[i])
		}
		for b, br := range nd.branches {
			d := sol.RowDuals[n+len(bp.classes)+b]
			if br.upper {
				d = math.Max(0, d)
			} else {
				d = math.Min(0, d)
			}
			for c := range u {
				if br.covers(c) {
					u[c][br.typ] -= d
				}
			}
			L += d * float64(br.rhs)
		}
		for i := range umax {
			umax[i] = math.Inf(-1)
			for c := range u {
				umax[i] = math.Max(umax[i], u[c][i])
			}
		}
		tab := tablesOn(bp.grids, m.dem, umax, bp.counts)
		addTableWork(bp.ctx, tab)
		added := false
		for c, cl := range bp.classes {
			a, top := bp.price(u[c], tab, room[c], lo[c], rest[c])
			L += float64(cl.count) * math.Max(0, top)
			mu := math.Max(0, sol.RowDuals[n+c])
			if a != nil && dot(u[c], a)-mu > cgReducedCostTol*math.Max(1, mu) {
				added = bp.pool.add(c, a) || added
			}
		}
		bestL = math.Min(bestL, L)
		if !m.canImproveWhole(bestL, bp.s.bestVal) {
			return nil
		}
		if withinGap(bp.s.gap, bestL, bp.s.bestVal) {
			bp.stuck = math.Max(bp.stuck, bestL)
			return nil
		}
		if !added || sol.Objective >= bestL-cgReducedCostTol*math.Max(1, bestL) {
			break
		}
	}
	if sol == nil || bp.ctx.Err() != nil {
		return []*bpNode{{branches: nd.branches, bound: bestL}}
	}
	// the aggregates X_ci and the artificial columns' use
	X := make([][]float64, len(bp.classes))
	for c := range X {
		X[c] = make([]float64, n)
	}
	for k, idx := range cols {
		col := bp.pool.cols[idx]
		for i, a := range col.a {
			X[col.class][i] += float64(a) * sol.Primal[k]
		}
	}
	// first the total of a type over all classes (on the suite the LP
	// has one or two fractional totals and 30-60 fractional X_ci), then
	// the count of a type on one class
	bc, bi, frac := -1, -1, 0.0
	total := make([]float64, n)
	for c := range X {
		for i, x := range X[c] {
			total[i] += x
		}
	}
	for i, x := range total {
		f := x - math.Floor(x)
		if score := math.Min(f, 1-f) * m.val[i]; math.Min(f, 1-f) > bpIntTol && score > frac {
			bc, bi, frac = allClasses, i, score
		}
	}
	onTotal := bi >= 0
	for c := range X {
		if onTotal {
			break
		}
		for i, x := range X[c] {
			f := x - math.Floor(x)
			score := math.Min(f, 1-f) * m.val[i]
			if math.Min(f, 1-f) > bpIntTol && score > frac {
				bc, bi, frac = c, i, score
			}
		}
	}
	if bi < 0 {
		if x, ok := bp.pack(X); ok {
			bp.s.setIncumbent(x, assignmentValue(m, x))
			if !m.canImproveWhole(bestL, bp.s.bestVal) {
				return nil
			}
			// the LP stopped above its value (iteration cap): keep
			// the subtree open below
		}
		bp.stuck = math.Max(bp.stuck, bestL)
		return nil
	}
	f := int(math.Floor(total[bi]))
	if bc != allClasses {
		f = int(math.Floor(X[bc][bi]))
	}
	return []*bpNode{
		{branches: append(slices.Clip(nd.branches), aggBranch{bc, bi, true, f}), bound: bestL},
		{branches: append(slices.Clip(nd.branches), aggBranch{bc, bi, false, f + 1}), bound: bestL},
	}
}

// price solves class c's pricing knapsack max u·a over the patterns with
// lo ≤ a ≤ lo + rest (and a ≤ supply) on a node of class c: the forced
// part lo, then at most rest more on the capacity room that lo leaves
// (limits). It returns the best pattern found and a valid upper bound on
// the maximum.
func (bp *branchPrice) price(u []float64, tab *tables, room []int64, lo, rest []int) ([]int, float64) {
	a, top := pricePattern(bp.ctx, bp.m, u, tab, room, rest, bpPricingNodes)
	for i, l := range lo {
		a[i] += l
		top += u[i] * float64(l)
	}
	return a, top
}

// master solves the LP of the pattern master over the columns cols of the
// pool with the branching rows (after the supply and class rows) and one
// artificial column per ≥ row (objective −penalty), so that it stays
// feasible whatever columns the pool holds.
func (bp *branchPrice) master(cols []int, branches []aggBranch) (*lp.Solution, error) {
	n := len(bp.m.dem)
	p := masterRows(bp.m.supply, classCounts(bp.classes))
	for _, b := range branches {
		if b.upper {
			p.AddRow(math.Inf(-1), float64(b.rhs))
		} else {
			p.AddRow(float64(b.rhs), math.Inf(1))
		}
	}
	for _, k := range cols {
		col := bp.pool.cols[k]
		rows, vals := masterEntries(n, col)
		for b, br := range branches {
			if br.covers(col.class) && col.a[br.typ] > 0 {
				rows = append(rows, n+len(bp.classes)+b)
				vals = append(vals, float64(col.a[br.typ]))
			}
		}
		p.AddCol(bp.m.patternValue(col.a), 0, math.Inf(1), rows, vals)
	}
	for b, br := range branches {
		if !br.upper {
			p.AddCol(-bp.penalty, 0, math.Inf(1), []int{n + len(bp.classes) + b}, []float64{1})
		}
	}
	return solveLP(bp.ctx, p)
}

// pack turns integral aggregates X into an assignment (sorted node order):
// a class of one node takes X_c; a class of several nodes must place all
// of X_c (packClass).
func (bp *branchPrice) pack(X [][]float64) ([][]int, bool) {
	x := make([][]int, len(bp.sorted))
	for c, nodes := range bp.byClass {
		want := make([]int, len(X[c]))
		for i, v := range X[c] {
			want[i] = int(math.Round(v))
		}
		if len(nodes) == 1 {
			x[nodes[0]] = want
			continue
		}
		y := bp.packClass(c, want)
		if y == nil {
			return nil, false
		}
		for r, j := range nodes {
			x[j] = y[r]
		}
	}
	return x, true
}

// packClass places all of want on the nodes of class c (several of them)
// and returns their assignment, or nil where it found none. The supply
// want is the sub-problem's, and the methods run from the cheapest:
//
//  1. a price-and-dive (diveAssign) on the sub-problem: its LP's optimum
//     is want's whole value (the subtree's master packs X_c fractionally),
//     so the dive's patterns, re-priced after each fixing, stay on the
//     way to an exact packing;
//  2. where the dive falls short, the integer master over the columns it
//     priced (masterIP), which recombines them;
//  3. the count search restricted to the supply want (bpPackNodes).
//
// Why the patterns first: on many identical nodes the count search,
// which fills the nodes one by one, cannot pack a total that the LP packs
// fractionally. On identical-8005 (100 nodes) the first subtree with
// integral X had X at the optimum 7131 (the root's LP bound 7131.38
// rounded down), and the count search packed 5470 of it in 200 000 nodes;
// the solve then took 6.3 s of large neighbourhood search to find the
// optimum, where the dive packs it in under 0.1 s: proven in 0.2 s (CBC
// 2.0 s, HiGHS 2.5 s in the same run); identical-8008 2.0 → 0.18 s (CBC
// unproven at 10 s, HiGHS 9.6 s). On seeds 0-9 and the fresh blocks 4000,
// 5000, 7000 and 8000 (650 instances) no other path changed; where the
// count search packed (huge-small-7005, -7008) the dive packs too, in
// the same time, and the count search first (an intermediate version)
// cost 0.15 s on every failed packing. On tight random totals
// (TestPackClassPlacesAPackableTotal, 100 draws) the three pack 97, the
// count search alone 42.
func (bp *branchPrice) packClass(c int, want []int) [][]int {
	nodes := len(bp.byClass[c])
	caps := make([][]int64, nodes)
	same := make([]bool, nodes)
	for r := range caps {
		caps[r] = bp.classes[c].cap
		same[r] = r > 0
	}
	sub := bp.m.withSupply(want)
	goal := bp.m.patternValue(want)
	// the sub-problem's nodes form its only class, 0
	pool := newColumnPool()
	for _, col := range bp.pool.cols {
		if col.class == c && fitsSupply(col.a, want) {
			pool.add(0, col.a)
		}
	}
	bounds := []*lagBound{{tab: bp.base}}
	x, val, solves := diveAssign(bp.ctx, sub, caps, pool, nil, bounds, math.Inf(-1), nil)
	bp.lpSolve += solves
	if x != nil && !bp.m.canImprove(goal, val) {
		return x
	}
	if x == nil {
		val = math.Inf(-1)
	}
	y, yVal, subtrees := masterIP(bp.ctx, sub, caps, pool.cols, val, goal, pnbNodes, pnbStall)
	bp.lpSolve += subtrees
	if y != nil && !bp.m.canImprove(goal, yVal) {
		return y
	}
	deadline, _ := bp.ctx.Deadline()
	srch := newSearch(bp.ctx, sub, caps, same, want, bounds)
	srch.deadline = deadline
	srch.nodeLimit = bpPackNodes
	srch.run()
	if bp.m.canImprove(goal, srch.bestVal) {
		return nil
	}
	return srch.best
}
