package solver

import (
	"math"
	"slices"
)

// model is the internal form of an Instance that every method works on.
//
// Dominance between task types: two task types with the same demand vector
// R[i,·] have the same value and are interchangeable in every solution, so
// they are merged into one type whose supply is the sum of the counts (and
// split back in input order when the assignment is reported). The merged
// types are ordered by value Σ_p w_p·R[i,p], largest first (ties: larger
// demand vector lexicographically, then input order), the order in which
// the exact search branches.
type model struct {
	k       int
	w       []float64
	dem     [][]int64 // merged types
	val     []float64 // v_i = Σ_p w_p·R[i,p]
	supply  []int     // s_i
	members [][]int   // input task indices merged into each type, in input order
	// unit is the granularity g of objective values: every Σ_i v_i·x_i is an
	// integer multiple of g (0 when the values have no common dyadic unit).
	unit float64
}

func newModel(in *Instance) *model {
	k := in.Resources()
	w := make([]float64, k)
	for p := range w {
		w[p] = in.Weight(p)
	}
	m := &model{k: k, w: w}
	byDemand := map[string]int{}
	for i, t := range in.Tasks {
		key := demandKey(t.Demand)
		if mi, ok := byDemand[key]; ok {
			m.supply[mi] += t.Count
			m.members[mi] = append(m.members[mi], i)
			continue
		}
		byDemand[key] = len(m.dem)
		m.dem = append(m.dem, slices.Clone(t.Demand))
		m.val = append(m.val, in.Value(i))
		m.supply = append(m.supply, t.Count)
		m.members = append(m.members, []int{i})
	}
	perm := make([]int, len(m.dem))
	for i := range perm {
		perm[i] = i
	}
	slices.SortStableFunc(perm, func(a, b int) int {
		if m.val[a] != m.val[b] {
			if m.val[a] > m.val[b] {
				return -1
			}
			return 1
		}
		return -slices.Compare(m.dem[a], m.dem[b])
	})
	m.dem = permute(m.dem, perm)
	m.val = permute(m.val, perm)
	m.supply = permute(m.supply, perm)
	m.members = permute(m.members, perm)
	m.unit = valueUnit(m.val)
	return m
}

func permute[T any](s []T, perm []int) []T {
	out := make([]T, len(perm))
	for i, p := range perm {
		out[i] = s[p]
	}
	return out
}

func demandKey(d []int64) string {
	b := make([]byte, 0, 8*len(d))
	for _, q := range d {
		for s := 0; s < 64; s += 8 {
			b = append(b, byte(q>>s))
		}
	}
	return string(b)
}

// valueUnit returns the largest g such that every v_i is an integer multiple
// of g, looking for g = G/2^e with integer G (values that are exact dyadic
// rationals, e.g. weights 1 or 1/1024 with integer demands). It returns 0
// when there is no such g below 2^53, in which case bounds are not rounded.
func valueUnit(vals []float64) float64 {
	for e := 0; e <= 40; e++ {
		scale := math.Ldexp(1, e)
		var g uint64
		ok := true
		for _, v := range vals {
			s := v * scale
			if s != math.Trunc(s) || s <= 0 || s >= 1<<53 {
				ok = false
				break
			}
			g = gcd(g, uint64(s))
		}
		if ok {
			return float64(g) / scale
		}
	}
	return 0
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// boundTolerance is the relative slack added before a bound is rounded down
// to the value unit, so that floating-point error in a Lagrangian bound
// (duals from the LP) can never round a valid bound below the true value.
const boundTolerance = 1e-7

// improveTolerance is the relative amount by which a value must exceed the
// incumbent to count as an improvement when values have no common unit.
const improveTolerance = 1e-9

// floorBound rounds an upper bound down to the value unit, when there is one.
func (m *model) floorBound(b float64) float64 {
	if m.unit <= 0 || math.IsInf(b, 0) {
		return b
	}
	q := b / m.unit
	return math.Floor(q+boundTolerance*math.Max(1, math.Abs(q))) * m.unit
}

// canImprove reports whether a subtree with upper bound b may hold a
// solution strictly better than incumbent value inc.
func (m *model) canImprove(b, inc float64) bool {
	if m.unit > 0 {
		return m.floorBound(b) > inc+0.5*m.unit
	}
	return b > inc+improveTolerance*math.Max(1, math.Abs(inc))
}

// maxFit returns how many tasks of demand d fit in residual r: min_p ⌊r_p/d_p⌋.
func maxFit(d, r []int64) int64 {
	f := int64(math.MaxInt64)
	for p := range d {
		if q := r[p] / d[p]; q < f {
			f = q
		}
	}
	return f
}

// patternValue returns Σ_i v_i·a_i.
func (m *model) patternValue(a []int) float64 {
	v := 0.0
	for i, c := range a {
		v += float64(c) * m.val[i]
	}
	return v
}
