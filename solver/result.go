package solver

import (
	"fmt"
	"math"
	"time"

	"github.com/optd/optd/internal/errkind"
)

// Method names one of the three assignment methods.
type Method string

// The methods of CONTRACTS §3.
const (
	// MethodExact is the proven global optimum over all nodes together.
	MethodExact Method = "exact"
	// MethodPerNode is the paper's Algorithm 1 as intended: node 1 filled
	// optimally, then node 2 with what is left, and so on.
	MethodPerNode Method = "per-node"
	// MethodFFDDP is the first-fit-decreasing dot-product greedy (Eq. 1).
	MethodFFDDP Method = "ffd-dp"
)

// Methods lists the method names in CLI order.
func Methods() []Method { return []Method{MethodExact, MethodPerNode, MethodFFDDP} }

// ErrUnknownMethod is returned for a method name that is not one of Methods.
var ErrUnknownMethod = errkind.New(errkind.Invalid, "solver: unknown method")

// ParseMethod checks a method name.
func ParseMethod(s string) (Method, error) {
	for _, m := range Methods() {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("%w %q (want exact, per-node or ffd-dp)", ErrUnknownMethod, s)
}

// StopReason says why a search ended before it proved optimality.
type StopReason string

// Stop reasons. The empty reason means the method ran to completion.
const (
	StopTimeLimit StopReason = "time_limit"
	StopCanceled  StopReason = "canceled"
	StopNodeLimit StopReason = "node_limit"
)

// Progress is reported by long searches through Options.Progress.
type Progress struct {
	NodesExplored int64
	Incumbent     float64 // best objective so far
	Elapsed       time.Duration
}

// Options tunes a solve. The zero value means no time limit, no progress
// reports and the LP bound on.
type Options struct {
	// TimeLimit stops the search after this long (0: no limit). The result
	// then carries the best solution found, its proven bound and
	// Optimal = false.
	TimeLimit time.Duration
	// Progress, if set, is called from the solving goroutine about every
	// 200 ms and whenever the incumbent improves.
	Progress func(Progress)
	// NoLP disables the LP (column generation) bound; the search then uses
	// the dynamic-programming bounds only.
	NoLP bool
	// Seed seeds the exact method's large neighbourhood search (the same
	// seed gives the same result; the zero value is a valid seed).
	Seed uint64
}

// Assignment is one entry of the solution: Count tasks of Task on Node.
type Assignment struct {
	Node  string `json:"node"`
	Task  string `json:"task"`
	Count int    `json:"count"`
}

// NodeUtilization is the share of a node's capacity that the solution uses.
type NodeUtilization struct {
	Node     string    `json:"node"`
	Used     []int64   `json:"used"`
	Fraction []float64 `json:"fraction"`
}

// Utilization of the solution: per resource over the whole cluster
// (Σ_j used_jp / Σ_j C[j,p]) and per node.
type Utilization struct {
	Resources []float64         `json:"resources"`
	Nodes     []NodeUtilization `json:"nodes"`
}

// Stats are solve statistics.
type Stats struct {
	// NodesExplored counts branch-and-bound nodes (for per-node: summed over
	// the single-node searches; 0 for ffd-dp).
	NodesExplored int64 `json:"nodes_explored"`
	// LPSolves counts LP solves (column generation master problems).
	LPSolves int `json:"lp_solves"`
	// LPBound is the LP relaxation bound of the pattern formulation
	// (its Lagrangian value at the final duals); 0 when the LP was not run.
	LPBound float64 `json:"lp_bound,omitempty"`
	// Stopped says why the method stopped early, empty when it finished.
	Stopped StopReason `json:"stopped,omitempty"`
}

// Result is the outcome of any of the three methods (CONTRACTS §3).
type Result struct {
	Method Method `json:"method"`
	// Objective is Σ_i Σ_j x_ij · Σ_p w_p·R[i,p] of Assignment.
	Objective float64 `json:"objective"`
	// UpperBound is a proven upper bound on the optimum: for exact the
	// objective when Optimal; otherwise the best of the LP relaxation and
	// dynamic-programming bounds (rounded down to the value unit).
	UpperBound float64 `json:"upper_bound"`
	// Optimal is true when Objective is proven equal to the optimum.
	Optimal bool `json:"optimal"`
	// Gap is (UpperBound − Objective)/UpperBound (0 when UpperBound is 0).
	Gap         float64      `json:"gap"`
	Assignment  []Assignment `json:"assignment"`
	Utilization Utilization  `json:"utilization"`
	Stats       Stats        `json:"stats"`
	ElapsedMS   float64      `json:"elapsed_ms"`
}

// newResult converts an assignment of the model (x[node][merged type], nodes
// in input order) into a Result with utilization and gap.
func newResult(in *Instance, m *model, method Method, x [][]int, ub float64) *Result {
	r := &Result{Method: method, Assignment: []Assignment{}}
	k := m.k
	// split merged types back onto their input task types, in input order
	left := make([]int, len(in.Tasks))
	for i, t := range in.Tasks {
		left[i] = t.Count
	}
	perNode := make([][]int, len(in.Nodes)) // [node][input task]
	for j := range in.Nodes {
		perNode[j] = make([]int, len(in.Tasks))
		for t, c := range x[j] {
			for _, orig := range m.members[t] {
				if c == 0 {
					break
				}
				take := min(c, left[orig])
				perNode[j][orig] += take
				left[orig] -= take
				c -= take
			}
			if c != 0 {
				panic("solver: assignment exceeds supply")
			}
		}
	}
	total := make([]int64, k)
	used := make([]int64, k)
	for j, node := range in.Nodes {
		nu := NodeUtilization{Node: node.ID, Used: make([]int64, k), Fraction: make([]float64, k)}
		for i, c := range perNode[j] {
			if c == 0 {
				continue
			}
			r.Assignment = append(r.Assignment, Assignment{Node: node.ID, Task: in.Tasks[i].ID, Count: c})
			r.Objective += float64(c) * in.Value(i)
			for p := range k {
				nu.Used[p] += int64(c) * in.Tasks[i].Demand[p]
			}
		}
		for p := range k {
			if nu.Used[p] > node.Capacity[p] {
				panic("solver: node over capacity")
			}
			nu.Fraction[p] = float64(nu.Used[p]) / float64(node.Capacity[p])
			total[p] += node.Capacity[p]
			used[p] += nu.Used[p]
		}
		r.Utilization.Nodes = append(r.Utilization.Nodes, nu)
	}
	r.Utilization.Resources = make([]float64, k)
	for p := range k {
		r.Utilization.Resources[p] = float64(used[p]) / float64(total[p])
	}
	r.UpperBound = math.Max(ub, r.Objective)
	if r.UpperBound > 0 {
		r.Gap = (r.UpperBound - r.Objective) / r.UpperBound
	}
	return r
}
