package solver

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestMasterIPOverEveryPatternIsExact checks the integer master (masterIP)
// by a second method: over a pool holding every feasible pattern of every
// node class, the restricted master is the whole problem, so its
// branch and bound run to the end must reach the optimum that exhaustive
// search (small instances) or the exact method (medium ones, proven)
// finds (where it ends within its node limit); over the root LP's columns alone (the pool the solver gives it)
// every assignment it returns fits the nodes and the supply, is worth
// what it says and never more than the optimum; given an incumbent (the
// FFD greedy's), over no column or the root LP's, its patterns are among
// the master's columns (checkWithPatterns) and what it returns also beats
// the incumbent.
func TestMasterIPOverEveryPatternIsExact(t *testing.T) {
	cases := 60
	if testing.Short() {
		cases = 20
	}
	const fullNodes = 50000
	rng := rand.New(rand.NewPCG(15, 5))
	full, rootRuns, reachedRoot, incRuns := 0, 0, 0, 0
	for c := range cases {
		in, opt, ok := optimumCase(t, rng, c, 3)
		if !ok {
			continue
		}
		m := newModel(in)
		if len(m.dem) == 0 {
			continue
		}
		_, sorted, _ := sortNodes(m, nodeCaps(in))
		check := func(what string, x [][]int, val float64) {
			t.Helper()
			checkModelAssignment(t, what, m, sorted, x, opt)
			if v := assignmentValue(m, x); v != val {
				t.Fatalf("%s is worth %v, reported %v", what, v, val)
			}
		}
		if pool, ok := everyPattern(m, sorted, 400); ok {
			x, val, nodes := masterIP(context.Background(), m, sorted, pool.cols, math.Inf(-1), math.Inf(1), fullNodes, math.MaxInt)
			what := fmt.Sprintf("case %d: the integer master over all %d patterns", c, len(pool.cols))
			if x == nil {
				t.Fatalf("%s found nothing (optimum %v)", what, opt)
			}
			check(what, x, val)
			if nodes == fullNodes {
				continue // not run to the end
			}
			if m.canImprove(opt, val) {
				t.Fatalf("%s is worth %v, the optimum %v", what, val, opt)
			}
			full++
		}
		base := baseTables(m, sorted, m.supply)
		_, st := rootLPAlone(m, sorted, base)
		if st.columns == nil {
			continue
		}
		x, val, _ := masterIP(context.Background(), m, sorted, st.columns.cols, math.Inf(-1), math.Inf(1), pnbNodes, pnbStall)
		if x != nil {
			rootRuns++
			check(fmt.Sprintf("case %d: the integer master over the root LP's columns", c), x, val)
			if !m.canImprove(opt, val) {
				reachedRoot++
			}
		}
		// with an incumbent (the FFD greedy's) its patterns join the
		// columns: what the master returns beats it, or nothing
		inc := ffdAssign(m, sorted, m.supply)
		incVal := assignmentValue(m, inc)
		for _, pool := range []*columnPool{newColumnPool(), st.columns} {
			what := fmt.Sprintf("case %d: the integer master over %d columns and the incumbent's patterns", c, len(pool.cols))
			checkWithPatterns(t, what, sorted, pool, inc)
			x, val, _ := masterIP(context.Background(), m, sorted, withPatternsOf(sorted, pool, inc), incVal, math.Inf(1), pnbNodes, pnbStall)
			if x == nil {
				continue
			}
			check(what, x, val)
			if val <= incVal {
				t.Fatalf("%s returned %v, not above the incumbent %v", what, val, incVal)
			}
			incRuns++
		}
	}
	if full < cases/4 || rootRuns < cases/4 {
		t.Fatalf("%d runs over every pattern, %d over the root LP's columns", full, rootRuns)
	}
	t.Logf("%d runs over every pattern reached the optimum; %d of %d over the root LP's columns did; %d with an incumbent's patterns beat it", full, reachedRoot, rootRuns, incRuns)
}

// checkWithPatterns checks withPatternsOf(sorted, pool, x): pool's
// columns first and unchanged, then distinct columns not in pool, and
// every node's non-empty pattern among them with its node's class.
func checkWithPatterns(t *testing.T, what string, sorted [][]int64, pool *columnPool, x [][]int) {
	t.Helper()
	n := len(pool.cols)
	cols := withPatternsOf(sorted, pool, x)
	if len(pool.cols) != n || len(cols) < n {
		t.Fatalf("%s: the pool's %d columns became %d, the master's %d", what, n, len(pool.cols), len(cols))
	}
	at := map[string]int{}
	for k, col := range cols {
		key := columnKey(col.class, col.a)
		if _, dup := at[key]; dup || (k >= n && pool.seen[key]) || (k < n && !slices.Equal(col.a, pool.cols[k].a)) {
			t.Fatalf("%s: column %d (class %d, %v) repeated or changed", what, k, col.class, col.a)
		}
		at[key] = k
	}
	for j, c := range classOfNodes(sorted) {
		if _, ok := at[columnKey(c, x[j])]; !ok && slices.Max(x[j]) > 0 {
			t.Fatalf("%s: node %d's pattern %v (class %d) is not a column", what, j, x[j], c)
		}
	}
}

// everyPattern returns a pool of every feasible non-empty pattern (a ≤
// supply, within the capacity) of every class of sorted, or false when
// there are more than limit.
func everyPattern(m *model, sorted [][]int64, limit int) (*columnPool, bool) {
	pool := newColumnPool()
	for c, cl := range classesOf(sorted) {
		a := make([]int, len(m.dem))
		var rec func(i int) bool
		rec = func(i int) bool {
			if i == len(a) {
				pool.add(c, a)
				return len(pool.cols) <= limit
			}
			for a[i] = 0; a[i] <= m.supply[i] && fitsPattern(m, a, cl.cap); a[i]++ {
				if !rec(i + 1) {
					return false
				}
			}
			a[i] = 0
			return true
		}
		if !rec(0) {
			return nil, false
		}
	}
	return pool, true
}
