package solver

import (
	"container/heap"
	"context"
	"math"
	"slices"

	"github.com/optd/optd/solver/lp"
)

// Price and branch: the integer master over the generated columns.
//
// The column generations (the root LP, the dives, the branch and price)
// leave in their pool the patterns that were LP-optimal somewhere; the
// restricted master
//
//	max Σ_c Σ_a v(a)·y_ca
//	s.t. Σ_a y_ca ≤ m_c,  Σ_c Σ_a a_i·y_ca ≤ s_i,  y_ca ≥ 0 integer,
//
// over those columns alone (colgen.go's master with integral y) is a small
// integer program whose solutions are assignments, and its optimum is
// often a better incumbent than the dives and the exchanges of a few nodes
// find: on hetero-3r-4000, 275 columns of 47 rows after the heuristics
// had stopped at 2923.7-2925.1, CBC's optimum of the master was 2927.6
// against the LP bound 2928 (Sadykov et al. 2019 call this the restricted
// master heuristic). improveAndProve runs it first with the incumbent's
// patterns added and, where that finds nothing, over the pool alone: the
// pool holds what the LPs priced, the incumbent what the large
// neighbourhood search built node by node, often patterns that no LP
// priced, and the master can recombine the two (its optimum is never
// below the incumbent's value). Measured on hetero-3r-4000 (Options.Seed
// 0, 10 s limit): over the pool alone, 270 columns, 1019 subtrees found
// nothing above the incumbent 2924.9 (the search needed 2802 to reach
// 2927.6); with the incumbent's patterns, 2927.6 at the 277th subtree
// (CBC stopped at 2925.4 on the compact model, HiGHS at 2927.3 after 120
// s); hetero-3r-5004 3761.3 → 3761.4, the optimum. The pool's master
// stays as the fallback: the extra columns change the LP's path, and
// alone they lost the optimum 2383 that the pool's master finds on
// many-resources-5 with Options.Seed 1, 3 and 7 (make ita-repeat: 11 → 8
// of 12 proven). Where the pool already holds every pattern of the
// incumbent the master runs once, over the pool, as before (run twice
// there, the same search cost 0.15-0.25 s more on hetero-3r-5,
// hetero-3r-4009 and live-cluster-4006); where it does not and neither
// run finds anything, the second costs up to pnbStall more subtrees
// (many-resources-5004 and -5005: 1000 more, within 1/8 of the work
// left as before). masterIP solves it with the project's own LP-based
// branch and bound: best first with plunging, each subtree's LP
// re-solved from the last basis (lp.Model), branching on the column of
// largest fractional part (y ≥ ⌈y⌉ first: a dive that fixes patterns;
// y ≤ ⌊y⌋ waits in the queue), pruned where the LP rounded down to the value unit cannot
// beat the incumbent. The restricted master's bound is no bound of the
// instance (columns are missing), so it only finds incumbents.

// pnbNodes caps the subtrees of one masterIP run; it stops earlier, after
// twice the subtrees that found its last incumbent plus pnbStall. Measured
// on hetero-3r (seeds 0-9 and 4000-4009), yarn, large and many-resources,
// the runs that improved the incumbent found their first better one after
// 30-954 subtrees but one (2863), and their last after 30-3936 (0.01-1 s);
// a run that finds nothing costs 0.3-0.7 ms a subtree.
const (
	pnbNodes = 20000
	pnbStall = 1000
)

// masterIP solves the integer master over the columns cols (a pool's,
// with withPatternsOf an incumbent's patterns too; sorted node order, the
// classes of classesOf), incVal the value to beat, until it has evaluated nodeLimit
// subtrees (or stall plus twice those that found its last incumbent), its
// incumbent reaches bound, or ctx ends, and returns the best assignment it found that is
// worth more than incVal (nil if none), its value, and the subtrees it
// evaluated (one LP solve each). Nodes left without a pattern, and room that the
// patterns leave, are topped up greedily (repairPath).
func masterIP(ctx context.Context, m *model, sorted [][]int64, cols []patternColumn, incVal, bound float64, nodeLimit, stall int) (_ [][]int, _ float64, nodes int) {
	classes := classesOf(sorted)
	n := len(m.dem)
	p := masterRows(m.supply, classCounts(classes))
	upper := make([]float64, len(cols))
	for k, col := range cols {
		hi := classes[col.class].count
		for i, a := range col.a {
			if a > 0 {
				hi = min(hi, m.supply[i]/a)
			}
		}
		upper[k] = float64(hi)
		rows, vals := masterEntries(n, col)
		p.AddCol(m.patternValue(col.a), 0, upper[k], rows, vals)
	}
	model, err := lp.NewModel(p)
	if err != nil {
		return nil, 0, 0
	}
	defer model.Close()
	var best [][]int
	bestVal := incVal
	// best first with plunging: the open subtree of the largest LP bound
	// is dived into (y ≥ ⌈y⌉ on the column of largest fractional part, the
	// LP re-solved from the last basis) until it is pruned or integral;
	// the other branch of each step (y ≤ ⌊y⌋) waits in the queue
	queue := &boundQueue[*pnbNode]{{bound: math.Inf(1)}}
	var applied []pnbFix // the branching bounds of the subtree under way
	bounds := newColumnBounds(model, upper)
	lastFound := 0 // the subtrees evaluated when the last incumbent was found
	for queue.Len() > 0 && nodes < nodeLimit && nodes-2*lastFound < stall && ctx.Err() == nil && m.canImprove(bound, bestVal) {
		nd := heap.Pop(queue).(*pnbNode)
		if !m.canImprove(nd.bound, bestVal) {
			continue
		}
		bounds.reset()
		applied = append(applied[:0], nd.fixes...)
		for _, f := range applied {
			bounds.fix(f)
		}
		for nodes < nodeLimit && ctx.Err() == nil {
			nodes++
			sol, err := model.Solve(ctx, lp.Options{})
			addLPWork(ctx, model.NumRows(), model.NumCols(), sol)
			if err != nil || !m.canImprove(sol.Objective, bestVal) {
				break // infeasible (or stopped), or it cannot beat the incumbent
			}
			pick, frac := -1, 0.0
			for k, y := range sol.Primal {
				if f := y - math.Floor(y); f > diveIntTol && f < 1-diveIntTol && f > frac {
					pick, frac = k, f
				}
			}
			if pick < 0 {
				x := masterAssignment(m, sorted, classes, cols, sol.Primal)
				if v := assignmentValue(m, x); v > bestVal {
					best, bestVal = x, v
					lastFound = nodes
				}
				break
			}
			y := sol.Primal[pick]
			down := append(slices.Clip(applied), pnbFix{col: pick, upper: true, at: math.Floor(y)})
			heap.Push(queue, &pnbNode{fixes: down, bound: sol.Objective})
			up := pnbFix{col: pick, at: math.Ceil(y)}
			applied = append(applied, up)
			bounds.fix(up) // a plunge step sets one bound, not the whole path again
		}
	}
	return best, bestVal, nodes
}

// withPatternsOf returns the columns of pool followed by the patterns of
// the assignment x (sorted node order; nil: none) that pool lacks, each
// once with its node's class. pool itself is left as it is.
func withPatternsOf(sorted [][]int64, pool *columnPool, x [][]int) []patternColumn {
	if x == nil {
		return pool.cols
	}
	cols := slices.Clip(pool.cols)
	seen := map[string]bool{}
	for j, c := range classOfNodes(sorted) {
		key := columnKey(c, x[j])
		if slices.Max(x[j]) == 0 || pool.seen[key] || seen[key] {
			continue
		}
		seen[key] = true
		cols = append(cols, patternColumn{c, slices.Clone(x[j])})
	}
	return cols
}

// pnbFix is one branching bound of masterIP: y_col ≤ at (upper) or ≥ at.
type pnbFix struct {
	col   int
	upper bool
	at    float64
}

// columnBounds keeps the column bounds of masterIP's LP model: the root
// bounds [0, upper] and the branching bounds set since the last reset.
type columnBounds struct {
	model   *lp.Model
	upper   []float64 // the root's upper bounds
	lo, hi  []float64 // the bounds set on the model now
	touched []int     // the columns whose bounds differ from the root's (repeats allowed)
}

func newColumnBounds(model *lp.Model, upper []float64) *columnBounds {
	return &columnBounds{model: model, upper: upper, lo: make([]float64, len(upper)), hi: slices.Clone(upper)}
}

// fix tightens the bounds of f's column by f (a later fix of a column
// tightens the earlier ones) and sets them on the model.
func (b *columnBounds) fix(f pnbFix) {
	if f.upper {
		b.hi[f.col] = math.Min(b.hi[f.col], f.at)
	} else {
		b.lo[f.col] = math.Max(b.lo[f.col], f.at)
	}
	b.touched = append(b.touched, f.col)
	b.model.SetColBounds(f.col, b.lo[f.col], b.hi[f.col])
}

// reset puts the columns fixed since the last reset back to their root
// bounds.
func (b *columnBounds) reset() {
	for _, k := range b.touched {
		if b.lo[k] != 0 || b.hi[k] != b.upper[k] {
			b.lo[k], b.hi[k] = 0, b.upper[k]
			b.model.SetColBounds(k, 0, b.upper[k])
		}
	}
	b.touched = b.touched[:0]
}

// pnbNode is an open subtree of masterIP: its branching bounds and its
// parent's LP value.
type pnbNode struct {
	fixes []pnbFix
	bound float64
}

func (nd *pnbNode) upper() float64 { return nd.bound }

// masterAssignment turns an integral solution y of the master over cols
// into an assignment (sorted node order): ⌊y_ca⌋ nodes of class c get
// pattern a, the others none, and every node is then topped up greedily.
func masterAssignment(m *model, sorted [][]int64, classes []nodeClass, cols []patternColumn, y []float64) [][]int {
	x := make([][]int, len(sorted))
	start := make([]int, len(classes))
	for c := range classes[1:] {
		start[c+1] = start[c] + classes[c].count
	}
	next := make([]int, len(classes))
	floorCopies(cols, y, nil, func(col patternColumn) bool { return next[col.class] < classes[col.class].count }, func(col patternColumn) {
		x[start[col.class]+next[col.class]] = slices.Clone(col.a)
		next[col.class]++
	})
	for j := range x {
		if x[j] == nil {
			x[j] = make([]int, len(m.dem))
		}
	}
	return repairPath(m, sorted, x)
}
