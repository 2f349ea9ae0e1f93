package solver

import (
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
	m.unitNum, m.unitDen = valueUnit(m.val, m.supply)
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
	b := make([]byte, 0, 8*len(d))
	for _, q := range d {
		for s := 0; s < 64; s += 8 {
			b = append(b, byte(q>>s))
		}
	}
	return string(b)
}

// valueUnit returns the largest g such that every v_i is an integer multiple
// of g. It first looks for g = G/2^e with integer G, exact in binary
// floating point (weights 1 or 1/1024 with integer demands). Failing that
// (a weight of 0.1 is not a binary fraction), it looks for a common
// denominator D ≤ maxUnitDenominator such that every v_i·D is within
// unitTolerance (relative) of an integer, and returns g = gcd(v_i·D)/D: the
// instance's values are then the decimals the user wrote, up to floating
// point rounding, and the optimum is exact for them. Either unit is kept
// only where the whole supply's value, Σ_i v_i·s_i, is at most
// maxValueUnits units (see there). It returns 0 when there is no such g,
// in which case bounds are not rounded (improvements are then relative,
// improveTolerance).
func valueUnit(vals []float64, supply []int) (num, den float64) {
	if len(vals) == 0 {
		return 0, 0
	}
	fewUnits := func(num, den float64) bool {
		total := 0.0
		for i, v := range vals {
			total += v * den / num * float64(supply[i])
		}
		return total <= maxValueUnits
	}
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
			if fewUnits(float64(g), scale) {
				return float64(g), scale
			}
			break // a finer binary unit only has more units; try the decimals
		}
	}
	d := uint64(1)
	for _, v := range vals {
		q := rationalDenominator(v)
		if q == 0 {
			return 0, 0
		}
		d = d / gcd(d, q) * q
		if d > maxUnitDenominator {
			return 0, 0
		}
	}
	var g uint64
	for _, v := range vals {
		s := math.Round(v * float64(d))
		if s <= 0 || s >= 1<<50 || math.Abs(v*float64(d)-s) > unitTolerance*s {
			return 0, 0
		}
		g = gcd(g, uint64(s))
	}
	if !fewUnits(float64(g), float64(d)) {
		return 0, 0
	}
	return float64(g), float64(d)
}

// Limits of the rational value unit (valueUnit).
const (
	// a decimal unit of up to 6 digits (weights such as 0.1 or 0.000125)
	maxUnitDenominator = 1_000_000
	// the rounding error of v_i = Σ_p w_p·R[i,p] in float64 is a few
	// 1e-16 relative; a value further from a multiple of 1/D is not one
	unitTolerance = 1e-13
	// maxValueUnits caps the whole supply's value in units (2³⁸ ≈
	// 2.7·10¹¹). Bounds are rounded down to the unit after a slack of up
	// to largeSlackUnits + floatTolerance·q units (boundSlack), which must
	// stay under one unit for the rounding to mean anything: here at most
	// 0.375. Beyond it the "unit" is no longer one the user wrote: values
	// near 4·10⁹ are all multiples of 2⁻²⁰ (their float64 spacing), which
	// the binary search above accepts; with that unit the slack was
	// thousands of units, the reduced-cost DP's "one unit below the bound"
	// rounded back up to the bound, and it looped until the time limit
	// (measured: 66 454 steps in 3 s on a 3-node instance whose optimum,
	// 8 614 089 446.5, it had found at once). Its decimal unit 0.1 is
	// within the cap and taken instead.
	maxValueUnits = 1 << 38
)

// rationalDenominator returns the smallest q ≤ maxUnitDenominator such that
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
		if k1 > maxUnitDenominator {
			return 0
		}
		if math.Abs(v*k1-h1) <= unitTolerance*math.Max(1, h1) {
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
// relative. floatTolerance still covers every error the bounds carry:
// the bounds floorBound rounds are Lagrangian values L(π) = Σ_i π_i·s_i +
// Σ_j max_a (v(a) − π·a), valid at any multipliers π (weak duality), so
// the LP's own tolerances never enter them; what remains is float64
// rounding in sums whose terms are each at most L's size (π·a ≤ π·s, v(a)
// ≤ Σ_i v_i·s_i), a relative error of at most (terms)·2⁻⁵³ ≈ 10⁻¹² for 10⁴
// terms, on the worst path, and far less in practice. Below 10⁶ units
// the slack is boundTolerance's, as before (canImprove's shortcuts rely
// on its being under a tenth of a unit there).
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
// incumbent to count as an improvement when values have no common unit.
const improveTolerance = 1e-9

// floorBound rounds an upper bound down to the value unit, when there is one.
func (m *model) floorBound(b float64) float64 {
	if m.unit <= 0 || math.IsInf(b, 0) {
		return b
	}
	q := b * m.unitDen / m.unitNum
	return math.Floor(q+boundSlack(q)) * m.unitNum / m.unitDen
}

// absAtLeast1 is max(1, |x|) (math.Max is an assembly call, and the
// search's pruning test computes it at every count it tries).
func absAtLeast1(x float64) float64 {
	if x = math.Abs(x); x < 1 {
		return 1
	}
	return x
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
	if m.unit > 0 {
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
func (m *model) canImprove(b, inc float64) bool {
	if m.unit > 0 {
		if math.Abs(b) < fastPruneUnits*m.unit {
			if d := b - inc; d <= 0 {
				return false
			} else if d >= 2*m.unit {
				return true
			}
		}
		return m.floorBound(b) > inc+0.5*m.unit
	}
	return b > inc+improveTolerance*absAtLeast1(inc)
}

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
