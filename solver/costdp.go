package solver

import (
	"context"
	"math"
	"math/bits"
	"slices"
	"time"
)

// Limits of the reduced-cost DP (costDPBound).
const (
	// costDPMaxPatterns caps the low-loss patterns enumerated over all nodes.
	costDPMaxPatterns = 1 << 16
	// costDPMaxStates caps the states of one DP layer (the hash table of
	// the next layer grows to at most twice as many slots of 16 bytes:
	// 64 MiB).
	costDPMaxStates = 1 << 21
	// costDPMaxFloats caps the one- and two-type bound tables over all
	// nodes (32 MiB of float64); the two-type tables get what the
	// one-type tables leave.
	costDPMaxFloats = 1 << 22
	// costDPMaxTrace caps the back-pointers kept over all layers to
	// rebuild the shortest path (32 MiB); beyond it the DP still bounds
	// but returns no path.
	costDPMaxTrace = 1 << 22
)

// costDPMaxPairOps caps the work of the two-type bound tables (cells
// times distinct pairs of counts, over all nodes); a variable so that the
// tests check the bound without pair tables too.
var costDPMaxPairOps = 1 << 26

// costDPBound tightens the Lagrangian bound L(π) of b by dynamic programming
// over the binding supplies, for the only solutions that matter: those
// better than the incumbent value inc.
//
// For multipliers π ≥ 0, u = v − π and T_j = b.rootTerm(C_j) ≥ max_a u·a on
// node j, every feasible assignment x satisfies
//
//	Σ_ij v_i x_ij = L(π) − Λ,   Λ = Σ_j λ_j + Σ_i π_i σ_i,
//	λ_j = T_j − u·x_j ≥ 0 (the loss of node j's pattern),
//	σ_i = s_i − Σ_j x_ij ≥ 0 (the unused supply of type i),
//
// so a solution better than inc has Λ ≤ B = L(π) − inc − unit, and every
// node uses a pattern of loss at most B: the few patterns near the
// Lagrangian optimum of each node (reduced-cost fixing). With integral data
// the LP duals are often integral, the losses are integers and B is a unit
// or two when the LP bound is tight, so each node keeps tens of patterns.
// The minimum of Λ over one pattern per node is a shortest path over the
// nodes whose state is the remaining supply of the tracked binding types
// (π_i > 0, largest π first while the packed state fits in 127 bits); the
// supplies of the other types are relaxed and their slack counted as 0,
// which keeps the state small and the result a valid bound:
//
//	z ≤ L(π) − min Λ.
//
// States that exceed a supply, lose more than B, or cannot use up the
// remaining supply of a tracked type cheaply enough with the nodes left
// are dropped. It returns the bound (at most inc when no better solution
// exists) and ok = false when the patterns or states exceed their caps or
// ctx ends (then nothing is proven).
//
// The shortest path itself, one pattern per node, is returned as path
// (nodes order) when the DP found one and its back-pointers fit
// costDPMaxTrace: a solution of the relaxation that reaches the bound. It
// respects every tracked supply; where it also respects the untracked
// ones it is feasible, and then optimal whenever the bound rounds to its
// value (the primal side of the DP: on instances whose LP bound is tight,
// the optimum is found here rather than by the search). It may exceed an
// untracked supply; repairPath makes it feasible.
//
// A path that exceeds the supply of an untracked type (one of π = 0, or
// one the state had no room for) is not a solution; the DP then runs again
// with those types tracked too (up to costDPRetries times, while they fit
// the state), which keeps the bound valid (any set of tracked types does)
// and makes the path a solution more often. A re-run that exceeds a cap
// leaves the previous result.
func costDPBound(ctx context.Context, m *model, nodes [][]int64, b *lagBound, inc float64, clk *workClock) (ub float64, path [][]int, ok bool) {
	var extra []int
	w0 := clk.now()
	ub, path, visits, ok := costDPTracked(ctx, m, nodes, b, inc, extra, 0)
	retryCtx, cancel := clk.within(ctx, max(costDPRetryTime, costDPRetryVisits*(clk.now()-w0)))
	defer cancel()
	for range costDPRetries {
		if !ok || path == nil {
			break
		}
		var over []int
		for i, sup := range m.supply {
			used := 0
			for _, a := range path {
				used += a[i]
			}
			if used > sup {
				over = append(over, i)
			}
		}
		tracked := newPackedSupply(m.supply, b.pi, append(slices.Clone(extra), over...)).types
		if !slices.ContainsFunc(over, func(i int) bool { return slices.Contains(tracked, i) }) {
			break // nothing more to track
		}
		extra = append(extra, over...)
		ub2, path2, _, ok2 := costDPTracked(retryCtx, m, nodes, b, inc, extra, max(costDPMaxPatterns, costDPRetryVisits*visits))
		if !ok2 {
			break
		}
		ub, path = ub2, path2
	}
	return ub, path, ok
}

// costDPRetries is how many times costDPBound re-runs the DP with the types
// a path exceeded; a re-run gives up (keeping the result before it) after
// costDPRetryVisits times the patterns the first run visited, or as many
// times its time (at least costDPRetryTime): the types it adds to the
// state can multiply the prefixes to enumerate and the states (measured
// on large and yarn: the first run visited 8-59 patterns in a
// millisecond and proved its target, the re-run ran out of the step's
// work share, 0.6 s of a 10 s limit, in the enumeration or in the layers).
const (
	costDPRetries     = 3
	costDPRetryVisits = 16
	costDPRetryTime   = 20 * time.Millisecond
)

// enumCheckSteps is how many steps enumeratePatterns takes between two
// looks at the work clock and ctx.
const enumCheckSteps = 1024

// costDPTracked is costDPBound with the types of extra tracked too.
func costDPTracked(ctx context.Context, m *model, nodes [][]int64, b *lagBound, inc float64, extra []int, maxVisits int) (ub float64, path [][]int, visits int, ok bool) {
	if b == nil || b.tab == nil || b.pi == nil {
		return 0, nil, visits, false
	}
	// the work clock gets the DP's operations before each look at ctx, so
	// that a budget they spend stops it at the same point in every run
	clk := workClockOf(ctx)
	L := lagValue(b, nodes, m.supply)
	eps := boundTolerance * math.Max(1, math.Abs(L))
	budget := L - inc + eps
	if m.unit > 0 {
		budget -= m.unit
	}
	if budget < 0 {
		return L, nil, visits, true
	}
	f := newPackedSupply(m.supply, b.pi, extra)
	u := make([]float64, len(m.dem))
	for i := range u {
		u[i] = m.val[i] - b.piOf(i)
	}
	// low-loss patterns of each node, projected on the tracked types
	type proj struct {
		dec  pstate // packed counts of the tracked types
		loss float64
		a    []int // a pattern of that projection and loss
	}
	tail := 0 // types from tail on are untracked: one completion per prefix
	for _, i := range f.types {
		tail = max(tail, i+1)
	}
	known := newCompletions(len(m.dem) - tail)
	pats := make([][]proj, len(nodes))
	reach := make([][]int, len(nodes)+1) // suffix sums of the largest count per tracked type
	reach[len(nodes)] = make([]int, len(f.types))
	total := 0
	var mx []int
	// byProj indexes node j's patterns by projection, emptied per node
	// (clear keeps its buckets: on yarn-20002 growing a new map per node
	// was a twentieth of the solve's CPU); the patterns' counts are cut
	// from shared blocks (ints), not allocated one by one
	byProj := map[pstate]int{}
	var ints intBlocks
	for j := len(nodes) - 1; j >= 0; j-- {
		c := nodes[j]
		if j+1 < len(nodes) && slices.Equal(c, nodes[j+1]) {
			// identical nodes share their patterns (nodes are sorted,
			// identical ones adjacent): enumerated and counted once
			pats[j] = pats[j+1]
			reach[j] = make([]int, len(f.types))
			for q := range f.types {
				reach[j][q] = reach[j+1][q] + mx[q]
			}
			continue
		}
		clear(byProj)
		top := b.rootTerm(c)
		mx = make([]int, len(f.types))
		// every enumeration step is work, a read of each view of the
		// tables (the best completions are most of it where few types are
		// tracked, and the patterns visited few)
		going := func(steps int) bool { clk.add(workDP, int64(steps)*int64(len(b.tab.views))); return ctx.Err() == nil }
		ok := enumeratePatterns(m, u, b.tab, c, top-budget, tail, known, going, func(a []int, val float64) bool {
			if visits++; maxVisits > 0 && visits > maxVisits {
				return false
			}
			dec := f.pack(a)
			loss := math.Max(0, top-val)
			if k, seen := byProj[dec]; seen {
				if loss < pats[j][k].loss {
					pats[j][k].loss = loss
					copy(pats[j][k].a, a)
				}
				return true
			}
			for q, i := range f.types {
				mx[q] = max(mx[q], a[i])
			}
			total++
			byProj[dec] = len(pats[j])
			pats[j] = append(pats[j], proj{dec, loss, ints.clone(a)})
			return total <= costDPMaxPatterns
		})
		if !ok || ctx.Err() != nil {
			return 0, nil, visits, false
		}
		if len(pats[j]) == 0 {
			return inc, nil, visits, true // node j has no pattern within the budget
		}
		reach[j] = make([]int, len(f.types))
		for q := range f.types {
			reach[j][q] = reach[j+1][q] + mx[q]
		}
	}
	// future[j][q][r] is a lower bound on the loss still to come from
	// nodes j.. when r units of tracked type q remain: the one-type
	// shortest path min (Σ_{j'≥j} λ_j' + π_q·(r − c)) over their patterns,
	// c ≤ r their total count of type q (Λ is a sum of non-negative
	// terms, so the terms of one type bound it). The recursion is
	// future[j][r] = min_a (λ_j(a) + future[j+1][r − a_q]), future[n][r] = π_q·r.
	cells := 0
	for _, i := range f.types {
		cells += m.supply[i] + 1
	}
	if cells*(len(nodes)+1) > costDPMaxFloats {
		return 0, nil, visits, false
	}
	// Only the smallest loss of each count matters in the recursion:
	// byCount[q][c] is the smallest loss of node j's patterns with c
	// tasks of tracked type q (+Inf: none), shared by identical nodes.
	future := make([][][]float64, len(nodes)+1)
	var byCount [][]float64
	for j := len(nodes); j >= 0; j-- {
		if ctx.Err() != nil {
			return 0, nil, visits, false
		}
		if j < len(nodes) && (j+1 == len(nodes) || &pats[j][0] != &pats[j+1][0]) {
			byCount = make([][]float64, len(f.types))
			for q := range f.types {
				var best []float64
				for _, p := range pats[j] {
					c := f.get(p.dec, q)
					for len(best) <= c {
						best = append(best, math.Inf(1))
					}
					best[c] = math.Min(best[c], p.loss)
				}
				byCount[q] = best
			}
		}
		future[j] = make([][]float64, len(f.types))
		for q, i := range f.types {
			h := make([]float64, m.supply[i]+1)
			for r := range h {
				h[r] = b.pi[i] * float64(r)
				if j == len(nodes) {
					continue
				}
				best := math.Inf(1)
				for c, loss := range byCount[q] {
					if c > r {
						break
					}
					if v := loss + future[j+1][q][r-c]; v < best {
						best = v
					}
				}
				h[r] = best
			}
			future[j][q] = h
			if j < len(nodes) {
				clk.add(workDP, int64(len(h))*int64(len(byCount[q])))
			}
		}
	}
	// pairs of tracked types get the same bound over both remaining
	// supplies (largest π_a·π_b first, within the rest of costDPMaxFloats)
	type pair struct{ a, b, nb int }
	var pairs []pair
	pairCells := costDPMaxFloats/(len(nodes)+1) - cells
	for qa := range f.types {
		for qb := qa + 1; qb < len(f.types); qb++ {
			pairs = append(pairs, pair{qa, qb, m.supply[f.types[qb]] + 1})
		}
	}
	slices.SortStableFunc(pairs, func(x, y pair) int {
		return -cmpFloat(b.pi[f.types[x.a]]*b.pi[f.types[x.b]], b.pi[f.types[y.a]]*b.pi[f.types[y.b]])
	})
	kept := pairs[:0]
	for _, pr := range pairs {
		if c := (m.supply[f.types[pr.a]] + 1) * pr.nb; c <= pairCells {
			pairCells -= c
			kept = append(kept, pr)
		}
	}
	pairs = kept
	// Only the smallest loss of each pair of counts matters in the
	// recursion below: byPair[g][k] lists them for the patterns of the
	// nodes of group g (identical nodes share their patterns). The
	// recursion costs cells × distinct pairs per node; pairs beyond
	// costDPMaxPairOps in all are left out (fewer pairs prune less but
	// keep the bound valid): with 100 identical nodes and supplies in the
	// hundreds, the pair tables took most of the DP's time.
	type countPair struct {
		ca, cb int
		loss   float64
	}
	group := make([]int, len(nodes))
	var byPair [][][]countPair
	for j := len(nodes) - 1; j >= 0; j-- {
		if j+1 < len(nodes) && &pats[j][0] == &pats[j+1][0] {
			group[j] = group[j+1]
			continue
		}
		group[j] = len(byPair)
		lists := make([][]countPair, len(pairs))
		counts := make([][]int, len(f.types)) // counts[q][k]: pattern k's count of type q
		for q := range f.types {
			counts[q] = make([]int, len(pats[j]))
			for k, p := range pats[j] {
				counts[q][k] = f.get(p.dec, q)
			}
		}
		var dense []float64
		for k, pr := range pairs {
			if ctx.Err() != nil {
				return 0, nil, visits, false
			}
			ca, cb := counts[pr.a], counts[pr.b]
			na, nb := slices.Max(ca)+1, slices.Max(cb)+1
			clk.add(workDP, int64(na*nb+len(pats[j])))
			dense = slices.Grow(dense[:0], na*nb)[:na*nb]
			for e := range dense {
				dense[e] = math.Inf(1)
			}
			for k2, p := range pats[j] {
				e := ca[k2]*nb + cb[k2]
				if p.loss < dense[e] {
					dense[e] = p.loss
				}
			}
			for e, loss := range dense {
				if !math.IsInf(loss, 1) {
					lists[k] = append(lists[k], countPair{e / nb, e % nb, loss})
				}
			}
		}
		byPair = append(byPair, lists)
	}
	ops := 0
	kept = pairs[:0]
	keptIdx := []int{}
	for k, pr := range pairs {
		o := 0
		for j := range nodes {
			o += (m.supply[f.types[pr.a]] + 1) * pr.nb * len(byPair[group[j]][k])
		}
		if ops+o <= costDPMaxPairOps {
			ops += o
			kept = append(kept, pr)
			keptIdx = append(keptIdx, k)
		}
	}
	pairs = kept
	for g := range byPair {
		lists := make([][]countPair, len(keptIdx))
		for k, old := range keptIdx {
			lists[k] = byPair[g][old]
		}
		byPair[g] = lists
	}
	future2 := make([][][]float64, len(nodes)+1)
	for j := len(nodes); j >= 0; j-- {
		future2[j] = make([][]float64, len(pairs))
		for k, pr := range pairs {
			if ctx.Err() != nil {
				return 0, nil, visits, false
			}
			pa, pb := b.pi[f.types[pr.a]], b.pi[f.types[pr.b]]
			na := m.supply[f.types[pr.a]] + 1
			h := make([]float64, na*pr.nb)
			row := int64(pr.nb) // operations per row of the table
			if j < len(nodes) {
				row *= int64(1 + len(byPair[group[j]][k]))
			}
			for ra := 0; ra < na; ra++ {
				if ra&63 == 63 {
					if clk.add(workDP, 64*row); ctx.Err() != nil {
						return 0, nil, visits, false // one pair's table may be millions of operations
					}
				}
				for rb := 0; rb < pr.nb; rb++ {
					at := ra*pr.nb + rb
					h[at] = pa*float64(ra) + pb*float64(rb)
					if j == len(nodes) {
						continue
					}
					best := math.Inf(1)
					for _, p := range byPair[group[j]][k] {
						if p.ca <= ra && p.cb <= rb {
							if v := p.loss + future2[j+1][k][(ra-p.ca)*pr.nb+rb-p.cb]; v < best {
								best = v
							}
						}
					}
					h[at] = best
				}
			}
			// the rows after the last multiple of 64 (a table of fewer
			// than 64 rows, most of them on hetero-3r and many-resources,
			// counted nothing)
			clk.add(workDP, int64(na%64)*row)
			future2[j][k] = h
		}
		if ctx.Err() != nil {
			return 0, nil, visits, false
		}
	}
	// exceeds reports whether a lower bound on the loss still to come from
	// nodes j.. with remaining supply st exceeds allow: the one- and
	// two-type bounds, or the sum of the slack costs of what the nodes
	// left cannot hold at all.
	reads := 0 // the bounds exceeds has read (work for the clock)
	exceeds := func(st pstate, j int, allow float64) bool {
		for k, pr := range pairs {
			if reads++; future2[j][k][f.get(st, pr.a)*pr.nb+f.get(st, pr.b)] > allow {
				return true
			}
		}
		sum := 0.0
		for q, i := range f.types {
			reads++
			rem := f.get(st, q)
			if future[j][q][rem] > allow {
				return true
			}
			if short := rem - reach[j][q]; short > 0 {
				sum += b.pi[i] * float64(short)
			}
		}
		return sum > allow
	}
	// finalLoss is the slack cost of the supply left after the last node.
	finalLoss := func(st pstate) float64 {
		c := 0.0
		for q, i := range f.types {
			c += b.pi[i] * float64(f.get(st, q))
		}
		return c
	}
	curKeys, curLoss := []pstate{f.full}, []float64{0}
	next := newStateTable(costDPMaxStates)
	trace := make([][]uint64, len(nodes)) // per layer: previous state index << 32 | pattern index
	traced := 0
	for j := range nodes {
		if ctx.Err() != nil {
			return 0, nil, visits, false
		}
		next.reset()
		// operations since the last look at ctx: the transitions, and the
		// bounds exceeds read
		work := 0
		for s, st := range curKeys {
			if work+reads >= 1<<14 {
				if clk.add(workDP, int64(work+reads)); ctx.Err() != nil {
					return 0, nil, visits, false
				}
				work, reads = 0, 0
			}
			work += len(pats[j])
			loss := curLoss[s]
			for k, p := range pats[j] {
				l := loss + p.loss
				if l > budget {
					continue
				}
				nst := st.minus(p.dec)
				if !nst.covers(f.guards) {
					continue // over a supply
				}
				if exceeds(nst, j+1, budget-l) {
					continue
				}
				if !next.relax(nst, l, uint64(s)<<32|uint64(k)) {
					return 0, nil, visits, false
				}
			}
		}
		clk.add(workDP, int64(work+reads))
		reads = 0
		if trace != nil && traced+len(next.used) > costDPMaxTrace {
			trace = nil
		}
		var back []uint64
		curKeys, curLoss, back = next.collect(curKeys[:0], curLoss[:0], trace != nil)
		if trace != nil {
			trace[j] = back
			traced += len(back)
		}
	}
	minLoss, at := math.Inf(1), -1
	for s, st := range curKeys {
		if l := curLoss[s] + finalLoss(st); l < minLoss {
			minLoss, at = l, s
		}
	}
	if math.IsInf(minLoss, 1) {
		return inc, nil, visits, true
	}
	if trace != nil {
		path = make([][]int, len(nodes))
		for j := len(nodes) - 1; j >= 0; j-- {
			back := trace[j][at]
			path[j] = slices.Clone(pats[j][back&(1<<32-1)].a)
			at = int(back >> 32)
		}
	}
	return L - minLoss, path, visits, true
}

// repairPath makes a relaxed solution x (see costDPBound) feasible: the
// tasks of a type beyond its supply are taken off the last nodes that hold
// them, then every node is filled greedily with what is left (types in
// model order, as many as fit). x is modified in place and returned.
func repairPath(m *model, nodes [][]int64, x [][]int) [][]int {
	left := slices.Clone(m.supply)
	for _, a := range x {
		for i, c := range a {
			left[i] -= c
		}
	}
	for i := range left {
		for j := len(x) - 1; j >= 0 && left[i] < 0; j-- {
			d := min(x[j][i], -left[i])
			x[j][i] -= d
			left[i] += d
		}
	}
	for j, c := range nodes {
		r := m.roomAfter(c, x[j])
		for i, d := range m.dem {
			if left[i] == 0 {
				continue
			}
			f := int(min(maxFit(d, r), int64(left[i])))
			if f == 0 {
				continue
			}
			x[j][i] += f
			left[i] -= f
			for p, q := range d {
				r[p] -= int64(f) * q
			}
		}
	}
	return x
}

// packedSupply packs the remaining supply of the tracked types into two
// uint64 words (a field never straddles them), each in a field of width
// bits(s_i)+1 whose top (guard) bit is set while the field is
// non-negative: subtracting packed counts that exceed a remaining supply
// clears that field's guard bit and borrows nothing from the next field.
// Bit 63 of the first word is always set.
type packedSupply struct {
	types  []int // tracked task types
	word   []int
	shift  []uint
	width  []uint
	guards pstate // all guard bits
	full   pstate // the whole supply, guard bits set
}

// pstate is a packed state (or packed counts).
type pstate [2]uint64

// minus returns st − d word by word.
func (st pstate) minus(d pstate) pstate { return pstate{st[0] - d[0], st[1] - d[1]} }

// covers reports whether st has every bit of g set.
func (st pstate) covers(g pstate) bool { return st[0]&g[0] == g[0] && st[1]&g[1] == g[1] }

// newPackedSupply tracks the types of positive π, largest first, then the
// types of extra (π = 0 types whose supply a shortest path exceeded), as
// long as they fit the two words.
func newPackedSupply(supply []int, pi []float64, extra []int) *packedSupply {
	var cand []int
	for i, p := range pi {
		if p > 0 && supply[i] > 0 {
			cand = append(cand, i)
		}
	}
	slices.SortStableFunc(cand, func(x, y int) int { return -cmpFloat(pi[x], pi[y]) })
	for _, i := range extra {
		if !slices.Contains(cand, i) && supply[i] > 0 {
			cand = append(cand, i)
		}
	}
	f := &packedSupply{}
	used := [2]uint{}
	for _, i := range cand {
		w := uint(bits.Len(uint(supply[i]))) + 1
		k := 0
		if used[0]+w > 63 {
			k = 1
			if used[1]+w > 64 {
				continue
			}
		}
		f.types = append(f.types, i)
		f.word = append(f.word, k)
		f.shift = append(f.shift, used[k])
		f.width = append(f.width, w)
		g := uint64(1) << (used[k] + w - 1)
		f.guards[k] |= g
		f.full[k] |= g | uint64(supply[i])<<used[k]
		used[k] += w
	}
	f.guards[0] |= 1 << 63 // a state is never 0, the empty slot of stateTable
	f.full[0] |= 1 << 63
	return f
}

// pack returns the packed counts a_i of the tracked types.
func (f *packedSupply) pack(a []int) pstate {
	var d pstate
	for q, i := range f.types {
		d[f.word[q]] |= uint64(a[i]) << f.shift[q]
	}
	return d
}

// get returns the remaining supply of tracked type q in state st.
func (f *packedSupply) get(st pstate, q int) int {
	w := f.width[q] - 1
	return int(st[f.word[q]] >> f.shift[q] & (1<<w - 1))
}

// hash mixes both words of a state (the table uses the top bits).
func (st pstate) hash() uint64 { return (st[0] ^ st[1]*0xc2b2ae3d27d4eb4f) * 0x9e3779b97f4a7c15 }

// stateTable is an open-addressing hash table from packed states (never 0:
// they carry guard bits) to the smallest loss seen.
type stateTable struct {
	slots []stateSlot
	shift uint    // 64 − log2(len(slots)): the hash is the top bits
	used  []int32 // occupied slots, for reset and collect
	max   int
}

type stateSlot struct {
	key  pstate
	loss float64
	back uint64 // where the smallest loss came from (costDPBound's trace)
}

func newStateTable(maxStates int) *stateTable {
	const lg = 10 // grows by doubling up to 2·maxStates slots
	return &stateTable{slots: make([]stateSlot, 1<<lg), shift: 64 - lg, max: maxStates}
}

// grow doubles the table.
func (t *stateTable) grow() {
	old := t.slots
	t.slots = make([]stateSlot, 2*len(old))
	t.shift--
	mask := uint64(len(t.slots) - 1)
	for i, u := range t.used {
		e := old[u]
		s := e.key.hash() >> t.shift
		for t.slots[s].key[0] != 0 {
			s = (s + 1) & mask
		}
		t.slots[s] = e
		t.used[i] = int32(s)
	}
}

func (t *stateTable) reset() {
	for _, s := range t.used {
		t.slots[s].key = pstate{}
	}
	t.used = t.used[:0]
}

// relax records loss l, reached from back, for state k if smaller; false
// when the table is full.
func (t *stateTable) relax(k pstate, l float64, back uint64) bool {
	mask := uint64(len(t.slots) - 1)
	for s := k.hash() >> t.shift; ; s = (s + 1) & mask {
		e := &t.slots[s]
		switch e.key {
		case k:
			if l < e.loss {
				e.loss, e.back = l, back
			}
			return true
		case pstate{}:
			if len(t.used) >= t.max {
				return false
			}
			if 2*len(t.used) >= len(t.slots) {
				t.grow()
				return t.relax(k, l, back)
			}
			e.key, e.loss, e.back = k, l, back
			t.used = append(t.used, int32(s))
			return true
		}
	}
}

// collect appends the states and their losses to keys and loss, and
// returns their back-pointers too when withBack is set.
func (t *stateTable) collect(keys []pstate, loss []float64, withBack bool) ([]pstate, []float64, []uint64) {
	var back []uint64
	if withBack {
		back = make([]uint64, 0, len(t.used))
	}
	for _, s := range t.used {
		keys = append(keys, t.slots[s].key)
		loss = append(loss, t.slots[s].loss)
		if withBack {
			back = append(back, t.slots[s].back)
		}
	}
	return keys, loss, back
}

// enumeratePatterns calls visit(a, u·a) for every feasible pattern a of a
// node with capacity c (a_i ≤ s_i) whose value u·a is at least minVal (less
// a rounding slack), pruning with the suffix tables tab (an upper bound on
// the rest; types with u_i ≤ 0 count 0 there, which is still an upper
// bound). It stops and returns false when visit does.
//
// Only the counts of the types before tail matter to the caller (the
// reduced-cost DP keeps, per projection on its tracked types, the pattern
// of least loss): past tail it visits, for each prefix a_0..a_{tail−1},
// only the best completion (the maximum of u over the types from tail on,
// by branch and bound with the same tables), not every one. Measured on
// the suite: where few types are tracked (large, yarn: 5-9 distinct
// projections), the full enumeration visited 0.3-1.2 million patterns
// per node class and the DP's first step ran out of its work share.
//
// The best completion depends on the capacity r the prefix leaves and
// nothing else (u, tab, the supplies and tail are fixed), so known, unless
// nil, keeps the completions already found by r and is shared by the
// nodes of one DP run: prefixes of different counts and different nodes
// often leave the same r (yarn: memory and vcores in whole units).
// Measured on yarn-7009 (a fresh seed, 65 nodes, 15 types): a DP step
// took 3.3 s of CPU, most of it in the completions; with known 0.5 s.
//
// going, unless nil, is called with the steps taken (calls of the
// recursion, completions included) every enumCheckSteps steps and once
// more with the rest when the enumeration ends, so that a work clock
// counts every step (a call of fewer than enumCheckSteps steps counted
// none, and many-resources-1's DP 64% of its steps too few); the
// enumeration stops, returning false, when it returns false.
func enumeratePatterns(m *model, u []float64, tab *tables, c []int64, minVal float64, tail int, known *completions, going func(steps int) bool, visit func(a []int, val float64) bool) bool {
	n := len(m.dem)
	steps, stopped := 0, false
	step := func() bool { // false: stop
		if steps++; steps == enumCheckSteps {
			steps = 0
			stopped = stopped || (going != nil && !going(enumCheckSteps))
		}
		return !stopped
	}
	a := make([]int, n)
	best := make([]int, n)
	r := slices.Clone(c)
	eps := boundTolerance * math.Max(1, math.Abs(minVal))
	// complete finds the best completion of types i.. on r (into best),
	// above the value bestVal.
	var bestVal float64
	var complete func(i int, val float64)
	complete = func(i int, val float64) {
		if !step() {
			return
		}
		if i == n {
			if val > bestVal {
				bestVal = val
				copy(best[tail:], a[tail:])
			}
			return
		}
		if val+tab.value(i, r) <= bestVal {
			return
		}
		f := min(maxFit(m.dem[i], r), int64(m.supply[i]))
		if u[i] <= 0 {
			f = 0
		}
		d := m.dem[i]
		for p := range r {
			r[p] -= f * d[p]
		}
		for k := f; k >= 0; k-- { // most first: good completions early
			a[i] = int(k)
			complete(i+1, val+float64(k)*u[i])
			if k > 0 {
				for p := range r {
					r[p] += d[p]
				}
			}
		}
		a[i] = 0
	}
	var rec func(i int, val float64) bool
	rec = func(i int, val float64) bool {
		if !step() {
			return false
		}
		if val+tab.value(i, r) < minVal-eps {
			return true
		}
		if i == tail && tail < n {
			if !known.lookup(r, &bestVal, best[tail:]) {
				bestVal = math.Inf(-1)
				complete(i, 0)
				if stopped {
					return false
				}
				known.store(r, bestVal, best[tail:])
			}
			if math.IsInf(bestVal, -1) || val+bestVal < minVal-eps {
				return true
			}
			copy(a[tail:], best[tail:])
			ok := visit(a, val+bestVal)
			clear(a[tail:])
			return ok
		}
		if i == n {
			return visit(a, val)
		}
		f := min(maxFit(m.dem[i], r), int64(m.supply[i]))
		d := m.dem[i]
		ok := true
		k := int64(0)
		for ; ok; k++ {
			a[i] = int(k)
			ok = rec(i+1, val+float64(k)*u[i])
			if k == f {
				break
			}
			for p := range r {
				r[p] -= d[p]
			}
		}
		for p := range r {
			r[p] += k * d[p]
		}
		a[i] = 0
		return ok
	}
	ok := rec(0, 0)
	if going != nil && steps > 0 {
		going(steps) // the rest's work; the result stands
	}
	return ok
}

// completionsMax caps the completions a DP run keeps (each a key of 8
// bytes per resource, a value and the counts of the untracked types: about
// 20 MiB at yarn's 15 types); past it the completions are searched again.
const completionsMax = 1 << 17

// completions remembers the best completions of enumeratePatterns (the
// maximum of u over the types from tail on) by the capacity left.
type completions struct {
	at   map[string]int // key of r → index of its value and counts
	val  []float64
	best []int // the counts, width per completion
	// width is the number of untracked types; key is a scratch buffer
	width int
	key   []byte
	hits  int // lookups that found their completion
}

func newCompletions(width int) *completions {
	return &completions{at: map[string]int{}, width: width}
}

// keyOf encodes r into c.key (demandKey's bytes, in a reused buffer).
func (c *completions) keyOf(r []int64) []byte {
	c.key = appendDemandKey(c.key[:0], r)
	return c.key
}

// lookup copies r's completion into val and best, if known.
func (c *completions) lookup(r []int64, val *float64, best []int) bool {
	if c == nil {
		return false
	}
	k, ok := c.at[string(c.keyOf(r))] // no allocation for the lookup
	if ok {
		c.hits++
		*val = c.val[k]
		copy(best, c.best[k*c.width:(k+1)*c.width])
	}
	return ok
}

// store keeps r's completion, while there is room.
func (c *completions) store(r []int64, val float64, best []int) {
	if c == nil || len(c.val) >= completionsMax {
		return
	}
	c.at[string(c.keyOf(r))] = len(c.val)
	c.val = append(c.val, val)
	c.best = append(c.best, best...)
}

// intBlocks hands out copies of small int slices cut from blocks of
// intBlock ints: one allocation per block instead of one per slice. A
// copy's capacity is its length, so appending to it cannot reach the
// next.
type intBlocks struct{ free []int }

const intBlock = 1 << 14

func (b *intBlocks) clone(a []int) []int {
	if len(a) > len(b.free) {
		b.free = make([]int, max(intBlock, len(a)))
	}
	c := b.free[:len(a):len(a)]
	b.free = b.free[len(a):]
	copy(c, a)
	return c
}
