package solver

import (
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCostDPBoundIsABound checks the reduced-cost DP against exhaustive
// search: for every incumbent value inc below, at or above the optimum z*,
// a result it reports as valid never claims less than min(z*, …): either
// ub ≥ z* or inc ≥ z* (then "nothing beats inc" is true).
func TestCostDPBoundIsABound(t *testing.T) {
	cases := 300
	if testing.Short() {
		cases = 80
	}
	rng := rand.New(rand.NewPCG(7, 9))
	ran := 0
	for c := 0; c < cases; c++ {
		in := smallInstance(rng)
		opt := exhaustive(in)
		m := newModel(in)
		_, sorted, _ := sortNodes(m, nodeCaps(in))
		base := baseTables(m, sorted, m.supply)
		x, _, _ := perNodeAssign(context.Background(), m, sorted, m.supply, time.Time{}, base)
		bounds, _ := rootBounds(context.Background(), m, sorted, x, base, Options{})
		lb := bounds[len(bounds)-1]
		if lb.pi == nil {
			continue // the LP failed: no duals to work with
		}
		step := m.unit
		if step == 0 {
			step = 0.5
		}
		for k := -2; k <= 4; k++ {
			inc := opt - float64(k)*step
			if inc < 0 {
				continue
			}
			// with the pair tables and without them (their work cap)
			for _, pairOps := range []int{costDPMaxPairOps, 0} {
				saved := costDPMaxPairOps
				costDPMaxPairOps = pairOps
				ub, _, ok := costDPBound(context.Background(), m, sorted, lb, inc, nil)
				costDPMaxPairOps = saved
				if !ok {
					continue
				}
				ran++
				if ub < opt-objTol && inc < opt-objTol {
					t.Fatalf("case %d: inc %v, pair work cap %d: bound %v below the optimum %v\n%+v", c, inc, pairOps, ub, opt, in)
				}
			}
		}
	}
	if ran < cases {
		t.Fatalf("only %d DP runs over %d cases", ran, cases)
	}
}

// TestPackedSupplyDetectsOverdraw checks the guard-bit arithmetic: taking
// at most the remaining supply of every tracked type keeps all guard bits,
// taking one more of any type clears one.
func TestPackedSupplyDetectsOverdraw(t *testing.T) {
	supply := []int{3, 0, 255, 1, 1000}
	pi := []float64{1, 2, 0.5, 0, 3}
	f := newPackedSupply(supply, pi, nil)
	if len(f.types) != 3 { // type 1 has no supply, type 3 has π = 0
		t.Fatalf("tracked %v, want types 0, 2, 4", f.types)
	}
	st := f.full.minus(f.pack([]int{1, 0, 200, 0, 999}))
	if !st.covers(f.guards) {
		t.Fatal("a feasible draw cleared a guard bit")
	}
	for q, i := range f.types {
		if got, want := f.get(st, q), []int{2, 0, 55, 0, 1}[i]; got != want {
			t.Errorf("type %d: remaining %d, want %d", i, got, want)
		}
	}
	for _, a := range [][]int{{3, 0, 56, 0, 0}, {0, 0, 0, 0, 2}, {3, 0, 0, 0, 0}} {
		if next := st.minus(f.pack(a)); next.covers(f.guards) {
			t.Errorf("overdraw %v not detected", a)
		}
	}
	// many wide types spill into the second word; π = 0 types come with extra
	wide := make([]int, 12)
	wpi := make([]float64, 12)
	for i := range wide {
		wide[i] = 1000 + i
		wpi[i] = float64(i % 3) // every third has π = 0
	}
	g := newPackedSupply(wide, wpi, []int{0, 3})
	if !slices.Contains(g.types, 0) || !slices.Contains(g.types, 3) || !slices.Contains(g.word, 1) {
		t.Fatalf("tracked %v in words %v: want types 0 and 3 and a second word", g.types, g.word)
	}
	draw := make([]int, 12)
	for q, i := range g.types {
		draw[i] = wide[i] - q
	}
	st = g.full.minus(g.pack(draw))
	for q := range g.types {
		if got := g.get(st, q); got != q {
			t.Errorf("field %d: remaining %d, want %d", q, got, q)
		}
	}
	for q, i := range g.types {
		over := make([]int, 12)
		over[i] = q + 1
		if st.minus(g.pack(over)).covers(g.guards) {
			t.Errorf("overdraw of type %d (word %d) not detected", i, g.word[q])
		}
	}
}

// TestEnumeratePatternsTailKeepsTheLeastLoss checks the enumeration that
// visits one completion per prefix (tail < n) against the full one (tail
// = n) on random small instances and random tails: for every projection on
// the types before tail, both find the same best value u·a, and every
// pattern visited is feasible and has the value it is visited with; and
// the completions remembered from another node change nothing.
func TestEnumeratePatternsTailKeepsTheLeastLoss(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 13))
	checked, hits := 0, 0
	for range 60 {
		in := smallInstance(rng)
		m := newModel(in)
		n := len(m.dem)
		if n < 2 {
			continue
		}
		_, sorted, _ := sortNodes(m, nodeCaps(in))
		u := make([]float64, n)
		for i := range u {
			u[i] = m.val[i] * (0.2 + rng.Float64()) // some below, some above the value
			if rng.IntN(4) == 0 {
				u[i] = -u[i] // a type priced out
			}
		}
		tab := tablesOn(pricingGrids(baseTables(m, sorted, m.supply)), m.dem, u, countBounds(m.dem, m.supply, sorted))
		c := sorted[rng.IntN(len(sorted))]
		tail := rng.IntN(n)
		minVal := tab.value(0, c) - float64(rng.IntN(3))*m.val[0]
		best := func(c []int64, tail int, known *completions) map[string]float64 {
			out := map[string]float64{}
			enumeratePatterns(m, u, tab, c, minVal, tail, known, nil, func(a []int, val float64) bool {
				if !fitsPattern(m, a, c) || math.Abs(dot(u, a)-val) > 1e-9*math.Max(1, math.Abs(val)) {
					t.Fatalf("visited pattern %v (value %v) on %v: infeasible or its value is %v", a, val, c, dot(u, a))
				}
				key := fmt.Sprint(a[:tail])
				if v, ok := out[key]; !ok || val > v {
					out[key] = val
				}
				return true
			})
			return out
		}
		full, short := best(c, n, nil), best(c, tail, nil)
		// the completions remembered from another node's enumeration
		// (of the same u and tail) change nothing
		known := newCompletions(n - tail)
		best(sorted[rng.IntN(len(sorted))], tail, known)
		if remembered := best(c, tail, known); !maps.Equal(remembered, short) {
			t.Fatalf("tail %d of %d types: with the completions of another node %v, without %v", tail, n, remembered, short)
		}
		hits += known.hits
		prefix := map[string]float64{}
		for key, v := range full {
			var a []int
			for _, f := range strings.Fields(strings.Trim(key, "[]")) {
				x, _ := strconv.Atoi(f)
				a = append(a, x)
			}
			k := fmt.Sprint(a[:tail])
			if old, ok := prefix[k]; !ok || v > old {
				prefix[k] = v
			}
		}
		if len(prefix) != len(short) {
			t.Fatalf("tail %d of %d types: %d prefixes in the full enumeration, %d with one completion each", tail, n, len(prefix), len(short))
		}
		for k, v := range prefix {
			if w, ok := short[k]; !ok || math.Abs(v-w) > 1e-9*math.Max(1, math.Abs(v)) {
				t.Fatalf("tail %d of %d types, prefix %s: best value %v in the full enumeration, %v (found %v) with one completion", tail, n, k, v, w, ok)
			}
		}
		checked++
	}
	if checked < 30 || hits == 0 {
		t.Fatalf("only %d instances checked, %d remembered completions used", checked, hits)
	}
}

// The copies intBlocks hands out hold their values whatever is cut after
// them, and appending to one cannot overwrite the next, within a block and
// across blocks (a slice longer than a block gets its own).
func TestIntBlocksCopiesStayApart(t *testing.T) {
	var b intBlocks
	rng := rand.New(rand.NewPCG(1, 2))
	var want, got [][]int
	for range 3 * intBlock / 4 {
		a := make([]int, rng.IntN(12))
		if rng.IntN(500) == 0 {
			a = make([]int, intBlock+1)
		}
		for i := range a {
			a[i] = rng.Int()
		}
		orig := slices.Clone(a)
		c := b.clone(a)
		for i := range a {
			a[i] = -2 // the source changes after
		}
		want, got = append(want, orig), append(got, c)
	}
	for k := range got {
		// appended to once every copy is cut
		if grown := append(got[k], -1); grown[len(grown)-1] != -1 {
			t.Fatal("append lost its value")
		}
	}
	for k := range got {
		if !slices.Equal(got[k], want[k]) {
			t.Fatalf("copy %d changed after later copies: %v, want %v", k, got[k], want[k])
		}
	}
}
