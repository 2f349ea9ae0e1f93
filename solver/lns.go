package solver

import (
	"context"
	"math/rand/v2"
	"slices"
	"time"
)

// Large neighbourhood search limits.
const (
	// lnsMaxSize is the largest number of nodes re-optimised together in
	// the first round; each further round (lnsRounds) allows two more.
	lnsMaxSize = 4
	lnsRounds  = 3
	// lnsSubNodes caps the branch-and-bound nodes of one sub-problem; a
	// sub-search that hits it keeps the best solution it found.
	lnsSubNodes = 4000
	// lnsStallPerNode is the number of non-improving iterations per
	// cluster node after which the search gives up, at most lnsMaxStall.
	lnsStallPerNode = 60
	lnsMaxStall     = 4000
)

// lns improves a feasible assignment by large neighbourhood search
// (Shaw 1998; Pisinger and Ropke's ruin-and-recreate): repeatedly choose a
// few nodes S, pool their tasks with the tasks no node holds, and solve the
// assignment of that pool to S exactly with the branch and bound of search
// (the root Lagrangian bounds stay valid there: L(π) bounds any supply and
// any subset of nodes). A strictly better sub-assignment replaces the old
// one. The per-node fills and the LP rounding leave a few units of value
// below the LP bound; they are lost where a scarce type sits on a node on
// which it packs badly, which exchanges among two to four nodes repair.
//
// Neighbourhoods: the first node is drawn with probability proportional to
// its loss (its single-node optimum from the π = 0 table, minus its
// value, plus one), the others uniformly; the size grows from 2 to
// l.size while iterations stall. The search stops when the value
// reaches target (no better solution exists), after lnsStallPerNode·nodes
// iterations without improvement (at most lnsMaxStall), when ctx ends,
// or (paused, to be run again) when an improvement reaches pauseAt or,
// with a clock, when the run has improved and the work since its last
// improvement exceeds the solve's work up to it (idle).
type lns struct {
	m      *model
	nodes  [][]int64
	bounds []*lagBound
	rng    *rand.Rand
	free   []int // supply no node holds
	size   int   // largest neighbourhood

	x        [][]int
	val      float64
	explored int64
	track    *tracker   // progress of the whole solve, or nil
	pauseAt  float64    // run returns (paused) once val reaches it; 0: never
	clk      *workClock // with one, run returns (paused, idle) when idle
	paused   bool
	idle     bool
	hood     int // the neighbourhood size reached (0: not started)
	stall    int // iterations since the last improvement
}

func newLNS(m *model, nodes [][]int64, supply []int, bounds []*lagBound, x [][]int, rng *rand.Rand) *lns {
	l := &lns{m: m, nodes: nodes, bounds: bounds, rng: rng, x: make([][]int, len(x)), free: slices.Clone(supply), size: lnsMaxSize}
	for j := range x {
		l.x[j] = slices.Clone(x[j])
		for t, c := range x[j] {
			l.free[t] -= c
		}
	}
	l.val = assignmentValue(m, l.x)
	return l
}

// run improves l.x until target, stall or the end of ctx; run again
// after a pause, it goes on with the neighbourhood size and the count of
// iterations without improvement where it paused (a fresh count would
// give every pause a whole stall limit more: large-1 0.5 → 0.9 s).
// adopt makes x, a better assignment found while the search was paused
// (by a DP step or the branch and price), the one it goes on from, keeping
// its neighbourhood size and stall count.
func (l *lns) adopt(x [][]int) {
	for j := range x {
		for t, c := range l.x[j] {
			l.free[t] += c
		}
		l.x[j] = append(l.x[j][:0], x[j]...)
		for t, c := range x[j] {
			l.free[t] -= c
		}
	}
	l.val = assignmentValue(l.m, l.x)
}

func (l *lns) run(ctx context.Context, target float64) {
	l.paused, l.idle = false, false
	improvedAt := time.Duration(-1) // the work at this run's last improvement
	n := len(l.nodes)
	if n < 2 {
		return
	}
	deadline, _ := ctx.Deadline()
	if l.hood == 0 {
		l.hood = 2
	}
	maxStall := min(lnsStallPerNode*n, lnsMaxStall)
	for l.stall < maxStall && l.m.canImprove(target, l.val) {
		if ctx.Err() != nil {
			return
		}
		if l.clk != nil && improvedAt >= 0 && l.clk.now()-improvedAt > improvedAt {
			l.paused, l.idle = true, true
			return
		}
		if l.step(ctx, deadline, l.pick(min(l.hood, n))) {
			l.stall = 0
			if l.clk != nil {
				improvedAt = l.clk.now()
			}
			if l.track != nil {
				l.track.publish(l.x, l.val, true)
				l.track.incumbent(l.val)
			}
			if l.paused = l.pauseAt > 0 && l.val >= l.pauseAt; l.paused {
				return
			}
			continue
		}
		if l.track != nil {
			l.track.live = l.explored
			l.track.tick(false)
		}
		l.stall++
		if l.stall%(maxStall/(l.size-1)+1) == 0 && l.hood < l.size {
			l.hood++
		}
	}
}

// pick returns size distinct node indices in increasing order.
func (l *lns) pick(size int) []int {
	loss := make([]float64, len(l.nodes))
	total := 0.0
	for j, c := range l.nodes {
		loss[j] = l.bounds[0].term(0, c) - l.m.patternValue(l.x[j]) + 1
		total += loss[j]
	}
	r := l.rng.Float64() * total
	first := len(l.nodes) - 1
	for j, w := range loss {
		if r < w {
			first = j
			break
		}
		r -= w
	}
	set := []int{first}
	for len(set) < size {
		j := l.rng.IntN(len(l.nodes))
		if !slices.Contains(set, j) {
			set = append(set, j)
		}
	}
	slices.Sort(set)
	return set
}

// step re-optimises the nodes in set and reports whether the value grew.
func (l *lns) step(ctx context.Context, deadline time.Time, set []int) bool {
	pool := slices.Clone(l.free)
	caps := make([][]int64, len(set))
	same := make([]bool, len(set))
	cur := make([][]int, len(set))
	old := 0.0
	for s, j := range set {
		caps[s] = l.nodes[j]
		same[s] = s > 0 && slices.Equal(caps[s], caps[s-1])
		cur[s] = l.x[j]
		old += l.m.patternValue(l.x[j])
		for t, c := range l.x[j] {
			pool[t] += c
		}
	}
	srch := newSearch(ctx, l.m, caps, same, pool, l.bounds)
	srch.deadline = deadline
	srch.nodeLimit = lnsSubNodes
	srch.setIncumbent(cur, old)
	srch.run()
	l.explored += srch.explored
	if !l.m.canImprove(srch.bestVal, old) {
		return false
	}
	copy(l.free, pool)
	for s, j := range set {
		l.x[j] = slices.Clone(srch.best[s])
		for t, c := range l.x[j] {
			l.free[t] -= c
		}
	}
	l.val += srch.bestVal - old
	return true
}

// lnsStream is the second PCG word of the large neighbourhood search's
// random stream (the first is Options.Seed).
const lnsStream = 0x6c6e73
