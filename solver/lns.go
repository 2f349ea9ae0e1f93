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
	// lnsRounds: six, where three rounds left primal failures a unit under
	// the optimum to the count search, which cannot find them on large
	// instances (yarn-19001, 60 nodes: stopped at 7429 under the optimum
	// 7429.5, the last 6.8 s of a 10 s limit in the count search; with three
	// rounds more, proven at 3.5 s of work). A round ends at its stall limit,
	// so the rounds added cost little where they find nothing. On seeds 0-9
	// and the 95 hard instances of the fresh blocks 4000-20000 (225 solves,
	// 10 s limit): 8 paths changed, 6 of them solves that the limit stopped
	// with and without the extra rounds, at the same incumbent, and
	// large-19003 (7.27 → 7.28 s of work); proven 218 → 219.
	lnsRounds = 6
	// lnsSubNodes caps the branch-and-bound nodes of one sub-problem; a
	// sub-search that hits it keeps the best solution it found.
	lnsSubNodes = 4000
	// lnsStallPerNode is the number of non-improving iterations per
	// cluster node after which the search gives up, at most lnsMaxStall.
	lnsStallPerNode = 60
	lnsMaxStall     = 4000
	// Stalled, every lnsRuinEvery-th iteration is a partial ruin of
	// lnsRuinNodes nodes, each of their tasks taken out with probability
	// lnsRuinShare (see lns).
	lnsRuinEvery = 4
	lnsRuinNodes = 12
	lnsRuinShare = 0.2
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
// with a clock, when the search has improved and the work since its last
// improvement exceeds the solve's work up to it (idle). The last
// improvement counts across runs, once (after an idle pause the next run
// waits for an improvement of its own): a run resumed after a pause at
// pauseAt starts from an incumbent one unit under the bound, often the
// optimum, which no neighbourhood can improve, so a rule that waited for
// the run's own first improvement never fired, and the search went on to
// its stall limit (yarn-21000, a fresh seed: the optimum 4659.5 under the
// bound 4660 at 1.3 s, then 7.8 s of neighbourhoods until the branch and
// price proved it in 0.14 s; now idle at twice the work of its
// improvement, proven at 1.25 s of counted work, HiGHS 2.1-3.3 s).
//
// Stalled (from the first idle pause on), the search changes how it
// looks. The gap decomposes by the LP duals π of the bound lb (the
// last of bounds): L(π) − z = Σ_j loss_j + Σ_t π_t·f_t, where loss_j is
// node j's best reduced-cost pattern minus its own pattern's reduced
// cost and f the supply no node holds. A neighbourhood S (its tasks
// pooled with f) can gain at most Σ_{j∈S} loss_j + Σ_t π_t·f_t, so the
// nodes that hold the gap are those with a loss under π, not under
// π = 0 (which counts the value a node would have without supply limits:
// large-4003 has dozens of nodes losing 1-22 units under π = 0 while the
// gap is one unit). Stalled, every node of a neighbourhood is drawn with
// probability proportional to loss_j plus the mean loss (half the mass
// uniform, no scale constant): the stuck incumbents are 2-exchange
// optimal, the improving moves take three or four nodes that hold the
// loss (yarn-7: the node losing most with nodes of the other
// memory/vcore shape), which a first node by loss and uniform others
// rarely draw together. Before the stall the π = 0 draw stays: drawing by
// π from the start found yarn-7 and large-4003 but lost many-resources-5
// at seed 0 (suite seeds 0-9: 129 proven either way). Searching the
// sub-problems stopped at lnsSubNodes again with 8 times the nodes once
// stalled added nothing to the draw (fresh seeds 4000-4009: 125 proven
// either way, 121 against 123 within 1 s).
//
// Stalled, every lnsRuinEvery-th iteration is a partial ruin instead
// (ruin): each task of lnsRuinNodes nodes (drawn as above) is taken out
// with probability lnsRuinShare, pooled with the free supply, and the
// room the kept tasks leave is filled exactly by the same branch and
// bound (the bounds stay valid there: the tables bound a node of any
// residual capacity, and the exact single-node maxima are looked up by
// capacity). It makes the moves that whole-node neighbourhoods cannot: a
// stuck incumbent and the optimum often differ on a dozen or more nodes by
// one to three tasks each (yarn-7's 8394.5 on 20 of its 65 nodes). Only
// once stalled, so that every search that proves its instance before its
// first idle pause keeps its path. Measured (one experiment binary,
// alternated with main's, 10 s, one thread): on seeds 0-9 and the fresh
// blocks 4000, 5000, 7000 and 8000 (650 instances) 11 paths changed, no
// instance gained or lost (yarn-7 1.65 → 1.15 s of CPU, the machine
// loaded); over three Options.Seed on the 80 instances of those blocks
// that took over 0.3 s (OPTD_SUITE_RUNS=3 OPTD_SUITE_VARY_SEED=1, 240
// runs): 38 paths changed, proven 210 → 210, within 1 s 155 → 159, the geometric mean of
// CPU the same (906 → 907 ms); hetero-3r-8001 faster at every seed (1.8,
// 5.2, 3.0 → 1.6, 3.4, 2.8 s), yarn-7 1.54 → 1.19 s at seed 0 and 1.32 →
// 1.43 s at seed 1, many-resources-5 2.4 → 4.2 s at seed 2. Tried before
// and dropped: the same ruin from the first iteration, or only in the
// second half of a stall window, changed 49-149 paths and lost as many
// instances as it gained.
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
	hood     int  // the neighbourhood size reached (0: not started)
	iter     int  // iterations so far (every lnsRuinEvery-th a ruin, stalled)
	stalled  bool // idle once: neighbourhoods drawn by the LP duals' loss
	stall    int  // iterations since the last improvement
	// improvedAt is the solve's work at the search's last improvement
	// (−1: none yet), kept across paused runs
	improvedAt time.Duration

	// each node's single-node bound under π = 0 and under the LP duals,
	// read once (tops): they depend on the node's capacity and the fixed
	// bounds only, and each is a lookup in every view of the tables
	top0, topPi []float64
}

func newLNS(m *model, nodes [][]int64, supply []int, bounds []*lagBound, x [][]int, rng *rand.Rand) *lns {
	l := &lns{m: m, nodes: nodes, bounds: bounds, rng: rng, x: make([][]int, len(x)), free: slices.Clone(supply), size: lnsMaxSize, improvedAt: -1}
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
		if l.clk != nil && l.improvedAt >= 0 && l.clk.now()-l.improvedAt > l.improvedAt {
			// once per improvement: a run resumed after this pause
			// waits for an improvement of its own
			l.paused, l.idle, l.stalled = true, true, true
			l.improvedAt = -1
			return
		}
		l.iter++
		var better bool
		if l.stalled && l.iter%lnsRuinEvery == 0 {
			better = l.ruin(ctx, deadline)
		} else {
			better = l.step(ctx, deadline, l.pick(min(l.hood, n)))
		}
		if better {
			l.stall = 0
			if l.clk != nil {
				l.improvedAt = l.clk.now()
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

// pick returns size distinct node indices in increasing order: before
// the stall the first drawn by its loss under π = 0 plus one, the others
// uniformly; stalled, every one by its loss under the LP duals (piLoss).
func (l *lns) pick(size int) []int {
	loss, total := l.piLoss()
	byLoss := loss != nil // every node drawn by loss
	if !byLoss {
		top := l.tops(&l.top0, func(c []int64) float64 { return l.bounds[0].term(0, c) })
		loss = make([]float64, len(l.nodes))
		for j := range l.nodes {
			loss[j] = top[j] - l.m.patternValue(l.x[j]) + 1
			total += loss[j]
		}
	}
	draw := func() int {
		r := l.rng.Float64() * total
		for j, w := range loss {
			if r < w {
				return j
			}
			r -= w
		}
		return len(l.nodes) - 1
	}
	set := []int{draw()}
	for len(set) < size {
		var j int
		if byLoss {
			j = draw()
		} else {
			j = l.rng.IntN(len(l.nodes))
		}
		if !slices.Contains(set, j) {
			set = append(set, j)
		}
	}
	slices.Sort(set)
	return set
}

// piLoss returns, once the search has stalled and where the LP duals π
// are known, each node's weight loss_j + mean loss (loss_j: its best
// reduced-cost pattern under π minus its own pattern's reduced cost, at
// least 0) and their sum; nil before.
func (l *lns) piLoss() ([]float64, float64) {
	lb := lpBoundOf(l.bounds)
	if !l.stalled || lb == nil {
		return nil, 0
	}
	top := l.tops(&l.topPi, lb.rootTerm)
	loss := make([]float64, len(l.nodes))
	total := 0.0
	for j := range l.nodes {
		red := 0.0
		for t, k := range l.x[j] {
			red += float64(k) * (l.m.val[t] - lb.pi[t])
		}
		loss[j] = max(0, top[j]-red)
		total += loss[j]
	}
	mean := total / float64(len(loss))
	if mean <= 0 {
		mean = 1 // no node loses: uniform
	}
	for j := range loss {
		loss[j] += mean
	}
	return loss, total + mean*float64(len(loss))
}

// tops returns *cache, filled on first use with bound(c) for each node's
// capacity c.
func (l *lns) tops(cache *[]float64, bound func(c []int64) float64) []float64 {
	if *cache == nil {
		*cache = make([]float64, len(l.nodes))
		for j, c := range l.nodes {
			(*cache)[j] = bound(c)
		}
	}
	return *cache
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
	return l.resolve(ctx, deadline, set, caps, same, pool, nil, cur, old)
}

// resolve assigns pool to the capacities room of the nodes in set exactly
// (the branch and bound, lnsSubNodes nodes at most) from the incumbent cur
// worth old, and where it finds better, gives node set[s] kept[s] (none
// when kept is nil) plus the sub-search's counts and reports true.
func (l *lns) resolve(ctx context.Context, deadline time.Time, set []int, room [][]int64, same []bool, pool []int, kept, cur [][]int, old float64) bool {
	srch := newSearch(ctx, l.m, room, same, pool, l.bounds)
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
		for t, c := range srch.best[s] {
			l.x[j][t] = c
			if kept != nil {
				l.x[j][t] += kept[s][t]
			}
			l.free[t] -= c
		}
	}
	l.val += srch.bestVal - old
	return true
}

// ruin takes each task of lnsRuinNodes nodes out with probability
// lnsRuinShare, pools them with the free supply, re-solves the room the
// kept tasks leave exactly (lnsSubNodes at most) and reports whether the
// value grew.
func (l *lns) ruin(ctx context.Context, deadline time.Time) bool {
	set := l.pick(min(len(l.nodes), lnsRuinNodes))
	pool := slices.Clone(l.free)
	room := make([][]int64, len(set)) // capacity the kept tasks leave
	kept := make([][]int, len(set))   // the tasks that stay
	out := make([][]int, len(set))    // the tasks taken out: the sub-search's incumbent
	old := 0.0
	for s, j := range set {
		kept[s] = slices.Clone(l.x[j])
		out[s] = make([]int, len(l.x[j]))
		for t, c := range l.x[j] {
			for range c {
				if l.rng.Float64() < lnsRuinShare {
					kept[s][t]--
					out[s][t]++
					pool[t]++
				}
			}
		}
		room[s] = l.m.roomAfter(l.nodes[j], kept[s])
		old += l.m.patternValue(out[s])
	}
	return l.resolve(ctx, deadline, set, room, make([]bool, len(set)), pool, kept, out, old)
}

// lnsStream is the second PCG word of the large neighbourhood search's
// random stream (the first is Options.Seed).
const lnsStream = 0x6c6e73

// lnsQuickStream is the stream of the short search before the first
// branch and price probe: the one after the rounds' when there were three
// of them, kept when the rounds became six (the fourth round draws from it
// too, from another incumbent with larger neighbourhoods), so that the
// paths up to the fourth round stayed those measured before.
const lnsQuickStream = lnsStream + 3
