package solver

import (
	"fmt"
	"math"
)

// An assignment given as counts, x[j][i] tasks of type i on node j (both
// in input order), is what the functions below exchange: the columns x_j_i
// of WriteLP's program. They let a caller check any solver's answer
// against the instance by a second method, independent of how it was
// found: optd's own Result (CheckResult) or a MIP solver's solution of the
// LP file (LPCounts, then CheckCounts).
// The comparisons with CBC and HiGHS rely on it: a solver's claim that
// its answer is optimal is refuted by a checked assignment worth more,
// and a solver's answer that breaks a row (MIP solvers accept small
// violations within their tolerances) is no solution.

// CheckCounts verifies that x is an assignment of in (one row per node,
// one count per task type, every count ≥ 0, each type's total within its
// count, each node's demand within its capacity in every resource) and
// returns its value Σ_j Σ_i v_i·x_j_i. The error names the node or task
// type, the resource and the numbers that break it.
func CheckCounts(in *Instance, x [][]int) (float64, error) {
	if len(x) != len(in.Nodes) {
		return 0, fmt.Errorf("assignment has %d rows of counts, want one per node (%d)", len(x), len(in.Nodes))
	}
	total := make([]int64, len(in.Tasks))
	value := 0.0
	for j, row := range x {
		if len(row) != len(in.Tasks) {
			return 0, fmt.Errorf("node %q: %d counts, want one per task type (%d)", in.Nodes[j].ID, len(row), len(in.Tasks))
		}
		for i, k := range row {
			if k < 0 {
				return 0, fmt.Errorf("node %q, task %q: count %d < 0", in.Nodes[j].ID, in.Tasks[i].ID, k)
			}
		}
		for p, c := range in.Nodes[j].Capacity {
			var used int64
			for i, k := range row {
				d := in.Tasks[i].Demand[p]
				if d > 0 && int64(k) > (math.MaxInt64-used)/d {
					return 0, fmt.Errorf("node %q: demand in %s overflows", in.Nodes[j].ID, in.ResourceName(p))
				}
				used += int64(k) * d
			}
			if used > c {
				return 0, fmt.Errorf("node %q: %s used %d > capacity %d", in.Nodes[j].ID, in.ResourceName(p), used, c)
			}
		}
		for i, k := range row {
			total[i] += int64(k)
			value += float64(k) * in.Value(i)
		}
	}
	for i, t := range in.Tasks {
		if total[i] > int64(t.Count) {
			return 0, fmt.Errorf("task %q: %d placed > count %d", t.ID, total[i], t.Count)
		}
	}
	return value, nil
}

// CheckResult checks r's assignment against in (CheckCounts, its node and
// task ids resolved against in; an unknown id or a count ≤ 0 is an error)
// and returns its value, which the caller compares with r.Objective.
func CheckResult(in *Instance, r *Result) (float64, error) {
	x, err := countsOf(in, r)
	if err != nil {
		return 0, err
	}
	return CheckCounts(in, x)
}

// countsOf returns the counts of r's assignment (CheckResult).
func countsOf(in *Instance, r *Result) ([][]int, error) {
	node := make(map[string]int, len(in.Nodes))
	for j, n := range in.Nodes {
		node[n.ID] = j
	}
	task := make(map[string]int, len(in.Tasks))
	for i, t := range in.Tasks {
		task[t.ID] = i
	}
	x := emptyCounts(in)
	for _, a := range r.Assignment {
		j, okNode := node[a.Node]
		i, okTask := task[a.Task]
		switch {
		case !okNode:
			return nil, fmt.Errorf("assignment names node %q, which the instance does not have", a.Node)
		case !okTask:
			return nil, fmt.Errorf("assignment names task %q, which the instance does not have", a.Task)
		case a.Count <= 0:
			return nil, fmt.Errorf("node %q, task %q: count %d, want > 0", a.Node, a.Task, a.Count)
		}
		x[j][i] += a.Count
	}
	return x, nil
}

// LPCounts returns the counts of a MIP solver's solution of WriteLP's
// program, given as column values by name (x_j_i; columns left out are
// 0). Each value is rounded to the nearest integer: a solver prints
// integers within its integrality tolerance. A name that is not a column
// of in's program is an error.
func LPCounts(in *Instance, values map[string]float64) ([][]int, error) {
	x := emptyCounts(in)
	for name, v := range values {
		var j, i int
		if _, err := fmt.Sscanf(name, "x_%d_%d", &j, &i); err != nil || j < 0 || j >= len(in.Nodes) || i < 0 || i >= len(in.Tasks) ||
			name != fmt.Sprintf("x_%d_%d", j, i) {
			return nil, fmt.Errorf("column %q is not one of the program's (x_j_i, node j < %d, task i < %d)", name, len(in.Nodes), len(in.Tasks))
		}
		if math.IsNaN(v) || math.Abs(v) > math.MaxInt32 {
			return nil, fmt.Errorf("column %s = %v: not a count", name, v)
		}
		x[j][i] = int(math.Round(v))
	}
	return x, nil
}

// emptyCounts returns zero counts for every node and task type of in.
func emptyCounts(in *Instance) [][]int {
	x := make([][]int, len(in.Nodes))
	for j := range x {
		x[j] = make([]int, len(in.Tasks))
	}
	return x
}
