package solver

import (
	"context"
	"math"
	"slices"
	"time"
)

// ffdAssign is the FFD dot-product greedy (the paper's Eq. 1, used by RTA
// and as the FFD-DP baseline): nodes are filled one after another in the
// given order; on node j it repeatedly starts the pending task t_i that fits
// in the residual capacity C[j,·] with the largest fitness
//
//	F_ij = Σ_p R[i,p] · C[j,p] · w_p                                   (Eq. 1)
//
// where C[j,p] is the node's residual (the paper updates C on every
// heartbeat) until no pending task fits. Ties in F are broken in favour of
// the task type listed first in the input, which reproduces the paper's
// worked example (§3.4.1: on ⟨10 GB, 6 cores⟩ with types ⟨1,3⟩ and ⟨3,1⟩
// the fitness sequence is 36, 26, then a tie at ⟨4,4⟩ resolved to type I,
// then 10, filling the node completely). Eq. 1 is applied literally in the
// instance's units: it is quadratic in the unit of each resource while the
// objective is linear, so with memory in MB and w = (1/1024, 1) the memory
// term weighs 1024 times more than with the paper's GB and w = (1, 1).
func ffdAssign(m *model, caps [][]int64, supply []int) [][]int {
	s := slices.Clone(supply)
	x := make([][]int, len(caps))
	first := make([]int, len(m.dem)) // input position of each merged type
	for t := range m.dem {
		first[t] = m.members[t][0]
	}
	for j, c := range caps {
		x[j] = make([]int, len(m.dem))
		r := slices.Clone(c)
		for {
			bestT, bestF := -1, math.Inf(-1)
			for t, d := range m.dem {
				if s[t] == 0 || !fitsIn(d, r) {
					continue
				}
				f := 0.0
				for p := range d {
					f += float64(d[p]) * float64(r[p]) * m.w[p]
				}
				if f > bestF || (f == bestF && first[t] < first[bestT]) {
					bestT, bestF = t, f
				}
			}
			if bestT < 0 {
				break
			}
			x[j][bestT]++
			s[bestT]--
			for p, d := range m.dem[bestT] {
				r[p] -= d
			}
		}
	}
	return x
}

// perNodeAssign is the paper's Algorithm 1 as intended: for j = 1..m in the
// given order, node j receives an optimal single-node bounded
// multi-dimensional knapsack of the tasks still pending,
//
//	max Σ_i v_i·a_i  s.t.  Σ_i a_i·R[i,p] ≤ C[j,p] ∀p,  0 ≤ a_i ≤ s_i (pending),
//
// and those tasks are removed from the pending set.
//
// Why not Algorithm 1 as printed: it keeps one task list L[a,b] per capacity
// cell and, filling cell ⟨a,b⟩ with task t_i, extends the list of cell
// ⟨a−R[i,1], b−R[i,2]⟩ unless t_i is already in it (line 8). Read with T as
// the set of task types (R is indexed by type), that check allows one task
// per type per node, so with many identical tasks (52 maps of one job) a
// node gets at most one of them. Read with one entry per task, the single
// remembered list is only one of the optimal sub-solutions of the smaller
// cell; when it already holds every copy of a type (or the one task t_i),
// the cell cannot use t_i even though another list of the same value would
// allow it, so OPT is not the knapsack optimum (it is a DP without the item
// dimension). The correct DP needs a layer per item (here: per task type
// with bounded copies), which is what the single-node search below solves
// exactly; its result is the intended "fill node j optimally".
//
// Each single-node fill is an exact branch and bound over the task types
// with the dynamic-programming bound of a table built once for the largest
// node and the full supply (valid for smaller residual supply because it is
// a relaxation). Ties between equally valuable fills are broken by the
// search order: types by value, larger first; counts best bound first, then
// larger first.
func perNodeAssign(ctx context.Context, m *model, caps [][]int64, supply []int, deadline time.Time, base *tables) (x [][]int, explored int64, stopped StopReason) {
	return fillNodes(ctx, m, caps, supply, deadline, base, false, 0)
}

// fillEachNode is perNodeAssign for the exact method's heuristics: a node
// whose capacity an earlier node had takes that node's optimal fill again
// when it still fits the supply left, without a search. It is an optimal
// fill there too (the supply only shrinks along the fill, so the patterns
// allowed now are a subset of those allowed then, and the earlier optimum
// is among them), but where several fills tie it may not be the one the
// search order picks, which perNodeAssign documents. Measured on large (400
// nodes of 8 capacities): the two per-node fills were 1.0 of the 2.7 s of
// CPU of large-8.
func fillEachNode(ctx context.Context, m *model, caps [][]int64, supply []int, deadline time.Time, base *tables) (x [][]int, explored int64, stopped StopReason) {
	return fillNodes(ctx, m, caps, supply, deadline, base, true, 0)
}

// quickFill is fillEachNode with each node's search stopped after
// fillNodeCap branch-and-bound nodes (stopped is then node_limit): that
// node keeps the best fill its search found, which need not be optimal,
// and the nodes after it fill from the supply it left. The exact method's
// first incumbents come from it (exactAssign); where a node's search
// finishes within the cap, which is every node of most instances, the
// fill is fillEachNode's.
func quickFill(ctx context.Context, m *model, caps [][]int64, supply []int, deadline time.Time, base *tables) (x [][]int, explored int64, stopped StopReason) {
	return fillNodes(ctx, m, caps, supply, deadline, base, true, fillNodeCap)
}

// fillNodeCap caps one node's search in quickFill. On YARN-like instances
// (10-20 shapes, plenty of tasks) and on large, the search of a node late
// in the fill, its supply shrunk and the full supply's table bounding it
// loosely, runs tens of thousands of nodes: the fill was about 40% of
// yarn-2's CPU time (266 006 nodes, 44 004 on one node) for an incumbent
// (4805) below the LP's rounding (4810.5). Measured on the suite's seeds
// 0-9 and 4000-4009, the fill in search order reaches the cap on 6:
// yarn-2 (266 006 → 167 374 nodes, worth 4805 → 4809), yarn-4003
// (728 314 → 419 978, 7220 → 7210), yarn-4004 (1 152 040 → 342 543, 6844
// → 6843), yarn-4005 (219 464 → 164 371, 5656 → 5650), large-8 (127 045 →
// 175 927, the reuse lost; 33310 → 33286) and large-4002 (51 536 →
// 48 547, 29039 → 29032); capped at 4096 it changed the fill of 25 and
// lost value on hetero-3r-8, yarn-5, yarn-4000 and large-8 (33131). Whole solves, A/B in
// one run, CPU time: yarn-2 204 → 85-93 ms, yarn-4004 297-301 → 140-150
// ms, large-4002 105-120 → 60-69 ms, large-8 3.35-3.69 → 0.18-0.19 s (its
// input-order fill, 558 840 nodes, is now skipped; the path after it
// differs too); yarn-4005 173-177 → 292-312 ms (its worse first
// incumbent).
const fillNodeCap = 16384

// fillNodes fills the nodes in order, each optimally with the supply the
// nodes before it left (within nodeCap search nodes each, 0: no cap);
// with reuse, from an earlier node's optimal fill of the same capacity
// where it still fits (fillEachNode).
func fillNodes(ctx context.Context, m *model, caps [][]int64, supply []int, deadline time.Time, base *tables, reuse bool, nodeCap int64) (x [][]int, explored int64, stopped StopReason) {
	s := slices.Clone(supply)
	x = make([][]int, len(caps))
	optimal := map[string][]int{} // a proven optimal fill per capacity (reuse)
	for j, c := range caps {
		key := demandKey(c)
		if a, ok := optimal[key]; ok && fitsSupply(a, s) {
			x[j] = slices.Clone(a)
			for t, k := range a {
				s[t] -= k
			}
			continue
		}
		one := [][]int64{c}
		bounds := []*lagBound{{tab: base}, {pi: m.val}}
		srch := newSearch(ctx, m, one, []bool{false}, s, bounds)
		srch.deadline = deadline
		srch.nodeLimit = nodeCap
		srch.run()
		explored += srch.explored
		if srch.stopped != "" {
			stopped = srch.stopped
		}
		x[j] = srch.best[0]
		if reuse && srch.stopped == "" {
			optimal[key] = x[j]
		}
		for t, a := range x[j] {
			s[t] -= a
		}
	}
	return x, explored, stopped
}

// baseTables returns the π = 0 tables over the grid of the largest capacity
// in every resource, with count bounds from supply.
//
// With four resources or more the coarsened full grid is left out (see
// cheapGrids); the search's tables at the LP duals keep it.
func baseTables(m *model, caps [][]int64, supply []int) *tables {
	return tablesOn(cheapGrids(viewGrids(capMax(caps, m.k), m.dem)), m.dem, m.val, countBounds(m.dem, supply, caps))
}

// oneNodeTables are the π = 0 tables of a single node: the exact grid of
// each resource alone (and, with one resource, the full one); with
// surrogate, m's last resource is withSurrogate's constraint, whose grid
// has at most surrogateCells cells. On one node the exact method is one
// knapsack, which the count search usually solves with these bounds in a
// few hundred nodes (single-node family, 10-40 types, 2-3 resources of
// capacity 100-400); the full grid's table, exact there (up to 2^18
// cells, a layer per type), took 90% of the 10-40 ms of such a solve,
// while CBC answers in 10 ms.
func oneNodeTables(m *model, caps [][]int64, surrogate bool) *tables {
	cm := capMax(caps, m.k)
	var gs []*grid
	for p := range m.k {
		budget := cellBudget(len(m.dem))
		if surrogate && p == m.k-1 {
			budget = min(surrogateCells, budget) // within the tables' memory cap too
		}
		gs = append(gs, newGrid(cm, m.dem, []int{p}, budget))
	}
	return tablesOn(gs, m.dem, m.val, countBounds(m.dem, m.supply, caps))
}

// cheapGrids leaves the coarsened full grid out of views over four or more
// resources: its budget then leaves about 16 cells per resource or fewer,
// demands round down to 0 or 1 cell and it bounds the single-node
// knapsack hardly better than the exact grids of single resources and
// pairs, while building it is most of the tables' time (many-resources:
// the π = 0 tables took 50-150 ms of a 60-300 ms solve).
func cheapGrids(gs []*grid) []*grid {
	if len(gs) > 1 && !gs[0].exact && gs[0].k >= 4 {
		return gs[1:]
	}
	return gs
}

func capMax(caps [][]int64, k int) []int64 {
	mx := make([]int64, k)
	for _, c := range caps {
		for p := range mx {
			mx[p] = max(mx[p], c[p])
		}
	}
	return mx
}

func nodeCaps(in *Instance) [][]int64 {
	caps := make([][]int64, len(in.Nodes))
	for j, n := range in.Nodes {
		caps[j] = n.Capacity
	}
	return caps
}

func assignmentValue(m *model, x [][]int) float64 {
	v := 0.0
	for _, a := range x {
		v += m.patternValue(a)
	}
	return v
}
