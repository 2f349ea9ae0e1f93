package mdp

import (
	"cmp"
	"container/heap"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/optd/optd/internal/errkind"
	"github.com/optd/optd/models"
	"github.com/optd/optd/solver/lp"
)

// ErrInfeasibleTrace is returned when jobs in service at the same time need
// more reducers than there are slots: no placement of the trace exists.
var ErrInfeasibleTrace = errkind.New(errkind.Precondition, "mdp: trace needs more slots than the cluster has")

// TraceJob is a job of a sampled trace: in service during [Start, End),
// holding R slots and fetching Y per reducer (cost Y·Σ of its slots' costs).
// Start and End are the same for every placement policy (placement never
// delays service), so one trace serves every policy.
type TraceJob struct {
	Start, End, Y float64
	R             int
}

// hindsightBatchColumns is how many LP columns busy periods are batched
// into: independent blocks of one LP solve to the sum of their optima, and
// one Clp call per block would cost more than the block.
const hindsightBatchColumns = 20_000

// HindsightBound returns a lower bound on the total cost Σ_i Y_i·Σ_{v∈A_i} H(v)
// of ANY placement of the trace, online or offline: the optimum of the LP
// relaxation of the offline assignment that knows the whole trace.
//
// Slots of equal cost form classes c (n_c slots of cost H_c). With x_{i,c}
// the number of job i's reducers on class c,
//
//	minimize    Σ_i Y_i·Σ_c H_c·x_{i,c}
//	subject to  Σ_c x_{i,c} = R_i                              for every job i,
//	            Σ_{i ∈ A(t)} x_{i,c} ≤ n_c                     for every class c and instant t,
//	            0 ≤ x_{i,c} ≤ min(R_i, n_c),
//
// where A(t) = {i : Start_i ≤ t < End_i} are the jobs in service at t. Every
// placement (each job on R_i distinct free slots, jobs in service together
// on disjoint slots) gives, counting its slots per class, an integer point of
// this LP with the same cost, so the LP optimum is at most the cost of every
// placement a policy can make — in particular of every online policy on the
// same trace. A(t) only changes at starts and ends, and grows only at
// starts, so it suffices to take t at the starts after which some job ends
// before the next start (the maximal sets A(t)). The LP splits over busy
// periods (maximal groups of overlapping intervals), which are solved as
// independent blocks with solver/lp (a single job: Y·Σ of its R cheapest
// costs, no LP).
//
// The returned value is computed from Clp's duals by weak duality,
//
//	Σ_i R_i·u_i + Σ_{t,c} n_c·min(0, v_{t,c}) + Σ_{i,c} min(R_i, n_c)·min(0, d_{i,c}),
//
// with d = cost − Aᵀ(u, v) recomputed here, which is ≤ the LP optimum for any
// (u, v) and equals it at Clp's optimal duals: the bound stays a bound
// whatever the LP solver's tolerances.
func HindsightBound(ctx context.Context, jobs []TraceJob, slotCosts []float64) (float64, error) {
	if err := checkSlotCosts(slotCosts); err != nil {
		return 0, err
	}
	return hindsight(ctx, jobs, newClasses(slotCosts), nil)
}

// HindsightBoundCoarse is HindsightBound with the slots sorted by cost and
// cut into at most maxClasses groups of (nearly) equal size, each slot's
// cost rounded down to the cheapest cost of its group. Lowering costs lowers
// every placement's cost, so the result is still a lower bound (below
// HindsightBound's), with an LP of at most maxClasses classes per job: for
// clusters whose slot costs are all distinct (a continuous cost law).
func HindsightBoundCoarse(ctx context.Context, jobs []TraceJob, slotCosts []float64, maxClasses int) (float64, error) {
	if err := checkSlotCosts(slotCosts); err != nil {
		return 0, err
	}
	if maxClasses < 1 {
		return 0, modelErr("maxClasses", maxClasses, "must be ≥ 1")
	}
	sorted := slices.Clone(slotCosts)
	slices.Sort(sorted)
	S := len(sorted)
	rounded := make([]float64, S)
	for g := range maxClasses {
		lo, hi := g*S/maxClasses, (g+1)*S/maxClasses
		for i := lo; i < hi; i++ {
			rounded[i] = sorted[lo]
		}
	}
	return hindsight(ctx, jobs, newClasses(rounded), nil)
}

func checkSlotCosts(costs []float64) error {
	if len(costs) == 0 {
		return modelErr("slotCosts", "[]", "at least one slot is needed")
	}
	for i, c := range costs {
		if !(c >= 0) || math.IsInf(c, 0) {
			return modelErr(fmt.Sprintf("slotCosts[%d]", i), c, "must be finite and ≥ 0")
		}
	}
	return nil
}

func checkJobs(jobs []TraceJob, slots int) error {
	for i, j := range jobs {
		f := func(name string) string { return fmt.Sprintf("jobs[%d].%s", i, name) }
		switch {
		case math.IsNaN(j.Start) || math.IsInf(j.Start, 0):
			return modelErr(f("Start"), j.Start, "must be finite")
		case !(j.End > j.Start) || math.IsInf(j.End, 0):
			return modelErr(f("End"), j.End, "must be finite and after Start = %v", j.Start)
		case !(j.Y >= 0) || math.IsInf(j.Y, 0):
			return modelErr(f("Y"), j.Y, "must be finite and ≥ 0")
		case j.R < 1 || j.R > slots:
			return modelErr(f("R"), j.R, "must be in 1..%d (the number of slots)", slots)
		}
	}
	return nil
}

// endHeap is a min-heap of job indices by End.
type endHeap struct {
	idx  []int
	jobs []TraceJob
}

func (h *endHeap) Len() int           { return len(h.idx) }
func (h *endHeap) Less(a, b int) bool { return h.jobs[h.idx[a]].End < h.jobs[h.idx[b]].End }
func (h *endHeap) Swap(a, b int)      { h.idx[a], h.idx[b] = h.idx[b], h.idx[a] }
func (h *endHeap) Push(x any)         { h.idx = append(h.idx, x.(int)) }
func (h *endHeap) Pop() any {
	x := h.idx[len(h.idx)-1]
	h.idx = h.idx[:len(h.idx)-1]
	return x
}

// hindsightLP accumulates busy periods into one block-diagonal LP.
type hindsightLP struct {
	cls   *classes
	p     *lp.Problem
	ub    []float64 // column upper bounds (as in p)
	total float64   // closed-form values (single jobs)
	// adj, when not nil, adds adj[i·C+c] to the cost of job i's reducers on
	// class c (per reducer): the penalty of an information relaxation.
	adj []float64
	// colJob, when not nil, records the job of every column (class c of a
	// job's columns is its position among them), and every job becomes
	// columns: for reading the primal solution.
	colJob []int32
}

// colCost is the LP cost of one reducer of job i on class c.
func (h *hindsightLP) colCost(jobs []TraceJob, i, c int) float64 {
	v := jobs[i].Y * h.cls.cost[c]
	if h.adj != nil {
		v += h.adj[i*h.cls.num()+c]
	}
	return v
}

// alone is the cost of job i alone in the cluster: its R reducers on the
// classes of least colCost.
func (h *hindsightLP) alone(jobs []TraceJob, i int) float64 {
	if h.adj == nil {
		return jobs[i].Y * h.cls.cheapest(h.cls.count, jobs[i].R)
	}
	C := h.cls.num()
	order := make([]int, C)
	cost := make([]float64, C)
	for c := range C {
		order[c], cost[c] = c, h.colCost(jobs, i, c)
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(cost[a], cost[b]) })
	s, r := 0.0, jobs[i].R
	for _, c := range order {
		take := min(h.cls.count[c], r)
		s += float64(take) * cost[c]
		if r -= take; r == 0 {
			break
		}
	}
	return s
}

func hindsight(ctx context.Context, jobs []TraceJob, cls *classes, adj []float64) (float64, error) {
	h := &hindsightLP{cls: cls, p: &lp.Problem{Sense: lp.Minimize}, adj: adj}
	return h.run(ctx, jobs)
}

// run adds every busy period of jobs and solves.
func (h *hindsightLP) run(ctx context.Context, jobs []TraceJob) (float64, error) {
	total := 0.0
	flush := func() error {
		v, err := h.solve(ctx)
		if err != nil {
			return err
		}
		total += v
		h.p, h.ub = &lp.Problem{Sense: lp.Minimize}, nil
		return nil
	}
	err := h.addTrace(jobs, func() error {
		if h.p.NumCols() >= hindsightBatchColumns {
			return flush()
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if err := flush(); err != nil {
		return 0, err
	}
	return total + h.total, nil
}

// addTrace checks jobs and adds the LP blocks of their busy periods (maximal
// groups of overlapping intervals), calling after (if not nil) after each.
func (h *hindsightLP) addTrace(jobs []TraceJob, after func() error) error {
	S := 0
	for _, n := range h.cls.count {
		S += n
	}
	if err := checkJobs(jobs, S); err != nil {
		return err
	}
	order := make([]int, len(jobs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		if c := cmp.Compare(jobs[a].Start, jobs[b].Start); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	for lo := 0; lo < len(order); {
		hi, end := lo+1, jobs[order[lo]].End
		for hi < len(order) && jobs[order[hi]].Start < end {
			end = max(end, jobs[order[hi]].End)
			hi++
		}
		if err := h.addPeriod(jobs, order[lo:hi]); err != nil {
			return err
		}
		if after != nil {
			if err := after(); err != nil {
				return err
			}
		}
		lo = hi
	}
	return nil
}

// addPeriod adds the LP block of one busy period (jobs sorted by Start).
func (h *hindsightLP) addPeriod(jobs []TraceJob, period []int) error {
	cls := h.cls
	if len(period) == 1 && h.colJob == nil {
		h.total += h.alone(jobs, period[0])
		return nil
	}
	// Maximal sets A(t): at each start, after removing ended jobs and adding
	// the jobs starting now; a set is kept when the next start removes a job.
	local := make(map[int]int, len(period)) // job → position in period
	for k, i := range period {
		local[i] = k
	}
	var sets [][]int
	var times []float64
	active := &endHeap{jobs: jobs}
	var pending []int
	var pendingAt float64
	for k := 0; k < len(period); {
		t := jobs[period[k]].Start
		removed := false
		for active.Len() > 0 && jobs[active.idx[0]].End <= t {
			heap.Pop(active)
			removed = true
		}
		if removed && pending != nil {
			sets, times = append(sets, pending), append(times, pendingAt)
		}
		for k < len(period) && jobs[period[k]].Start == t {
			heap.Push(active, period[k])
			k++
		}
		pending, pendingAt = slices.Clone(active.idx), t
	}
	sets, times = append(sets, pending), append(times, pendingAt)

	// Rows: one equality per job, then capacity rows per (set, class).
	base := h.p.NumRows()
	for _, i := range period {
		h.p.AddRow(float64(jobs[i].R), float64(jobs[i].R))
	}
	C := cls.num()
	capRows := make([][]int, len(period)) // per job: its capacity rows, class-major later
	setRow := make([]int, len(sets)*C)
	slots := 0
	for _, n := range cls.count {
		slots += n
	}
	for si, set := range sets {
		demand := 0
		for _, i := range set {
			demand += jobs[i].R
		}
		if demand > slots {
			return fmt.Errorf("%w: %d reducers in service at time %v, %d slots", ErrInfeasibleTrace, demand, times[si], slots)
		}
		for c := range C {
			load := 0
			for _, i := range set {
				load += min(jobs[i].R, cls.count[c])
			}
			if load <= cls.count[c] {
				setRow[si*C+c] = -1 // never binding
				continue
			}
			setRow[si*C+c] = h.p.AddRow(math.Inf(-1), float64(cls.count[c]))
		}
		for _, i := range set {
			capRows[local[i]] = append(capRows[local[i]], si)
		}
	}
	var rows []int
	var vals []float64
	for k, i := range period {
		j := jobs[i]
		for c := range C {
			rows, vals = append(rows[:0], base+k), append(vals[:0], 1)
			for _, si := range capRows[k] {
				if r := setRow[si*C+c]; r >= 0 {
					rows = append(rows, r)
					vals = append(vals, 1)
				}
			}
			ub := float64(min(j.R, cls.count[c]))
			h.p.AddCol(h.colCost(jobs, i, c), 0, ub, rows, vals)
			h.ub = append(h.ub, ub)
			if h.colJob != nil {
				h.colJob = append(h.colJob, int32(i))
			}
		}
	}
	return nil
}

// solve solves the accumulated blocks and returns the weak-duality bound.
func (h *hindsightLP) solve(ctx context.Context) (float64, error) {
	p := h.p
	if p.NumCols() == 0 {
		return 0, nil
	}
	sol, err := lp.Solve(ctx, p, lp.Options{})
	if err != nil {
		return 0, fmt.Errorf("mdp: hindsight LP: %w", err)
	}
	y := sol.RowDuals
	bound := 0.0
	for r := range p.NumRows() {
		if p.RowLower[r] == p.RowUpper[r] {
			bound += y[r] * p.RowLower[r] // equality rows: Σ_c x = R
		} else {
			bound += min(0, y[r]*p.RowUpper[r]) // 0 ≤ activity ≤ n_c
		}
	}
	for j := range p.NumCols() {
		d := p.Obj[j]
		for k := p.ColStart[j]; k < p.ColStart[j+1]; k++ {
			d -= y[p.RowIndex[k]] * p.Value[k]
		}
		bound += min(0, d*h.ub[j])
	}
	// The dual bound equals the optimum up to rounding; never report more
	// than the primal optimum.
	return min(bound, sol.Objective), nil
}

// EmptyClusterBound returns the expected cost per job of placing each job on
// the R cheapest slots of an empty cluster, E[Y·Σ_{j≤R} H_(j)] =
// Σ_r P[R=r]·E[Y | R=r]·Σ_{j≤r} H_(j) (costs sorted ascending), exactly from
// the workload's conditionals. No placement can put a job on cheaper slots,
// so it bounds every policy's mean cost per job from below. It is +Inf if R
// can exceed the number of slots, NaN for an empty slotCosts or a nil w.
func EmptyClusterBound(w *models.Workload, slotCosts []float64) float64 {
	if len(slotCosts) == 0 || w == nil {
		return math.NaN()
	}
	sorted := slices.Clone(slotCosts)
	slices.Sort(sorted)
	prefix := make([]float64, len(sorted)+1)
	for i, c := range sorted {
		prefix[i+1] = prefix[i] + c
	}
	total := 0.0
	for _, c := range w.Conditionals() {
		if c.R > len(sorted) {
			return math.Inf(1)
		}
		total += c.Prob * c.Y.Mean() * prefix[c.R]
	}
	return total
}
