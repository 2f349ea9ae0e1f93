package models

import (
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mathext"
)

// The continuous laws. For each, with F the CDF, S = 1 − F the survival
// function and a' = max(a, lower end of the support), ProbIn and PartialMean are
// closed forms. Where F(b) − F(a) would cancel (both near 1) the code takes
// S(a) − S(b) instead, and tails are written as a product of a factor and a
// -expm1 so that far-out or narrow intervals keep their relative precision.

var (
	_ Dist        = (*uniform)(nil)
	_ Dist        = (*exponential)(nil)
	_ Dist        = (*lognormal)(nil)
	_ Dist        = (*gammaLaw)(nil)
	_ Dist        = (*pareto)(nil)
	_ transformer = (*uniform)(nil)
	_ transformer = (*exponential)(nil)
	_ transformer = (*lognormal)(nil)
	_ transformer = (*gammaLaw)(nil)
	_ transformer = (*pareto)(nil)
)

// uniform is U[min, max], 0 ≤ min < max, density 1/(max−min):
//
//	P[a ≤ X < b]      = (b' − a')/(max − min)
//	E[X·1{a ≤ X < b}] = (b'² − a'²)/(2(max − min)) = P[a ≤ X < b]·(a' + b')/2
//
// with a' = max(a, min), b' = min(b, max).
type uniform struct{ min, max float64 }

// NewUniform returns U[min, max]; 0 ≤ min < max, both finite.
func NewUniform(min, max float64) (Dist, error) {
	return newUniform("data", min, max)
}

func newUniform(path string, min, max float64) (Dist, error) {
	if err := checkNonneg(joinPath(path, "min"), min); err != nil {
		return nil, err
	}
	if err := checkFinite(joinPath(path, "max"), max); err != nil {
		return nil, err
	}
	if !(max > min) {
		return nil, invalid(joinPath(path, "max"), max, "must be > min (%s)", formatValue(min))
	}
	return &uniform{min: min, max: max}, nil
}

func (u *uniform) Kind() string { return KindUniform }

func (u *uniform) CDF(x float64) float64 {
	switch {
	case x >= u.max:
		return 1
	case !(x > u.min): // and NaN
		return 0
	}
	return (x - u.min) / (u.max - u.min)
}

func (u *uniform) ProbIn(a, b float64) float64 {
	if u.max == u.min {
		return u.pointMass(a, b)
	}
	a, b, ok := u.clip(a, b)
	if !ok {
		return 0
	}
	return (b - a) / (u.max - u.min)
}

func (u *uniform) PartialMean(a, b float64) float64 {
	if u.max == u.min {
		return u.min * u.pointMass(a, b)
	}
	a, b, ok := u.clip(a, b)
	if !ok {
		return 0
	}
	// Halves first so that a + b cannot overflow.
	return (b - a) / (u.max - u.min) * (a/2 + b/2)
}

// pointMass is ProbIn for a uniform law that a transformation collapsed to one
// point (min/r and max/r rounded to the same float64): an atom at min.
func (u *uniform) pointMass(a, b float64) float64 {
	if a <= u.min && u.min < b {
		return 1
	}
	return 0
}

func (u *uniform) clip(a, b float64) (float64, float64, bool) {
	a, ok := clipBelow(a, b, u.min)
	if !ok {
		return 0, 0, false
	}
	b = min(b, u.max)
	return a, b, a < b
}

func (u *uniform) Mean() float64 { return u.min/2 + u.max/2 }

func (u *uniform) Sample(rng *rand.Rand) float64 {
	return u.min + (u.max-u.min)*rng.Float64()
}

func (u *uniform) transformed(s float64, div bool) Dist {
	return &uniform{min: apply(u.min, s, div), max: apply(u.max, s, div)}
}

func (u *uniform) spec() *dataSpec {
	return &dataSpec{Kind: KindUniform, Min: ptr(u.min), Max: ptr(u.max)}
}

// exponential has mean θ, S(x) = e^{−x/θ}. With t = a'/θ, u = (b − a')/θ:
//
//	P[a ≤ X < b]      = e^{−t}·(1 − e^{−u})
//	E[X·1{a ≤ X < b}] = (a' + θ)e^{−a'/θ} − (b + θ)e^{−b/θ}
//	                  = θ·e^{−t}·[t·(1 − e^{−u}) + h(u)],  h(u) = 1 − (1 + u)e^{−u},
//
// with h evaluated by its series Σ_{k≥2} (−1)^k (k−1) u^k/k! for small u, and
// θ·e^{−t} as exp(ln θ − t) so that neither underflows early.
type exponential struct{ theta float64 }

// NewExponential returns the exponential law with the given mean (finite,
// ≥ MinScaleParameter).
func NewExponential(mean float64) (Dist, error) {
	return newExponential("data", mean)
}

func newExponential(path string, mean float64) (Dist, error) {
	if err := checkScale(joinPath(path, "mean"), mean); err != nil {
		return nil, err
	}
	return &exponential{theta: mean}, nil
}

func (e *exponential) Kind() string { return KindExponential }

func (e *exponential) CDF(x float64) float64 {
	if !(x > 0) {
		return 0
	}
	return -math.Expm1(-x / e.theta)
}

func (e *exponential) ProbIn(a, b float64) float64 {
	a, ok := clipBelow(a, b, 0)
	if !ok {
		return 0
	}
	return math.Exp(-a/e.theta) * -math.Expm1(-(b-a)/e.theta)
}

func (e *exponential) PartialMean(a, b float64) float64 {
	a, ok := clipBelow(a, b, 0)
	if !ok {
		return 0
	}
	t := a / e.theta
	f := math.Exp(math.Log(e.theta) - t) // θ·e^{−t}
	if f == 0 {
		return 0
	}
	u := (b - a) / e.theta
	return f * (t*-math.Expm1(-u) + expPartialH(u))
}

// expPartialH returns h(u) = 1 − (1 + u)e^{−u} = P[Gamma(2, 1) < u] for u ≥ 0.
func expPartialH(u float64) float64 {
	if math.IsInf(u, 1) {
		return 1
	}
	if u < 0.5 {
		// 1 − (1+u)e^{−u} = Σ_{k≥2} (−1)^k (k−1)/k! u^k; terms shrink by u/k.
		var sum float64
		term := u // u^k/k! at k = 1
		for k := 2; k < 40; k++ {
			term *= u / float64(k)
			c := float64(k-1) * term
			if k%2 == 1 {
				c = -c
			}
			sum += c
			if math.Abs(c) <= 1e-17*sum {
				break
			}
		}
		return sum
	}
	return -math.Expm1(-u) - u*math.Exp(-u)
}

func (e *exponential) Mean() float64 { return e.theta }

func (e *exponential) Sample(rng *rand.Rand) float64 { return e.theta * rng.ExpFloat64() }

func (e *exponential) transformed(s float64, div bool) Dist {
	return &exponential{theta: apply(e.theta, s, div)}
}

func (e *exponential) spec() *dataSpec {
	return &dataSpec{Kind: KindExponential, Mean: ptr(e.theta)}
}

// lognormal: ln X ~ N(μ, σ²). With z(x) = (ln x − μ)/σ and Φ the standard
// normal CDF,
//
//	F(x)              = Φ(z(x))
//	P[a ≤ X < b]      = Φ(z(b)) − Φ(z(a'))
//	E[X·1{a ≤ X < b}] = e^{μ+σ²/2}·[Φ(z(b) − σ) − Φ(z(a') − σ)]
//
// (the partial expectation of the lognormal: x·φ(z(x))/(σx) is the density of a
// lognormal with μ + σ² times e^{μ+σ²/2}). Differences of Φ are taken on the
// side of 0 where both terms are tails (Φ(v) − Φ(u) = Φc(u) − Φc(v) for u ≥ 0),
// with Φc(x) = erfc(x/√2)/2, so that large σ and far tails keep relative
// precision. The constructor rejects μ + σ²/2 > ln(MaxFloat64).
type lognormal struct{ mu, sigma, mean float64 }

// NewLognormal returns the lognormal law with ln X ~ N(mu, sigma²); sigma > 0
// and the mean e^{mu+sigma²/2} must be finite.
func NewLognormal(mu, sigma float64) (Dist, error) {
	return newLognormal("data", mu, sigma)
}

func newLognormal(path string, mu, sigma float64) (Dist, error) {
	if err := checkFinite(joinPath(path, "mu"), mu); err != nil {
		return nil, err
	}
	if err := checkPositive(joinPath(path, "sigma"), sigma); err != nil {
		return nil, err
	}
	mean := math.Exp(mu + sigma*sigma/2)
	if err := checkMean(joinPath(path, "sigma"), sigma, mean, "exp(mu + sigma²/2)"); err != nil {
		return nil, err
	}
	return &lognormal{mu: mu, sigma: sigma, mean: mean}, nil
}

func (l *lognormal) Kind() string { return KindLognormal }

func (l *lognormal) z(x float64) float64 { return (math.Log(x) - l.mu) / l.sigma }

func (l *lognormal) CDF(x float64) float64 {
	if !(x > 0) {
		return 0
	}
	return normalProbIn(math.Inf(-1), l.z(x))
}

func (l *lognormal) ProbIn(a, b float64) float64 {
	a, ok := clipBelow(a, b, 0)
	if !ok {
		return 0
	}
	return normalProbIn(l.z(a), l.z(b))
}

func (l *lognormal) PartialMean(a, b float64) float64 {
	a, ok := clipBelow(a, b, 0)
	if !ok {
		return 0
	}
	return l.mean * normalProbIn(l.z(a)-l.sigma, l.z(b)-l.sigma)
}

func (l *lognormal) Mean() float64 { return l.mean }

func (l *lognormal) Sample(rng *rand.Rand) float64 {
	return math.Exp(l.mu + l.sigma*rng.NormFloat64())
}

func (l *lognormal) transformed(s float64, div bool) Dist {
	mu := l.mu + math.Log(s)
	if div {
		mu = l.mu - math.Log(s)
	}
	return &lognormal{mu: mu, sigma: l.sigma, mean: math.Exp(mu + l.sigma*l.sigma/2)}
}

func (l *lognormal) spec() *dataSpec {
	return &dataSpec{Kind: KindLognormal, Mu: ptr(l.mu), Sigma: ptr(l.sigma)}
}

// normalTail returns Φc(x) = P[Z > x] = erfc(x/√2)/2.
func normalTail(x float64) float64 { return 0.5 * math.Erfc(x/math.Sqrt2) }

// normalProbIn returns P[u ≤ Z < v] for a standard normal Z, u < v (else 0),
// choosing the form without cancellation: Φc(u) − Φc(v) when u ≥ 0,
// Φc(−v) − Φc(−u) when v ≤ 0, and 1 − Φc(−u) − Φc(v) otherwise.
func normalProbIn(u, v float64) float64 {
	if !(u < v) {
		return 0
	}
	var p float64
	switch {
	case u >= 0:
		p = normalTail(u) - normalTail(v)
	case v <= 0:
		p = normalTail(-v) - normalTail(-u)
	default:
		p = 1 - normalTail(-u) - normalTail(v)
	}
	return max(p, 0)
}

// gammaLaw has shape k and scale θ: density x^{k−1}e^{−x/θ}/(Γ(k)θ^k). With
// P(k, x) the regularized lower incomplete gamma function (gonum
// mathext.GammaIncReg) and Q = 1 − P (GammaIncRegComp),
//
//	F(x)              = P(k, x/θ)
//	P[a ≤ X < b]      = P(k, b/θ) − P(k, a'/θ)
//	E[X·1{a ≤ X < b}] = kθ·[P(k+1, b/θ) − P(k+1, a'/θ)]
//
// because x·f_{k,θ}(x) = kθ·f_{k+1,θ}(x). Differences are taken on Q when the
// lower end is past the mean of the shifted law (a'/θ ≥ k, resp. k+1).
type gammaLaw struct{ k, theta float64 }

// NewGamma returns the gamma law with the given shape (> 0) and scale
// (≥ MinScaleParameter), whose mean shape·scale must be finite.
func NewGamma(shape, scale float64) (Dist, error) {
	return newGamma("data", shape, scale)
}

func newGamma(path string, shape, scale float64) (Dist, error) {
	if err := checkPositive(joinPath(path, "shape"), shape); err != nil {
		return nil, err
	}
	if err := checkScale(joinPath(path, "scale"), scale); err != nil {
		return nil, err
	}
	if err := checkMean(joinPath(path, "scale"), scale, shape*scale, "shape·scale"); err != nil {
		return nil, err
	}
	return &gammaLaw{k: shape, theta: scale}, nil
}

func (g *gammaLaw) Kind() string { return KindGamma }

func (g *gammaLaw) CDF(x float64) float64 {
	if !(x > 0) {
		return 0
	}
	return gammaP(g.k, x/g.theta)
}

func (g *gammaLaw) ProbIn(a, b float64) float64 {
	a, ok := clipBelow(a, b, 0)
	if !ok {
		return 0
	}
	return gammaProbIn(g.k, a/g.theta, b/g.theta)
}

func (g *gammaLaw) PartialMean(a, b float64) float64 {
	a, ok := clipBelow(a, b, 0)
	if !ok {
		return 0
	}
	return g.k * g.theta * gammaProbIn(g.k+1, a/g.theta, b/g.theta)
}

func (g *gammaLaw) Mean() float64 { return g.k * g.theta }

func (g *gammaLaw) Sample(rng *rand.Rand) float64 { return g.theta * standardGamma(rng, g.k) }

func (g *gammaLaw) transformed(s float64, div bool) Dist {
	return &gammaLaw{k: g.k, theta: apply(g.theta, s, div)}
}

func (g *gammaLaw) spec() *dataSpec {
	return &dataSpec{Kind: KindGamma, Shape: ptr(g.k), Scale: ptr(g.theta)}
}

// gammaP returns P(k, x) for x ≥ 0, including x = +Inf.
func gammaP(k, x float64) float64 {
	switch {
	case !(x > 0):
		return 0
	case math.IsInf(x, 1):
		return 1
	}
	return mathext.GammaIncReg(k, x)
}

// gammaQ returns Q(k, x) = 1 − P(k, x) for x ≥ 0, including x = +Inf.
func gammaQ(k, x float64) float64 {
	switch {
	case !(x > 0):
		return 1
	case math.IsInf(x, 1):
		return 0
	}
	return mathext.GammaIncRegComp(k, x)
}

// gammaProbIn returns P[u ≤ G < v] for G ~ Gamma(k, 1), 0 ≤ u < v (else 0).
func gammaProbIn(k, u, v float64) float64 {
	if !(u < v) {
		return 0
	}
	var p float64
	if u >= k {
		p = gammaQ(k, u) - gammaQ(k, v)
	} else {
		p = gammaP(k, v) - gammaP(k, u)
	}
	return min(max(p, 0), 1) // GammaIncReg can exceed 1 by an ulp or so for tiny k
}

// standardGamma draws from Gamma(k, 1) by Marsaglia and Tsang, "A simple method
// for generating gamma variables", ACM TOMS 26(3), 2000: with d = k − 1/3,
// c = 1/√(9d), Z normal and V = (1 + cZ)³, accept dV when
// ln U < Z²/2 + d − dV + d·ln V (with the cheap squeeze U < 1 − 0.0331 Z⁴ first).
// For k < 1 it uses Gamma(k) = Gamma(k+1)·U^{1/k}, computed in logs.
func standardGamma(rng *rand.Rand, k float64) float64 {
	if k < 1 {
		g := standardGamma(rng, k+1)
		return g * math.Exp(math.Log(rng.Float64())/k)
	}
	d := k - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		z := rng.NormFloat64()
		v := 1 + c*z
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := rng.Float64()
		z2 := z * z
		if u < 1-0.0331*z2*z2 {
			return d * v
		}
		if math.Log(u) < z2/2+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}

// pareto has scale x_m > 0 and shape α > 1: S(x) = (x_m/x)^α for x ≥ x_m.
// With a' = max(a, x_m) < b,
//
//	P[a ≤ X < b]      = (x_m/a')^α·(1 − (a'/b)^α)
//	E[X·1{a ≤ X < b}] = α/(α−1)·x_m·(x_m/a')^{α−1}·(1 − (a'/b)^{α−1})
//
// (E[X·1{X ≥ x}] = α x_m^α x^{1−α}/(α−1)), each power as exp of a logarithm and
// each 1 − e^w as −expm1(w).
type pareto struct{ xm, alpha float64 }

// NewPareto returns the Pareto law with scale xm ≥ MinScaleParameter and shape
// alpha > 1 (so that the mean α·xm/(α−1) is finite).
func NewPareto(xm, alpha float64) (Dist, error) {
	return newPareto("data", xm, alpha)
}

func newPareto(path string, xm, alpha float64) (Dist, error) {
	if err := checkScale(joinPath(path, "xm"), xm); err != nil {
		return nil, err
	}
	if err := checkFinite(joinPath(path, "alpha"), alpha); err != nil {
		return nil, err
	}
	if !(alpha > 1) {
		return nil, invalid(joinPath(path, "alpha"), alpha, "must be > 1")
	}
	if err := checkMean(joinPath(path, "alpha"), alpha, alpha*xm/(alpha-1), "alpha·xm/(alpha−1)"); err != nil {
		return nil, err
	}
	return &pareto{xm: xm, alpha: alpha}, nil
}

func (p *pareto) Kind() string { return KindPareto }

func (p *pareto) CDF(x float64) float64 {
	if !(x > p.xm) {
		return 0
	}
	return -math.Expm1(p.alpha * math.Log(p.xm/x))
}

func (p *pareto) ProbIn(a, b float64) float64 {
	a, ok := clipBelow(a, b, p.xm)
	if !ok {
		return 0
	}
	return math.Exp(p.alpha*math.Log(p.xm/a)) * -math.Expm1(p.alpha*math.Log(a/b))
}

func (p *pareto) PartialMean(a, b float64) float64 {
	a, ok := clipBelow(a, b, p.xm)
	if !ok {
		return 0
	}
	am1 := p.alpha - 1
	return p.alpha / am1 * p.xm * math.Exp(am1*math.Log(p.xm/a)) * -math.Expm1(am1*math.Log(a/b))
}

func (p *pareto) Mean() float64 { return p.alpha * p.xm / (p.alpha - 1) }

// Sample returns x_m·e^{E/α} with E ~ Exp(1), i.e. x_m·U^{−1/α}.
func (p *pareto) Sample(rng *rand.Rand) float64 {
	return p.xm * math.Exp(rng.ExpFloat64()/p.alpha)
}

func (p *pareto) transformed(s float64, div bool) Dist {
	return &pareto{xm: apply(p.xm, s, div), alpha: p.alpha}
}

func (p *pareto) spec() *dataSpec {
	return &dataSpec{Kind: KindPareto, Xm: ptr(p.xm), Alpha: ptr(p.alpha)}
}

// apply returns x·s, or x/s when div.
func apply(x, s float64, div bool) float64 {
	if div {
		return x / s
	}
	return x * s
}

func ptr[T any](v T) *T { return &v }
