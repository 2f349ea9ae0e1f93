package mdp

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/optd/optd/internal/errkind"
	"github.com/optd/optd/models"
)

// ErrInvalidModel is wrapped by every *ModelError.
var ErrInvalidModel = errkind.New(errkind.Invalid, "mdp: invalid placement model")

// ModelError reports an invalid PlacementModel, SolveOptions or trace: the
// field (with its docs/formats.md#placement-scenario JSON name where it has one), its value and
// what is wrong.
type ModelError struct {
	Field  string
	Value  any
	Reason string
}

// Error implements error, e.g.
// "mdp: invalid placement model: MaxWaiting (max_waiting) = -1: ...".
func (e *ModelError) Error() string {
	return fmt.Sprintf("%v: %s = %v: %s", ErrInvalidModel, e.Field, e.Value, e.Reason)
}

// Unwrap returns ErrInvalidModel.
func (e *ModelError) Unwrap() error { return ErrInvalidModel }

// FieldWorkload is ModelError.Field of an error about the model's
// workload (missing, or not discrete enough for a chain of the model
// itself).
const FieldWorkload = "Workload (workload)"

func modelErr(field string, value any, format string, args ...any) error {
	return &ModelError{Field: field, Value: value, Reason: fmt.Sprintf(format, args...)}
}

// PlacementModel is the stable system of docs/formats.md#placement-scenario with an explicit list of
// slot costs: Poisson arrivals of rate Lambda; exponential map work of rate
// Mu served by K-limited processor sharing (the min(n, K) jobs in service
// share one unit of capacity, so the total departure rate is Mu whenever a
// job is in service and each job in service is equally likely to be the one
// that leaves); FIFO waiting room of MaxWaiting places (an arrival finding
// it full is lost). A job entering service brings (X, R) drawn from
// Workload, takes R free slots at once, pays Y·Σ SlotCosts over them
// (Y = X/R) and frees them when it leaves.
//
// Slot i of a live cluster is the slot with PlacementRequest Index i and
// cost SlotCosts[i].
type PlacementModel struct {
	SlotCosts  []float64
	K          int     // max_jobs_in_service
	Lambda, Mu float64 // arrival_rate, service_rate
	// MaxWaiting is the finite waiting room (max_waiting). The MDP needs it:
	// a negative value (unlimited) is rejected.
	MaxWaiting int
	Workload   *models.Workload
}

// validate checks m and returns its slot classes.
func (m PlacementModel) validate() (*classes, error) {
	if len(m.SlotCosts) == 0 {
		return nil, modelErr("SlotCosts (slots.costs)", "[]", "at least one slot is needed")
	}
	for i, c := range m.SlotCosts {
		if !(c >= 0) || math.IsInf(c, 0) {
			return nil, modelErr(fmt.Sprintf("SlotCosts[%d] (slots.costs)", i), c, "must be finite and ≥ 0")
		}
	}
	switch {
	case m.K < 1:
		return nil, modelErr("K (max_jobs_in_service)", m.K, "must be ≥ 1")
	case !(m.Lambda > 0) || math.IsInf(m.Lambda, 0):
		return nil, modelErr("Lambda (arrival_rate)", m.Lambda, "must be finite and > 0")
	case !(m.Mu > 0) || math.IsInf(m.Mu, 0):
		return nil, modelErr("Mu (service_rate)", m.Mu, "must be finite and > 0")
	case m.MaxWaiting < 0:
		return nil, modelErr("MaxWaiting (max_waiting)", m.MaxWaiting,
			"an unlimited waiting room has infinitely many states; the MDP needs a finite max_waiting ≥ 0")
	case m.MaxWaiting > math.MaxUint16:
		return nil, modelErr("MaxWaiting (max_waiting)", m.MaxWaiting, "must be ≤ %d", math.MaxUint16)
	case m.Workload == nil:
		return nil, modelErr(FieldWorkload, nil, "missing")
	}
	if need := m.K * m.Workload.MaxReduces(); need > len(m.SlotCosts) {
		return nil, modelErr("SlotCosts (slots)", len(m.SlotCosts),
			"%d slots cannot hold K = %d jobs of up to %d reducers each (%d needed); a job entering service must always find its R free slots",
			len(m.SlotCosts), m.K, m.Workload.MaxReduces(), need)
	}
	return newClasses(m.SlotCosts), nil
}

// entryRate returns e, the probability that a step of the uniformized chain
// (rate Λ = λ + μ) makes a job enter service. The number N of jobs in the
// system is the birth-death chain of an M/M/1/(K+W) queue whatever the
// placement (placement never delays service: validate guarantees free
// slots), so π_N ∝ ρ^N (ρ = λ/μ) for N = 0..K+W, and jobs enter service on
// an arrival finding N < K or on a departure leaving N > K waiting ones:
//
//	e = (λ·P[N < K] + μ·P[N > K]) / Λ,
//
// which by detailed balance equals the throughput λ·P[N < K+W]/Λ.
func (m PlacementModel) entryRate() float64 {
	top := m.K + m.MaxWaiting
	// log π_N up to a constant, normalized by the largest term.
	lr := math.Log(m.Lambda / m.Mu)
	logMax := max(0, float64(top)*lr)
	var z, below, above float64
	for n := 0; n <= top; n++ {
		p := math.Exp(float64(n)*lr - logMax)
		z += p
		if n < m.K {
			below += p
		}
		if n > m.K {
			above += p
		}
	}
	return (m.Lambda*below + m.Mu*above) / z / (m.Lambda + m.Mu)
}

// classes merges slots of equal cost: class c has Count[c] slots of cost
// Cost[c], ascending in cost.
type classes struct {
	cost  []float64
	count []int
	slots [][]int // slot indices of each class, ascending
	of    map[float64]int
}

func newClasses(costs []float64) *classes {
	idx := make([]int, len(costs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(costs[a], costs[b]) })
	c := &classes{of: map[float64]int{}}
	for _, i := range idx {
		k := len(c.cost) - 1
		if k < 0 || c.cost[k] != costs[i] {
			c.cost = append(c.cost, costs[i])
			c.count = append(c.count, 0)
			c.slots = append(c.slots, nil)
			k++
			c.of[costs[i]] = k
		}
		c.count[k]++
		c.slots[k] = append(c.slots[k], i)
	}
	return c
}

// num returns the number of classes.
func (c *classes) num() int { return len(c.cost) }

// cheapest returns the sum of the r cheapest costs among free[c] slots per
// class, +Inf if fewer than r.
func (c *classes) cheapest(free []int, r int) float64 {
	s := 0.0
	for k, f := range free {
		take := min(f, r)
		s += float64(take) * c.cost[k]
		r -= take
		if r == 0 {
			return s
		}
	}
	return math.Inf(1)
}

// eachSubset calls fn with every vector a (0 ≤ a_c ≤ free[c], Σ a = r) of
// class counts, greedy first: lexicographically decreasing, so the first
// vector takes the cheapest slots. fn must not keep a. It stops early when fn
// returns false.
func eachSubset(free []int, r int, fn func(a []int) bool) {
	C := len(free)
	suffix := make([]int, C+1)
	for c := C - 1; c >= 0; c-- {
		suffix[c] = suffix[c+1] + free[c]
	}
	if suffix[0] < r {
		return
	}
	a := make([]int, C)
	var rec func(c, rem int) bool
	rec = func(c, rem int) bool {
		if c == C-1 || rem == 0 {
			if c < C {
				a[c] = rem
				clear(a[c+1:])
			}
			return fn(a)
		}
		for x := min(free[c], rem); x >= max(0, rem-suffix[c+1]); x-- {
			a[c] = x
			if !rec(c+1, rem-x) {
				return false
			}
		}
		return true
	}
	rec(0, r)
}

// countSubsets returns the number of vectors eachSubset would visit, capped
// at limit+1.
func countSubsets(free []int, r, limit int) int {
	// ways[j] = number of vectors over the classes seen so far with sum j.
	ways := make([]int, r+1)
	ways[0] = 1
	for _, f := range free {
		next := make([]int, r+1)
		for j := 0; j <= r; j++ {
			if ways[j] == 0 {
				continue
			}
			for x := 0; x <= f && j+x <= r; x++ {
				next[j+x] = min(next[j+x]+ways[j], limit+1)
			}
		}
		ways = next
	}
	return ways[r]
}
