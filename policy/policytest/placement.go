package policytest

import (
	"cmp"
	"math/rand/v2"
	"slices"

	"github.com/optd/optd/policy"
)

// PlacementRequests draws n placement requests on a cluster with the
// given slot costs (slot v costs costs[v]) of at most k jobs in service,
// each of R in 1..maxR reducers: the jobs in service hold disjoint random
// slots, the others are free (cheapest first, ties by index, as every
// caller lists them), with at least the job's R of them; X is in [0, 100),
// up to two jobs wait. Deterministic per seed.
func PlacementRequests(costs []float64, k, maxR, n int, seed uint64) []*policy.PlacementRequest {
	rng := rand.New(rand.NewPCG(seed, 3))
	out := make([]*policy.PlacementRequest, n)
	for i := range out {
		perm := rng.Perm(len(costs))
		req := &policy.PlacementRequest{X: rng.Float64() * 100, R: rng.IntN(min(maxR, len(costs))) + 1, Waiting: rng.IntN(3)}
		for range rng.IntN(k) {
			r := rng.IntN(maxR) + 1
			if len(perm)-r < req.R {
				break
			}
			req.Held = append(req.Held, perm[:r])
			perm = perm[r:]
		}
		req.JobsInSystem = len(req.Held) + req.Waiting + rng.IntN(2)
		for _, v := range perm {
			req.Free = append(req.Free, policy.Slot{Index: v, Cost: costs[v]})
		}
		slices.SortFunc(req.Free, func(a, b policy.Slot) int { return cmp.Or(cmp.Compare(a.Cost, b.Cost), cmp.Compare(a.Index, b.Index)) })
		out[i] = req
	}
	return out
}
