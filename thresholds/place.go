package thresholds

import (
	"fmt"
	"math"
)

// Placement is a decision for one job: which positions of the cheapest-first
// list of free slots it takes, and why.
type Placement struct {
	// Positions are 0-based indices into the cheapest-first list of free
	// slots, ascending and contiguous (Start .. Start+R−1).
	Positions []int
	// Y = x/r, the data each reducer of the job fetches.
	Y float64
	// Start = c = #{j : q_j > y}, the number of cheaper slots left for later
	// jobs (before clamping, see Clamped).
	Start int
	// Above is q_c, the smallest threshold strictly greater than y (+Inf when
	// c = 0); Below is q_{c+1}, the largest threshold ≤ y (0 when c is the
	// number of thresholds). The decision is Above > y ≥ Below.
	Above, Below float64
	// Clamped reports that fewer than c+r slots were free, so the block was
	// moved to the last r free slots (the model guarantees (K−i+1)·r̄ free
	// slots for job i, so this happens only outside the model).
	Clamped bool
}

// Place applies Theorem 1 to job (x, r) arriving with free slots sorted
// cheapest first and the stage's thresholds q (non-increasing, the Stages
// entry of a Table for this job's index):
//
//	c = #{j : q_j > y},  y = x/r,   take positions c+1, …, c+r (1-based).
//
// Ties: y equal to a threshold q_j does not count it in c, so the job goes
// in front of every slot whose threshold equals y. The expected cost is the
// same either way (the merged sorted list of values is unchanged), so the
// table and Σ_j H_(j)·c_j do not depend on this rule; it is the rule of
// docs/formats.md#thresholds-output. If fewer than c+r slots are free the job takes the last r
// (Clamped); fewer than r free slots is ErrNoFreeSlots.
func Place(q []float64, free int, x float64, r int) (Placement, error) {
	if r < 1 || math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
		return Placement{}, fmt.Errorf("%w: x = %v, r = %d (need finite x ≥ 0 and r ≥ 1)", ErrJob, x, r)
	}
	if free < r {
		return Placement{}, fmt.Errorf("%w: %d free, job needs %d", ErrNoFreeSlots, free, r)
	}
	y := x / float64(r)
	// q is non-increasing: c is the first index with q_j ≤ y.
	lo, hi := 0, len(q)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if q[m] > y {
			lo = m + 1
		} else {
			hi = m
		}
	}
	c := lo
	p := Placement{Y: y, Start: c, Above: math.Inf(1)}
	if c > 0 {
		p.Above = q[c-1]
	}
	if c < len(q) {
		p.Below = q[c]
	}
	start := c
	if start+r > free {
		start = free - r
		p.Clamped = true
	}
	p.Positions = make([]int, r)
	for k := range p.Positions {
		p.Positions[k] = start + k
	}
	return p, nil
}
