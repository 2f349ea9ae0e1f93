package models

import (
	"math/rand/v2"
	"slices"
)

// MaxReducesLimit is the largest number of reducers a workload may give a job;
// larger values are rejected as input errors (they would only be typos, and
// the threshold tables grow with it).
const MaxReducesLimit = 100000

// ReduceDist is the law of R, the number of reducers of a job: an integer in
// 1..MaxReducesLimit. The zero value is not a law (IsZero reports it); build one
// with NewUniformInt or NewDiscreteReduces. It is immutable, and a value may be
// copied and shared between goroutines.
type ReduceDist struct {
	kind string
	spec *reduceSpec
	r    []int     // support, ascending, P[R = r] > 0
	p    []float64 // P[R = r[i]], summing to 1
	cum  []float64 // prefix sums of p, len(p)+1
	mean float64
}

// NewUniformInt returns the uniform law on the integers min..max:
// P[R = r] = 1/(max − min + 1). 1 ≤ min ≤ max ≤ MaxReducesLimit.
func NewUniformInt(min, max int) (ReduceDist, error) {
	return newUniformInt("reduces", min, max)
}

func newUniformInt(path string, min, max int) (ReduceDist, error) {
	if err := checkReduceCount(joinPath(path, "min"), min); err != nil {
		return ReduceDist{}, err
	}
	if err := checkReduceCount(joinPath(path, "max"), max); err != nil {
		return ReduceDist{}, err
	}
	if max < min {
		return ReduceDist{}, invalid(joinPath(path, "max"), max, "must be ≥ min (%d)", min)
	}
	n := max - min + 1
	r := make([]int, n)
	p := make([]float64, n)
	for i := range n {
		r[i] = min + i
		p[i] = 1 / float64(n)
	}
	spec := &reduceSpec{Kind: KindUniformInt, Min: ptr(min), Max: ptr(max)}
	return newReduceDist(KindUniformInt, spec, r, p), nil
}

// NewDiscreteReduces returns the law P[R = values[i]] = probs[i]. values must be
// distinct integers in 1..MaxReducesLimit (any order); probs finite, ≥ 0,
// summing to 1 within ProbSumTolerance (renormalized); values of probability 0
// are dropped from the support.
func NewDiscreteReduces(values []int, probs []float64) (ReduceDist, error) {
	return newDiscreteReduces("reduces", values, probs)
}

func newDiscreteReduces(path string, values []int, probs []float64) (ReduceDist, error) {
	valuesPath, probsPath := joinPath(path, "values"), joinPath(path, "probs")
	if len(values) == 0 {
		return ReduceDist{}, invalid(valuesPath, nil, "must not be empty")
	}
	if len(probs) != len(values) {
		return ReduceDist{}, invalid(probsPath, nil, "has %d entries, %s has %d", len(probs), valuesPath, len(values))
	}
	for i, v := range values {
		if v < 1 || v > MaxReducesLimit {
			return ReduceDist{}, checkReduceCount(indexPath(valuesPath, i), v)
		}
	}
	total, err := checkProbs(probsPath, probs)
	if err != nil {
		return ReduceDist{}, err
	}
	idx := sortedIndex(len(values), func(i, j int) int { return values[i] - values[j] })
	var r []int
	var p []float64
	for k, i := range idx {
		if k > 0 && values[idx[k-1]] == values[i] {
			return ReduceDist{}, invalid(indexPath(valuesPath, i), values[i], "duplicate of %s", indexPath(valuesPath, idx[k-1]))
		}
		if probs[i] > 0 {
			r = append(r, values[i])
			p = append(p, probs[i]/total)
		}
	}
	spec := &reduceSpec{Kind: KindDiscrete, Values: slices.Clone(values), Probs: slices.Clone(probs)}
	return newReduceDist(KindDiscrete, spec, r, p), nil
}

func checkReduceCount(field string, r int) error {
	switch {
	case r < 1:
		return invalid(field, r, "must be ≥ 1")
	case r > MaxReducesLimit:
		return invalid(field, r, "must be ≤ %d", MaxReducesLimit)
	}
	return nil
}

func newReduceDist(kind string, spec *reduceSpec, r []int, p []float64) ReduceDist {
	m := make([]float64, len(r))
	for i := range r {
		m[i] = float64(r[i]) * p[i]
	}
	return ReduceDist{kind: kind, spec: spec, r: r, p: p, cum: prefixSums(p), mean: sumFloats(m)}
}

// IsZero reports whether d is the zero ReduceDist (no law).
func (d ReduceDist) IsZero() bool { return d.kind == "" }

// Kind returns KindUniformInt or KindDiscrete.
func (d ReduceDist) Kind() string { return d.kind }

// PMF returns P[R = r].
func (d ReduceDist) PMF(r int) float64 {
	if i, ok := slices.BinarySearch(d.r, r); ok {
		return d.p[i]
	}
	return 0
}

// Support returns the values r with P[R = r] > 0, ascending, and their
// probabilities (fresh copies).
func (d ReduceDist) Support() (values []int, probs []float64) {
	return slices.Clone(d.r), slices.Clone(d.p)
}

// Min returns the smallest R of positive probability (0 for the zero value).
func (d ReduceDist) Min() int {
	if len(d.r) == 0 {
		return 0
	}
	return d.r[0]
}

// Max returns the largest R of positive probability (0 for the zero value).
func (d ReduceDist) Max() int {
	if len(d.r) == 0 {
		return 0
	}
	return d.r[len(d.r)-1]
}

// Mean returns E[R] = Σ_r r·P[R = r].
func (d ReduceDist) Mean() float64 { return d.mean }

// Sample draws R: uniform-int by one uniform index, discrete as the first r_i with Σ_{l≤i} p_l > U.
func (d ReduceDist) Sample(rng *rand.Rand) int {
	if d.kind == KindUniformInt {
		return d.r[rng.IntN(len(d.r))]
	}
	return d.r[searchCum(d.cum, rng.Float64()*d.cum[len(d.p)])]
}

// searchCum returns the first i with cum[i+1] > u, clamped to a valid index,
// for prefix sums cum (len n+1, n ≥ 1).
func searchCum(cum []float64, u float64) int {
	n := len(cum) - 1
	lo, hi := 0, n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if cum[m+1] > u {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return min(lo, n-1)
}
