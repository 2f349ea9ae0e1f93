package thresholds

import (
	"fmt"
	"math"
	"sort"
)

// law is what the recursion of Theorem 2 needs of the law of a nonnegative
// random variable Z: its mean and its lower stop-loss transform
//
//	λ(q) = E[(q − Z)⁺] = q·P[Z < q] − E[Z·1{Z < q}],   q ≥ 0.
//
// Every term of the recursion is an affine combination of λ at two thresholds
// (see buildTable), so one evaluation per distinct threshold and per value of
// R is all a stage costs. λ does not depend on whether an atom at q is counted
// below or above q, which is why the tie rule of the placement has no effect
// on the table.
type law interface {
	// lambdas sets out[j] = λ(s·q[j])/s for a non-increasing q ≥ 0 and a
	// scale s > 0: the λ of Z/s at q[j]. (With Z = X and s = v this is the λ
	// of Y = X/v given R = v for independent X and R.)
	lambdas(q, out []float64, s float64)
	mean() float64
}

// condLaw is one term of Σ_v P[R = v]·(…): the law of Y given R = v is the
// law of z/scale.
type condLaw struct {
	r     int
	prob  float64
	z     law
	scale float64
}

func (c condLaw) meanY() float64 { return c.z.mean() / c.scale }

// pointLaw is a law that evaluates λ one point at a time; eachLambda turns it
// into a batch evaluation that reuses λ on runs of equal thresholds.
type pointLaw interface {
	lambda(q float64) float64
}

func eachLambda(l pointLaw, q, out []float64, s float64) {
	for j, qj := range q {
		if j > 0 && qj == q[j-1] {
			out[j] = out[j-1]
			continue
		}
		if qj == 0 {
			out[j] = 0 // λ(0) = 0 for Z ≥ 0
			continue
		}
		out[j] = l.lambda(s*qj) / s
	}
}

// atomicLaw is an exact discrete law: sorted distinct values with prefix sums,
// so that λ(q) = q·P_k − M_k with k = #{atoms < q}. A batch over a
// non-increasing q finds each k by galloping down from the previous one, so
// a stage costs O(L·log(n/L)) instead of O(L·log n).
type atomicLaw struct {
	values []float64 // ascending, distinct
	cumP   []float64 // cumP[k] = Σ_{j<k} p_j  (len = len(values)+1)
	cumM   []float64 // cumM[k] = Σ_{j<k} p_j·values[j]
	mu     float64
}

// newAtomicLaw sorts and merges the atoms (values, probs). Atoms with zero
// probability are dropped. It returns an error for negative or non-finite
// values and negative or non-finite probabilities; probabilities are used as
// given (their sum is validated upstream).
func newAtomicLaw(values, probs []float64) (*atomicLaw, error) {
	if len(values) != len(probs) {
		return nil, fmt.Errorf("%w: %d atom values but %d probabilities", ErrWorkload, len(values), len(probs))
	}
	idx := make([]int, 0, len(values))
	for i, v := range values {
		p := probs[i]
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return nil, fmt.Errorf("%w: atom value %v (data must be finite and ≥ 0)", ErrWorkload, v)
		}
		if math.IsNaN(p) || math.IsInf(p, 0) || p < 0 {
			return nil, fmt.Errorf("%w: atom probability %v", ErrWorkload, p)
		}
		if p > 0 {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return nil, fmt.Errorf("%w: no atom with positive probability", ErrWorkload)
	}
	if !sort.SliceIsSorted(idx, func(a, b int) bool { return values[idx[a]] < values[idx[b]] }) {
		sort.SliceStable(idx, func(a, b int) bool { return values[idx[a]] < values[idx[b]] })
	}
	l := &atomicLaw{
		values: make([]float64, 0, len(idx)),
		cumP:   make([]float64, 1, len(idx)+1),
		cumM:   make([]float64, 1, len(idx)+1),
	}
	var sp, sm float64
	for _, i := range idx {
		v, p := values[i], probs[i]
		sp += p
		sm += p * v
		if n := len(l.values); n > 0 && l.values[n-1] == v {
			l.cumP[n] = sp
			l.cumM[n] = sm
			continue
		}
		l.values = append(l.values, v)
		l.cumP = append(l.cumP, sp)
		l.cumM = append(l.cumM, sm)
	}
	l.mu = sm
	return l, nil
}

func (l *atomicLaw) mean() float64 { return l.mu }

func (l *atomicLaw) lambdas(q, out []float64, s float64) {
	vals := l.values
	hi := len(vals) // invariant: #{atoms < current x} ≤ hi
	for j, qj := range q {
		x := s * qj
		// Gallop down from hi to bracket k = #{atoms < x} in [lo, hi].
		lo, step := hi, 1
		for lo > 0 && vals[lo-1] >= x {
			hi = lo - 1
			lo = max(hi-step, 0)
			step *= 2
		}
		// Now vals[lo-1] < x (or lo = 0) and k ≤ hi; binary search (lo, hi].
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			if vals[m] < x {
				lo = m + 1
			} else {
				hi = m
			}
		}
		k := lo
		hi = k
		out[j] = (x*l.cumP[k] - l.cumM[k]) / s
	}
}

// mixtureLaw is the unconditional law of Y = X/R, Σ_v P[R = v]·law(Y | R = v).
// It is used only by PaperRecursion.
type mixtureLaw struct {
	terms []condLaw
	mu    float64
}

func newMixtureLaw(terms []condLaw) *mixtureLaw {
	m := &mixtureLaw{terms: terms}
	for _, t := range terms {
		m.mu += t.prob * t.meanY()
	}
	return m
}

func (m *mixtureLaw) lambdas(q, out []float64, s float64) {
	clear(out[:len(q)])
	buf := make([]float64, len(q))
	for _, t := range m.terms {
		t.z.lambdas(q, buf, s*t.scale)
		for j := range q {
			out[j] += t.prob * buf[j]
		}
	}
}

func (m *mixtureLaw) mean() float64 { return m.mu }
