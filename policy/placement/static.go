package placement

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
)

// The stage's static-cost mode, for a policy that decides on its model's
// fixed slot costs (policy.ModelSlotted, "mdp-optimal"). The stage's own
// costs change with every job (hop distances to the job's map outputs,
// load terms), which a decision table solved for fixed costs cannot read;
// in this mode the request offers the model's slots instead:
//
//   - slot i of the model is the i-th reduce slot of the cluster in node
//     order (node v's slots are b_v, …, b_v + s_v − 1 with b_v the slots
//     of the nodes before v), at the model's cost H_i;
//   - a job in service holds the slots of its plan that its running and
//     still planned reducers use on each node (the first ones of its plan
//     there), and a reducer started without a plan holds the lowest free
//     slot of its node: which of a node's slots a reducer that finished
//     had used is not reported, so the first ones are taken to be the ones
//     still in use;
//   - the waiting jobs are those not at slow-start yet, as in the
//     hop-distance mode.
//
// The mode needs the cluster's reduce slots for the job's request to be as
// many as the model's slots; otherwise the stage prices by hop distance as
// usual and the decision's reason says why. A job that finds fewer free
// slots than its R sees further waves of the model's slots at their costs
// (indices L, L + 1, … for L model slots), which the model does not know:
// the policy then decides outside its model and says so.

// staticRequest builds job j's request on the model's slot costs; ok is
// false (with the reason) when the cluster's slots are not the model's.
func (s *reducePlacement) staticRequest(c *policy.ClusterView, j *policy.JobView, costs []float64) (req *policy.PlacementRequest, nodeOf map[int]string, why string, ok bool) {
	L := len(costs)
	base := make(map[string]int, len(c.Nodes))
	total := 0
	for _, n := range c.Nodes {
		base[n.ID] = total
		total += reduceSlots(c, n, j.Demand[models.ReduceTask])
	}
	if total != L || L == 0 {
		return nil, nil, fmt.Sprintf("the model has %d slot costs and the cluster %d reduce slots for job %s's request, so the slots are priced by hop distance", L, total, j.ID), false
	}
	nodeOf = make(map[int]string, L)
	for k, n := range c.Nodes {
		end := L
		if k+1 < len(c.Nodes) {
			end = base[c.Nodes[k+1].ID]
		}
		for i := base[n.ID]; i < end; i++ {
			nodeOf[i] = n.ID
		}
	}
	held := s.heldSlots(c, j, base, nodeOf, L)
	used := make([]bool, L)
	req = &policy.PlacementRequest{X: estimateX(j), R: j.ReducesTotal, JobsInSystem: len(c.Jobs) - 1, Waiting: waiting(c, j)}
	for _, h := range held {
		for _, i := range h {
			used[i] = true
		}
		req.Held = append(req.Held, h)
	}
	for i, u := range used {
		if !u {
			req.Free = append(req.Free, policy.Slot{Index: i, Cost: costs[i]})
		}
	}
	for wave := 1; len(req.Free) < req.R; wave++ {
		for i := range L {
			nodeOf[wave*L+i] = nodeOf[i]
			req.Free = append(req.Free, policy.Slot{Index: wave*L + i, Cost: costs[i]})
		}
	}
	slices.SortFunc(req.Free, func(a, b policy.Slot) int { return cmp.Or(cmp.Compare(a.Cost, b.Cost), cmp.Compare(a.Index, b.Index)) })
	return req, nodeOf, "", true
}

// heldSlots returns the model slots each other job in service holds, by
// job ID (see the mode's description): first every job's planned slots in
// use, then the lowest free slots of their nodes for reducers without one.
func (s *reducePlacement) heldSlots(c *policy.ClusterView, j *policy.JobView, base map[string]int, nodeOf map[int]string, L int) [][]int {
	inUse := map[string]map[string]int{} // job → node → slots in use: its reducers running, then its plan's left
	for _, n := range c.Nodes {
		for _, a := range n.Running {
			if a.Type == models.ReduceTask && a.Job != j.ID {
				if inUse[a.Job] == nil {
					inUse[a.Job] = map[string]int{}
				}
				inUse[a.Job][n.ID]++
			}
		}
	}
	planOf := map[string]*reducePlan{}
	for k, pl := range s.plans {
		if o := c.Job(k.job); o != nil && o.Stage == k.stage && k.job != j.ID {
			planOf[k.job] = pl
			if inUse[k.job] == nil {
				inUse[k.job] = map[string]int{}
			}
			for n, v := range pl.Left {
				inUse[k.job][n] += v
			}
		}
	}
	jobs := slices.Sorted(maps.Keys(inUse))
	taken := make([]bool, L)
	held := make(map[string][]int, len(jobs))
	missing := map[string]map[string]int{} // in use without a planned slot
	for _, id := range jobs {
		missing[id] = map[string]int{}
		for _, n := range slices.Sorted(maps.Keys(inUse[id])) {
			want := inUse[id][n]
			if pl := planOf[id]; pl != nil {
				for _, i := range pl.Slots[n] {
					if want == 0 {
						break
					}
					if i >= 0 && i < L && nodeOf[i] == n && !taken[i] {
						taken[i] = true
						held[id] = append(held[id], i)
						want--
					}
				}
			}
			missing[id][n] = want
		}
	}
	for _, id := range jobs {
		for _, n := range slices.Sorted(maps.Keys(missing[id])) {
			for i := base[n]; missing[id][n] > 0 && i < L && nodeOf[i] == n; i++ {
				if !taken[i] {
					taken[i] = true
					held[id] = append(held[id], i)
					missing[id][n]--
				}
			}
		}
	}
	var out [][]int
	for _, id := range jobs {
		if h := held[id]; len(h) > 0 {
			slices.Sort(h)
			out = append(out, h)
		}
	}
	return out
}

// waiting counts the jobs other than j not at slow-start yet: the jobs the
// placement sees waiting to enter service.
func waiting(c *policy.ClusterView, j *policy.JobView) int {
	w := 0
	for _, o := range c.Jobs {
		if o.ID != j.ID && !o.SlowStartReached {
			w++
		}
	}
	return w
}

// staticReason lists the chosen model slots by node with their costs.
func staticReason(req *policy.PlacementRequest, pos []int, nodeOf map[int]string, L int) string {
	var b strings.Builder
	b.WriteString("the model's fixed slot costs (slot i = the i-th reduce slot in node order):")
	for k, p := range pos {
		sl := req.Free[p]
		if k > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, " slot %d on %s H = %.4g", sl.Index, nodeOf[sl.Index], sl.Cost)
		if sl.Index >= L {
			b.WriteString(" (a further wave)")
		}
	}
	return b.String()
}
