package solver

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
)

// Limits of the price-and-dive heuristic (diveAssign).
const (
	// diveCGIterations caps the master LP solves of the column generation
	// at one step of a dive.
	diveCGIterations = 30
	// divePricingNodes caps the branch-and-bound nodes of one pricing
	// problem in a dive (a heuristic: a pricing cut short only leaves a
	// column out).
	divePricingNodes = 4000
	// diveExactNodes is the number of nodes left at which a dive stops
	// fixing and solves the rest exactly, within diveExactSearchNodes
	// branch-and-bound nodes.
	diveExactNodes = 6
	// diveExactSearchNodes caps that search. Its improvements are sparse
	// and its cap mostly binds (on the 910 instances of seeds 0-9 and the
	// fresh blocks 4000, 5000, 7000, 8000, 19000 and 20000, the
	// deterministic dive's search of its last nodes ran to 200 000 nodes
	// on 174 of 317 instances, and its last improvement came before the
	// 20 000th node on 102 of them; yarn-20002's at the 52 990th,
	// 506 where its LP value is 508, the neighbourhood search then finding
	// the optimum at once). At 20 000 instead of 200 000 (work to the
	// proof, 10 s of work, the 213 instances that took over 0.1 s, three
	// Options.Seed each): proven 610 → 615 of 639, within 1 s 531 → 534,
	// geometric mean of the work 0.79 (identical 0.23, large 0.69,
	// huge-small 0.65, hetero-3r 0.92); on all 910 at one seed 0.93,
	// proven 901 → 902. yarn-20002, where CBC was sooner, 0.14 → 0.08 s
	// of work (CBC 0.07-0.08 s of wall clock). What the shorter search
	// loses is luck: hetero-3r-20006's found the optimum at its 183 561st
	// node (0.53 → 3.4-5.9 s), and large-7009's, which found nothing,
	// gave the quick neighbourhood search after it (a quarter of the work
	// so far) the time it needed (0.17 → 3.0 s at one seed of three).
	// Smaller caps on the dive's pricing (divePricingNodes 1000 or 2000)
	// were faster again in geometric mean (0.89 and 0.96 of the 20 000
	// cap's) but lost proofs (615 → 610, 611; large-7009 unproven at
	// every seed).
	diveExactSearchNodes = 20000
	// diveTop is the number of largest fractional columns among which a
	// randomised dive picks the one it rounds up.
	diveTop = 3
	// diveIntTol is how close to an integer a master value counts as one.
	diveIntTol = 1e-6
)

// diveAssign is a primal heuristic on the pattern formulation (colgen.go):
// price and dive. At each step it solves the LP relaxation of the master
// over what is still free (the supply s' left by the patterns fixed so
// far, the nodes m'_c of each class still without a pattern) by column
// generation, then fixes patterns: every column at y ≥ 1 gets ⌊y⌋ nodes of
// its class; when none is, the column of largest fractional y gets one
// node (rounded up). It stops when every node has a pattern, when nothing
// fits, or when the LP value of what is left plus the value fixed cannot
// beat incVal by one value unit (this dive cannot improve the incumbent).
// The last nodes (at most diveExactNodes) are solved together by the
// branch and bound, within diveExactSearchNodes nodes; more nodes left
// without a pattern (the dive stopped where nothing fits) are filled one
// by one (fillEachNode); every node is then topped up greedily
// (repairPath).
//
// The deterministic dive rounds on through those last nodes too, and its
// completion of them is the branch and bound's first incumbent. The search
// bounds them with the root's Lagrangian bounds, valid for any supply but
// loose for the little the fixed patterns leave, and often stops at its
// node cap below a completion the LP's own rounding finds (hetero-3r-8009:
// 392.0 of the last five nodes' 397.7 in 200 000 nodes, the cap then, 394.2
// from the rounding's start; the whole proven in 0.31 s of work instead of
// 1.10). Its best is never below that incumbent, and the search finds
// whatever it found before, sooner (the better incumbent prunes more of the
// same order of nodes). Only the deterministic dive: the rounding costs a
// few LP solves with their pricing (rounding without the pricing lost what
// it gained: yarn-7 0.47 → 2.9 s, hetero-3r-8009 0.31 → 4.2 s of work),
// which the randomised dives, many and cheap, are not given. Measured over
// three Options.Seed on the instances of seeds 0-9 and the fresh blocks
// 4000 and 5000 that took over 0.3 s (a 60 s limit, time to the proof in
// counted work, before the shares' planning horizon, workClock.share):
// yarn-7 proven in 0.47 s at every seed (before 1.4 and 1.1 s, and at seed
// 2 unproven at 60 s), many-resources-5 4.0 → 0.33 s, large-5003 11-15 →
// 1.8-3.5 s, hetero-3r-4007 16 → 7.4 s; the geometric mean of the work to
// the proof 0.83-0.95 times main's per block; what it costs: 15-25% more
// work on the easier hetero-3r instances (0.35-0.8 s), hetero-3r-5004 at
// two seeds of three (14-19 → 28 s), and hetero-3r-4008 unproven at two
// seeds (12-13 s of work at all three before). At the suite's 10 s limit,
// over two Options.Seed on the 68 instances of the fresh blocks 7000, 8000,
// 19000 and 20000 that took over 0.3 s: proven 127 → 128 of 136, within 1 s
// of work 71 → 91, the geometric mean of the work 0.70 (hetero-3r-19000 and
// large-7009, unproven before, in 0.53 and 0.17 s; large-7000 1.0-1.4 →
// 0.04 s); three proofs lost at one seed each: hetero-3r-8004 (5.5 s),
// yarn-19001 (0.44 s: the neighbourhood search stops one unit under the
// optimum) and large-20009 (0.56 s).
//
// Why: on the families where the search stalls a unit or a few below the
// LP bound (yarn, identical, hetero-3r), the LP bound rounded down is
// usually the optimum (the integer round-up property of cutting-stock
// masters), and the solutions that reach it are combinations of the LP's
// own patterns that neither per-node fills nor exchanges among a few nodes
// find; re-solving the LP after each fixing keeps the rest of the
// solution LP-optimal (Vanderbeck 2000; Sadykov et al. 2019, "Primal
// heuristics for branch and price").
//
// The dive starts from the columns of pool (those of the root LP) and the
// incumbent's patterns, and adds the columns it prices to pool.
//
// Pricing in a dive bounds its knapsacks with base (the tables of the
// values v, valid for every u ≤ v) and at most divePricingNodes nodes: a
// heuristic needs good columns, not proven ones, and the tables at the
// duals would cost a rebuild per LP solve. With rng set, the dive is
// randomised (a repeated dive explores other roundings): it fixes at most
// half the free nodes per step, the columns in random order, and rounds
// up one of the diveTop largest fractional columns. It returns the
// assignment (sorted node order) and its value, or nil when the dive was
// cut off or ctx ended, and the number of LP solves.
func diveAssign(ctx context.Context, m *model, sorted [][]int64, pool *columnPool, incumbent [][]int, bounds []*lagBound, incVal float64, rng *rand.Rand) ([][]int, float64, int) {
	base := bounds[0].tab
	n := len(m.dem)
	classes := classesOf(sorted)
	classOf := classOfNodes(sorted)
	for j, a := range incumbent {
		pool.add(classOf[j], a)
	}
	left := slices.Clone(m.supply)
	// tailFrom is where the patterns of the last nodes start in fixed
	// once the deterministic dive rounds on through them (−1: not yet),
	// and tailLeft the supply they had
	tailFrom, tailLeft := -1, []int(nil)
	free := classCounts(classes)
	var fixed []patternColumn
	fixedVal := 0.0
	fix := func(col patternColumn) {
		fixed = append(fixed, col)
		free[col.class]--
		for i, a := range col.a {
			left[i] -= a
		}
		fixedVal += m.patternValue(col.a)
	}
	fits := func(col patternColumn) bool { return free[col.class] > 0 && fitsSupply(col.a, left) }
	solves := 0
	u := make([]float64, n)
	for slices.Max(free) > 0 {
		if rest := sum(free); tailFrom < 0 && rest <= diveExactNodes && rest < len(sorted) {
			if rng != nil {
				break // the last nodes are solved exactly below
			}
			tailFrom, tailLeft = len(fixed), slices.Clone(left)
		}
		sol, err := solveMaster(ctx, m, left, free, pool)
		solves++
		for iter := 0; err == nil && iter < diveCGIterations; iter++ {
			for i := range u {
				u[i] = m.val[i] - math.Max(0, sol.RowDuals[i])
			}
			added := false
			for c, cl := range classes {
				if free[c] == 0 {
					continue
				}
				mu := math.Max(0, sol.RowDuals[n+c])
				a, _ := pricePattern(ctx, m, u, base, cl.cap, left, divePricingNodes)
				if a != nil && dot(u, a)-mu > cgReducedCostTol*math.Max(1, mu) {
					added = pool.add(c, a) || added
				}
			}
			if !added {
				break
			}
			sol, err = solveMaster(ctx, m, left, free, pool)
			solves++
		}
		if tailFrom >= 0 && (err != nil || ctx.Err() != nil || !m.canImprove(fixedVal+sol.Objective, incVal)) {
			break // the branch and bound below searches the last nodes anyway
		}
		if err != nil || ctx.Err() != nil {
			return nil, 0, solves
		}
		if !m.canImprove(fixedVal+sol.Objective, incVal) {
			// a heuristic cut-off: the restricted master's objective is
			// no bound, so it is not stepped to the value lattice
			return nil, 0, solves
		}
		// a randomised dive fixes at most half the free nodes at once,
		// the columns in random order
		quota, order := sum(free), make([]int, len(pool.cols))
		for k := range order {
			order[k] = k
		}
		if rng != nil {
			quota = max(1, quota/2)
			rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
		}
		progress := 0
		floorCopies(pool.cols, sol.Primal, order, func(col patternColumn) bool { return progress < quota && fits(col) },
			func(col patternColumn) { fix(col); progress++ })
		if progress == 0 {
			// the column of largest fractional y (a randomised dive: one
			// of the diveTop largest)
			var cands []int
			for k, col := range pool.cols {
				if sol.Primal[k] > diveIntTol && fits(col) {
					cands = append(cands, k)
				}
			}
			if len(cands) == 0 {
				break // the LP places nothing more that fits
			}
			slices.SortStableFunc(cands, func(a, b int) int { return -cmpFloat(sol.Primal[a], sol.Primal[b]) })
			pick := 0
			if rng != nil {
				pick = rng.IntN(min(diveTop, len(cands)))
			}
			fix(pool.cols[cands[pick]])
		}
	}
	// the patterns onto the nodes of their classes, the rest filled
	x := make([][]int, len(sorted))
	next := make(map[int]int) // patterns of each class placed so far
	byClass := make([][]int, len(classes))
	for j, c := range classOf {
		byClass[c] = append(byClass[c], j)
	}
	head, tail := fixed, []patternColumn(nil)
	if tailFrom >= 0 {
		head, tail, left = fixed[:tailFrom], fixed[tailFrom:], tailLeft
	}
	for _, col := range head {
		j := byClass[col.class][next[col.class]]
		next[col.class]++
		x[j] = slices.Clone(col.a)
	}
	var restIdx []int
	var restCaps [][]int64
	for j := range x {
		if x[j] == nil {
			restIdx = append(restIdx, j)
			restCaps = append(restCaps, sorted[j])
		}
	}
	deadline, _ := ctx.Deadline()
	var fill [][]int
	if len(restIdx) <= diveExactNodes {
		// the last nodes together, by the branch and bound (the root
		// bounds hold for any supply and any subset of the nodes)
		same := make([]bool, len(restCaps))
		for r := 1; r < len(restCaps); r++ {
			same[r] = slices.Equal(restCaps[r], restCaps[r-1])
		}
		srch := newSearch(ctx, m, restCaps, same, left, bounds)
		srch.deadline = deadline
		srch.nodeLimit = diveExactSearchNodes
		if tail != nil {
			srch.setIncumbent(onNodes(m, tail, restIdx, classOf))
		}
		srch.run()
		fill = srch.best
	} else {
		fill, _, _ = fillEachNode(ctx, m, restCaps, left, deadline, base)
	}
	for r, j := range restIdx {
		x[j] = slices.Clone(fill[r])
	}
	x = repairPath(m, sorted, x)
	return x, assignmentValue(m, x), solves
}

// onNodes places the patterns cols on the nodes idx (each on the first
// node of its class not yet taken; nodes left over hold nothing) and
// returns the assignment of idx in that order and its value.
func onNodes(m *model, cols []patternColumn, idx []int, classOf []int) ([][]int, float64) {
	x := make([][]int, len(idx))
	for r := range x {
		x[r] = make([]int, len(m.dem))
	}
	taken := make([]bool, len(idx))
	val := 0.0
	for _, col := range cols {
		for r, j := range idx {
			if !taken[r] && classOf[j] == col.class {
				taken[r] = true
				copy(x[r], col.a)
				val += m.patternValue(col.a)
				break
			}
		}
	}
	return x, val
}

func sum(v []int) int {
	t := 0
	for _, x := range v {
		t += x
	}
	return t
}
