package benchmarks

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/optd/optd/solver/lp"
)

// WriteCPLEXLP writes p in CPLEX LP format, which glpsol (--lp) and cbc
// read: columns are named x0, x1, …, rows r0, r1, …. A ranged row
// (finite RowLower < RowUpper) becomes two rows, rN_lo and rN_hi; a free row
// is left out, and an LP without any other row gets the void row
// 0·x0 ≥ 0 (the format needs one); none of these changes the LP. Numbers are written exactly
// (shortest round-trip decimal).
func WriteCPLEXLP(w io.Writer, p *lp.Problem) error {
	if err := p.Validate(); err != nil {
		return err
	}
	n, m := p.NumCols(), p.NumRows()
	if n == 0 {
		return fmt.Errorf("benchmarks: WriteCPLEXLP: the LP has no column")
	}
	// Row-wise copy of the column-compressed matrix.
	rowCols := make([][]int, m)
	rowVals := make([][]float64, m)
	for j := range n {
		for k := p.ColStart[j]; k < p.ColStart[j+1]; k++ {
			i := p.RowIndex[k]
			rowCols[i] = append(rowCols[i], j)
			rowVals[i] = append(rowVals[i], p.Value[k])
		}
	}
	bw := bufio.NewWriter(w)
	num := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	writeTerms := func(cols []int, vals []float64) {
		if len(cols) == 0 {
			fmt.Fprint(bw, " 0 x0")
			return
		}
		for k, j := range cols {
			if k > 0 && k%8 == 0 {
				fmt.Fprint(bw, "\n  ")
			}
			v := vals[k]
			sign := "+"
			if v < 0 || (v == 0 && math.Signbit(v)) {
				sign, v = "-", -v
			}
			fmt.Fprintf(bw, " %s %s x%d", sign, num(v), j)
		}
	}
	fmt.Fprintln(bw, "\\ written by optd benchmarks.WriteCPLEXLP")
	if p.Sense == lp.Maximize {
		fmt.Fprintln(bw, "Maximize")
	} else {
		fmt.Fprintln(bw, "Minimize")
	}
	fmt.Fprint(bw, " obj:")
	var objCols []int
	var objVals []float64
	for j, c := range p.Obj {
		if c != 0 {
			objCols, objVals = append(objCols, j), append(objVals, c)
		}
	}
	writeTerms(objCols, objVals)
	fmt.Fprintln(bw)
	fmt.Fprintln(bw, "Subject To")
	written := 0
	for i := range m {
		lo, hi := p.RowLower[i], p.RowUpper[i]
		row := func(name, op string, rhs float64) {
			written++
			fmt.Fprintf(bw, " %s:", name)
			writeTerms(rowCols[i], rowVals[i])
			fmt.Fprintf(bw, " %s %s\n", op, num(rhs))
		}
		switch {
		case math.IsInf(lo, -1) && math.IsInf(hi, 1):
		case lo == hi:
			row(fmt.Sprintf("r%d", i), "=", lo)
		case math.IsInf(lo, -1):
			row(fmt.Sprintf("r%d", i), "<=", hi)
		case math.IsInf(hi, 1):
			row(fmt.Sprintf("r%d", i), ">=", lo)
		default:
			row(fmt.Sprintf("r%d_lo", i), ">=", lo)
			row(fmt.Sprintf("r%d_hi", i), "<=", hi)
		}
	}
	if written == 0 {
		// The format needs at least one constraint; this one is void.
		fmt.Fprintln(bw, " void: 0 x0 >= 0")
	}
	fmt.Fprintln(bw, "Bounds")
	for j := range n {
		lo, hi := p.ColLower[j], p.ColUpper[j]
		switch {
		case math.IsInf(lo, -1) && math.IsInf(hi, 1):
			fmt.Fprintf(bw, " x%d free\n", j)
		case lo == hi:
			fmt.Fprintf(bw, " x%d = %s\n", j, num(lo))
		case math.IsInf(lo, -1):
			fmt.Fprintf(bw, " -inf <= x%d <= %s\n", j, num(hi))
		case math.IsInf(hi, 1):
			fmt.Fprintf(bw, " x%d >= %s\n", j, num(lo))
		default:
			fmt.Fprintf(bw, " %s <= x%d <= %s\n", num(lo), j, num(hi))
		}
	}
	fmt.Fprintln(bw, "End")
	return bw.Flush()
}
