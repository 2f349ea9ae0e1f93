package thresholds

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/floats/scalar"
)

// Named tolerances.
const (
	oracleRelTol = 1e-9  // table and threshold policy vs exhaustive optimum
	exactRelTol  = 1e-12 // two exact formulas for the same quantity
)

// point is one atom of a discrete joint law of (X, R).
type point struct {
	x    float64
	r    int
	prob float64
}

// condsOf turns a discrete joint law into the conditional laws of Y = X/R
// given R (ascending R).
func condsOf(t testing.TB, pts []point) ([]condLaw, int) {
	t.Helper()
	byR := map[int][]point{}
	maxR := 0
	for _, p := range pts {
		byR[p.r] = append(byR[p.r], p)
		maxR = max(maxR, p.r)
	}
	var conds []condLaw
	for v := 1; v <= maxR; v++ {
		ps := byR[v]
		if len(ps) == 0 {
			continue
		}
		var pv float64
		for _, p := range ps {
			pv += p.prob
		}
		vals := make([]float64, len(ps))
		probs := make([]float64, len(ps))
		for i, p := range ps {
			vals[i] = p.x / float64(v)
			probs[i] = p.prob / pv
		}
		l, err := newAtomicLaw(vals, probs)
		if err != nil {
			t.Fatal(err)
		}
		conds = append(conds, condLaw{r: v, prob: pv, z: l, scale: 1})
	}
	return conds, maxR
}

// exhaustiveOptimum is the optimal expected cost of K jobs with i.i.d. (X,R)
// from pts on slots with the given costs, by dynamic programming over the set
// of free slots, trying every R-subset of the free slots (not only contiguous
// blocks of the sorted list).
func exhaustiveOptimum(pts []point, jobs int, costs []float64) float64 {
	m := len(costs)
	subsets := map[int][]uint32{}
	for _, p := range pts {
		if _, ok := subsets[p.r]; ok {
			continue
		}
		var list []uint32
		for a := uint32(0); a < 1<<m; a++ {
			if bits.OnesCount32(a) == p.r {
				list = append(list, a)
			}
		}
		subsets[p.r] = list
	}
	h := make([]float64, 1<<m) // H(A) for every subset A
	for a := 1; a < 1<<m; a++ {
		low := bits.TrailingZeros32(uint32(a))
		h[a] = h[a&(a-1)] + costs[low]
	}
	memo := make([][]float64, jobs+2)
	for n := range memo {
		memo[n] = make([]float64, 1<<m)
		for i := range memo[n] {
			memo[n][i] = math.NaN()
		}
	}
	var value func(n int, free uint32) float64
	value = func(n int, free uint32) float64 {
		if n > jobs {
			return 0
		}
		if v := memo[n][free]; !math.IsNaN(v) {
			return v
		}
		var e float64
		for _, p := range pts {
			y := p.x / float64(p.r)
			best := math.Inf(1)
			for _, a := range subsets[p.r] {
				if a&free != a {
					continue
				}
				best = min(best, y*h[a]+value(n+1, free&^a))
			}
			e += p.prob * best
		}
		memo[n][free] = e
		return e
	}
	return value(1, uint32(1)<<m-1)
}

// policyCost is the exact expected cost of following the table's
// placements (Place with the stage's thresholds on the cheapest-first list of
// free slots), by enumerating every sequence of outcomes.
func policyCost(t testing.TB, tab *Table, pts []point, costs []float64) float64 {
	t.Helper()
	order := make([]int, len(costs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(costs[a], costs[b]) })
	var rec func(n int, free []int, prob, acc float64) float64
	rec = func(n int, free []int, prob, acc float64) float64 {
		if n > tab.Jobs {
			return prob * acc
		}
		var s float64
		for _, p := range pts {
			pl, err := Place(tab.Stages[n-1], len(free), p.x, p.r)
			if err != nil {
				t.Fatalf("job %d (%v, %d): %v", n, p.x, p.r, err)
			}
			if pl.Clamped {
				t.Fatalf("job %d: placement clamped with %d free slots", n, len(free))
			}
			var hsum float64
			rest := make([]int, 0, len(free)-p.r)
			for i, slot := range free {
				if i >= pl.Positions[0] && i <= pl.Positions[len(pl.Positions)-1] {
					hsum += costs[slot]
				} else {
					rest = append(rest, slot)
				}
			}
			s += rec(n+1, rest, prob*p.prob, acc+pl.Y*hsum)
		}
		return s
	}
	return rec(1, order, 1, 0)
}

// randomPoints draws a small discrete joint law: independent X and R, or a
// joint law where Y depends on R in an arbitrary way.
func randomPoints(rng *rand.Rand, maxR int) []point {
	var pts []point
	if rng.IntN(2) == 0 { // independent
		nx := 1 + rng.IntN(3)
		xs := make([]float64, nx)
		px := randomProbs(rng, nx)
		for i := range xs {
			xs[i] = float64(1 + rng.IntN(20))
		}
		var rs []int
		for v := 1; v <= maxR; v++ {
			if v == maxR || rng.IntN(3) > 0 {
				rs = append(rs, v)
			}
		}
		pr := randomProbs(rng, len(rs))
		for i, x := range xs {
			for j, v := range rs {
				pts = append(pts, point{x: x, r: v, prob: px[i] * pr[j]})
			}
		}
		return pts
	}
	n := 1 + rng.IntN(5)
	probs := randomProbs(rng, n)
	for i := range n {
		v := 1 + rng.IntN(maxR)
		if i == 0 {
			v = maxR
		}
		pts = append(pts, point{x: rng.Float64() * 30, r: v, prob: probs[i]})
	}
	return pts
}

func randomProbs(rng *rand.Rand, n int) []float64 {
	p := make([]float64, n)
	var s float64
	for i := range p {
		p[i] = 0.1 + rng.Float64()
		s += p[i]
	}
	for i := range p {
		p[i] /= s
	}
	return p
}

func TestTableMatchesExhaustiveOptimum(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 14))
	cases := 300
	if testing.Short() {
		cases = 60
	}
	worstTable, worstPolicy := 0.0, 0.0
	for c := range cases {
		jobs := 1 + rng.IntN(4)
		maxR := 1 + rng.IntN(3)
		if jobs*maxR > 12 {
			jobs = 12 / maxR
		}
		pts := randomPoints(rng, maxR)
		costs := make([]float64, jobs*maxR)
		for i := range costs {
			if c%3 == 0 {
				costs[i] = float64(rng.IntN(4)) // many ties
			} else {
				costs[i] = rng.Float64() * 10
			}
		}
		name := fmt.Sprintf("case=%d/K=%d/R=%d", c, jobs, maxR)
		t.Run(name, func(t *testing.T) {
			conds, rb := condsOf(t, pts)
			tab, err := buildTable(context.Background(), conds, jobs, rb, Options{})
			if err != nil {
				t.Fatal(err)
			}
			want := exhaustiveOptimum(pts, jobs, costs)
			got, err := tab.ExpectedCost(costs)
			if err != nil {
				t.Fatal(err)
			}
			if !scalar.EqualWithinAbsOrRel(got, want, oracleRelTol, oracleRelTol) {
				t.Errorf("Σ H_(j)·c_j = %.15g, exhaustive optimum %.15g (points %v, costs %v)", got, want, pts, costs)
			}
			pol := policyCost(t, tab, pts, costs)
			if !scalar.EqualWithinAbsOrRel(pol, want, oracleRelTol, oracleRelTol) {
				t.Errorf("threshold policy costs %.15g, exhaustive optimum %.15g (points %v, costs %v)", pol, want, pts, costs)
			}
			worstTable = max(worstTable, math.Abs(got-want)/max(want, 1e-300))
			worstPolicy = max(worstPolicy, math.Abs(pol-want)/max(want, 1e-300))
		})
	}
	t.Logf("%d cases: worst relative error table %.2g, policy %.2g", cases, worstTable, worstPolicy)
}
