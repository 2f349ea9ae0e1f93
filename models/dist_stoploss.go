package models

import "math"

// StopLosser is implemented by the laws that have a direct formula for the
// lower stop-loss transform
//
//	λ(q) = E[(q − X)⁺] = q·P[X < q] − E[X·1{X < q}],
//
// cheaper than the two generic calls (one expm1 instead of six transcendental
// calls for the exponential; one log and two erfc for the lognormal). The
// threshold recursion of Theorem 2 (package thresholds) is a sum of such
// terms. λ is continuous in q, so it does not depend on whether an atom at q
// counts below or above q. Scaled laws keep the interface: the law of s·X is
// in the same family.
type StopLosser interface {
	StopLoss(q float64) float64
}

var (
	_ StopLosser = (*uniform)(nil)
	_ StopLosser = (*exponential)(nil)
	_ StopLosser = (*lognormal)(nil)
)

// StopLoss of U[a, b]:
//
//	λ(q) = 0 (q ≤ a),  (q − a)²/(2(b − a)) (a < q < b),  q − (a + b)/2 (q ≥ b).
func (d *uniform) StopLoss(q float64) float64 {
	switch {
	case !(q > d.min):
		return 0
	case q >= d.max:
		return q - (d.min/2 + d.max/2)
	}
	u := q - d.min
	return u / (d.max - d.min) * u / 2
}

// StopLoss of the exponential law with mean θ, u = q/θ:
//
//	λ(q) = θ·(u − 1 + e^{−u}) = θ·(u + expm1(−u)).
func (d *exponential) StopLoss(q float64) float64 {
	if !(q > 0) {
		return 0
	}
	u := q / d.theta
	return d.theta * (u + math.Expm1(-u))
}

// lognormalTailZ: beyond |z| = 8.5 the normal tail Φ(−|z|) is below 1e-17,
// less than a tenth of an ulp of 1.
const lognormalTailZ = 8.5

// StopLoss of the lognormal law ln X ~ N(μ, σ²) with mean m = e^{μ+σ²/2},
// z = (ln q − μ)/σ:
//
//	λ(q) = q·Φ(z) − m·Φ(z − σ),   Φ(t) = erfc(−t/√2)/2.
//
// In the tails the erfc calls are skipped where λ is known to rounding: for
// z < −8.5, 0 ≤ λ(q) ≤ q·Φ(z) < 1e-17·q; for z − σ > 8.5,
// λ(q) = q − m + E[(X − q)⁺] with 0 ≤ E[(X − q)⁺] ≤ m·Φ(σ − z) < 1e-17·m.
func (d *lognormal) StopLoss(q float64) float64 {
	if !(q > 0) {
		return 0
	}
	z := (math.Log(q) - d.mu) / d.sigma
	switch {
	case z < -lognormalTailZ:
		return 0
	case z-d.sigma > lognormalTailZ:
		return q - d.mean
	}
	return 0.5 * (q*math.Erfc(-z/math.Sqrt2) - d.mean*math.Erfc(-(z-d.sigma)/math.Sqrt2))
}
