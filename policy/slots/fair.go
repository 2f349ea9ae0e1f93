package slots

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
)

// This file holds the Hadoop Fair Scheduler (HFS) order that the MRv1 slot
// policies assign in: max-min fairness over pools (policy.JobView.Queue) and, in a
// pool, over jobs by running tasks per unit of weight. DynamicMR (Tang et
// al., IEEE TCC 2014, §2.1) is built on HFS; "mrv1-static" is HFS on static
// typed slots, the paper's "original Hadoop" baseline.

// fairPool is one pool's jobs and its running-task count in the counted
// phase(s).
type fairPool struct {
	name    string
	running int
	first   float64 // earliest submission, the tie-break
	jobs    []*policy.JobView
}

// fairOrder orders the active jobs for the phases in types: pools by
// running tasks (fewest first, ties by earliest submission), then jobs in a
// pool by running tasks / weight, submission time and id. Running counts
// include this heartbeat's starts, so successive Rank calls rotate jobs.
func fairOrder(hb *policy.Heartbeat, types ...models.TaskType) []*policy.JobView {
	running := func(j *policy.JobView) int {
		n := 0
		for _, t := range types {
			n += runningNow(hb, j, t)
		}
		return n
	}
	idx := map[string]int{}
	var pools []*fairPool
	for _, j := range hb.Cluster.Jobs {
		k, ok := idx[j.Queue]
		if !ok {
			k = len(pools)
			idx[j.Queue] = k
			pools = append(pools, &fairPool{name: j.Queue, first: j.SubmitS})
		}
		p := pools[k]
		p.running += running(j)
		p.first = min(p.first, j.SubmitS)
		p.jobs = append(p.jobs, j)
	}
	slices.SortStableFunc(pools, func(a, b *fairPool) int {
		return cmp.Or(cmp.Compare(a.running, b.running), cmp.Compare(a.first, b.first), cmp.Compare(a.name, b.name))
	})
	out := make([]*policy.JobView, 0, len(hb.Cluster.Jobs))
	for _, p := range pools {
		slices.SortStableFunc(p.jobs, func(a, b *policy.JobView) int {
			return cmp.Or(cmp.Compare(float64(running(a))/jobWeight(a), float64(running(b))/jobWeight(b)),
				cmp.Compare(a.SubmitS, b.SubmitS), cmp.Compare(a.ID, b.ID))
		})
		out = append(out, p.jobs...)
	}
	return out
}

func jobWeight(j *policy.JobView) float64 {
	if j.Weight > 0 {
		return j.Weight
	}
	return 1
}

// FairSlots assigns free typed slots in HFS order, each phase on its own
// (PI-DHSA's "typed phase-based" fairness: maps compete for map slots,
// reduces for reduce slots). It is the assigner of "mrv1-static" and
// "pi-dhsa"; under pi-dhsa the slot counts it fills are DHSA's.
type FairSlots struct{ name string }

// Name implements policy.Plugin.
func (f *FairSlots) Name() string { return f.name }

// Rank returns, for maps then reduces, one start per job in fair order.
func (f *FairSlots) Rank(hb *policy.Heartbeat) []policy.Action {
	var out []policy.Action
	for _, t := range []models.TaskType{models.MapTask, models.ReduceTask} {
		for _, j := range fairOrder(hb, t) {
			if a, ok := hb.StartCandidate(j, t, func() string {
				return fmt.Sprintf("%s: job %s is next in fair order for %v slots (%d running, weight %g)", f.name, j.ID, t, runningNow(hb, j, t), jobWeight(j))
			}); ok {
				out = append(out, a)
			}
		}
	}
	return out
}

// runningNow is the job's running attempts of type t including this
// heartbeat's starts.
func runningNow(hb *policy.Heartbeat, j *policy.JobView, t models.TaskType) int {
	return j.RunningOf(t) + hb.Started(j.ID, t)
}
