package models

import (
	"math"
	"math/rand/v2"
)

// Dist is the law of a nonnegative data size X (the unit, bytes or MB, is the
// caller's). Implementations in this package are immutable and safe for
// concurrent use; Sample draws from the caller's generator only.
//
// Intervals are half-open: ProbIn(a, b) = P[a ≤ X < b] and
// PartialMean(a, b) = E[X·1{a ≤ X < b}], so that for a ≤ b ≤ c
//
//	ProbIn(a, c) = ProbIn(a, b) + ProbIn(b, c)
//
// exactly at atoms. a may be -Inf and b may be +Inf; a ≥ b (or a NaN bound)
// gives 0. Neither ever returns NaN for a law whose Mean is finite.
type Dist interface {
	// Kind is the JSON kind of the law (KindUniform, ..., KindEmpirical).
	Kind() string
	// CDF returns F(x) = P[X ≤ x].
	CDF(x float64) float64
	// ProbIn returns P[a ≤ X < b].
	ProbIn(a, b float64) float64
	// PartialMean returns E[X·1{a ≤ X < b}].
	PartialMean(a, b float64) float64
	// Mean returns E[X].
	Mean() float64
	// Sample draws one value of X.
	Sample(rng *rand.Rand) float64
}

// Atomic is implemented by discrete laws (discrete, empirical, scaled or
// conditional atoms).
type Atomic interface {
	Dist
	// Atoms returns the support x_1 < x_2 < ... < x_n (only points of positive
	// mass) and p_i = P[X = x_i]. The slices are fresh copies, built in O(n).
	Atoms() (values, probs []float64)
}

// Kinds of data laws and of reduce-count laws, as spelled in JSON (docs/formats.md#workload).
const (
	KindUniform     = "uniform"
	KindExponential = "exponential"
	KindLognormal   = "lognormal"
	KindGamma       = "gamma"
	KindPareto      = "pareto"
	KindDiscrete    = "discrete"
	KindEmpirical   = "empirical"
	KindUniformInt  = "uniform-int"
)

// transformer is implemented by the laws of this package: the law of x·s
// (div false) or of x/s (div true), s > 0, in the same family. Dividing rather
// than multiplying by 1/s keeps the atoms of Y = X/R bit-identical to the x/r
// a caller computes from a sample.
type transformer interface {
	transformed(s float64, div bool) Dist
}

// Scale returns the law of s·X. s must be finite and > 0 (Scale panics
// otherwise: a programming error). The result is of the same kind as d when d
// is a law of this package (uniform{s·min, s·max}, exponential{s·mean},
// lognormal{mu + ln s, sigma}, gamma{shape, s·scale}, pareto{s·xm, alpha},
// atoms s·x_i with the same probabilities), and it is Atomic when d is.
func Scale(d Dist, s float64) Dist {
	if !(s > 0) || math.IsInf(s, 1) {
		panic("models: Scale factor must be finite and > 0")
	}
	return transform(d, s, false)
}

// divide returns the law of X/r (see transformer).
func divide(d Dist, r float64) Dist { return transform(d, r, true) }

func transform(d Dist, s float64, div bool) Dist {
	switch d := d.(type) {
	case transformer:
		return d.transformed(s, div)
	case Atomic:
		values, probs := d.Atoms()
		return &atomLaw{kind: d.Kind(), t: mergedAtomTable(values, probs), s: s, div: div}
	default:
		f := s
		if div {
			f = 1 / s
		}
		return &scaledDist{d: d, f: f}
	}
}

// scaledDist is the law of f·X for a Dist defined outside this package:
// F_{fX}(x) = F_X(x/f), P[a ≤ fX < b] = P[a/f ≤ X < b/f],
// E[fX·1{a ≤ fX < b}] = f·E[X·1{a/f ≤ X < b/f}].
type scaledDist struct {
	d Dist
	f float64
}

func (s *scaledDist) Kind() string          { return s.d.Kind() }
func (s *scaledDist) CDF(x float64) float64 { return s.d.CDF(x / s.f) }
func (s *scaledDist) ProbIn(a, b float64) float64 {
	if !(a < b) {
		return 0
	}
	return s.d.ProbIn(a/s.f, b/s.f)
}
func (s *scaledDist) PartialMean(a, b float64) float64 {
	if !(a < b) {
		return 0
	}
	return s.f * s.d.PartialMean(a/s.f, b/s.f)
}
func (s *scaledDist) Mean() float64                 { return s.f * s.d.Mean() }
func (s *scaledDist) Sample(rng *rand.Rand) float64 { return s.f * s.d.Sample(rng) }

// clipBelow intersects [a, b) with [lo, ∞): it returns the new lower end and
// whether the interval is non-empty. NaN bounds give an empty interval.
func clipBelow(a, b, lo float64) (float64, bool) {
	if !(a < b) {
		return 0, false
	}
	a = max(a, lo)
	return a, a < b
}

func isFinite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// Field checks shared by the constructors and the JSON decoder. Each returns nil
// or a *ValidationError naming the field.

func checkFinite(field string, v float64) error {
	if !isFinite(v) {
		return invalid(field, v, "must be a finite number")
	}
	return nil
}

func checkNonneg(field string, v float64) error {
	if err := checkFinite(field, v); err != nil {
		return err
	}
	if v < 0 {
		return invalid(field, v, "must be ≥ 0")
	}
	return nil
}

func checkPositive(field string, v float64) error {
	if err := checkFinite(field, v); err != nil {
		return err
	}
	if !(v > 0) {
		return invalid(field, v, "must be > 0")
	}
	return nil
}

// MinScaleParameter is the smallest scale parameter (exponential mean, gamma
// scale, Pareto xm) a law accepts: Y = X/R divides it by up to
// MaxReducesLimit, and it must stay a normal float64 there.
const MinScaleParameter = 1e-200

func checkScale(field string, v float64) error {
	if err := checkPositive(field, v); err != nil {
		return err
	}
	if v < MinScaleParameter {
		return invalid(field, v, "must be ≥ %s", formatFloat(MinScaleParameter))
	}
	return nil
}

// checkNonnegAt is checkNonneg for element i of the list at path; the path
// string is built only on error (lists may hold 10⁵ samples).
func checkNonnegAt(path string, i int, v float64) error {
	if isFinite(v) && v >= 0 {
		return nil
	}
	return checkNonneg(indexPath(path, i), v)
}

// checkMean rejects parameters whose mean overflows float64.
func checkMean(field string, value, mean float64, formula string) error {
	if !isFinite(mean) {
		return invalid(field, value, "mean %s overflows float64", formula)
	}
	return nil
}
