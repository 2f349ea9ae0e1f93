package lp

import (
	"errors"
	"math"

	"gonum.org/v1/gonum/mat"
	golp "gonum.org/v1/gonum/optimize/convex/lp"
)

// standardForm is p rewritten as gonum's standard form
//
//	minimize cᵀu  s.t.  A u = b,  u ≥ 0,
//
// with the objective of p equal to offset + sign·(cᵀu) at corresponding points.
type standardForm struct {
	c      []float64
	a      *mat.Dense
	b      []float64
	offset float64
	sign   float64 // +1 for Minimize, −1 for Maximize
}

// toStandardForm substitutes every column xⱼ by nonnegative variables
// (xⱼ = lⱼ + u with u + s = uⱼ − lⱼ when boxed; xⱼ = uⱼ − u when only bounded above;
// xⱼ = u⁺ − u⁻ when free) and turns every row into equalities with slacks
// (aᵢ·x − s = lᵢ, aᵢ·x + s = uᵢ, and for a ranged row aᵢ·x − s = lᵢ, s + t = uᵢ − lᵢ);
// free rows are dropped.
func toStandardForm(p *Problem) standardForm {
	type term struct {
		v    int
		coef float64
	}
	nv := 0
	newVar := func() int { nv++; return nv - 1 }
	colTerms := make([][]term, p.NumCols())
	colOffset := make([]float64, p.NumCols())
	type eq struct {
		terms []term
		rhs   float64
	}
	var eqs []eq
	for j := range p.NumCols() {
		lo, hi := p.ColLower[j], p.ColUpper[j]
		switch {
		case !math.IsInf(lo, 0):
			u := newVar()
			colTerms[j], colOffset[j] = []term{{u, 1}}, lo
			if !math.IsInf(hi, 0) {
				eqs = append(eqs, eq{[]term{{u, 1}, {newVar(), 1}}, hi - lo})
			}
		case !math.IsInf(hi, 0):
			colTerms[j], colOffset[j] = []term{{newVar(), -1}}, hi
		default:
			colTerms[j] = []term{{newVar(), 1}, {newVar(), -1}}
		}
	}
	rowTerms := make([][]term, p.NumRows())
	rowConst := make([]float64, p.NumRows())
	for j := range p.NumCols() {
		for k := p.ColStart[j]; k < p.ColStart[j+1]; k++ {
			i, a := p.RowIndex[k], p.Value[k]
			for _, t := range colTerms[j] {
				rowTerms[i] = append(rowTerms[i], term{t.v, a * t.coef})
			}
			rowConst[i] += a * colOffset[j]
		}
	}
	for i := range p.NumRows() {
		lo, hi := p.RowLower[i]-rowConst[i], p.RowUpper[i]-rowConst[i]
		loInf, hiInf := math.IsInf(lo, 0), math.IsInf(hi, 0)
		switch {
		case loInf && hiInf:
		case lo == hi:
			eqs = append(eqs, eq{rowTerms[i], lo})
		case hiInf:
			eqs = append(eqs, eq{append(rowTerms[i], term{newVar(), -1}), lo})
		case loInf:
			eqs = append(eqs, eq{append(rowTerms[i], term{newVar(), 1}), hi})
		default:
			s := newVar()
			eqs = append(eqs, eq{append(rowTerms[i], term{s, -1}), lo})
			eqs = append(eqs, eq{[]term{{s, 1}, {newVar(), 1}}, hi - lo})
		}
	}
	sf := standardForm{c: make([]float64, nv), b: make([]float64, len(eqs)), sign: 1}
	if p.Sense == Maximize {
		sf.sign = -1
	}
	for j := range p.NumCols() {
		sf.offset += p.Obj[j] * colOffset[j]
		for _, t := range colTerms[j] {
			sf.c[t.v] += sf.sign * p.Obj[j] * t.coef
		}
	}
	if len(eqs) > 0 && nv > 0 {
		sf.a = mat.NewDense(len(eqs), nv, nil)
		for r, e := range eqs {
			for _, t := range e.terms {
				sf.a.Set(r, t.v, sf.a.At(r, t.v)+t.coef)
			}
			sf.b[r] = e.rhs
		}
	}
	return sf
}

// oracleOutcome is gonum's verdict: err is nil, ErrInfeasible, ErrUnbounded (this
// package's sentinels), or errOracleUnusable when gonum cannot decide.
type oracleOutcome struct {
	objective float64
	err       error
}

var errOracleUnusable = errors.New("gonum simplex gave no usable answer")

// oracleSolve solves p with gonum's simplex via toStandardForm.
func oracleSolve(p *Problem) (out oracleOutcome) {
	sf := toStandardForm(p)
	if sf.a == nil {
		return oracleOutcome{err: errOracleUnusable}
	}
	r, c := sf.a.Dims()
	if r > c {
		return oracleOutcome{err: errOracleUnusable}
	}
	if r == c {
		// gonum solves a square system directly and calls any slightly negative
		// component (−1e-16 from rounding) infeasible. Duplicating the first column
		// (same cost) leaves the LP's value unchanged and takes the simplex path.
		wide := mat.NewDense(r, c+1, nil)
		wide.Slice(0, r, 0, c).(*mat.Dense).Copy(sf.a)
		wide.SetCol(c, mat.Col(nil, 0, sf.a))
		sf.a, sf.c = wide, append(sf.c, sf.c[0])
		c++
	}
	// gonum declares a zero column with negative cost unbounded before checking
	// feasibility; such columns (of variables only in free rows) make it unusable.
	for v := range c {
		if mat.Norm(sf.a.ColView(v), math.Inf(1)) == 0 {
			return oracleOutcome{err: errOracleUnusable}
		}
	}
	defer func() {
		if recover() != nil {
			out = oracleOutcome{err: errOracleUnusable}
		}
	}()
	f, _, err := golp.Simplex(sf.c, sf.a, sf.b, 1e-10, nil)
	switch {
	case err == nil:
		return oracleOutcome{objective: sf.offset + sf.sign*f}
	case errors.Is(err, golp.ErrInfeasible):
		return oracleOutcome{err: ErrInfeasible}
	case errors.Is(err, golp.ErrUnbounded):
		return oracleOutcome{err: ErrUnbounded}
	default:
		return oracleOutcome{err: errOracleUnusable}
	}
}
