package solver

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
)

// WriteLP writes the compact integer program of in in CPLEX LP format, for
// MIP solvers such as CBC (`cbc FILE -solve -solu OUT`) and glpsol:
//
//	max  Σ_j Σ_i v_i·x_j_i
//	s.t. cap_j_p:  Σ_i R[i,p]·x_j_i ≤ C[j,p]     for every node j, resource p
//	     sup_i:    Σ_j x_j_i ≤ count_i            for every task type i
//	     0 ≤ x_j_i ≤ min(count_i, ⌊C_j/R_i⌋), integer,
//
// with x_j_i the number of tasks of type i (input index) on node j (input
// index). Objective coefficients are written exactly (shortest round-trip
// decimal).
func WriteLP(w io.Writer, in *Instance) error {
	if err := in.Validate(); err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	num := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	name := func(j, i int) string { return fmt.Sprintf("x_%d_%d", j, i) }
	fmt.Fprintln(bw, "\\ optd initial task assignment")
	fmt.Fprintln(bw, "Maximize")
	fmt.Fprint(bw, " obj:")
	for j := range in.Nodes {
		for i := range in.Tasks {
			fmt.Fprintf(bw, " + %s %s", num(in.Value(i)), name(j, i))
		}
		fmt.Fprintln(bw)
	}
	fmt.Fprintln(bw, "Subject To")
	for j, n := range in.Nodes {
		for p, c := range n.Capacity {
			fmt.Fprintf(bw, " cap_%d_%d:", j, p)
			for i, t := range in.Tasks {
				fmt.Fprintf(bw, " + %d %s", t.Demand[p], name(j, i))
			}
			fmt.Fprintf(bw, " <= %d\n", c)
		}
	}
	for i, t := range in.Tasks {
		fmt.Fprintf(bw, " sup_%d:", i)
		for j := range in.Nodes {
			fmt.Fprintf(bw, " + %s", name(j, i))
		}
		fmt.Fprintf(bw, " <= %d\n", t.Count)
	}
	fmt.Fprintln(bw, "Bounds")
	for j, n := range in.Nodes {
		for i, t := range in.Tasks {
			ub := min(int64(t.Count), maxFit(t.Demand, n.Capacity))
			fmt.Fprintf(bw, " 0 <= %s <= %d\n", name(j, i), ub)
		}
	}
	fmt.Fprintln(bw, "General")
	for j := range in.Nodes {
		for i := range in.Tasks {
			fmt.Fprintf(bw, " %s", name(j, i))
		}
		fmt.Fprintln(bw)
	}
	fmt.Fprintln(bw, "End")
	return bw.Flush()
}
