package assign

import (
	"fmt"

	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
)

// Helpers shared by the assignment policies: a job's usage including the
// starts already decided in this heartbeat, the resource weights w_p, and
// the candidates of one job in YARN's request order.

// jobUsage is what job j holds now: Σ requested over its running attempts
// plus this heartbeat's starts and copies for it, and the number of such
// containers (slots on an MRv1 cluster) per type.
type jobUsage struct {
	resources     models.Resources
	maps, reduces int
	// mapsAssigned/reducesAssigned are A_i^m, A_i^r with this heartbeat's
	// starts.
	mapsAssigned, reducesAssigned int
}

func usageOf(hb *policy.Heartbeat, j *policy.JobView) jobUsage {
	u := jobUsage{resources: make(models.Resources, len(hb.Cluster.Resources)), mapsAssigned: j.MapsAssigned, reducesAssigned: j.ReducesAssigned}
	add := func(t models.TaskType, r models.Resources) {
		if len(r) == len(u.resources) {
			for p := range r {
				u.resources[p] += r[p] // in place: this runs for every running attempt
			}
		}
		if t == models.ReduceTask {
			u.reduces++
		} else {
			u.maps++
		}
	}
	for _, a := range j.Running {
		add(a.Type, a.Requested)
	}
	for _, a := range hb.Actions {
		if a.Job != j.ID || (a.Kind != policy.ActionStart && a.Kind != policy.ActionSpeculate) {
			continue
		}
		add(a.Type, a.Resources)
		if a.Kind == policy.ActionStart {
			if a.Type == models.ReduceTask {
				u.reducesAssigned++
			} else {
				u.mapsAssigned++
			}
		}
	}
	return u
}

// weightsOf returns the resource weights w_p: cfg.Weights if set, else
// solver.HaSTEWeights' convention (1 per GB of memory_mb, 1 per vcore) on a
// memory/vcores cluster, else 1 per unit.
func weightsOf(cfg policy.HeartbeatConfig, names models.ResourceNames) ([]float64, error) {
	if cfg.Weights != nil {
		if len(cfg.Weights) != len(names) {
			return nil, fmt.Errorf("%w: %d weights for %d resources", policy.ErrInvalidConfig, len(cfg.Weights), len(names))
		}
		return cfg.Weights, nil
	}
	w := make([]float64, len(names))
	for p, n := range names {
		w[p] = 1
		if n == models.ResourceMemoryMB {
			w[p] = 1.0 / 1024
		}
	}
	return w, nil
}

// typeOrder is YARN's MapReduce ApplicationMaster request priority: once
// requested, reduces (priority 10) come before maps (priority 20), which is
// why the papers see reduces occupy containers early under FIFO and Fair.
var typeOrder = [2]models.TaskType{models.ReduceTask, models.MapTask}

// jobCandidates appends the Start candidates of job j in YARN's request
// order (see typeOrder).
func jobCandidates(out []policy.Action, hb *policy.Heartbeat, j *policy.JobView, reason func() string) []policy.Action {
	for _, t := range typeOrder {
		if a, ok := hb.StartCandidate(j, t, reason); ok {
			out = append(out, a)
		}
	}
	return out
}

// byName is a plugin's name.
type byName string

func (n byName) Name() string { return string(n) }
