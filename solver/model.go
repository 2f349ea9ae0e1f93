package solver

import (
	"encoding/binary"
	"fmt"
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
	// integer multiple of g (0 when the values have no common unit);
	// g = unitNum/unitDen exactly, which snap uses to print multiples of a
	// decimal unit such as 0.1 without binary rounding error.
	unit, unitNum, unitDen float64
	// free are the input task types that demand nothing (value 0): they
	// fit anywhere and are spread over the nodes outside the optimisation.
	free []int
	// unplaced are the input task types that fit no node, with the reason.
	unplaced []Unplaced
	// lattice holds the values a whole assignment can take below the
	// root's Lagrangian bound (lattice.go), nil until the LP is solved or
	// where it rules out none.
	lattice *valueLattice
}

// newModel builds the model of a validated instance. Task types with count
// 0 are left out; so are those that fit no node (listed in unplaced) and
// those that demand nothing (listed in free).
func newModel(in *Instance) *model {
	k := in.Resources()
	w := make([]float64, k)
	for p := range w {
		w[p] = in.Weight(p)
	}
	m := &model{k: k, w: w}
	caps := nodeCaps(in)
	byDemand := map[string]int{}
	for i, t := range in.Tasks {
		if t.Count == 0 {
			continue
		}
		if slices.Max(t.Demand) == 0 {
			m.free = append(m.free, i)
			continue
		}
		if why := fitsNoNode(t.Demand, caps); why != "" {
			m.unplaced = append(m.unplaced, Unplaced{Task: t.ID, Count: t.Count, Reason: why})
			continue
		}
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
	m.unitNum, m.unitDen = valueUnit(m.w, m.dem)
	if m.unitDen > 0 {
		m.unit = m.unitNum / m.unitDen
	}
	return m
}

// fitsNoNode returns why a task of demand d fits on no node of caps, or ""
// when it fits on one.
func fitsNoNode(d []int64, caps [][]int64) string {
	for _, c := range caps {
		if fitsIn(d, c) {
			return ""
		}
	}
	for p, q := range d {
		largest := int64(0)
		for _, c := range caps {
			largest = max(largest, c[p])
		}
		if q > largest {
			return fmt.Sprintf("demand[%d] = %d exceeds every node's capacity (largest %d)", p, q, largest)
		}
	}
	return "every node lacks capacity in at least one resource"
}

func permute[T any](s []T, perm []int) []T {
	out := make([]T, len(perm))
	for i, p := range perm {
		out[i] = s[p]
	}
	return out
}

func demandKey(d []int64) string {
	return string(appendDemandKey(make([]byte, 0, 8*len(d)), d))
}

// appendDemandKey appends demandKey's bytes of d to b (8 little-endian
// bytes per resource), for callers that look keys up without allocating.
func appendDemandKey(b []byte, d []int64) []byte {
	for _, q := range d {
		b = binary.LittleEndian.AppendUint64(b, uint64(q))
	}
	return b
}

// valueUnit returns the largest g = num/den such that every value v_i =
// Σ_p w_p·R[i,p] is an integer multiple of g, found from the weights, not
// from the values: each weight is W_p/D exactly for a common denominator
// D (the smallest power of two that makes w_p an integer, or the
// denominator of the decimal the user wrote, weightDenominator), so v_i·D
// = Σ_p W_p·R[i,p] is an integer computed exactly, and g is their gcd over
// D. Values alone could not tell: near 4·10⁹ every float64 is a multiple
// of 2⁻²⁰ (their spacing), and a continued fraction of 4000000000.1003
// finds 1/329 within a few ulps; taking either had made proofs impossible
// (a rounding slack of thousands of units) or objectives wrong. It returns
// 0 where a weight has no such denominator (D ≤ maxUnitDenominator) or a
// value is 2⁵³ units or more, in which case bounds are not rounded
// (improvements are then relative, improveTolerance).
func valueUnit(w []float64, dem [][]int64) (num, den float64) {
	d := uint64(1)
	for _, wp := range w {
		q := weightDenominator(wp)
		if q == 0 {
			return 0, 0
		}
		d = d / gcd(d, q) * q
		if d > maxUnitDenominator {
			return 0, 0
		}
	}
	whole := make([]float64, len(w)) // W_p = w_p·D, integers
	for p, wp := range w {
		if whole[p] = math.Round(wp * float64(d)); whole[p] >= 1<<53 {
			return 0, 0
		}
	}
	var g uint64
	for _, a := range dem {
		units := 0.0 // Σ_p W_p·R[i,p], exact while every term and sum is under 2⁵³
		for p, r := range a {
			term := whole[p] * float64(r)
			if units += term; term >= 1<<53 || units >= 1<<53 {
				return 0, 0
			}
		}
		if units > 0 {
			g = gcd(g, uint64(units))
		}
	}
	if g == 0 {
		return 0, 0
	}
	return float64(g), float64(d)
}

// weightDenominator returns the smallest D such that w·D is an integer:
// the smaller of a power of two up to 2⁴⁰ where w is a binary fraction
// (1/1024) and the denominator (≤ 10⁶) of the decimal or simple fraction w
// approximates within float64 rounding (0.1, 0.000125, 1/3), else 0. Both
// are tried because a decimal weight of 4096 or more is also a binary
// fraction: the float64 4096.1 is an exact multiple of 2⁻⁴⁰, and taken for
// one its denominator beside a weight of 0.1 (10·2⁴⁰) exceeded
// maxUnitDenominator, leaving the instance without a unit, where 4096.1 =
// 40961/10 gives the unit 0.1.
func weightDenominator(w float64) uint64 {
	decimal := rationalDenominator(w)
	for e := 0; e <= 40; e++ {
		if s := math.Ldexp(w, e); s == math.Trunc(s) {
			if decimal != 0 && decimal < 1<<e {
				return decimal
			}
			return 1 << e
		}
	}
	return decimal
}

// Limits of the value unit (valueUnit).
const (
	// the common denominator of the weights: binary fractions down to
	// 2⁻⁴⁰, decimals or fractions of up to maxDecimalDenominator, or both
	maxUnitDenominator = 1 << 40
	// a decimal of up to 6 digits (weights such as 0.1 or 0.000125), or a
	// simple fraction (1/3): an irrational weight has convergents of every
	// size, so a larger denominator would fit π as well as 0.1
	maxDecimalDenominator = 1_000_000
	// a weight w is taken for h/q (h ≥ 1) where |w·q − h| ≤
	// unitTolerance·h: the float64 rounding of a decimal weight and of its
	// product is a few 2⁻⁵³ relative
	unitTolerance = 2e-15
)

// rationalDenominator returns the smallest q ≤ maxDecimalDenominator such that
// v·q is within unitTolerance (relative) of an integer, found from the
// continued fraction of v, or 0.
func rationalDenominator(v float64) uint64 {
	if v <= 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0
	}
	// convergents h/k of the continued fraction of v
	h0, h1 := 0.0, 1.0
	k0, k1 := 1.0, 0.0
	x := v
	for range 64 {
		a := math.Floor(x)
		h0, h1 = h1, a*h1+h0
		k0, k1 = k1, a*k1+k0
		if k1 > maxDecimalDenominator {
			return 0
		}
		// h1 ≥ 1: a positive v is never 0/k (a weight of 10⁻¹⁵ was taken
		// for 0/1 by the absolute test max(1, h1) made of it, and its
		// part of every value rounded away)
		if h1 >= 1 && math.Abs(v*k1-h1) <= unitTolerance*h1 {
			return uint64(k1)
		}
		f := x - a
		if f == 0 {
			return uint64(k1)
		}
		x = 1 / f
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

// Beyond 10⁶ units (boundTolerance·10⁶ = 0.1) the relative slack would
// grow past a tenth of a unit and, near 10¹⁰ units, to whole units (1000
// at 10¹⁰): a bound equal to the optimum would round up past it, and a
// proven optimum be reported unproven at gap 0. Measured: a single node
// with one resource of 1.17·10¹¹ (weight 0.1) and the optimum
// 7 562 220 485.8 reported with the bound 7 562 221 242, optimal false.
// So the slack is capped at largeSlackUnits units plus floatTolerance
// relative. floatTolerance still covers the bounds' errors: the bounds
// floorBound rounds are relaxation values (Lagrangian values L(π) = Σ_i
// π_i·s_i + Σ_j max_a (v(a) − π·a), valid at any multipliers π by weak
// duality; the reduced-cost DP's; a completed single-node fill), never an
// LP's objective, so the LP's tolerances never enter them; what remains is
// float64 rounding, (terms)·2⁻⁵³ of the magnitudes summed: about 10⁻¹²
// relative for 10⁴ terms of L's size (π·a ≤ π·s, v(a) ≤ Σ_i v_i·s_i), and
// the branch and price's branch terms, which can be larger, stay far under
// a tenth of a unit at the sizes where a proof can close. Below 10⁶ units
// the slack is boundTolerance's, as before (canImprove's shortcuts rely
// on its being under a tenth of a unit there). At exactUnits (4·10¹¹
// units) it reaches half a unit, where float64 bounds can no longer tell
// a unit apart: beyond it floorBound leaves bounds unrounded and
// canImprove compares within floatTolerance relative.
const (
	largeSlackUnits = 0.1
	floatTolerance  = 1e-12
)

// boundSlack is the slack, in value units, floorBound adds to a bound of q
// units before rounding it down: boundTolerance·max(1, |q|), at most
// largeSlackUnits + floatTolerance·|q|.
func boundSlack(q float64) float64 {
	a := absAtLeast1(q)
	return min(boundTolerance*a, largeSlackUnits+floatTolerance*a)
}

// improveTolerance is the relative amount by which a value must exceed the
// incumbent to count as an improvement when values have no common unit
// (irrational weights; values beyond 2⁵³) or one finer than the bounds'
// precision (beyond exactUnits): floatTolerance, about the bounds' own
// float64 error (relative to max(1, |inc|): 10⁻¹² absolute below a value
// of 1). It was 10⁻⁹, which near 10¹¹ ignored
// improvements of a hundred and claimed optima they beat.
const improveTolerance = floatTolerance

// floorBound rounds an upper bound down to the value unit, when there is one.
//
// Beyond exactUnits units it leaves b as it is: a slack of half a unit
// or more would only raise it (canImprove compares there as without a
// unit).
func (m *model) floorBound(b float64) float64 {
	if !m.roundsToUnit(b) || math.IsInf(b, 0) {
		return b
	}
	q := b * m.unitDen / m.unitNum
	return math.Floor(q+boundSlack(q)) * m.unitNum / m.unitDen
}

// roundsToUnit reports whether a bound b is compared in value units
// (floorBound rounds it, canImprove and canImproveWhole compare to half a
// unit): there is a unit and |b| is under exactUnits units (or infinite,
// which every comparison decides alike).
func (m *model) roundsToUnit(b float64) bool {
	return m.unit > 0 && (math.Abs(b) < exactUnits*m.unit || math.IsInf(b, 0))
}

// absAtLeast1 is max(1, |x|) (math.Max is an assembly call, and the
// search's pruning test computes it at every count it tries).
func absAtLeast1(x float64) float64 {
	if x = math.Abs(x); x < 1 {
		return 1
	}
	return x
}

// withSupply returns the model of the sub-problem with supply s' over the
// same task types (the values, demands and value unit of m). The lattice
// of whole-assignment values, built for m's supply, is left out.
func (m *model) withSupply(supply []int) *model {
	sub := *m
	sub.supply = supply
	sub.lattice = nil
	return &sub
}

// roomAfter returns the capacity that pattern a leaves on a node of
// capacity c (negative where a does not fit).
func (m *model) roomAfter(c []int64, a []int) []int64 {
	r := slices.Clone(c)
	for i, n := range a {
		for p, d := range m.dem[i] {
			r[p] -= int64(n) * d
		}
	}
	return r
}

// fastPruneUnits bounds, in value units, the bounds that canImprove
// decides without rounding: below it the tolerance floorBound adds is
// under a tenth of a unit (boundTolerance·10⁶ = 0.1).
const fastPruneUnits = 1e6

// wholeBound rounds an upper bound on the value of a whole assignment
// (not of a part of the nodes or of the supply) down to the value unit and
// then to the value lattice (lattice.go).
func (m *model) wholeBound(b float64) float64 {
	return m.lattice.stepDown(m, m.floorBound(b))
}

// canImproveWhole is canImprove for a bound b on the value of a whole
// assignment: it also rules out the values off the value lattice.
func (m *model) canImproveWhole(b, inc float64) bool {
	if m.roundsToUnit(b) {
		return m.wholeBound(b) > inc+0.5*m.unit
	}
	return m.canImprove(b, inc)
}

// snap returns the multiple of the value unit nearest to v (a sum of task
// values), v itself when there is no unit.
func (m *model) snap(v float64) float64 {
	if m.unit <= 0 {
		return v
	}
	return math.Round(v*m.unitDen/m.unitNum) * m.unitNum / m.unitDen
}

// canImprove reports whether a subtree with upper bound b may hold a
// solution strictly better than incumbent value inc.
//
// With a value unit g it decides most bounds without the rounding's two
// divisions (the search asks at every count it tries): where |b| is under
// fastPruneUnits units the rounding adds less than 0.1·g, so b ≤ inc gives
// floorBound(b) ≤ inc + 0.1·g (no improvement), and b ≥ inc + 2g gives
// floorBound(b) > b − g ≥ inc + g (one); between the two it rounds.
//
// Beyond exactUnits units the rounding slack (boundSlack) reaches half a
// unit: the unit is finer than the bounds' float64 precision, so no bound
// could ever prove it, and the search, pruning nothing within a unit of
// the incumbent, would not end. There, as without a unit, an improvement
// must exceed improveTolerance relative: "optimal" then means within
// 10⁻¹² of the optimum (relative; absolute below 1), the precision of
// float64 bounds.
func (m *model) canImprove(b, inc float64) bool {
	if m.roundsToUnit(b) {
		if math.Abs(b) < fastPruneUnits*m.unit {
			if d := b - inc; d <= 0 {
				return false
			} else if d >= 2*m.unit {
				return true
			}
		}
		return m.floorBound(b) > inc+0.5*m.unit
	}
	if math.IsInf(inc, -1) { // no incumbent yet (the tolerance would be NaN)
		return b > inc
	}
	return b > inc+improveTolerance*absAtLeast1(inc)
}

// exactUnits is where boundSlack reaches half a unit: 0.1 + 10⁻¹²·q = 0.5.
const exactUnits = (0.5 - largeSlackUnits) / floatTolerance

// maxFit returns how many tasks of demand d fit in residual r:
// min_p ⌊r_p/d_p⌋ over the resources with d_p > 0 (MaxInt64 when d = 0).
func maxFit(d, r []int64) int64 {
	f := int64(math.MaxInt64)
	for p := range d {
		if d[p] == 0 {
			continue
		}
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
