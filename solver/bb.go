package solver

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// lagBound is one Lagrangian upper bound of the assignment problem.
// Relaxing the supply constraints Σ_j x_ij ≤ s_i with multipliers π_i ≥ 0
// gives, for any π,
//
//	z ≤ L(π) = Σ_i π_i s_i + Σ_j max{ Σ_i (v_i − π_i)·a_i : a feasible on node j }
//
// and the inner maxima are single-node knapsacks that the DP tables bound
// from above. π = 0 is the sum of independent single-node optima; π = v is
// the total value of the supply; the LP duals of the pattern
// (Dantzig-Wolfe) master give the LP bound. In the search, where node j has
// decided the types before p_j and has residual r_j, the bound of the
// subtree is
//
//	val + Σ_i π_i s'_i + Σ_j tab.layer[p_j][r_j]
//
// (s' the remaining supply), because the remaining choices of each node are
// a suffix of the type order.
//
// The tables bound the inner maximum over a grid that may be coarsened
// (many resources, wide capacities), where they can sit far above it; tops
// holds the inner maxima themselves (or valid upper bounds on them: the
// pricing problems of the column generation at π), per node capacity.
// Wherever node j has started, the rest of its pattern is worth at most
// top_j minus what its decided types are worth at u = v − π, so the node's
// term is min(table, top_j − part_j) (nodeTerm): on hetero-3r and
// many-resources the tables alone bound tens of units above the LP value.
type lagBound struct {
	pi   []float64          // nil means π = 0
	tab  *tables            // nil means every inner maximum is 0 (π ≥ v)
	tops map[string]float64 // exact inner maxima by demandKey(capacity), or nil
}

// topOf returns the inner maximum of a node of capacity c when known
// (+Inf otherwise).
func (b *lagBound) topOf(c []int64) float64 {
	if b.tops != nil {
		if v, ok := b.tops[demandKey(c)]; ok {
			return v
		}
	}
	return math.Inf(1)
}

func (b *lagBound) piOf(i int) float64 {
	if b.pi == nil {
		return 0
	}
	return b.pi[i]
}

func (b *lagBound) term(t int, r []int64) float64 {
	if b.tab == nil {
		return 0
	}
	return b.tab.value(t, r)
}

// rootTerm is the bound on the inner maximum of a node of capacity c:
// min(table, top).
func (b *lagBound) rootTerm(c []int64) float64 {
	return minf(b.term(0, c), b.topOf(c))
}

// maxBounds is the largest number of Lagrangian bounds a search combines.
const maxBounds = 4

// search is a depth-first branch and bound over the counts x[j][t].
//
// Decision order: node by node (nodes sorted by capacity, largest first),
// within a node type by type (model order); each count is tried best bound
// first. (Branching type-major on the types whose supply binds in the LP was
// tried and explored more nodes on the benchmark suite.) Memory is
// O(nodes·types) for the path plus the fixed-size transposition table.
//
// Symmetry: nodes with identical capacities are adjacent (same[j] says node j
// equals node j−1) and their patterns must be lexicographically
// non-increasing in the type order, x[j] ≤_lex x[j−1]; every solution has a
// permutation of its identical nodes with that property, so no optimum is
// lost and the m! orderings of m identical nodes are explored once.
type search struct {
	m      *model
	nodes  [][]int64
	same   []bool
	supply []int
	bounds []*lagBound
	total  int // number of decisions, nodes·types

	resid [][]int64
	eq    []bool // x[j] equals x[j−1] on the types decided so far
	x     [][]int
	piS   [maxBounds]float64   // Σ_t π_t s'_t
	sum   [maxBounds]float64   // Σ_j nodeTerm
	top   [maxBounds][]float64 // top_j of each bound (+Inf: unknown)
	part  [maxBounds][]float64 // Σ_{t<p_j} (v_t − π_t)·x_jt of each bound
	term  [maxBounds][]float64 // nodeTerm of each node at its current decision, of each bound
	stack []decision

	best     [][]int
	bestVal  float64
	explored int64

	ctx       context.Context
	clk       *workClock // the solve's work clock (from ctx), or nil
	views     int64      // table views a bound reads (Σ over the bounds)
	reads     int64      // bound evaluations and decisions, each reading every view
	counted   int64      // explored already added to clk
	readsSeen int64      // reads already added to clk
	deadline  time.Time
	nodeLimit int64
	stopped   StopReason
	track     *tracker // progress of the whole solve, nil in sub-searches
	publish   *tracker // where every better incumbent goes (the main search only)
	gap       float64  // relative tolerance (Options.Gap)
	whole     bool     // the search is over the whole instance: its bounds step down to the value lattice
	gapOpen   float64  // the largest bound of a subtree pruned by the gap
	candBufs  [][]cand

	memo   *memo
	zob    [3][]uint64 // Zobrist keys per task type: supply (2 independent), previous pattern
	h1, h2 uint64      // Σ_t s'_t·zob[0|1][t] (mod 2^64), kept up to date by decide
}

type decision struct {
	j, t, c int
	eq      bool // eq[j] before the decision
	delta   [maxBounds]float64
	term    [maxBounds]float64 // term[b][j] before the decision
}

type cand struct {
	c     int
	bound float64
	// after[b] is node j's term of bound b once the count is set (see
	// bound), which decide would otherwise look up again
	after [maxBounds]float64
}

func newSearch(ctx context.Context, m *model, nodes [][]int64, same []bool, supply []int, bounds []*lagBound) *search {
	if len(bounds) > maxBounds {
		panic("solver: too many bounds")
	}
	n := len(m.dem)
	s := &search{m: m, nodes: nodes, same: same, supply: slices.Clone(supply), bounds: bounds,
		total: len(nodes) * n, ctx: ctx, clk: workClockOf(ctx), gapOpen: math.Inf(-1)}
	for _, lb := range bounds {
		s.views++ // the prices' terms
		if lb.tab != nil {
			s.views += int64(len(lb.tab.views))
		}
	}
	s.resid = make([][]int64, len(nodes))
	s.x = make([][]int, len(nodes))
	s.best = make([][]int, len(nodes))
	s.eq = make([]bool, len(nodes))
	for j := range nodes {
		s.resid[j] = slices.Clone(nodes[j])
		s.x[j] = make([]int, n)
		s.best[j] = make([]int, n)
		s.eq[j] = same[j]
	}
	for b, lb := range bounds {
		for t, sup := range s.supply {
			s.piS[b] += lb.piOf(t) * float64(sup)
		}
		s.top[b] = make([]float64, len(nodes))
		s.part[b] = make([]float64, len(nodes))
		s.term[b] = make([]float64, len(nodes))
		for j := range nodes {
			s.top[b][j] = lb.topOf(nodes[j])
			s.term[b][j] = s.nodeTerm(b, j, 0, nodes[j], 0)
			s.sum[b] += s.term[b][j]
		}
	}
	s.candBufs = make([][]cand, s.total)
	s.stack = make([]decision, 0, s.total)
	if len(nodes) > 1 {
		rng := rand.New(rand.NewPCG(0x6f707464, 0x69746121))
		for z := range s.zob {
			s.zob[z] = make([]uint64, n)
			for i := range s.zob[z] {
				s.zob[z][i] = rng.Uint64()
			}
		}
		for i, sup := range s.supply {
			s.h1 += uint64(sup) * s.zob[0][i]
			s.h2 += uint64(sup) * s.zob[1][i]
		}
	}
	return s
}

// setIncumbent installs a known feasible assignment (search node and type order).
func (s *search) setIncumbent(x [][]int, val float64) {
	if val > s.bestVal {
		for j := range x {
			copy(s.best[j], x[j])
		}
		s.bestVal = val
		if s.publish != nil {
			s.publish.publish(s.best, val, true)
		}
	}
}

// rootBound is the minimum of the Lagrangian bounds at the root.
func (s *search) rootBound() float64 { return s.subtreeBound(0) }

// subtreeBound is the bound of the current subtree with value val so far.
func (s *search) subtreeBound(val float64) float64 {
	ub := math.Inf(1)
	for b := range s.bounds {
		ub = minf(ub, val+s.piS[b]+s.sum[b])
	}
	return ub
}

// run explores the tree and returns the largest bound left unexplored when
// the search stopped early (−Inf when it completed).
func (s *search) run() float64 {
	if s.total == 0 {
		return math.Inf(-1)
	}
	open := s.dfs(0, 0)
	s.addWork()
	return open
}

// addWork adds the nodes and table reads since the last call to the
// solve's work clock, which may cancel ctx (a budget spent).
func (s *search) addWork() {
	if s.clk == nil {
		return
	}
	s.clk.add(workNode, s.explored-s.counted)
	s.clk.add(workLookup, (s.reads-s.readsSeen)*s.views)
	s.counted, s.readsSeen = s.explored, s.reads
}

// step returns the node and type of decision k.
func (s *search) step(k int) (j, t int) { return k / len(s.m.dem), k % len(s.m.dem) }

// stopCheckMask sets how often the search looks at the clock and the
// context: every 128 nodes. A node costs up to tens of microseconds where
// the bounds have many views (many-resources: 21 grids per bound), so
// every 1024 nodes was up to 50 ms of CPU; on a loaded machine (load 9 on
// 2 cores) a 3 s solve whose search held the limit then answered 4% late.
// time.Now and ctx.Err cost tens of nanoseconds.
const stopCheckMask = 127

func (s *search) stop() bool {
	if s.stopped != "" {
		return true
	}
	if s.explored&stopCheckMask != 0 {
		return false
	}
	s.addWork() // before ctx: a budget it spends stops the search here
	now := time.Now()
	switch {
	case s.ctx.Err() != nil:
		s.stopped = stopReason(s.ctx)
	case !s.deadline.IsZero() && now.After(s.deadline):
		s.stopped = StopTimeLimit
	case s.nodeLimit > 0 && s.explored >= s.nodeLimit:
		s.stopped = StopNodeLimit
	}
	if s.track != nil {
		s.track.live = s.explored
		s.track.tick(false)
	}
	return s.stopped != ""
}

// nodeTerm is bound b's term of node j at type t with residual r and
// decided worth part: min(layer[t][r], top_j − part).
func (s *search) nodeTerm(b, j, t int, r []int64, part float64) float64 {
	lb := s.bounds[b]
	if lb.tab == nil {
		return 0
	}
	return minf(lb.tab.value(t, r), s.top[b][j]-part)
}

// bound returns the upper bound after setting x[j][t] = c, val being the
// value before that choice. Node j's current term (nodeTerm at type t)
// is the cached term[b][j]: the same for every count c tried, it was
// recomputed for each (two table lookups per bound and count where one
// suffices; on many-resources a lookup reads 21 grids).
//
// It returns as soon as one bound closes the count (at most the
// incumbent's value): the minimum over every bound would only be lower,
// and open is monotone, so the count is pruned either way and the other
// bounds' lookups are spared (the value returned is then above the
// minimum, but is only compared with the incumbent). after[b] receives
// node j's term of bound b once the count is set, for decideKnown; it is
// complete when the count is open. Measured with BenchmarkExactSuite
// (8 runs of each build alternated; the same nodes on every instance):
// yarn-7 1.56 → 1.33 s, hetero-3r-6 0.53 → 0.45 s.
func (s *search) bound(j, t, c int, val float64, after *[maxBounds]float64) float64 {
	s.reads++
	r := s.resid[j]
	d := s.m.dem[t]
	gain := val + float64(c)*s.m.val[t]
	ub := math.Inf(1)
	for b, lb := range s.bounds {
		pi := lb.piOf(t)
		v := gain + s.piS[b] - float64(c)*pi + s.sum[b]
		if lb.tab != nil {
			part := s.part[b][j] + float64(c)*(s.m.val[t]-pi)
			after[b] = minf(lb.tab.valueAfter(t+1, r, d, int64(c)), s.top[b][j]-part)
			v += after[b] - s.term[b][j]
		}
		if v < ub {
			ub = v
			if ub <= s.bestVal {
				return ub
			}
		}
	}
	return ub
}

// decide sets x[j][t] = c and updates every incremental quantity.
func (s *search) decide(j, t, c int) { s.decideKnown(j, t, c, nil) }

// decideKnown is decide where after, if not nil, holds node j's terms
// once the count is set, as bound computed them for the same (j, t, c) on
// the same state (the same arithmetic, so the same numbers: the search's
// path does not change), sparing a table lookup per bound.
func (s *search) decideKnown(j, t, c int, after *[maxBounds]float64) {
	s.reads++
	dc := decision{j: j, t: t, c: c, eq: s.eq[j]}
	r := s.resid[j]
	for b, lb := range s.bounds {
		if lb.tab != nil {
			dc.term[b] = s.term[b][j]
			dc.delta[b] = -dc.term[b]
		}
	}
	if c > 0 {
		s.x[j][t] = c
		s.supply[t] -= c
		for p, d := range s.m.dem[t] {
			r[p] -= int64(c) * d
		}
		if s.zob[0] != nil {
			s.h1 -= uint64(c) * s.zob[0][t]
			s.h2 -= uint64(c) * s.zob[1][t]
		}
	}
	for b, lb := range s.bounds {
		if lb.tab != nil {
			s.part[b][j] += float64(c) * (s.m.val[t] - lb.piOf(t))
			if after != nil {
				s.term[b][j] = after[b]
			} else {
				s.term[b][j] = s.nodeTerm(b, j, t+1, r, s.part[b][j])
			}
			dc.delta[b] += s.term[b][j]
			s.sum[b] += dc.delta[b]
		}
		s.piS[b] -= float64(c) * lb.piOf(t)
	}
	if s.eq[j] && s.same[j] && c != s.x[j-1][t] {
		s.eq[j] = false
	}
	s.stack = append(s.stack, dc)
}

// undo reverts the last decision.
func (s *search) undo() {
	dc := s.stack[len(s.stack)-1]
	s.stack = s.stack[:len(s.stack)-1]
	j, t, c := dc.j, dc.t, dc.c
	if c > 0 {
		s.x[j][t] = 0
		s.supply[t] += c
		for p, d := range s.m.dem[t] {
			s.resid[j][p] += int64(c) * d
		}
		if s.zob[0] != nil {
			s.h1 += uint64(c) * s.zob[0][t]
			s.h2 += uint64(c) * s.zob[1][t]
		}
	}
	for b, lb := range s.bounds {
		if lb.tab != nil {
			s.part[b][j] -= float64(c) * (s.m.val[t] - lb.piOf(t))
			s.term[b][j] = dc.term[b]
		}
		s.sum[b] -= dc.delta[b]
		s.piS[b] += float64(c) * lb.piOf(t)
	}
	s.eq[j] = dc.eq
}

// cmax is the largest count of type t that node j can still take.
func (s *search) cmax(j, t int) int {
	sup := s.supply[t]
	if sup == 0 {
		return 0
	}
	f := maxFit(s.m.dem[t], s.resid[j])
	if int64(sup) < f {
		f = int64(sup)
	}
	if s.eq[j] && s.same[j] && int64(s.x[j-1][t]) < f {
		f = int64(s.x[j-1][t])
	}
	return int(f)
}

func (s *search) dfs(k int, val float64) float64 {
	s.explored++
	if s.stop() {
		return s.subtreeBound(val)
	}
	mark := len(s.stack)
	open := math.Inf(-1)
	for {
		if k == s.total {
			if s.m.canImprove(val, s.bestVal) {
				s.setIncumbent(s.x, val)
				if s.track != nil {
					s.track.live = s.explored
					s.track.incumbent(val)
				}
			}
			s.unwind(mark)
			return open
		}
		if s.zob[0] != nil && s.atNodeStart(k) && s.useMemo() && s.memo.dominated(s.stateKey(k), val) {
			s.unwind(mark)
			return open
		}
		j, t := s.step(k)
		if s.cmax(j, t) > 0 {
			break
		}
		s.decide(j, t, 0) // forced; no branching
		k++
	}
	j, t := s.step(k)
	cmax := s.cmax(j, t)
	cands := s.candBufs[k][:0]
	const sortLimit = 64
	if cmax < sortLimit {
		for c := cmax; c >= 0; c-- {
			cd := cand{c: c}
			if cd.bound = s.bound(j, t, c, val, &cd.after); s.open(cd.bound) {
				cands = append(cands, cd)
			}
		}
		slices.SortStableFunc(cands, func(a, b cand) int { return -cmpFloat(a.bound, b.bound) })
		s.candBufs[k] = cands
	}
	for idx := 0; ; idx++ {
		var cd cand
		if cmax < sortLimit {
			if idx == len(cands) {
				break
			}
			cd = cands[idx]
		} else {
			if idx > cmax {
				break
			}
			cd = cand{c: cmax - idx}
			cd.bound = s.bound(j, t, cd.c, val, &cd.after)
		}
		if s.stopped != "" {
			if cmax >= sortLimit {
				open = maxf(open, s.subtreeBound(val)) // lazy enumeration: bound the rest at once
				break
			}
			open = maxf(open, cd.bound)
			continue
		}
		if !s.open(cd.bound) {
			continue
		}
		if idx == 0 || cmax >= sortLimit {
			// bound ran just before, on this very state: its terms are
			// decide's, bit for bit (after a sibling's decide and undo,
			// part[b][j] may differ in its last bits, and so would they)
			s.decideKnown(j, t, cd.c, &cd.after)
		} else {
			s.decide(j, t, cd.c)
		}
		open = maxf(open, s.dfs(k+1, val+float64(cd.c)*s.m.val[t]))
		s.undo()
	}
	s.unwind(mark)
	return open
}

// open reports whether a subtree of bound b must be explored: it may hold
// a better solution than the incumbent, by more than the relative gap
// tolerance (a subtree closed by the gap raises gapOpen, the bound the
// search can then prove).
func (s *search) open(b float64) bool {
	if s.whole {
		b = s.m.wholeBound(b)
	}
	if !s.m.canImprove(b, s.bestVal) {
		return false
	}
	if withinGap(s.gap, b, s.bestVal) {
		s.gapOpen = math.Max(s.gapOpen, b)
		return false
	}
	return true
}

func (s *search) unwind(mark int) {
	for len(s.stack) > mark {
		s.undo()
	}
}

// atNodeStart reports whether decision k starts a node after the first,
// where the transposition table applies.
func (s *search) atNodeStart(k int) bool { return k > 0 && k%len(s.m.dem) == 0 }

// useMemo allocates the transposition table once the search is large
// enough to need it.
func (s *search) useMemo() bool {
	if s.memo == nil && s.explored > memoAfter {
		s.memo = newMemo()
	}
	return s.memo != nil
}

// memoAfter is the number of explored nodes after which the transposition
// table is allocated (small searches never pay for it).
const memoAfter = 1 << 14

// memo is a transposition table of the search, bounded in size. At the
// start of node j the rest of the problem depends only on the remaining
// supply s' and, within a class of identical nodes, on the pattern of node
// j−1 (which bounds node j's by symmetry breaking). If the same state was reached before with a value at
// least as large, its subtree was already searched with an incumbent no
// better than the current one, and every completion of the current prefix
// completes that prefix with a value at least as large: the current subtree
// is dominated. (Paths reaching the same state are typically the same tasks
// distributed differently over the nodes before j.) States are identified
// by two independent 64-bit hashes; a false match needs both to collide
// (about 2^-128 per comparison). Entries are overwritten on index
// collision, which only loses pruning.
type memo struct {
	entries []memoEntry
	mask    uint64
}

type memoEntry struct {
	h1, h2 uint64
	val    float64
}

// memoEntries is the size of the transposition table (24 MiB).
const memoEntries = 1 << 20

func newMemo() *memo {
	return &memo{entries: make([]memoEntry, memoEntries), mask: memoEntries - 1}
}

// dominated reports whether state key was reached before with value ≥ val,
// and records val otherwise.
func (t *memo) dominated(key [2]uint64, val float64) bool {
	e := &t.entries[key[0]&t.mask]
	if e.h1 == key[0] && e.h2 == key[1] {
		if e.val >= val {
			return true
		}
		e.val = val
		return false
	}
	*e = memoEntry{key[0], key[1], val}
	return false
}

// stateKey hashes the state at the start of the node of decision k.
func (s *search) stateKey(k int) [2]uint64 {
	j, _ := s.step(k)
	h1 := s.h1 + uint64(k+1)*0x9e3779b97f4a7c15
	h2 := s.h2 + uint64(k+1)*0xc2b2ae3d27d4eb4f
	if s.same[j] {
		for t := range s.m.dem {
			c := uint64(s.x[j-1][t])
			h1 += c * s.zob[2][t]
			h2 += c * s.zob[1][t] * 0xbf58476d1ce4e5b9
		}
	}
	return [2]uint64{h1, h2}
}
