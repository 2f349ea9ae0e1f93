package solver

import (
	"cmp"
	"context"
	"errors"
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
	if math.IsNaN(opts.Gap) || opts.Gap < 0 || opts.Gap >= 1 {
		return nil, invalid("gap", opts.Gap, "the relative gap tolerance must be in [0, 1)")
	}
	if opts.TimeLimit < 0 {
		return nil, invalid("time_limit", opts.TimeLimit, "must be ≥ 0 (0: no limit)")
	}
	if opts.WorkLimit < 0 {
		return nil, invalid("work_limit", opts.WorkLimit, "must be ≥ 0 (0: no limit)")
	}
	start := time.Now()
	budget := workBudgetOf(ctx, opts.TimeLimit)
	if opts.WorkLimit > 0 { // the shares of the work limit, whatever the wall clock
		budget = opts.WorkLimit
	}
	if opts.TimeLimit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, start.Add(opts.TimeLimit-timeLimitSlack(opts.TimeLimit)))
		defer cancel()
	}
	m := newModel(in)
	caps := nodeCaps(in)
	track := newTracker(m, start, opts)
	var (
		x     [][]int
		ub    float64
		stats Stats
	)
	switch {
	case len(m.dem) == 0: // nothing to place: the empty assignment is optimal
		x = make([][]int, len(caps))
		for j := range x {
			x[j] = []int{}
		}
	case method == MethodExact && opts.TimeLimit > 0:
		x, ub, stats = answerBy(ctx, start.Add(opts.TimeLimit-timeLimitSlack(opts.TimeLimit)), track,
			func(ctx context.Context) ([][]int, float64, Stats) {
				return exactAssign(ctx, m, caps, opts, budget, track)
			})
	case method == MethodExact:
		x, ub, stats = exactAssign(ctx, m, caps, opts, budget, track)
	case method == MethodPerNode:
		base := baseTables(m, caps, m.supply)
		deadline, _ := ctx.Deadline()
		x, stats.NodesExplored, stats.Stopped = perNodeAssign(ctx, m, caps, m.supply, deadline, base)
		ub, stats = heuristicBound(ctx, m, caps, x, base, opts, stats)
	case method == MethodFFDDP:
		x = ffdAssign(m, caps, m.supply)
		ub, stats = heuristicBound(ctx, m, caps, x, nil, opts, stats)
	}
	res := newResult(in, m, method, x, ub)
	res.Stats = stats
	res.Optimal = (method == MethodExact || len(m.dem) == 0) && stats.Stopped == "" && !m.canImprove(res.UpperBound, res.Objective)
	if res.Optimal {
		res.UpperBound, res.Gap = res.Objective, 0
	}
	res.ElapsedMS = float64(time.Since(start).Microseconds()) / 1000
	if track.report != nil {
		p := Progress{Elapsed: time.Since(start), NodesExplored: stats.NodesExplored, Phase: "done",
			Incumbent: res.Objective, Bound: res.UpperBound, Gap: relGap(res.UpperBound, res.Objective)}
		track.take() // the phases' own reports end here
		track.report(p)
	}
	return res, nil
}

// answerBy runs solve (the exact method's phases) in its own goroutine and
// returns its answer, or, if it has not answered by the time answer, the
// best assignment and bound it has published (tracker.publish) with
// Stopped = time_limit, and cancels it. Why: the phases stop at the time
// limit (less timeLimitSlack) and check it every few milliseconds of
// CPU, but on an oversubscribed machine the solve gets a small share of a
// core (measured: 5-20% with a load of 9 on 2 cores) and a few
// milliseconds of CPU between two checks become hundreds of milliseconds
// of wall clock: a 3 s solve answered up to 33% late, in every phase
// (heuristics, lp, b-and-p, dive, search). The answer itself needs only
// this goroutine to wake up. The abandoned phases stop at their next
// check; they no longer report progress.
func answerBy(ctx context.Context, answer time.Time, track *tracker, solve func(context.Context) ([][]int, float64, Stats)) ([][]int, float64, Stats) {
	type outcome struct {
		x     [][]int
		ub    float64
		stats Stats
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan outcome, 1)
	go func() {
		x, ub, stats := solve(ctx)
		done <- outcome{x, ub, stats}
	}()
	timer := time.NewTimer(time.Until(answer))
	defer timer.Stop()
	select {
	case o := <-done:
		return o.x, o.ub, o.stats
	case <-timer.C:
	}
	select { // an answer that came at the same time wins
	case o := <-done:
		return o.x, o.ub, o.stats
	default:
	}
	a := track.take()
	if a.x == nil { // nothing published yet: the first greedy is microseconds away
		o := <-done
		return o.x, o.ub, o.stats
	}
	bound := math.Min(a.bound, track.m.floorBound(track.m.patternValue(track.m.supply))) // π = v
	return a.x, math.Max(a.val, bound), Stats{NodesExplored: a.nodes, LPSolves: a.lpSolves, Stopped: StopTimeLimit, WorkMS: a.workMS}
}

// timeLimitSlack is how long before the time limit the phases stop: 0.5%
// of it, at most 50 ms. The phases check the clock every few
// milliseconds, but the result is built after they stop, and on a loaded
// machine a goroutine waits for a core; measured on the robustness suite
// with 1 s and 10 s limits (make ita-suite), stopping at the limit itself
// overran it by up to 2.6% (1 s) and 1.3% (10 s); the slack keeps the
// answer within the limit.
func timeLimitSlack(limit time.Duration) time.Duration {
	return min(limit/200, 50*time.Millisecond)
}

// workBudgetOf returns the work the exact method's phases share (see
// workClock; 0: no limit): the time limit's worth of work, a
// deterministic count, unless the caller's context ends sooner (the
// server's RPC deadline below the request's limit, or a deadline without
// a limit), whose wall-clock time left it then is, at the price of the
// path's determinism: phases sized for the longer limit left large-1
// unproven at a 1 s deadline where a 1 s limit proves it.
func workBudgetOf(ctx context.Context, limit time.Duration) time.Duration {
	budget := limit - timeLimitSlack(limit)
	if d, ok := ctx.Deadline(); ok && (limit <= 0 || time.Until(d) < budget) {
		budget = max(time.Until(d), time.Nanosecond)
	}
	return budget
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
	stats.LPSolves = lpStats.LPSolves
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
// optimality (or until ctx ends, or within opts.Gap) and returns x in
// input node order, the best proven bound and the statistics.
//
// 1. Incumbent: the best of FFD-DP (which ends the solve when it places
// the whole supply), per-node in input order and per-node in search order
// (largest nodes first; each node's search capped, quickFill), plus the
// rounding of the LP and the reduced-cost DP's shortest path, improved by
// large neighbourhood search (lns) unless the bounds already prove it
// optimal.
// 2. Bounds: Lagrangian bounds (see lagBound) for π = 0 (sum of single-node
// knapsack DPs), π = v (total value of the supply) and, unless
// Options.NoLP or those two (or, on one node, its completed fill) already
// prove the incumbent, π = the duals of the LP relaxation of the pattern
// formulation, solved by column generation with solver/lp, with the
// exact single-node maxima of its last pricing; then the reduced-cost DP
// (improveAndProve).
// 3. Depth-first branch and bound (search), which stops as soon as no open
// subtree can beat the incumbent by one value unit (or by the gap).
//
// Every phase checks ctx, whose deadline is the time limit and which ends
// at Options.WorkLimit's work; track reports progress and holds the
// incumbent and the best proven bound. The phases' budgets are shares of
// budget's worth of counted work (workClock).
func exactAssign(ctx context.Context, m *model, caps [][]int64, opts Options, budget time.Duration, track *tracker) ([][]int, float64, Stats) {
	clk := newWorkClock(budget)
	clk.report, _ = ctx.Value(workReportKey{}).(workReport)
	defer clk.stop()
	ctx = withWorkClock(ctx, clk)
	if opts.WorkLimit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = clk.withinCause(ctx, opts.WorkLimit, errWorkLimit)
		defer cancel()
	}
	track.clk = clk
	x, val, stats := exactPhases(ctx, m, caps, opts, clk, track)
	stats.WorkMS = clk.ms()
	return x, val, stats
}

// exactPhases runs exactAssign's phases on the work clock clk.
func exactPhases(ctx context.Context, m *model, caps [][]int64, opts Options, clk *workClock, track *tracker) ([][]int, float64, Stats) {
	var stats Stats
	deadline, _ := ctx.Deadline()
	order, sorted, same := sortNodes(m, caps)
	track.setPhase("heuristics")
	bestX := ffdAssign(m, caps, m.supply)
	bestVal := math.Inf(-1)
	track.pub.mu.Lock()
	track.pub.order = order
	track.pub.mu.Unlock()
	tryIncumbent := func(x [][]int) {
		if v := assignmentValue(m, x); v > bestVal {
			bestX, bestVal = x, v
			track.publish(x, v, false)
		}
		track.incumbent(bestVal)
	}
	tryIncumbent(bestX)
	// Everything fits: the greedy places the whole supply, whose value
	// (the π = v bound) no assignment exceeds; the DP tables, the costliest
	// part of a small instance, are not built.
	if all := m.floorBound(m.patternValue(m.supply)); !m.canImprove(all, bestVal) {
		track.proven(all)
		return bestX, bestVal, stats
	}
	if len(sorted) == 1 {
		// one node, one knapsack: the count search with cheap bounds
		// first (quickOneNode), the full tables only if it needs more
		x, explored, proven := quickOneNode(ctx, m, sorted, deadline)
		stats.NodesExplored += explored
		tryIncumbent(x)
		if proven {
			track.proven(bestVal)
			return bestX, bestVal, stats
		}
	}
	base := baseTables(m, sorted, m.supply)
	addTableWork(ctx, base)
	// the per-node fill in search order, then in input order unless the
	// first was costly (see fillSecondNodes) or stopped a node's search at
	// fillNodeCap; on a tie the input order's stays the incumbent, as when
	// it ran first. The second fill, and a single node's fill (completed,
	// it is the optimum, which the cheap bound below uses), are not capped:
	// the second runs only where the first was cheap, and capped it loses
	// the reuse of a fill wherever a node reaches the cap (large-4001: 180k
	// → 187k nodes)
	fill := fillEachNode
	if len(sorted) > 1 {
		fill = quickFill
	}
	xs, ex, stopped := fill(ctx, m, sorted, m.supply, deadline, base)
	stats.NodesExplored += ex
	if len(sorted) > 1 && ex <= fillSecondNodes*int64(len(sorted)) && stopped == "" {
		xp, ex, _ := fillEachNode(ctx, m, caps, m.supply, deadline, base)
		stats.NodesExplored += ex
		tryIncumbent(xp)
	}
	tryIncumbent(unpermuteRows(xs, order))
	track.addNodes(stats.NodesExplored)

	// The cheap bounds first (π = 0, π = v, and on a single node the
	// completed fill, which is the optimum): where they prove the
	// incumbent (everything fits; one node) the column generation, most of
	// the time of a small instance, is skipped.
	bounds := []*lagBound{{tab: base}, {pi: m.val}}
	cheap := math.Inf(1)
	for _, b := range bounds {
		cheap = math.Min(cheap, lagValue(b, sorted, m.supply))
	}
	if len(sorted) == 1 && stopped == "" {
		cheap = math.Min(cheap, assignmentValue(m, xs))
	}
	cheap = m.floorBound(cheap)
	track.proven(cheap)
	columns := newColumnPool()
	if m.canImprove(cheap, bestVal) && !withinGap(opts.Gap, cheap, bestVal) {
		track.setPhase("lp")
		var lpStats lpStats
		bounds, lpStats = rootBounds(ctx, m, sorted, permuteRows(bestX, order), base, opts)
		stats.LPSolves = lpStats.LPSolves
		track.addLPSolves(lpStats.LPSolves)
		if lpStats.columns != nil {
			columns = lpStats.columns
		}
		if lpStats.rounded != nil {
			tryIncumbent(unpermuteRows(lpStats.rounded, order))
		}
		m.lattice = newValueLattice(m, sorted, lpBoundOf(bounds))
	}

	s := newSearch(ctx, m, sorted, same, m.supply, bounds)
	s.deadline = deadline
	s.gap = opts.Gap
	s.whole = true
	s.publish = track
	s.setIncumbent(permuteRows(bestX, order), bestVal)
	result := func() [][]int { return unpermuteRows(s.best, order) }
	root := m.wholeBound(math.Min(cheap, s.rootBound()))
	track.proven(root)
	finish := func(ub float64) ([][]int, float64, Stats) {
		stats.Stopped = s.stopped
		if s.stopped == "" && ctx.Err() != nil {
			stats.Stopped = stopReason(ctx)
		}
		if stats.Stopped == "" && m.canImproveWhole(ub, s.bestVal) {
			stats.Stopped = StopGap
		}
		// ub may come raw from the branch and price (a subtree it closed
		// keeps its bound unstepped): the result's bound is stepped like
		// the stop test above, or a proof it made would read as unproven
		return result(), math.Max(m.wholeBound(ub), s.bestVal), stats
	}
	if !m.canImproveWhole(root, s.bestVal) || withinGap(opts.Gap, root, s.bestVal) || ctx.Err() != nil {
		return finish(root)
	}
	track.setPhase("improve")
	root, bp := improveAndProve(ctx, m, sorted, base, bounds, columns, s, root, opts.Seed, clk, &stats, track)
	if !m.canImproveWhole(root, s.bestVal) || withinGap(opts.Gap, root, s.bestVal) || ctx.Err() != nil {
		return finish(root)
	}
	if bp != nil {
		// the branch and price closed subtrees in its first probe: it
		// goes on, now with the improved incumbent, for a share of the
		// work left; the count search gets the rest
		root = math.Min(root, resumeBranchPrice(ctx, bp, clk, bpLateShare, bpLateCap, &stats, track))
		if !m.canImproveWhole(root, s.bestVal) || withinGap(opts.Gap, root, s.bestVal) || ctx.Err() != nil {
			return finish(root)
		}
	}
	track.setPhase("search")
	s.track = track
	track.addNodes(0)
	open := s.run()
	stats.NodesExplored += s.explored
	track.addNodes(s.explored)
	ub := math.Max(s.bestVal, s.gapOpen)
	if s.stopped != "" {
		ub = math.Max(ub, m.wholeBound(open))
	}
	return finish(math.Min(root, ub))
}

// bpShare is the share of the work left that the branch and price's
// probe gets after the first dive (bpCap without a time limit); where it
// is not hopeless, it goes on at once with bpEarlyShare of the work left
// (bpCap), and again before the count search with bpLateShare
// (bpLateCap). Why at once: on hetero-3r-3 and -7 the probe stopped at
// its size caps with the optimum already the incumbent, and the late
// phase closed the tree in 0.1-0.2 s, but only after 8 s of large
// neighbourhood search, dives and DP steps that could not improve it.
const (
	bpShare      = 1.0 / 8
	bpCap        = time.Second
	bpEarlyShare = 1.0 / 4
	bpLateShare  = 3.0 / 4
	bpLateCap    = 10 * time.Second
)

// pnbShare is the share of the work left that one run of the integer
// master (masterIP) may take, pnbCap without a time limit.
const (
	pnbShare = 1.0 / 8
	pnbCap   = time.Second
)

// shareContext returns ctx ending after share of the work left before
// the time limit (after limit without one; never without either).
func shareContext(ctx context.Context, clk *workClock, share float64, limit time.Duration) (context.Context, context.CancelFunc) {
	if !clk.limited() && limit == 0 {
		return context.WithCancel(ctx)
	}
	return clk.within(ctx, clk.share(share, limit))
}

// fillSecondNodes is the search nodes per cluster node above which the
// per-node fill in search order is costly enough that the fill in input
// order is left out: there each node's fill searches thousands of nodes
// (YARN-like, 10-20 shapes and plenty of tasks, the bound of the full
// supply's table loose as the supply shrinks), and the LP's rounding and
// the first dive beat both fills. Both still run on every other family,
// where the input order's fill steers hetero-3r-7 to its proof (skipping
// it everywhere: 68 ms → 3.2 s there, hetero-3r-6 unproven). Measured:
// yarn-2 0.40 → 0.33 s of CPU, fresh seeds yarn-4003/4004/4005 0.72/0.91/0.45
// → 0.56/0.50/0.30 s; no other instance of seeds 0-9 or 4000-4009 skips it.
const fillSecondNodes = 1000

// oneNodeFirstNodes and oneNodeQuickNodes cap the two stages of
// quickOneNode's search; beyond them the full tables are built. With
// each resource's table alone, 2 of the single-node family's 10 instances
// needed millions of nodes (and a few dozen with the full tables, 17-44
// ms to build); with the surrogate all 10 finish within 16384 nodes (the
// largest, single-node-0, in 6625: 4096 sent it to the full tables, 60 ms
// instead of 4 ms). The first stage, without the surrogate, is worth
// about what the surrogate's LP and table cost (half a millisecond, some
// 256 search nodes): what finishes there saves that (16 of 40 fresh
// instances, seeds 9300-9339), what does not spends at most that much
// more. Measured on those 40 against the search with one stage of 4096
// nodes and each resource's tables alone, in the same run: CPU time's
// geometric mean 1.23 → 0.70 ms, largest 194 → 75 ms; at least 1.5 times
// slower on 6 (0.4-0.7 → 1.2-1.6 ms, and two that need about 30 000
// nodes even with the surrogate before the full tables, 34-41 → 53-75
// ms), faster on 14.
const (
	oneNodeFirstNodes = 256
	oneNodeQuickNodes = 16384
)

// useBranchAndPrice enables the branch and price (bp.go) before the count
// search; tests and ablations switch it off.
var useBranchAndPrice = true

// stopReason says why ctx ended: the work limit (its cause, also in the
// contexts below it), the time limit (a deadline), or a cancellation.
func stopReason(ctx context.Context) StopReason {
	switch {
	case errors.Is(context.Cause(ctx), errWorkLimit):
		return StopWorkLimit
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return StopTimeLimit
	}
	return StopCanceled
}

// improveAndProve alternates large neighbourhood search on the incumbent
// of s with the reduced-cost DP (costDPBound), which lowers the bound one
// value unit at a time while it proves that nothing reaches it. Where the
// DP finds a solution of its relaxation at the bound, that solution, made
// feasible (repairPath), becomes a candidate incumbent: on instances whose
// rounded LP bound is the optimum it is often the optimum itself, which
// neither the per-node fills nor local exchanges reliably find
// (hetero-3r). A first pass of DP steps, where the gap exceeds a couple
// of units (dpFirstGap), gets a small share of the work
// (dpFirstShare): the steps are cheap while the bound is near the LP
// value (small budgets, a few patterns per node), and a DP that cannot
// finish then must not delay the LNS, which closes most gaps in
// milliseconds (identical, large). Then each LNS round (larger
// neighbourhoods than the one before, until the value reaches the bound
// or stalls) follows the first search and every step of the DP that
// lowered the bound (up to lnsRounds). It returns the bound; the incumbent
// of s is updated in place.
func improveAndProve(ctx context.Context, m *model, sorted [][]int64, base *tables, bounds []*lagBound, columns *columnPool, s *search, root float64, seed uint64, clk *workClock, stats *Stats, track *tracker) (_ float64, bp *branchPrice) {
	lb := lpBoundOf(bounds) // the LP duals' bound, the one the DP needs
	done := func() bool {
		return !m.canImproveWhole(root, s.bestVal) || withinGap(s.gap, root, s.bestVal) || ctx.Err() != nil
	}
	reached := false // the DP found a relaxed solution at the bound
	// stepIn runs one DP step within ctx with at most share of the work
	// left; it reports whether the DP completed and lowered the bound
	// (step: within the solve's ctx).
	stepIn := func(ctx context.Context, share float64) bool {
		// prove z ≤ target, one unit (dpStep) below the bound
		target := s.bestVal
		if m.unit > 0 {
			target = math.Max(s.bestVal, m.wholeBound(root-dpStep(m, root-s.bestVal)))
		}
		if target >= root {
			// a guard: a step below the bound that rounded back up to it
			// (a rounding slack of a unit; boundSlack keeps it under half
			// a unit up to exactUnits and rounds nothing beyond) could
			// never lower it, and the passes of steps would not end
			return false
		}
		track.setPhase("cost-dp")
		ub, path, ok := costDPWithin(ctx, m, sorted, lb, target, clk, share)
		if !ok {
			return false
		}
		if path != nil {
			x := repairPath(m, sorted, path)
			s.setIncumbent(x, assignmentValue(m, x))
			track.incumbent(s.bestVal)
		}
		if ub = m.wholeBound(ub); m.canImproveWhole(ub, target) {
			root = math.Min(root, ub) // a relaxed solution reaches ub
			track.proven(root)
			reached = true
			return false
		}
		root = math.Min(root, target)
		track.proven(root)
		return true
	}
	step := func(share float64) bool { return stepIn(ctx, share) }
	// a quick pass of DP steps first, each within the work done so far
	// (at most dpQuickShare of the work left), while they complete: where
	// the DP is cheap next to the LP and the dives, it proves the bound
	// down to the optimum, or finds it, before the first dive's 1/16 of
	// the work (many-resources: a dive's pricing is slow with 21 grids per
	// bound, the DP over the bound's few patterns quick: on seeds 0-9
	// many-resources-1, -2 and -7 0.9, 0.6 and 1.6 s → 70-160 ms of CPU);
	// where it is not (identical, hetero-3r: the first step does not
	// complete), it costs at most the work done before it (each step may
	// take the work done before it, the earlier steps' included, so k
	// steps that complete may cost up to 2^k − 1 times the work before
	// the pass, within dpQuickShare of the work left each: they stop at
	// the first that does not complete)
	for lb != nil && m.unit > 0 && root-s.bestVal > dpFirstGap*m.unit && !done() {
		quick, cancel := clk.within(ctx, min(clk.now(), clk.share(dpQuickShare, time.Hour)))
		ok := stepIn(quick, 1)
		cancel()
		if !ok {
			break
		}
	}
	// then one deterministic dive (it finds the optima at the rounded
	// LP bound in milliseconds where they exist: large, identical), the
	// randomised ones after the first LNS round
	if lb != nil && !done() {
		dive(ctx, m, sorted, s, bounds, columns, root, seed, 0, 1, dpFirstShare, clk, stats, track)
	}
	// quickLNS runs a short large neighbourhood search before the first
	// branch and price probe (a quarter of the work so far, at most
	// lnsQuickShare of the work left under a time limit; without one, until
	// it stalls or reaches the target): where the dive left a gap of a few
	// units the LNS often closes it in milliseconds, and the probe then
	// prunes with the optimum (hetero-3r-2, huge-small-1: the probe ran
	// 2.4 s with the dive's incumbent, then the LNS found the optimum in
	// 50-60 ms; on seeds 0-9 of the suite 123 → 127 instances within 1 s
	// of CPU, on the fresh seeds 4000-4009 119 → 120; it changes the
	// path where the later LNS found the optimum: large-4003 0.8 → 1.5 s)
	quickLNS := func() {
		if done() {
			return
		}
		l := newLNS(m, sorted, m.supply, bounds, s.best, rand.New(rand.NewPCG(seed, lnsQuickStream)))
		l.track = track
		quick, cancel := clk.within(ctx, min(clk.now()/4, clk.share(lnsQuickShare, time.Hour)))
		track.setPhase("lns")
		l.run(quick, root)
		cancel()
		s.setIncumbent(l.x, l.val)
		stats.NodesExplored += l.explored
		track.addNodes(l.explored)
		track.setPhase("improve")
	}
	// probe runs a new branch and price probe where none is under way
	// and the incumbent has improved since the last one: it prunes with
	// the incumbent, and a probe that looked hopeless with a worse one
	// often closes the tree with a better one (hetero-3r-2: hopeless with
	// 2626.4 after the first dive, closed in 0.2 s with the optimum
	// 2635.5 that the LNS found). It goes on with the tree the last
	// hopeless probe left (its subtrees' bounds hold whatever the
	// incumbent; the better one prunes them) instead of evaluating the same
	// first subtrees again, so that it reaches the levels where the bound
	// starts falling: hetero-3r-5004's at the 12th subtree, then every
	// second one (proven in 7.3 s where each new probe stopped at the 8th;
	// seeds 0-9 and 4000-8000 otherwise as before, hetero-3r-8001 1.4 →
	// 2.1 s and large-8008 1.7 → 3.3 s slower, huge-small-4007 and -4009
	// faster).
	probedAt := math.Inf(-1)
	var probing *branchPrice // the probes' tree, until one is not hopeless
	probe := func() {
		if lb == nil || done() || !useBranchAndPrice || bp != nil || s.bestVal <= probedAt {
			return
		}
		probedAt = s.bestVal
		if probing == nil {
			probing = newBranchPrice(m, sorted, base, columns, s, root)
		}
		// bpShare of the work left (bpCap without a time limit)
		ub, hopeless := runBranchPrice(ctx, probing, true, clk, bpShare, bpCap, stats, track)
		root = math.Min(root, ub)
		if !hopeless {
			bp, probing = probing, nil
			if !done() {
				// the probe closed subtrees, or lowered the bound, and
				// stopped at its size caps: it goes on at once for
				// bpEarlyShare of the work left
				root = math.Min(root, resumeBranchPrice(ctx, bp, clk, bpEarlyShare, bpCap, stats, track))
			}
		}
		track.setPhase("improve")
	}
	quickLNS()
	probe()
	// the integer master over the columns generated so far (pnb.go), again
	// whenever the pool has grown by half since; it improves the incumbent
	// where many nodes must change at once (hetero-3r-4000: 2923-2925 →
	// 2927.6 of the LP bound 2928, where CBC stopped at 2925.4)
	pooled := 0
	integerMaster := func() {
		if lb == nil || done() || 2*len(columns.cols) < 3*pooled {
			return
		}
		pooled = len(columns.cols)
		track.setPhase("master-ip")
		ipCtx, cancel := shareContext(ctx, clk, pnbShare, pnbCap)
		// the incumbent's patterns join the pool's (pnb.go), where they add any
		cols := withPatternsOf(sorted, columns, s.best)
		x, val, nodes := masterIP(ipCtx, m, sorted, cols, s.bestVal, root, pnbNodes, pnbStall)
		if x == nil && len(cols) > len(columns.cols) && ipCtx.Err() == nil {
			// nothing with the incumbent's patterns: again over the pool
			// alone, within the same share
			var more int
			x, val, more = masterIP(ipCtx, m, sorted, columns.cols, s.bestVal, root, pnbNodes, pnbStall)
			nodes += more
		}
		cancel()
		stats.NodesExplored += int64(nodes)
		stats.LPSolves += nodes // one LP solve per subtree
		track.addLPSolves(nodes)
		track.addNodes(int64(nodes))
		if x != nil {
			s.setIncumbent(x, val)
			track.incumbent(s.bestVal)
		}
		track.setPhase("improve")
	}
	// the first pass only where the gap is more than a couple of units:
	// a gap of one or two the LNS usually closes at once
	for lb != nil && m.unit > 0 && root-s.bestVal > dpFirstGap*m.unit && !done() && step(dpFirstShare) {
	}
	// closeGap runs DP steps with a small share while the gap is at
	// most dpFirstGap units, once per incumbent: there the incumbent is
	// often the optimum, which no heuristic can improve, and a DP step
	// near the bound is cheap (many-resources-7: the LNS reached the
	// optimum 2055 under the bound 2056 and went on for 3 s, then the
	// dives for 1.4 s, before a DP step proved it in 13 ms)
	closedAt := math.Inf(-1)
	closeGap := func() {
		for lb != nil && m.unit > 0 && !reached && !done() && s.bestVal > closedAt && root-s.bestVal <= dpFirstGap*m.unit {
			closedAt = s.bestVal
			if step(dpFirstShare) {
				closedAt = math.Inf(-1) // a lower bound: again if the gap is still open
			}
		}
	}
	round := 0
	// improve runs a round of the large neighbourhood search, after
	// closeGap where the gap is already a unit or two: the search would
	// pause there only on an improvement of its own, and from an
	// incumbent that is the optimum there is none (yarn-7009: the first
	// dive found the optimum 8506 under the bound 8507, then the round ran
	// 3 s to its stall limit before the integer master, and two DP steps
	// proved it; with closeGap first, proven at 0.66 s of work instead of
	// 4.2, HiGHS 3.3 s). On seeds 0-9 and the 95 instances of the fresh
	// blocks 4000-20000 that took over 0.3 s (225, 10 s limit): 15 paths
	// changed, none slower to its proof (many-resources-8008 1.28 →
	// 0.10 s, hetero-3r-20009 1.35 → 0.72 s), within 1 s 192 → 195.
	improve := func() {
		if round == lnsRounds || done() {
			return
		}
		if closeGap(); done() {
			return
		}
		l := newLNS(m, sorted, m.supply, bounds, s.best, rand.New(rand.NewPCG(seed, lnsStream+uint64(round))))
		l.size = lnsMaxSize + 2*round
		l.track = track
		l.clk = clk
		round++
		lnsCtx, cancel := shareContext(ctx, clk, lnsShare, 0)
		defer cancel()
		for {
			if m.unit > 0 {
				l.pauseAt = root - m.unit // pause where a DP step may prove it
			}
			track.setPhase("lns")
			l.run(lnsCtx, root)
			s.setIncumbent(l.x, l.val)
			if !l.paused {
				break
			}
			closeGap()
			if l.idle {
				probe()
			}
			if done() || lnsCtx.Err() != nil {
				break
			}
			if s.bestVal > l.val {
				l.adopt(s.best) // found during the pause: go on from it
			}
		}
		stats.NodesExplored += l.explored
		track.addNodes(l.explored)
	}
	improve()
	// after the first LNS round: run before it (or before the DP's first
	// pass), it found optima that the LNS or the DP find as fast, and
	// where it found nothing its 0.5-1 s delayed the proof (same-run on
	// hetero-3r, yarn, huge-small, many-resources: hetero-3r-9 1.3 → 6.8 s,
	// huge-small-1 0.8 → 3.6 s, many-resources-7 1.1 → 6.7 s)
	integerMaster()
	// a gap the integer master left at a unit or two: a DP step first,
	// then the probe (live-cluster-20002: the master found the optimum 231
	// under the bound 231.5 at 0.03 s, then the probe took 0.77 s and 1 200
	// LP solves to prove it; with the DP step first it is proven at 0.03 s,
	// 15 ms of work; CBC 0.021 s). On seeds 0-9 and
	// the fresh blocks 4000, 5000, 7000, 8000 and 19000 (780 instances)
	// one other path changed (hetero-3r-19007, 0.63 → 0.55 s); the
	// second closeGap acts only where the probe improved the incumbent
	closeGap()
	probe()
	closeGap()
	if lb != nil && !done() {
		dive(ctx, m, sorted, s, bounds, columns, root, seed, 1, diveTries, diveShare, clk, stats, track)
	}
	integerMaster()
	probe()
	for lb != nil && !reached && !done() && step(dpShare) {
		improve()
	}
	for round < lnsRounds && !done() {
		improve()
	}
	probe()
	return root, bp
}

// resumeBranchPrice goes on with the branch and price bp (without the
// probe's caps) for share of the work left (limit without a time limit)
// and returns its bound.
func resumeBranchPrice(ctx context.Context, bp *branchPrice, clk *workClock, share float64, limit time.Duration, stats *Stats, track *tracker) float64 {
	ub, _ := runBranchPrice(ctx, bp, false, clk, share, limit, stats, track)
	return ub
}

// runBranchPrice runs bp (as a probe or not) for share of the work left
// before deadline (limit without one) and returns its bound and whether
// it looked hopeless.
//
// Not as a probe and under a time limit, it runs in rounds of share of
// the planned work left (workClock.share, at most planHorizon) and goes
// on with another round while its best open bound fell in the last one,
// up to share of all the work left: a tree whose bound falls is closing
// the gap and is worth the long limit, one whose bound stays is not.
// Under a 1-minute limit hetero-3r-4007's early rounds lower the bound from
// 3690.5 to 3688.9 in 3.2 s, then it stays 3688.9 (the optimum, which the
// large neighbourhood search then finds): proven in 9.3 s of work, where
// one run of a quarter of the work left took 16.6 s and one round alone
// 24.4 s (the late round proved it only after the other phases' turn).
func runBranchPrice(ctx context.Context, bp *branchPrice, probe bool, clk *workClock, share float64, limit time.Duration, stats *Stats, track *tracker) (float64, bool) {
	track.setPhase("b-and-p")
	if probe || !clk.limited() {
		bpCtx, cancel := shareContext(ctx, clk, share, limit)
		defer cancel()
		ub, _, hopeless := bp.run(bpCtx, probe, stats, track)
		track.proven(ub)
		return ub, hopeless
	}
	end := clk.now() + clk.shareOfAll(share)
	for {
		top := bp.top
		roundCtx, cancel := clk.within(ctx, min(clk.share(share, limit), end-clk.now()))
		ub, closed, _ := bp.run(roundCtx, false, stats, track)
		cancel()
		track.proven(ub)
		if closed || ctx.Err() != nil || clk.now() >= end || bp.top >= top {
			return ub, false
		}
	}
}

// lpBoundOf returns the LP duals' bound of bounds (the last, with both
// prices and tables), or nil.
func lpBoundOf(bounds []*lagBound) *lagBound {
	if b := bounds[len(bounds)-1]; b.pi != nil && b.tab != nil {
		return b
	}
	return nil
}

// dive runs the dives from..to−1 of the price-and-dive heuristic
// (diveAssign; dive 0 deterministic, the others randomised) from the
// incumbent of s and the LP's columns, with at most share of the work
// left, until one reaches the bound root, and installs what they find.
func dive(ctx context.Context, m *model, sorted [][]int64, s *search, bounds []*lagBound, columns *columnPool, root float64, seed uint64, from, to int, share float64, clk *workClock, stats *Stats, track *tracker) {
	ctx, cancel := shareContext(ctx, clk, share, 0)
	defer cancel()
	track.setPhase("dive")
	for try := from; try < to && ctx.Err() == nil && m.canImproveWhole(root, s.bestVal); try++ {
		var rng *rand.Rand // dive 0 is deterministic, the others random
		if try > 0 {
			rng = rand.New(rand.NewPCG(seed, diveStream+uint64(try)))
		}
		x, val, solves := diveAssign(ctx, m, sorted, columns, s.best, bounds, s.bestVal, rng)
		stats.LPSolves += solves
		track.addLPSolves(solves)
		if x != nil {
			s.setIncumbent(x, val)
			track.incumbent(s.bestVal)
		}
	}
	track.setPhase("improve")
}

// The randomised dives after the first LNS round may take diveShare of
// the work left, up to dive diveTries−1 (the deterministic dive 0 before
// it gets dpFirstShare).
const (
	diveShare = 1.0 / 4
	diveTries = 8
	// diveStream is the second PCG word of the randomised dives.
	diveStream = 0x64697665
)

// Shares of the work left that one DP step may take: the first pass, and
// the steps between LNS rounds. Without a time limit the first pass gets
// dpFirstCap.
const (
	dpFirstShare = 1.0 / 16
	dpShare      = 1.0 / 4
	dpFirstCap   = 200 * time.Millisecond
	// dpQuickShare caps each step of the quick pass before the first dive.
	dpQuickShare = 1.0 / 128
	// dpFirstGap is the gap, in value units, above which the first pass runs.
	dpFirstGap = 2
	// dpStepsPerGap and dpLargeGap: a DP step proves the bound one unit
	// lower, or 1/dpStepsPerGap of the gap lower where the gap is at
	// least dpLargeGap units (dpStep).
	dpStepsPerGap = 64
	dpLargeGap    = 4096
)

// dpStep is how far below the bound one step of the reduced-cost DP aims
// (improveAndProve): one value unit while the gap is under dpLargeGap
// units, else gap/dpStepsPerGap, so that k steps shrink the gap by a
// factor (1 − 1/dpStepsPerGap)^k rather than by k units. Measured before:
// with the unit 2⁻¹⁰ (weights 1/1024, demands counted in bytes) a 4-node
// instance's gap was 10⁸ units; every one-unit step completed in about
// 40 µs, so the pass of steps, which stops only at the first that does
// not complete, ran 72 000 of them in 3 s and, without a time limit, did
// not end in 10 minutes; now it proves the optimum in 0.15 s. A larger
// step proves more per step with a larger budget (L − target); one that
// cannot finish stops the pass as before. The suite's gaps at a DP step
// stay under 256 units (a run of the whole suite: 1/64 of the gap
// exceeded a unit twice, hetero-3r-3 and -5), so its paths are unchanged.
func dpStep(m *model, gap float64) float64 {
	if units := gap / m.unit; units >= dpLargeGap {
		return math.Floor(units/dpStepsPerGap) * m.unit
	}
	return m.unit
}

// lnsShare gives the large neighbourhood search at most half of the
// work left, so that the branch and bound, which alone improves the
// bound, keeps the other half.
const lnsShare = 1.0 / 2

// lnsQuickShare caps the short LNS before the first branch and price
// probe.
const lnsQuickShare = 1.0 / 64

// costDPWithin runs costDPBound with at most share of the work left
// (dpFirstCap for the first pass without a time limit), so that a DP
// which cannot prove its target leaves time to the rest.
func costDPWithin(ctx context.Context, m *model, sorted [][]int64, lb *lagBound, target float64, clk *workClock, share float64) (float64, [][]int, bool) {
	limit := time.Duration(0)
	if share < dpShare {
		limit = dpFirstCap
	}
	ctx, cancel := shareContext(ctx, clk, share, limit)
	defer cancel()
	return costDPBound(ctx, m, sorted, lb, target, clk)
}

// lagValue returns L(π) = Σ_t π_t s_t + Σ_j max-pattern bound of node j.
func lagValue(b *lagBound, nodes [][]int64, supply []int) float64 {
	v := 0.0
	for t, sup := range supply {
		v += b.piOf(t) * float64(sup)
	}
	for _, c := range nodes {
		v += b.rootTerm(c)
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
	rounded  [][]int     // an assignment from rounding the LP (search node order), or nil
	columns  *columnPool // the columns the LP generated (price and dive starts from them)
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
