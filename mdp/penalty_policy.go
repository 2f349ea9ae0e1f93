package mdp

import "github.com/optd/optd/policy"

// PenaltyPolicyName is the name of the placement policy of a fitted penalty.
const PenaltyPolicyName = "adp-penalty"

// Policy is the one-step lookahead (approximate dynamic programming) on the
// value function behind the penalty. For a cost to minimize, the penalty
// that makes the relaxation exact is z = −(V(next) − E[V(next) | now]) with
// V the cost-to-go (cost + z then telescopes: Σ_t [Q(s_t, a_t) − V(s_{t+1})]
// ≥ V(s_0) − V(s_T), Q ≥ V). The queue terms of (P4) are θ times (realized
// change − compensator) of "1{X = x} while job i is in service", so they
// read V = −Σ_i Σ_c a_{i,c}·Σ_b w_b(c)·θ_{b,g(i),X}: job i holding one slot
// of class c while the queue is in state x costs v_c(x) = −Σ_b w_b(c)·
// θ_{b,g(i),x} in the future (relative to the cheapest class), so
// a job entering in state x (n in service counting itself, w waiting) goes
// on the R free slots of least Y·H_c + v_c(x), v_c including the rich queue
// terms in expectation over the other jobs' groups given their R (without
// them the rich terms' share of the value is lost: on mdp-small the policy
// cost 162.7 instead of 155.7, optimum 154.5). Slots whose cost is not one
// of the fitted cluster's get v interpolated between the fitted costs
// (adp.go). The policy is stateless and safe for concurrent use.
func (p *Penalty) Policy() policy.Placement { return p.Lookahead(PenaltyPolicyName, 1) }

// richValue is the part of −v_c of the rich queue terms: Σ_b w_b(c)·θ of
// the rich bucket (w, the other jobs' groups), in expectation over the
// groups the others may have given their R (a request tells the slots
// each job in service holds, not its X); 0 without rich buckets or when an
// R is not the workload's.
func (p *Penalty) richValue(c, g, w int, otherRs []int) float64 {
	b := p.basis
	if b.rich == nil || len(otherRs) > b.k-1 {
		return 0
	}
	others := make([]byte, b.nGrp2)
	total := 0.0
	var rec func(k int, weight float64)
	rec = func(k int, weight float64) {
		if k == len(otherRs) {
			total += weight * p.value(c, g, b.buckets()+b.richBucket(w, others))
			return
		}
		for γ, q := range b.groupsOfR(otherRs[k]) {
			if q > 0 {
				others[γ]++
				rec(k+1, weight*q)
				others[γ]--
			}
		}
	}
	rec(0, 1)
	return total
}
