package mdp

import (
	"cmp"
	"math"
	"slices"

	"github.com/optd/optd/models"
)

// atom is one possible (Y, R) of a job entering service, with probability
// Prob. Ray > 0 marks the lower discretization of an unbounded bin [Y, ∞)
// whose conditional mean is Y + Ray: the job is placed as if its data per
// reducer were Y and additionally pays Ray times the cost of the R cheapest
// free slots (see discretize).
type atom struct {
	R    int
	Y    float64
	Prob float64
	Ray  float64
}

// discretization is the law of (Y, R) used by the MDP: exact atoms, or the
// upper and lower bracketing atoms of a continuous (or many-atom) law.
type discretization struct {
	exact        bool
	upper, lower []atom
}

// discretize returns the atoms of the workload. A conditional law of Y given
// R = r that is discrete (models.Atomic) with at most bins atoms is used as
// is. Otherwise its support is cut into bins bins [a_k, b_k) of (nearly)
// equal probability p_k with conditional means m_k, and
//
//   - upper: Y is replaced by m_k on bin k (Jensen: the optimal relative
//     value after the decision, min_A [y·H(A) + h(A ⊕ state)], is a minimum
//     of functions affine in y, hence concave, so E[φ(Y) | bin] ≤ φ(m_k));
//   - lower: Y is replaced by the two-point law on {a_k, b_k} with mean m_k
//     (the mean-preserving spread: a concave φ lies above its chord, so
//     E[φ(Y) | bin] ≥ ((b_k−m_k)·φ(a_k) + (m_k−a_k)·φ(b_k))/(b_k−a_k)). For
//     an unbounded last bin [a, ∞) the chord becomes the ray
//     φ(y) ≥ φ(a) + H_min·(y − a), where H_min, the smallest slope of the
//     pieces, is the cost of the R cheapest free slots: an atom at a whose
//     cost carries the extra H_min·(m − a) (atom.Ray = m − a).
//
// Bins of a continuous law are cut at its quantiles k/bins, found by
// bisection on the CDF; the first bin starts at the infimum of the support
// (found by bisection, or 0) and the last ends at its supremum (+∞ unless
// P[Y ≥ b] = 0 for some finite b). Any cut points give valid bounds; the
// quantiles make them narrow.
func discretize(w *models.Workload, bins int) discretization {
	d := discretization{exact: true}
	for _, c := range w.Conditionals() {
		if a, ok := c.Y.(models.Atomic); ok {
			ys, ps := a.Atoms()
			if len(ys) <= bins {
				for i, y := range ys {
					at := atom{R: c.R, Y: y, Prob: c.Prob * ps[i]}
					d.upper = append(d.upper, at)
					d.lower = append(d.lower, at)
				}
				continue
			}
			d.exact = false
			for _, b := range atomBins(ys, ps, bins) {
				d.add(c.R, c.Prob, b)
			}
			continue
		}
		d.exact = false
		for _, b := range continuousBins(c.Y, bins) {
			d.add(c.R, c.Prob, b)
		}
	}
	d.lower = mergeAtoms(d.lower)
	return d
}

// bin is P[Y ∈ bin] = p, E[Y | bin] = mean, and the bin's ends lo ≤ hi
// (hi may be +Inf).
type bin struct{ p, mean, lo, hi float64 }

func (d *discretization) add(r int, pr float64, b bin) {
	if !(b.p > 0) {
		return
	}
	m := min(max(b.mean, b.lo), b.hi)
	d.upper = append(d.upper, atom{R: r, Y: m, Prob: pr * b.p})
	switch {
	case math.IsInf(b.hi, 1):
		d.lower = append(d.lower, atom{R: r, Y: b.lo, Prob: pr * b.p, Ray: m - b.lo})
	case b.hi > b.lo && m > b.lo && m < b.hi:
		wHi := (m - b.lo) / (b.hi - b.lo)
		d.lower = append(d.lower,
			atom{R: r, Y: b.lo, Prob: pr * b.p * (1 - wHi)},
			atom{R: r, Y: b.hi, Prob: pr * b.p * wHi})
	default:
		d.lower = append(d.lower, atom{R: r, Y: m, Prob: pr * b.p})
	}
}

// mergeAtoms merges atoms of equal (R, Y) without a ray (adjacent bins share
// an end) and drops atoms of zero probability.
func mergeAtoms(as []atom) []atom {
	slices.SortStableFunc(as, func(a, b atom) int {
		if c := cmp.Compare(a.R, b.R); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Y, b.Y); c != 0 {
			return c
		}
		return cmp.Compare(a.Ray, b.Ray)
	})
	out := as[:0]
	for _, a := range as {
		if !(a.Prob > 0) {
			continue
		}
		if n := len(out); n > 0 && out[n-1].R == a.R && out[n-1].Y == a.Y && out[n-1].Ray == 0 && a.Ray == 0 {
			out[n-1].Prob += a.Prob
			continue
		}
		out = append(out, a)
	}
	return out
}

// atomBins groups sorted atoms into at most n consecutive groups of nearly
// equal probability.
func atomBins(ys, ps []float64, n int) []bin {
	var out []bin
	cum, start := 0.0, 0
	var p, pm float64
	for i, y := range ys {
		p += ps[i]
		pm += ps[i] * y
		cum += ps[i]
		if cum >= float64(len(out)+1)/float64(n)-1e-12 || i == len(ys)-1 {
			out = append(out, bin{p: p, mean: pm / p, lo: ys[start], hi: y})
			p, pm, start = 0, 0, i+1
		}
	}
	return out
}

// continuousBins cuts the law of y into n bins at its quantiles.
func continuousBins(y models.Dist, n int) []bin {
	lo, hi := supportEnds(y)
	edges := make([]float64, n+1)
	edges[0], edges[n] = lo, hi
	for k := 1; k < n; k++ {
		edges[k] = quantile(y, float64(k)/float64(n), edges[k-1], hi)
	}
	out := make([]bin, 0, n)
	for k := range n {
		a, b := edges[k], edges[k+1]
		if k == 0 {
			a = math.Inf(-1)
		}
		if k == n-1 {
			b = math.Inf(1)
		}
		p := y.ProbIn(a, b)
		if !(p > 0) {
			continue
		}
		out = append(out, bin{p: p, mean: y.PartialMean(a, b) / p, lo: edges[k], hi: edges[k+1]})
	}
	return out
}

// supportEnds returns lo ≤ inf supp Y and hi ≥ sup supp Y (+Inf when no
// finite b has P[Y ≥ b] = 0 within 2^64 times the mean).
func supportEnds(y models.Dist) (lo, hi float64) {
	scale := y.Mean()
	if !(scale > 0) {
		scale = 1
	}
	// hi: first b = scale·2^k with nothing at or above it, then bisect.
	hi = math.Inf(1)
	b := scale
	for range 64 {
		if y.ProbIn(b, math.Inf(1)) == 0 && y.PartialMean(b, math.Inf(1)) == 0 {
			hi = b
			break
		}
		b *= 2
	}
	if !math.IsInf(hi, 1) {
		l := 0.0
		for range 200 {
			mid := l + (hi-l)/2
			if mid <= l || mid >= hi {
				break
			}
			if y.ProbIn(mid, math.Inf(1)) == 0 {
				hi = mid
			} else {
				l = mid
			}
		}
	}
	// lo: Y ≥ 0 (a data size); the largest a found with P[Y < a] = 0.
	top := scale
	if !math.IsInf(hi, 1) {
		top = hi
	}
	for y.ProbIn(math.Inf(-1), top) == 0 && top < math.MaxFloat64/4 {
		top *= 2
	}
	l := 0.0
	for range 200 {
		mid := l + (top-l)/2
		if mid <= l || mid >= top {
			break
		}
		if y.ProbIn(math.Inf(-1), mid) == 0 {
			l = mid
		} else {
			top = mid
		}
	}
	return l, hi
}

// quantile returns x in [lo, hi] with CDF(x) ≈ q, by bisection.
func quantile(y models.Dist, q, lo, hi float64) float64 {
	if math.IsInf(hi, 1) {
		hi = max(lo, y.Mean(), 1)
		for y.CDF(hi) < q && hi < math.MaxFloat64/4 {
			hi *= 2
		}
	}
	for range 200 {
		mid := lo + (hi-lo)/2
		if mid <= lo || mid >= hi {
			break
		}
		if y.CDF(mid) < q {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}
