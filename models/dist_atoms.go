package models

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
)

// ProbSumTolerance is how far from 1 a list of probabilities may sum
// (docs/formats.md#workload). Accepted lists are renormalized to sum to 1.
const ProbSumTolerance = 1e-9

var (
	_ Atomic      = (*atomLaw)(nil)
	_ transformer = (*atomLaw)(nil)
)

// atomTable holds a law with finitely many atoms x_1 < ... < x_n, p_i > 0, with
// prefix and suffix sums so that any interval is two binary searches and one
// subtraction:
//
//	P[x_i ≤ X < x_j]      = Σ_{i≤l<j} p_l         = cumP[j] − cumP[i] = sufP[i] − sufP[j]
//	E[X·1{x_i ≤ X < x_j}] = Σ_{i≤l<j} p_l·x_l     = cumM[j] − cumM[i] = sufM[i] − sufM[j]
//
// The code takes whichever of the two differences has the smaller minuend, so
// the absolute error is a few ulps of the smaller of the two tails rather than
// of the total. For an empirical law (equal-weight samples) the probabilities
// come from integer counts, exactly: P = (cumN[j] − cumN[i])/N.
type atomTable struct {
	x          []float64
	p          []float64
	cumP, sufP []float64 // discrete only
	cumM, sufM []float64
	cnt, cumN  []int // empirical only
}

// newAtomTable builds the table of a law with support x (ascending, distinct)
// and probabilities p (> 0, summing to 1). cnt are the sample multiplicities of
// an empirical law (nil for a discrete law).
func newAtomTable(x, p []float64, cnt []int) *atomTable {
	t := &atomTable{x: x, p: p, cnt: cnt}
	m := make([]float64, len(x))
	for i := range x {
		m[i] = p[i] * x[i]
	}
	t.cumM, t.sufM = prefixSums(m), suffixSums(m)
	if cnt == nil {
		t.cumP, t.sufP = prefixSums(p), suffixSums(p)
	} else {
		t.cumN = make([]int, len(cnt)+1)
		for i, c := range cnt {
			t.cumN[i+1] = t.cumN[i] + c
		}
	}
	return t
}

// mergedAtomTable builds a discrete table from unsorted (value, prob) pairs,
// summing the probabilities of equal values and dropping zero ones. It is used
// for Atomic laws from outside the package, which are taken as they are.
func mergedAtomTable(values, probs []float64) *atomTable {
	var x, p []float64
	for _, i := range sortedIndex(len(values), byValue(values)) {
		if !(probs[i] > 0) {
			continue
		}
		if n := len(x); n > 0 && x[n-1] == values[i] {
			p[n-1] += probs[i]
			continue
		}
		x = append(x, values[i])
		p = append(p, probs[i])
	}
	return newAtomTable(x, p, nil)
}

// prefixSums returns s with s[i] = Σ_{l<i} v_l, by Neumaier's compensated
// summation, forced non-decreasing (v ≥ 0).
func prefixSums(v []float64) []float64 {
	s := make([]float64, len(v)+1)
	var sum, c float64
	for i, x := range v {
		sum, c = neumaierAdd(sum, c, x)
		s[i+1] = max(s[i], sum+c)
	}
	return s
}

// suffixSums returns s with s[i] = Σ_{l≥i} v_l (s[len(v)] = 0), compensated
// and forced non-increasing.
func suffixSums(v []float64) []float64 {
	s := make([]float64, len(v)+1)
	var sum, c float64
	for i := len(v) - 1; i >= 0; i-- {
		sum, c = neumaierAdd(sum, c, v[i])
		s[i] = max(s[i+1], sum+c)
	}
	return s
}

// neumaierAdd adds x to the compensated sum (sum, c).
func neumaierAdd(sum, c, x float64) (float64, float64) {
	t := sum + x
	if math.Abs(sum) >= math.Abs(x) {
		c += (sum - t) + x
	} else {
		c += (x - t) + sum
	}
	return t, c
}

// sumFloats returns the compensated sum of v.
func sumFloats(v []float64) float64 {
	var sum, c float64
	for _, x := range v {
		sum, c = neumaierAdd(sum, c, x)
	}
	return sum + c
}

// rangeSum returns Σ_{i≤l<j} v_l from the prefix sums cum and suffix sums suf.
func rangeSum(cum, suf []float64, i, j int) float64 {
	n := len(cum) - 1
	switch {
	case i >= j:
		return 0
	case i == 0:
		return cum[j]
	case j == n:
		return suf[i]
	case cum[j] <= suf[i]:
		return max(cum[j]-cum[i], 0)
	default:
		return max(suf[i]-suf[j], 0)
	}
}

// prob returns P[x_i ≤ X < x_j] (indices into the support).
func (t *atomTable) prob(i, j int) float64 {
	if i >= j {
		return 0
	}
	if t.cumN != nil {
		return float64(t.cumN[j]-t.cumN[i]) / float64(t.cumN[len(t.cumN)-1])
	}
	return rangeSum(t.cumP, t.sufP, i, j)
}

// moment returns Σ_{i≤l<j} p_l·x_l.
func (t *atomTable) moment(i, j int) float64 { return rangeSum(t.cumM, t.sufM, i, j) }

// atomLaw is a law on the atoms y_i = T(x_i) of a table, where T(x) = x·s, or
// x/s when div: the same table serves X, s·X and every conditional X/r without
// copying. T is non-decreasing in floating point, so binary searches on T(x_i)
// are valid; queries compare T(x_i) itself with the bounds, so the half-open
// interval [a, b) is respected exactly on the atoms that Atoms and Sample return.
type atomLaw struct {
	kind string
	t    *atomTable
	s    float64
	div  bool
}

// NewDiscrete returns the law P[X = values[i]] = probs[i]. values must be
// finite, ≥ 0 and distinct (any order); probs finite, ≥ 0, summing to 1 within
// ProbSumTolerance (they are renormalized); atoms of probability 0 are dropped
// from the support.
func NewDiscrete(values, probs []float64) (Dist, error) {
	return newDiscrete("data", values, probs)
}

func newDiscrete(path string, values, probs []float64) (Dist, error) {
	valuesPath, probsPath := joinPath(path, "values"), joinPath(path, "probs")
	if len(values) == 0 {
		return nil, invalid(valuesPath, nil, "must not be empty")
	}
	if len(probs) != len(values) {
		return nil, invalid(probsPath, nil, "has %d entries, %s has %d", len(probs), valuesPath, len(values))
	}
	for i, v := range values {
		if err := checkNonnegAt(valuesPath, i, v); err != nil {
			return nil, err
		}
	}
	total, err := checkProbs(probsPath, probs)
	if err != nil {
		return nil, err
	}
	idx := sortedIndex(len(values), byValue(values))
	for k := 1; k < len(idx); k++ {
		if i, j := idx[k-1], idx[k]; values[i] == values[j] {
			return nil, invalid(indexPath(valuesPath, j), values[j], "duplicate of %s", indexPath(valuesPath, i))
		}
	}
	var x, p []float64
	for _, i := range idx {
		if probs[i] > 0 {
			x = append(x, values[i])
			p = append(p, probs[i]/total)
		}
	}
	return &atomLaw{kind: KindDiscrete, t: newAtomTable(x, p, nil), s: 1}, nil
}

// checkProbs validates a probability list (each finite and ≥ 0, sum within
// ProbSumTolerance of 1) and returns its sum.
func checkProbs(path string, probs []float64) (float64, error) {
	for i, p := range probs {
		if err := checkNonnegAt(path, i, p); err != nil {
			return 0, err
		}
	}
	total := sumFloats(probs)
	if err := checkSum(path, "", total); err != nil {
		return 0, err
	}
	return total, nil
}

// checkSum rejects a total probability farther than ProbSumTolerance from 1;
// what names the summed quantity in the message ("" for the field itself).
func checkSum(field, what string, total float64) error {
	if !(math.Abs(total-1) <= ProbSumTolerance) {
		if what != "" {
			what = " of " + what
		}
		return invalid(field, nil, "sum%s %s, must be 1 within %s", what, strconv.FormatFloat(total, 'g', 12, 64), formatFloat(ProbSumTolerance))
	}
	return nil
}

// sortedIndex returns the permutation that stably sorts items 0..n-1 by cmp.
func sortedIndex(n int, cmp func(i, j int) int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, cmp)
	return idx
}

// byValue compares values[i] with values[j].
func byValue(values []float64) func(i, j int) int {
	return func(i, j int) int { return cmp.Compare(values[i], values[j]) }
}

// NewEmpirical returns the empirical law of the samples: each sample has
// weight 1/N; equal samples are merged into one atom of weight count/N.
// Samples must be finite and ≥ 0, and there must be at least one.
func NewEmpirical(samples []float64) (Dist, error) {
	return newEmpirical("data", "samples", samples)
}

// newEmpirical validates samples read from field path.name (a list, or a file
// already checked by readSamples) and builds the law.
func newEmpirical(path, name string, samples []float64) (Dist, error) {
	field := joinPath(path, name)
	if len(samples) == 0 {
		return nil, invalid(field, nil, "must not be empty")
	}
	for i, v := range samples {
		if err := checkNonnegAt(field, i, v); err != nil {
			return nil, err
		}
	}
	sorted := slices.Clone(samples)
	slices.Sort(sorted)
	var x []float64
	var cnt []int
	for _, v := range sorted {
		if n := len(x); n > 0 && x[n-1] == v {
			cnt[n-1]++
			continue
		}
		x = append(x, v)
		cnt = append(cnt, 1)
	}
	p := make([]float64, len(x))
	for i, c := range cnt {
		p[i] = float64(c) / float64(len(samples))
	}
	return &atomLaw{kind: KindEmpirical, t: newAtomTable(x, p, cnt), s: 1}, nil
}

func (l *atomLaw) Kind() string { return l.kind }

// y returns the i-th atom T(x_i).
func (l *atomLaw) y(i int) float64 {
	if l.div {
		return l.t.x[i] / l.s
	}
	return l.t.x[i] * l.s
}

// scaleMoment maps Σ p·x to Σ p·T(x).
func (l *atomLaw) scaleMoment(m float64) float64 { return apply(m, l.s, l.div) }

// search returns the first index i in [lo, n) with y(i) ≥ a (strict: y(i) > a).
func (l *atomLaw) search(lo int, a float64, strict bool) int {
	hi := len(l.t.x)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		v := l.y(m)
		if v > a || (!strict && v == a) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}

// CDF returns Σ_{y_i ≤ x} p_i.
func (l *atomLaw) CDF(x float64) float64 {
	if math.IsNaN(x) {
		return 0
	}
	return l.t.prob(0, l.search(0, x, true))
}

// ProbIn returns Σ_{a ≤ y_i < b} p_i in O(log n).
func (l *atomLaw) ProbIn(a, b float64) float64 {
	if !(a < b) {
		return 0
	}
	i := l.search(0, a, false)
	return l.t.prob(i, l.search(i, b, false))
}

// PartialMean returns Σ_{a ≤ y_i < b} p_i·y_i in O(log n).
func (l *atomLaw) PartialMean(a, b float64) float64 {
	if !(a < b) {
		return 0
	}
	i := l.search(0, a, false)
	return l.scaleMoment(l.t.moment(i, l.search(i, b, false)))
}

func (l *atomLaw) Mean() float64 { return l.scaleMoment(l.t.sufM[0]) }

// Sample draws an atom: for an empirical law a uniform sample index, for a
// discrete law the first i with Σ_{l≤i} p_l > U.
func (l *atomLaw) Sample(rng *rand.Rand) float64 {
	n := len(l.t.x)
	var i int
	if l.t.cumN != nil {
		k := rng.IntN(l.t.cumN[n])
		i, _ = slices.BinarySearch(l.t.cumN[1:], k+1)
	} else {
		i = searchCum(l.t.cumP, rng.Float64()*l.t.cumP[n])
	}
	return l.y(min(i, n-1))
}

// Atoms returns the atoms y_i and their probabilities; atoms that T maps to the
// same float64 are merged.
func (l *atomLaw) Atoms() (values, probs []float64) {
	n := len(l.t.x)
	values = make([]float64, 0, n)
	probs = make([]float64, 0, n)
	for i := range n {
		v := l.y(i)
		if k := len(values); k > 0 && values[k-1] == v {
			probs[k-1] += l.t.p[i]
			continue
		}
		values = append(values, v)
		probs = append(probs, l.t.p[i])
	}
	return values, probs
}

// transformed composes T with x ↦ x·s (or x/s). A law that has not been
// transformed yet takes the new map as is; a second transformation is folded
// into one factor.
func (l *atomLaw) transformed(s float64, div bool) Dist {
	out := *l
	switch {
	case l.s == 1 && !l.div:
		out.s, out.div = s, div
	default:
		out.s, out.div = apply(apply(1, l.s, l.div), s, div), false
	}
	return &out
}

// spec returns the JSON form of the law: discrete{values, probs}, or
// empirical{samples} with each atom repeated by its sample count.
func (l *atomLaw) spec() *dataSpec {
	switch l.kind {
	case KindDiscrete:
		values, probs := l.Atoms()
		return &dataSpec{Kind: KindDiscrete, Values: values, Probs: probs}
	case KindEmpirical:
		if l.t.cnt == nil {
			return nil
		}
		samples := make([]float64, 0, l.t.cumN[len(l.t.cnt)])
		for i, c := range l.t.cnt {
			for range c {
				samples = append(samples, l.y(i))
			}
		}
		return &dataSpec{Kind: KindEmpirical, Samples: samples}
	}
	return nil
}
