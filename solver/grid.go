package solver

import (
	"math"
	"math/bits"
	"slices"
)

// defaultCellBudget bounds the cells of one capacity grid; a table set holds
// (types+1) layers of that many float64 values per view.
const defaultCellBudget = 1 << 18

// maxTableFloats bounds the memory of one table set (64 MiB of float64).
const maxTableFloats = 1 << 23

// grid is a capacity grid for the single-node knapsack DP over some of the
// resources (res; all of them for a full grid). Resource res[p] is measured
// in units of q_p: a residual r maps to the cell ⌊r_res[p]/q_p⌋ and a demand
// d to ⌊d_res[p]/q_p⌋.
//
// When q_p is the GCD of all demands in the resource the map is exact:
// Σ a_i d_ip ≤ r_p ⟺ Σ a_i (d_ip/q_p) ≤ ⌊r_p/q_p⌋. When the exact grid would
// exceed the cell budget, q_p is coarsened; the map is then a relaxation
// (Σ a_i ⌊d_ip/q⌋ ≤ Σ a_i d_ip/q ≤ r_p/q, and the left side is an integer),
// so a DP over it still gives a valid upper bound, only a weaker one. So is
// a grid over a subset of the resources (the others are dropped).
type grid struct {
	k      int   // number of grid dimensions
	res    []int // the resource of each dimension
	q      []int64
	ext    []int // cells per dimension: ⌊Cmax_p/q_p⌋ + 1
	stride []int // the last dimension is contiguous
	cells  int
	exact  bool
	// shift[p] is log2 q_p where every q_p is a power of two (pow2): the
	// cell of a residual, which is never negative, is then a shift, not
	// an integer division (a division is tens of cycles, and the search
	// reads a cell of every view at every count it tries; GCDs of memory
	// demands in MB and the coarsening's doublings are powers of two on
	// every family of the suite but a few grids)
	shift []uint
	pow2  bool
}

// newGrid returns the grid over resources res (nil: all of capMax) with at
// most budget cells.
func newGrid(capMax []int64, dem [][]int64, res []int, budget int) *grid {
	if res == nil {
		res = make([]int, len(capMax))
		for p := range res {
			res[p] = p
		}
	}
	k := len(res)
	g := &grid{k: k, res: res, q: make([]int64, k), ext: make([]int, k), stride: make([]int, k), exact: true}
	for p, rp := range res {
		var d uint64
		for _, dm := range dem {
			d = gcd(d, uint64(dm[rp]))
		}
		if d == 0 {
			d = 1
		}
		g.q[p] = int64(d)
	}
	for {
		size := 1.0
		widest := 0
		for p, rp := range res {
			g.ext[p] = int(capMax[rp]/g.q[p]) + 1
			size *= float64(g.ext[p])
			if g.ext[p] > g.ext[widest] {
				widest = p
			}
		}
		if size <= float64(budget) {
			break
		}
		g.q[widest] *= 2
		g.exact = false
	}
	g.shift, g.pow2 = make([]uint, k), true
	for p, q := range g.q {
		g.shift[p] = uint(bits.TrailingZeros64(uint64(q)))
		g.pow2 = g.pow2 && q == 1<<g.shift[p]
	}
	g.cells = 1
	for p := k - 1; p >= 0; p-- {
		g.stride[p] = g.cells
		g.cells *= g.ext[p]
	}
	return g
}

// exactCells returns the cells of the exact (GCD-reduced) grid over res,
// +Inf beyond 2^62.
func exactCells(capMax []int64, dem [][]int64, res []int) float64 {
	size := 1.0
	for _, rp := range res {
		var d uint64
		for _, dm := range dem {
			d = gcd(d, uint64(dm[rp]))
		}
		size *= float64(capMax[rp]/int64(max(d, 1)) + 1)
	}
	return size
}

// index returns the cell of residual r.
func (g *grid) index(r []int64) int {
	c := 0
	if g.pow2 {
		for p, rp := range g.res {
			c += int(r[rp]>>g.shift[p]) * g.stride[p]
		}
		return c
	}
	for p, rp := range g.res {
		c += int(r[rp]/g.q[p]) * g.stride[p]
	}
	return c
}

// indexAfter returns the cell of r − c·d (which must be componentwise ≥ 0).
func (g *grid) indexAfter(r, d []int64, c int64) int {
	idx := 0
	if g.pow2 {
		for p, rp := range g.res {
			idx += int((r[rp]-c*d[rp])>>g.shift[p]) * g.stride[p]
		}
		return idx
	}
	for p, rp := range g.res {
		idx += int((r[rp]-c*d[rp])/g.q[p]) * g.stride[p]
	}
	return idx
}

// tables holds, for one vector of item values u, the suffix DPs of one or
// more views (grids over the resources)
//
//	layer[i][cell] = max Σ_{t≥i} u_t·a_t  s.t.  Σ_t a_t·⌊d_t/q⌋ ≤ cell, 0 ≤ a_t ≤ b_t,
//
// with types of u_t ≤ 0 left out (a_t = 0 is optimal for them); layer[n] = 0.
// Each view is a relaxation of the single-node knapsack, so the smallest
// of their values (value) is an upper bound too. One exact grid is one view;
// when the exact grid exceeds the budget (many resources, wide capacities),
// the coarsened full grid is joined by the exact grid of each resource
// alone and of the pairs of resources that fit, which bound the knapsack
// far better than the coarsened grid alone where a coarsened demand rounds
// down to zero.
type tables struct {
	views []tableView
}

type tableView struct {
	g     *grid
	layer [][]float64
}

// value returns the bound min over the views of layer[i][r].
func (t *tables) value(i int, r []int64) float64 {
	v := t.views[0].layer[i][t.views[0].g.index(r)]
	for _, w := range t.views[1:] {
		v = minf(v, w.layer[i][w.g.index(r)])
	}
	return v
}

// valueAfter returns value(i, r − c·d).
func (t *tables) valueAfter(i int, r, d []int64, c int64) float64 {
	v := t.views[0].layer[i][t.views[0].g.indexAfter(r, d, c)]
	for _, w := range t.views[1:] {
		v = minf(v, w.layer[i][w.g.indexAfter(r, d, c)])
	}
	return v
}

// minf is min(a, b) for values that are never NaN (table values,
// bounds): a compare the compiler inlines, where math.Min and the builtin
// min also order −0 before +0 and propagate NaN (math.Min calls an
// assembly routine: 12-15% of the CPU of the search on yarn and
// many-resources instances).
func minf(a, b float64) float64 {
	if b < a {
		return b
	}
	return a
}

// maxf is max(a, b) for values that are never NaN (bounds), as minf.
func maxf(a, b float64) float64 {
	if b > a {
		return b
	}
	return a
}

// tablesOn builds the tables of values u over the grids of an existing
// table set (e.g. the π = 0 tables), so that both cost the same memory.
func tablesOn(grids []*grid, dem [][]int64, u []float64, b []int) *tables {
	t := &tables{}
	for _, g := range grids {
		t.views = append(t.views, tableView{g: g, layer: buildLayers(g, dem, u, b)})
	}
	return t
}

// grids returns the grids of t's views.
func (t *tables) grids() []*grid {
	gs := make([]*grid, len(t.views))
	for v, w := range t.views {
		gs[v] = w.g
	}
	return gs
}

// viewGrids chooses the views: the exact full grid when it fits the cell
// budget, otherwise the coarsened full grid, the grid of each resource
// alone and those of the pairs of resources whose exact grid fits what is
// left of the budget (largest first, so that the pairs that bound most
// come first), less the single resources that an exact pair covers
// (dropDominatedSingles).
func viewGrids(capMax []int64, dem [][]int64) []*grid {
	n := len(dem)
	budget := cellBudget(n)
	full := newGrid(capMax, dem, nil, budget)
	k := len(capMax)
	if full.exact || k == 1 {
		return []*grid{full}
	}
	grids := []*grid{full}
	left := maxTableFloats/(n+1) - full.cells
	for p := range k {
		g := newGrid(capMax, dem, []int{p}, min(budget, max(64, left)))
		grids = append(grids, g)
		left -= g.cells
	}
	if k == 2 {
		return grids
	}
	type pair struct {
		p, q  int
		cells float64
	}
	var pairs []pair
	for p := range k {
		for q := p + 1; q < k; q++ {
			pairs = append(pairs, pair{p, q, exactCells(capMax, dem, []int{p, q})})
		}
	}
	slices.SortStableFunc(pairs, func(a, b pair) int { return cmpFloat(b.cells, a.cells) })
	for _, pr := range pairs {
		if pr.cells <= float64(min(budget, left)) {
			g := newGrid(capMax, dem, []int{pr.p, pr.q}, budget)
			grids = append(grids, g)
			left -= g.cells
		}
	}
	return dropDominatedSingles(grids, k)
}

// dropDominatedSingles leaves out of grids (the full grid, the k single
// resources, then the pairs) the view of each single resource that an
// exact pair's view covers: the pair's DP is the maximum over a subset of
// the single's patterns (those that also fit the other resource), built
// from the same pseudo-items in the same order, so its value is at most
// the single's at every residual, to the last bit, and the minimum over
// the views is the same without it. The search reads every view at every
// count it tries; on 3-resource clusters (hetero-3r) the three pairs
// cover the three singles: 4 views instead of 7, on six resources 15
// instead of 21.
func dropDominatedSingles(grids []*grid, k int) []*grid {
	covered := make([]bool, k)
	for _, g := range grids[1+k:] {
		if g.exact {
			for _, p := range g.res {
				covered[p] = true
			}
		}
	}
	out := grids[:1:1]
	for _, g := range grids[1 : 1+k] {
		if !covered[g.res[0]] {
			out = append(out, g)
		}
	}
	return append(out, grids[1+k:]...)
}

// buildLayers fills the suffix DPs of a bounded multi-dimensional knapsack
// over grid g with values u and count bounds b by binary splitting: b_t
// copies become pseudo-items of 1, 2, 4, … copies, each a 0/1 item
// (O(cells·Σ log b_t)).
func buildLayers(g *grid, dem [][]int64, u []float64, b []int) [][]float64 {
	n := len(dem)
	t := &tableView{g: g, layer: make([][]float64, n+1)}
	t.layer[n] = make([]float64, g.cells)
	delta := make([]int, g.k)
	for i := n - 1; i >= 0; i-- {
		cur := t.layer[i+1]
		if u[i] <= 0 || b[i] <= 0 {
			t.layer[i] = cur // shared: the layer is read-only once built
			continue
		}
		var spare []float64 // a buffer of this layer that may be overwritten
		curOwned := false   // cur is layer i+1 until the first pass
		for rem, m := b[i], 1; rem > 0; m *= 2 {
			if m > rem {
				m = rem
			}
			rem -= m
			fits := true
			for p, rp := range g.res {
				delta[p] = int(dem[i][rp]/g.q[p]) * m
				if delta[p] >= g.ext[p] {
					fits = false
				}
			}
			if !fits {
				break // larger multiples do not fit either
			}
			dst := spare
			if dst == nil {
				dst = make([]float64, g.cells)
			}
			g.pass(dst, cur, delta, float64(m)*u[i])
			spare = nil
			if curOwned {
				spare = cur
			}
			cur, curOwned = dst, true
		}
		t.layer[i] = cur
	}
	return t.layer
}

// pass applies one 0/1 item of coarse demand delta and value gain:
// dst[c] = max(src[c], src[c−delta] + gain) where c ≥ delta componentwise,
// dst[c] = src[c] elsewhere.
func (g *grid) pass(dst, src []float64, delta []int, gain float64) {
	copy(dst, src)
	off := 0
	for p := range delta {
		off += delta[p] * g.stride[p]
	}
	last := g.k - 1
	coord := make([]int, g.k)
	for p := range coord {
		coord[p] = delta[p]
	}
	for {
		base := 0
		for p := 0; p < last; p++ {
			base += coord[p] * g.stride[p]
		}
		// the row of the last resource, as slices of one length: the
		// loop then runs without bounds checks (the tables' build was
		// most of a single node's solve)
		row := dst[base+delta[last] : base+g.ext[last]]
		from := src[base+delta[last]-off:]
		from = from[:len(row)]
		for c, v := range from {
			if v += gain; v > row[c] {
				row[c] = v
			}
		}
		// odometer over resources 0..last-1
		p := last - 1
		for ; p >= 0; p-- {
			coord[p]++
			if coord[p] < g.ext[p] {
				break
			}
			coord[p] = delta[p]
		}
		if p < 0 {
			return
		}
	}
}

// cellBudget returns the cell budget for n task types so that a table set
// stays within maxTableFloats.
func cellBudget(n int) int {
	b := maxTableFloats / (n + 1)
	if b > defaultCellBudget {
		b = defaultCellBudget
	}
	if b < 64 {
		b = 64
	}
	return b
}

// countBounds returns b_t = min(s_t, max_j ⌊C_j/d_t⌋): no node holds more.
func countBounds(dem [][]int64, supply []int, caps [][]int64) []int {
	b := make([]int, len(dem))
	for t, d := range dem {
		var f int64
		for _, c := range caps {
			if x := maxFit(d, c); x > f {
				f = x
			}
		}
		b[t] = int(math.Min(float64(supply[t]), float64(f)))
	}
	return b
}
