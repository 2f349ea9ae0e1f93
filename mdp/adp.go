package mdp

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/optd/optd/policy"
)

// This file is the one-step lookahead (approximate dynamic programming) on
// the penalty's value function, deciding on exact slot costs whatever the
// classes the penalty was fitted on.
//
// # Scaling to many slot costs
//
// The fit solves a hindsight LP with one column per job and class at every
// step, so on a cluster with 1000 distinct costs (the Fig. 9 setting) it is
// 1000 times the work of a single class; and the value function it fits has
// one coefficient per basis function anyway (at most penaltyMaxClassBasis).
// The caller therefore groups the slots before the fit (GroupCheapest: the
// contended, cheapest, slots into G − 1 groups of (nearly) equal size, the
// others into one, each slot costed at its group's mean, so that the
// fitted cluster's total cost and its cheap-to-dear shape are the real
// one's, and classes are fine where jobs compete for slots), and the fit
// runs on the grouped cluster: its work is linear in G, not in the
// distinct costs. The policy then decides on the exact costs:
// a free slot of cost H scores
//
//	Y·H − s·V_g(H, x),   V_g(H, x) the linear interpolation in H of
//	                     V_g(c, x) = Σ_b w_b(c)·θ_{b,g,x} over the fitted
//	                     classes' costs (constant beyond the cheapest and
//	                     the costliest),
//
// and the job takes its R least-scored free slots. With the exact costs
// fitted (no grouping) and s = 1 this is Penalty.Policy's rule exactly.
// s, the value scale, is 1 for the fitted value function; other values
// are for a search (the fit's value is an approximation whose level a
// search on simulations may correct).

// GroupSlotCosts returns the slot costs with the slots grouped, cheapest
// first, into at most groups groups of sizes differing by at most one (ties
// of cost never split), each slot given its group's mean cost. With groups
// ≥ the number of distinct costs it returns a copy of costs.
func GroupSlotCosts(costs []float64, groups int) []float64 {
	out := slices.Clone(costs)
	idx := make([]int, len(costs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(costs[a], costs[b]) })
	if groups < 1 || len(newClasses(costs).cost) <= groups {
		return out
	}
	n := len(idx)
	for lo := 0; lo < n; {
		// The group ends at the next multiple of n/groups, extended over
		// ties of cost.
		g := lo*groups/n + 1
		hi := max((g*n+groups-1)/groups, lo+1)
		for hi < n && costs[idx[hi]] == costs[idx[hi-1]] {
			hi++
		}
		sum := 0.0
		for _, i := range idx[lo:hi] {
			sum += costs[i]
		}
		for _, i := range idx[lo:hi] {
			out[i] = sum / float64(hi-lo)
		}
		lo = hi
	}
	return out
}

// Lookahead returns the one-step lookahead policy on the penalty's value
// function with value scale s (see above), named name. It is stateless and
// safe for concurrent use.
func (p *Penalty) Lookahead(name string, scale float64) policy.Placement {
	return &lookahead{scaled: scaled{name, scale}, pen: p}
}

// scaled is a fitted policy's name and value scale s.
type scaled struct {
	name  string
	scale float64
}

func (s scaled) Name() string { return s.name }

// ValueScale is the value scale s the policy decides with.
func (s scaled) ValueScale() float64 { return s.scale }

type lookahead struct {
	scaled
	pen *Penalty
}

// value is Σ_b w_b(c)·θ_{b,g,x} = −v_c(x) for a job of group g.
func (p *Penalty) value(c, g, x int) float64 {
	v := 0.0
	for b := range p.nb {
		if w := p.w[c*p.nb+b]; w != 0 {
			v += w * p.theta[p.thetaIndex(b, g, x)]
		}
	}
	return v
}

// interpolate is vals (one per cost, costs ascending) interpolated
// linearly at h, constant beyond the first and last cost.
func interpolate(costs, vals []float64, h float64) float64 {
	k, found := slices.BinarySearch(costs, h)
	switch {
	case found:
		return vals[k]
	case k == 0:
		return vals[0]
	case k == len(costs):
		return vals[len(costs)-1]
	}
	t := (h - costs[k-1]) / (costs[k] - costs[k-1])
	return (1-t)*vals[k-1] + t*vals[k]
}

// placeLeast places the job of req on its R free slots of least
// Y·H + p(H), p interpolated between costs from vals (nil: p = 0, greedy),
// ties by position.
func placeLeast(req *policy.PlacementRequest, costs, vals []float64, reason string) policy.PlacementDecision {
	y := req.X / float64(req.R)
	score := make([]float64, len(req.Free))
	for k, s := range req.Free {
		score[k] = y * s.Cost
		if vals != nil {
			score[k] += interpolate(costs, vals, s.Cost)
		}
	}
	pos := make([]int, len(req.Free))
	for k := range pos {
		pos[k] = k
	}
	slices.SortStableFunc(pos, func(a, c int) int { return cmp.Compare(score[a], score[c]) })
	pos = pos[:req.R]
	slices.Sort(pos)
	return policy.PlacementDecision{Positions: pos, Threshold: math.NaN(), Reason: reason}
}

// entryState is the state (n in service counting the job, w waiting) a
// request's job enters in.
func entryState(req *policy.PlacementRequest, k int) (n, w int) {
	return min(len(req.Held)+1, k), max(req.Waiting, 0)
}

func (l *lookahead) Place(req *policy.PlacementRequest) (policy.PlacementDecision, error) {
	if err := req.Check(); err != nil {
		return policy.PlacementDecision{}, err
	}
	p := l.pen
	b := p.basis
	n, w := entryState(req, b.k)
	x := b.bucket(n, w)
	g := b.group(req.X/float64(req.R), req.R)
	var vals []float64
	if g >= 0 && l.scale != 0 {
		otherRs := make([]int, len(req.Held))
		for k, h := range req.Held {
			otherRs[k] = len(h)
		}
		vals = make([]float64, p.cls.num())
		for c := range vals {
			vals[c] = -l.scale * (p.value(c, g, x) + p.richValue(c, g, w, otherRs))
		}
	}
	return placeLeast(req, p.cls.cost, vals, fmt.Sprintf("least Y·H − %.3g·V(H) at n = %d, w = %d (one-step lookahead on the penalty's value function, %d fitted classes)",
		l.scale, n, w, p.cls.num())), nil
}

// Policy returns the bid-price policy of the prices with value scale s,
// named name: a job entering in state x goes on its R free slots of least
// Y·H + s·p(H, x). It is stateless and safe for concurrent use.
func (b *BidPrices) Policy(name string, scale float64) policy.Placement {
	return &bidPolicy{scaled: scaled{name, scale}, b: b}
}

type bidPolicy struct {
	scaled
	b *BidPrices
}

func (p *bidPolicy) Place(req *policy.PlacementRequest) (policy.PlacementDecision, error) {
	if err := req.Check(); err != nil {
		return policy.PlacementDecision{}, err
	}
	n, w := entryState(req, p.b.k)
	prices, costs := p.b.Prices(n, w)
	vals := make([]float64, len(prices))
	for c, v := range prices {
		vals[c] = p.scale * v
	}
	return placeLeast(req, costs, vals, fmt.Sprintf("least Y·H + %.3g·p(H) at n = %d, w = %d (the hindsight LP's expected bid prices, %d fitted classes)",
		p.scale, n, w, len(costs))), nil
}
