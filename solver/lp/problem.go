package lp

import (
	"fmt"
	"math"

	"github.com/optd/optd/internal/errkind"
)

// Sense is the direction of optimization.
type Sense int

const (
	// Minimize asks for min c·x.
	Minimize Sense = iota
	// Maximize asks for max c·x.
	Maximize
)

// String returns "minimize" or "maximize".
func (s Sense) String() string {
	switch s {
	case Minimize:
		return "minimize"
	case Maximize:
		return "maximize"
	default:
		return fmt.Sprintf("Sense(%d)", int(s))
	}
}

// MaxMagnitude bounds the magnitude of objective coefficients, matrix values and
// finite bounds. Clp treats bounds beyond 1e20 as infinite when they are changed
// (and beyond 1e27 when they are loaded), so a larger finite bound would silently
// change meaning, and the Debian build of Clp aborts the process (a failed assert)
// when a scaled objective coefficient reaches 1e25. Validate rejects such values;
// write infinite bounds as math.Inf(±1).
const MaxMagnitude = 1e20

// maxCInt is the largest value of a C int: Clp indexes rows, columns and
// (CoinBigIndex is int in Debian's build) nonzeros with it.
const maxCInt = math.MaxInt32

// ErrInvalidInput is wrapped by every *InputError.
var ErrInvalidInput = errkind.New(errkind.Invalid, "lp: invalid input")

// InputError reports a malformed Problem or Options. It names the offending field
// and, for slice fields, the index (Index is -1 when the error concerns the field as
// a whole, such as its length).
type InputError struct {
	Field  string // e.g. "ColUpper", "RowIndex", "Options.Algorithm"
	Index  int    // index into Field, or -1
	Reason string // what is wrong, with the offending value
}

// Error implements error, e.g. "lp: invalid input: ColUpper[3]: -1 is below ColLower[3] = 2".
func (e *InputError) Error() string {
	if e.Index < 0 {
		return fmt.Sprintf("%v: %s: %s", ErrInvalidInput, e.Field, e.Reason)
	}
	return fmt.Sprintf("%v: %s[%d]: %s", ErrInvalidInput, e.Field, e.Index, e.Reason)
}

// Unwrap returns ErrInvalidInput.
func (e *InputError) Unwrap() error { return ErrInvalidInput }

func inputErr(field string, index int, format string, args ...any) error {
	return &InputError{Field: field, Index: index, Reason: fmt.Sprintf(format, args...)}
}

// Problem is the linear program
//
//	optimize  c·x
//	s.t.      RowLower ≤ A x ≤ RowUpper
//	          ColLower ≤ x   ≤ ColUpper
//
// with c = Obj, m = len(RowLower) rows and n = len(Obj) columns. Infinite bounds are
// math.Inf(±1); a row with RowLower = RowUpper is an equality, a column with
// ColLower = ColUpper is fixed, a column with both bounds infinite is free.
//
// A is stored compressed sparse column: column j's nonzeros are in rows
// RowIndex[ColStart[j]:ColStart[j+1]] with values Value[ColStart[j]:ColStart[j+1]].
// len(ColStart) = n+1, ColStart[0] = 0 and ColStart[n] = len(RowIndex) = len(Value);
// ColStart may be empty when n = 0. A row index may appear at most once per column.
//
// The zero Problem (no rows, no columns) is valid; build larger ones with AddRow and
// AddCol or by filling the slices directly and calling Validate.
type Problem struct {
	Sense    Sense
	Obj      []float64 // c, length n
	ColLower []float64 // length n
	ColUpper []float64 // length n

	RowLower []float64 // length m
	RowUpper []float64 // length m

	ColStart []int     // length n+1 (or 0 when n = 0)
	RowIndex []int     // length nnz, each in [0, m)
	Value    []float64 // length nnz
}

// NumRows returns m, the number of rows (len(RowLower)).
func (p *Problem) NumRows() int { return len(p.RowLower) }

// NumCols returns n, the number of columns (len(Obj)).
func (p *Problem) NumCols() int { return len(p.Obj) }

// AddRow appends the row lo ≤ aᵢ·x ≤ hi (initially without nonzeros; columns added
// later by AddCol may use it) and returns its index.
func (p *Problem) AddRow(lo, hi float64) int {
	p.RowLower = append(p.RowLower, lo)
	p.RowUpper = append(p.RowUpper, hi)
	return len(p.RowLower) - 1
}

// AddCol appends a column with objective coefficient obj, bounds lo ≤ xⱼ ≤ hi and
// nonzeros vals[k] in rows rows[k], and returns its index. The slices are copied.
// It panics if len(rows) != len(vals); indices and values are checked by Validate.
func (p *Problem) AddCol(obj, lo, hi float64, rows []int, vals []float64) int {
	if len(rows) != len(vals) {
		panic(fmt.Sprintf("lp: AddCol: len(rows) = %d != len(vals) = %d", len(rows), len(vals)))
	}
	if len(p.ColStart) == 0 {
		p.ColStart = append(p.ColStart, len(p.RowIndex))
	}
	p.Obj = append(p.Obj, obj)
	p.ColLower = append(p.ColLower, lo)
	p.ColUpper = append(p.ColUpper, hi)
	p.RowIndex = append(p.RowIndex, rows...)
	p.Value = append(p.Value, vals...)
	p.ColStart = append(p.ColStart, len(p.RowIndex))
	return len(p.Obj) - 1
}

// Validate checks the shape and values of p and returns an *InputError (wrapping
// ErrInvalidInput) naming the first offending field and index: slice lengths, the
// column starts, row indices in range and not repeated within a column, finite
// objective and matrix values below MaxMagnitude in magnitude, bounds that are not
// NaN, lower ≤ upper, no lower bound of +Inf or upper bound of −Inf, and finite
// bounds below MaxMagnitude in magnitude.
func (p *Problem) Validate() error {
	if p.Sense != Minimize && p.Sense != Maximize {
		return inputErr("Sense", -1, "%d is neither Minimize (0) nor Maximize (1)", int(p.Sense))
	}
	m, n := len(p.RowLower), len(p.Obj)
	if m > maxCInt {
		return inputErr("RowLower", -1, "%d rows exceed Clp's limit %d", m, maxCInt)
	}
	if n > maxCInt {
		return inputErr("Obj", -1, "%d columns exceed Clp's limit %d", n, maxCInt)
	}
	if len(p.RowUpper) != m {
		return inputErr("RowUpper", -1, "length %d != len(RowLower) = %d", len(p.RowUpper), m)
	}
	if len(p.ColLower) != n {
		return inputErr("ColLower", -1, "length %d != len(Obj) = %d", len(p.ColLower), n)
	}
	if len(p.ColUpper) != n {
		return inputErr("ColUpper", -1, "length %d != len(Obj) = %d", len(p.ColUpper), n)
	}
	if err := checkFinite("Obj", p.Obj); err != nil {
		return err
	}
	if err := checkBounds("ColLower", "ColUpper", p.ColLower, p.ColUpper); err != nil {
		return err
	}
	if err := checkBounds("RowLower", "RowUpper", p.RowLower, p.RowUpper); err != nil {
		return err
	}
	return p.checkMatrix()
}

// checkMatrix validates the compressed-sparse-column matrix.
func (p *Problem) checkMatrix() error {
	m, n := len(p.RowLower), len(p.Obj)
	nnz := len(p.RowIndex)
	if len(p.Value) != nnz {
		return inputErr("Value", -1, "length %d != len(RowIndex) = %d", len(p.Value), nnz)
	}
	if nnz > maxCInt {
		return inputErr("RowIndex", -1, "%d nonzeros exceed Clp's limit %d", nnz, maxCInt)
	}
	if len(p.ColStart) == 0 && n == 0 {
		if nnz != 0 {
			return inputErr("RowIndex", -1, "length %d but the problem has no columns", nnz)
		}
		return nil
	}
	if len(p.ColStart) != n+1 {
		return inputErr("ColStart", -1, "length %d != len(Obj)+1 = %d", len(p.ColStart), n+1)
	}
	if p.ColStart[0] != 0 {
		return inputErr("ColStart", 0, "%d != 0", p.ColStart[0])
	}
	if p.ColStart[n] != nnz {
		return inputErr("ColStart", n, "%d != len(RowIndex) = %d", p.ColStart[n], nnz)
	}
	for j := 1; j <= n; j++ {
		if p.ColStart[j] < p.ColStart[j-1] {
			return inputErr("ColStart", j, "%d is below ColStart[%d] = %d", p.ColStart[j], j-1, p.ColStart[j-1])
		}
		if p.ColStart[j] > nnz {
			return inputErr("ColStart", j, "%d exceeds len(RowIndex) = %d", p.ColStart[j], nnz)
		}
	}
	// seen[i] == j+1 when row i already occurred in column j.
	seen := make([]int, m)
	for j := range n {
		for k := p.ColStart[j]; k < p.ColStart[j+1]; k++ {
			i := p.RowIndex[k]
			if i < 0 || i >= m {
				return inputErr("RowIndex", k, "row %d of column %d is outside [0, %d)", i, j, m)
			}
			if seen[i] == j+1 {
				return inputErr("RowIndex", k, "row %d repeated in column %d", i, j)
			}
			seen[i] = j + 1
			if v := p.Value[k]; !moderate(v) {
				return inputErr("Value", k, notModerate, v)
			}
		}
	}
	return nil
}

// moderate reports whether x is finite with magnitude below MaxMagnitude (false
// for NaN).
func moderate(x float64) bool { return math.Abs(x) < MaxMagnitude }

const notModerate = "%v is not finite with magnitude below 1e20"

// checkFinite rejects values that are not moderate.
func checkFinite(name string, v []float64) error {
	for k, x := range v {
		if !moderate(x) {
			return inputErr(name, k, notModerate, x)
		}
	}
	return nil
}

// checkBounds validates paired lower/upper bound slices of equal length.
func checkBounds(loName, hiName string, lo, hi []float64) error {
	for k := range lo {
		l, h := lo[k], hi[k]
		if err := checkBound(loName, k, l, math.Inf(1)); err != nil {
			return err
		}
		if err := checkBound(hiName, k, h, math.Inf(-1)); err != nil {
			return err
		}
		if l > h {
			return inputErr(hiName, k, "%v is below %s[%d] = %v", h, loName, k, l)
		}
	}
	return nil
}

// checkBound rejects NaN, the infinity a bound may not take (forbidden) and finite
// values of magnitude at least MaxMagnitude.
func checkBound(name string, k int, v, forbidden float64) error {
	switch {
	case math.IsNaN(v):
		return inputErr(name, k, "NaN")
	case v == forbidden:
		return inputErr(name, k, "%v is not allowed", v)
	case !math.IsInf(v, 0) && math.Abs(v) >= MaxMagnitude:
		return inputErr(name, k, "finite bound %v has magnitude ≥ %g; use math.Inf for no bound", v, MaxMagnitude)
	}
	return nil
}
