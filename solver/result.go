package solver

import (
	"fmt"
	"math"
	"time"

	"github.com/optd/optd/internal/errkind"
)

// Method names one of the three assignment methods.
type Method string

// The methods of docs/formats.md#ita-instance.
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
	// StopWorkLimit: the exact method spent Options.WorkLimit.
	StopWorkLimit StopReason = "work_limit"
	// StopGap: the incumbent is within Options.Gap of the proven bound.
	StopGap StopReason = "gap"
)

// Progress is what a running solve has proven so far, reported through
// Options.Progress.
type Progress struct {
	Elapsed time.Duration
	// Incumbent is the best objective found so far.
	Incumbent float64
	// Bound is the best proven upper bound on the optimum so far (+Inf
	// before the first bound).
	Bound float64
	// Gap is (Bound − Incumbent)/Bound (+Inf before the first bound).
	Gap float64
	// NodesExplored counts the branch-and-bound nodes of every phase.
	NodesExplored int64
	// Phase names what the solver is doing: "heuristics", "lp",
	// "dive", "b-and-p" (branch and price), "improve", "cost-dp" (the
	// reduced-cost DP), "lns" (large neighbourhood search), "search",
	// "done".
	Phase string
}

// Options tunes a solve. The zero value means no time limit, no progress
// reports and the LP bound on.
type Options struct {
	// TimeLimit stops the search after this long (0: no limit). The result
	// then carries the best solution found, its proven bound and
	// Optimal = false. The exact method's phases get shares of the limit's
	// worth of work left, reckoned on at most 10 s of it: a longer limit
	// goes to the branch and price while its bound falls and to the final
	// count search, not to every phase.
	TimeLimit time.Duration
	// Progress, if set, is called from the solving goroutine when a phase
	// starts, whenever the incumbent improves and otherwise about every
	// ProgressInterval (default 1 s).
	Progress         func(Progress)
	ProgressInterval time.Duration
	// Gap is the relative optimality tolerance in [0, 1): the exact method
	// stops once (bound − incumbent) ≤ Gap·bound. 0 (the default) proves
	// the optimum; a result stopped by the gap has Optimal = false,
	// Stats.Stopped = "gap" and its proven bound.
	Gap float64
	// NoLP disables the LP (column generation) bound; the search then uses
	// the dynamic-programming bounds only.
	NoLP bool
	// Seed seeds the exact method's large neighbourhood search (the same
	// seed gives the same result; the zero value is a valid seed).
	Seed uint64
	// WorkLimit stops the exact method after this much counted work (0: no
	// limit): work is a deterministic count of operations (search nodes,
	// table reads, simplex iterations, DP steps), each at a fixed cost in
	// nanoseconds (about the CPU time it takes on the machine the costs
	// were fitted on), like CPLEX's deterministic time limit and Gurobi's
	// WorkLimit. Where it is the limit that stops the solve (rather than
	// TimeLimit, which stays the wall-clock hard stop), the result is the
	// same in every run of one build whatever the machine's load:
	// Stats.Stopped is then "work_limit". With a WorkLimit the phases'
	// budgets are shares of it (reckoned on at most 10 s of it, as a
	// TimeLimit's), not of TimeLimit's worth of work. Ignored by per-node
	// and ffd-dp.
	WorkLimit time.Duration
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

// Unplaced is a task type of which no task can be started because it fits
// on no node (its demand exceeds every node's capacity in some resource).
type Unplaced struct {
	Task   string `json:"task"`
	Count  int    `json:"count"`
	Reason string `json:"reason"`
}

// Utilization of the solution: per resource over the whole cluster
// (Σ_j used_jp / Σ_j C[j,p]) and per node. Names are the resources'
// names (the instance's resource_names, or r0, r1, …), in the order of
// Resources and of each node's Used and Fraction; ByResource is Resources
// keyed by name.
type Utilization struct {
	Names      []string           `json:"names"`
	Resources  []float64          `json:"resources"`
	ByResource map[string]float64 `json:"by_resource"`
	Nodes      []NodeUtilization  `json:"nodes"`
}

// Stats are solve statistics.
type Stats struct {
	// NodesExplored counts branch-and-bound nodes (for per-node: summed over
	// the single-node searches; 0 for ffd-dp).
	NodesExplored int64 `json:"nodes_explored"`
	// LPSolves counts LP solves (column generation master problems).
	LPSolves int `json:"lp_solves"`
	// Stopped says why the method stopped early, empty when it finished.
	Stopped StopReason `json:"stopped,omitempty"`
	// WorkMS is the exact method's counted work in milliseconds (see
	// Options.WorkLimit): the same in every run of one build where no
	// wall-clock limit stopped it; 0 for per-node and ffd-dp. At a time
	// limit it is the work of the phases that had finished.
	WorkMS float64 `json:"work_ms"`
}

// Result is the outcome of any of the three methods (docs/formats.md#ita-instance).
type Result struct {
	Method Method `json:"method"`
	// Objective is Σ_i Σ_j x_ij · Σ_p w_p·R[i,p] of Assignment.
	Objective float64 `json:"objective"`
	// UpperBound is the best proven upper bound on the optimum, the only
	// bound reported: the objective when Optimal; otherwise the smallest of
	// the LP relaxation, dynamic-programming and search bounds (rounded
	// down to the value unit).
	UpperBound float64 `json:"upper_bound"`
	// Optimal is true when Objective is proven equal to the optimum.
	Optimal bool `json:"optimal"`
	// Gap is (UpperBound − Objective)/UpperBound (0 when UpperBound is 0).
	Gap        float64      `json:"gap"`
	Assignment []Assignment `json:"assignment"`
	// Unplaced lists the task types that fit on no node, with the reason;
	// none of their tasks is in Assignment.
	Unplaced    []Unplaced  `json:"unplaced,omitempty"`
	Utilization Utilization `json:"utilization"`
	Stats       Stats       `json:"stats"`
	ElapsedMS   float64     `json:"elapsed_ms"`
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
		// types that demand nothing fit anywhere: spread them evenly
		for _, i := range m.free {
			c := in.Tasks[i].Count
			perNode[j][i] = c/len(in.Nodes) + b2i(j < c%len(in.Nodes))
		}
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
			nu.Fraction[p] = fraction(nu.Used[p], node.Capacity[p])
			total[p] += node.Capacity[p]
			used[p] += nu.Used[p]
		}
		r.Utilization.Nodes = append(r.Utilization.Nodes, nu)
	}
	r.Utilization.Resources = make([]float64, k)
	r.Utilization.Names = make([]string, k)
	r.Utilization.ByResource = make(map[string]float64, k)
	for p := range k {
		r.Utilization.Resources[p] = fraction(used[p], total[p])
		r.Utilization.Names[p] = in.ResourceName(p)
		r.Utilization.ByResource[r.Utilization.Names[p]] = r.Utilization.Resources[p]
	}
	r.Unplaced = m.unplaced
	r.Objective = m.snap(r.Objective)
	r.UpperBound = math.Max(m.floorBound(ub), r.Objective)
	if r.UpperBound > 0 {
		r.Gap = (r.UpperBound - r.Objective) / r.UpperBound
	}
	return r
}

// fraction is used/capacity, 0 for a capacity of 0 (nothing of it can be
// used).
func fraction(used, capacity int64) float64 {
	if capacity == 0 {
		return 0
	}
	return float64(used) / float64(capacity)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
