package lp

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/floats/scalar"
)

// Tolerances. Clp's primal and dual feasibility tolerances are 1e-7 (on the scaled
// problem); the checks allow a little more.
const (
	tolAbs  = 1e-6 // absolute tolerance on objectives, activities, bounds
	tolRel  = 1e-6 // relative tolerance on objectives
	dualTol = 1e-6 // duals below this in magnitude count as zero
)

func near(a, b float64) bool { return scalar.EqualWithinAbsOrRel(a, b, tolAbs, tolRel) }

// nearScaled compares a computed sum with its recomputation, allowing the rounding
// error of a sum whose terms have magnitudes adding up to scale (a basic variable of
// a free column may sit at 1e10 on an unbounded optimal face).
func nearScaled(a, b, scale float64) bool {
	return math.Abs(a-b) <= tolAbs+tolRel*math.Max(scale, math.Max(math.Abs(a), math.Abs(b)))
}

// checkKKT verifies that sol is an optimal solution of p by a method independent of
// Clp's status: primal feasibility, Objective = c·x, RowActivity = A x,
// ReducedCosts = c − Aᵀy, dual sign feasibility for p.Sense, complementary
// slackness, and strong duality c·x = dualObjective(p, sol).
func checkKKT(t testing.TB, p *Problem, sol *Solution) {
	t.Helper()
	if err := kktError(p, sol); err != nil {
		t.Fatal(err)
	}
}

func kktError(p *Problem, sol *Solution) error {
	m, n := p.NumRows(), p.NumCols()
	if len(sol.Primal) != n || len(sol.ReducedCosts) != n || len(sol.RowActivity) != m || len(sol.RowDuals) != m {
		return fmt.Errorf("solution lengths %d/%d/%d/%d for m=%d n=%d",
			len(sol.Primal), len(sol.ReducedCosts), len(sol.RowActivity), len(sol.RowDuals), m, n)
	}
	x, y, d := sol.Primal, sol.RowDuals, sol.ReducedCosts
	ax, axScale := make([]float64, m), make([]float64, m)
	aty, atyScale := make([]float64, n), make([]float64, n)
	for j := range n {
		for k := p.ColStart[j]; k < p.ColStart[j+1]; k++ {
			i, a := p.RowIndex[k], p.Value[k]
			ax[i] += a * x[j]
			axScale[i] += math.Abs(a * x[j])
			aty[j] += a * y[i]
			atyScale[j] += math.Abs(a * y[i])
		}
	}
	cx, cxScale := 0.0, 0.0
	for j := range n {
		cx += p.Obj[j] * x[j]
		cxScale += math.Abs(p.Obj[j] * x[j])
		if x[j] < p.ColLower[j]-tolAbs || x[j] > p.ColUpper[j]+tolAbs {
			return fmt.Errorf("x[%d] = %v outside [%v, %v]", j, x[j], p.ColLower[j], p.ColUpper[j])
		}
		if !nearScaled(d[j], p.Obj[j]-aty[j], atyScale[j]+math.Abs(p.Obj[j])) {
			return fmt.Errorf("d[%d] = %v, want c − Aᵀy = %v", j, d[j], p.Obj[j]-aty[j])
		}
	}
	if !nearScaled(sol.Objective, cx, cxScale) {
		return fmt.Errorf("Objective %v != c·x = %v", sol.Objective, cx)
	}
	for i := range m {
		if !nearScaled(sol.RowActivity[i], ax[i], axScale[i]) {
			return fmt.Errorf("RowActivity[%d] = %v, want A x = %v", i, sol.RowActivity[i], ax[i])
		}
		if ax[i] < p.RowLower[i]-tolAbs*(1+axScale[i]) || ax[i] > p.RowUpper[i]+tolAbs*(1+axScale[i]) {
			return fmt.Errorf("row %d: A x = %v outside [%v, %v]", i, ax[i], p.RowLower[i], p.RowUpper[i])
		}
	}
	dual, residual, err := dualObjective(p, sol)
	if err != nil {
		return err
	}
	if !nearScaled(dual, sol.Objective, cxScale+residual/tolRel) {
		return fmt.Errorf("strong duality: dual objective %v != primal %v (complementary slackness residual %v)",
			dual, sol.Objective, residual)
	}
	return nil
}

// dualObjective evaluates Σᵢ yᵢ·bᵢ + Σⱼ dⱼ·lⱼ, where each nonzero dual multiplies the
// bound its sign selects under the package's convention (Minimize: positive → lower
// bound, negative → upper; Maximize: the reverse). It uses the bounds, not x, except
// for duals within dualTol of zero. It also checks complementary slackness (that
// bound is the row's activity or the column's value, within tolerance) and returns
// the residual Σ|dual|·|value − bound|, by which a solution that is feasible only
// within tolerance may miss strong duality. A dual whose selected bound is infinite
// is dual infeasible.
func dualObjective(p *Problem, sol *Solution) (total, residual float64, err error) {
	for i, yi := range sol.RowDuals {
		b, err := selectBound(p.Sense, yi, p.RowLower[i], p.RowUpper[i], sol.RowActivity[i])
		if err != nil {
			return 0, 0, fmt.Errorf("row %d: %w", i, err)
		}
		total += yi * b
		residual += math.Abs(yi * (sol.RowActivity[i] - b))
	}
	for j, dj := range sol.ReducedCosts {
		b, err := selectBound(p.Sense, dj, p.ColLower[j], p.ColUpper[j], sol.Primal[j])
		if err != nil {
			return 0, 0, fmt.Errorf("column %d: %w", j, err)
		}
		total += dj * b
		residual += math.Abs(dj * (sol.Primal[j] - b))
	}
	return total, residual, nil
}

// selectBound returns the bound a dual's sign selects, checking that the value
// (row activity or column value) is at it.
func selectBound(s Sense, dual, lo, hi, value float64) (float64, error) {
	if math.Abs(dual) <= dualTol {
		// Within tolerance of zero the sign means nothing; use the value itself
		// (a tiny dual may multiply a huge bound).
		return value, nil
	}
	b := lo
	if (dual < 0) == (s == Minimize) {
		b = hi
	}
	if math.IsInf(b, 0) {
		return 0, fmt.Errorf("dual %v has the wrong sign for %v (bounds [%v, %v])", dual, s, lo, hi)
	}
	if math.Abs(value-b) > tolAbs*(1+math.Abs(b)) {
		return 0, fmt.Errorf("complementary slackness: dual %v but value %v is not at bound %v", dual, value, b)
	}
	return b, nil
}

// randomLP draws a small LP with integer data in which every row and column has a
// nonzero, mixing every kind of bound: fixed, boxed, one-sided and free columns;
// equality, ranged, one-sided and free rows. If feasible, the row bounds are built
// around A x0 for a point x0 inside the column bounds, so the LP is feasible (it may
// still be unbounded); otherwise the bounds are random and the LP may be infeasible.
func randomLP(r *rand.Rand, m, n int, feasible bool) *Problem {
	p := &Problem{Sense: Sense(r.IntN(2))}
	inf := math.Inf(1)
	x0 := make([]float64, n)
	for j := range n {
		lo, hi := -inf, inf
		switch r.IntN(6) {
		case 0: // free
		case 1: // fixed
			lo = float64(r.IntN(7) - 3)
			hi = lo
		case 2: // upper only
			hi = float64(r.IntN(7) - 3)
		case 3: // lower only
			lo = float64(r.IntN(7) - 3)
		default: // boxed
			lo = float64(r.IntN(7) - 3)
			hi = lo + float64(1+r.IntN(5))
		}
		x0[j] = pointIn(r, lo, hi)
		p.AddCol(float64(r.IntN(11)-5), lo, hi, nil, nil)
	}
	rows := make([][]int, n)
	vals := make([][]float64, n)
	for i := range m {
		ax := 0.0
		for j := range n {
			if r.Float64() < 0.6 || j == i%n {
				a := float64(r.IntN(10) - 5)
				if a >= 0 {
					a++
				}
				rows[j] = append(rows[j], i)
				vals[j] = append(vals[j], a)
				ax += a * x0[j]
			}
		}
		var lo, hi float64
		if feasible {
			lo, hi = ax-float64(r.IntN(3)), ax+float64(r.IntN(3))
		} else {
			lo = float64(r.IntN(13) - 6)
			hi = lo + float64(r.IntN(4))
		}
		switch r.IntN(6) {
		case 0:
			hi = lo // equality (feasible case: lo ≤ ax, so shift both to ax)
			if feasible {
				lo, hi = ax, ax
			}
		case 1:
			lo = -inf
		case 2:
			hi = inf
		case 3:
			if r.IntN(4) == 0 {
				lo, hi = -inf, inf // free row
			}
		}
		p.AddRow(lo, hi)
	}
	// Every column needs a nonzero (gonum rejects zero columns).
	for j := range n {
		if len(rows[j]) == 0 && m > 0 {
			i := r.IntN(m)
			rows[j], vals[j] = append(rows[j], i), append(vals[j], 1)
			if feasible {
				p.RowLower[i] += x0[j]
				p.RowUpper[i] += x0[j]
			}
		}
	}
	p.RowIndex, p.Value, p.ColStart = nil, nil, []int{0}
	for j := range n {
		p.RowIndex = append(p.RowIndex, rows[j]...)
		p.Value = append(p.Value, vals[j]...)
		p.ColStart = append(p.ColStart, len(p.RowIndex))
	}
	return p
}

// pointIn returns an integer point in [lo, hi].
func pointIn(r *rand.Rand, lo, hi float64) float64 {
	switch {
	case !math.IsInf(lo, 0) && !math.IsInf(hi, 0):
		return lo + float64(r.IntN(int(hi-lo)+1))
	case !math.IsInf(lo, 0):
		return lo + float64(r.IntN(3))
	case !math.IsInf(hi, 0):
		return hi - float64(r.IntN(3))
	default:
		return float64(r.IntN(7) - 3)
	}
}

// randomSparseLP is a feasible, bounded LP: 0 ≤ x ≤ u, A ≥ 0 with about density·m·n
// nonzeros, rows A x ≤ b with b > 0 (so x = 0 is feasible), and a maximized positive
// objective (so no column is trivially zero). Some rows are ranged and some equal
// ≥ rows keep the dual simplex busy.
func randomSparseLP(r *rand.Rand, m, n int, density float64) *Problem {
	p := &Problem{Sense: Maximize}
	for range m {
		p.AddRow(math.Inf(-1), 10+50*r.Float64())
	}
	for range n {
		var rows []int
		var vals []float64
		for i := range m {
			if r.Float64() < density {
				rows = append(rows, i)
				vals = append(vals, 10*r.Float64())
			}
		}
		p.AddCol(10*r.Float64(), 0, 1+10*r.Float64(), rows, vals)
	}
	return p
}
