package solver

import "math"

// defaultCellBudget bounds the cells of one capacity grid; a table set holds
// (types+1) layers of that many float64 values.
const defaultCellBudget = 1 << 18

// maxTableFloats bounds the memory of one table set (32 MiB of float64).
const maxTableFloats = 1 << 22

// grid is a capacity grid for the single-node knapsack DP. Resource p is
// measured in units of q_p: a residual r maps to the cell ⌊r_p/q_p⌋ and a
// demand d to ⌊d_p/q_p⌋.
//
// When q_p is the GCD of all demands in resource p the map is exact:
// Σ a_i d_ip ≤ r_p ⟺ Σ a_i (d_ip/q_p) ≤ ⌊r_p/q_p⌋. When the exact grid would
// exceed the cell budget, q_p is coarsened; the map is then a relaxation
// (Σ a_i ⌊d_ip/q⌋ ≤ Σ a_i d_ip/q ≤ r_p/q, and the left side is an integer),
// so a DP over it still gives a valid upper bound, only a weaker one.
type grid struct {
	k      int
	q      []int64
	ext    []int // cells per resource: ⌊Cmax_p/q_p⌋ + 1
	stride []int // the last resource is contiguous
	cells  int
	exact  bool
}

func newGrid(capMax []int64, dem [][]int64, budget int) *grid {
	k := len(capMax)
	g := &grid{k: k, q: make([]int64, k), ext: make([]int, k), stride: make([]int, k), exact: true}
	for p := 0; p < k; p++ {
		var d uint64
		for _, dm := range dem {
			d = gcd(d, uint64(dm[p]))
		}
		if d == 0 {
			d = 1
		}
		g.q[p] = int64(d)
	}
	for {
		size := 1.0
		widest := 0
		for p := 0; p < k; p++ {
			g.ext[p] = int(capMax[p]/g.q[p]) + 1
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
	g.cells = 1
	for p := k - 1; p >= 0; p-- {
		g.stride[p] = g.cells
		g.cells *= g.ext[p]
	}
	return g
}

// index returns the cell of residual r.
func (g *grid) index(r []int64) int {
	c := 0
	for p, x := range r {
		c += int(x/g.q[p]) * g.stride[p]
	}
	return c
}

// indexAfter returns the cell of r − c·d (which must be componentwise ≥ 0).
func (g *grid) indexAfter(r, d []int64, c int64) int {
	idx := 0
	for p, x := range r {
		idx += int((x-c*d[p])/g.q[p]) * g.stride[p]
	}
	return idx
}

// tables holds, for one vector of item values u, the suffix DPs
//
//	layer[i][cell] = max Σ_{t≥i} u_t·a_t  s.t.  Σ_t a_t·⌊d_t/q⌋ ≤ cell, 0 ≤ a_t ≤ b_t,
//
// with types of u_t ≤ 0 left out (a_t = 0 is optimal for them). layer[n] = 0.
type tables struct {
	g     *grid
	layer [][]float64
}

// buildTables fills the suffix DPs of a bounded multi-dimensional knapsack
// with values u and count bounds b by binary splitting: b_t copies become
// pseudo-items of 1, 2, 4, … copies, each a 0/1 item (O(cells·Σ log b_t)).
func buildTables(g *grid, dem [][]int64, u []float64, b []int) *tables {
	n := len(dem)
	t := &tables{g: g, layer: make([][]float64, n+1)}
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
			for p := range delta {
				delta[p] = int(dem[i][p]/g.q[p]) * m
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
	return t
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
		for c := base + delta[last]; c < base+g.ext[last]; c++ {
			if v := src[c-off] + gain; v > dst[c] {
				dst[c] = v
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
