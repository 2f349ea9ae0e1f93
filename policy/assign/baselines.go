package assign

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
)

// The Hadoop/YARN baseline assignment policies of the HaSTE evaluation
// (Yao et al., TCC'21, §5): FIFO, Fair, DRF and Capacity with one queue.
// Each orders the active jobs and offers, job by job, the job's requests in
// YARN's order (reduces before maps once requested, see typeOrder); the
// pipeline starts the first that fits and asks again. register.go
// registers them.

var (
	_ policy.Assigner = (*fifoAssigner)(nil)
	_ policy.Assigner = (*shareAssigner)(nil)
	_ policy.Assigner = (*capacityAssigner)(nil)
)

// fifoAssigner serves jobs in submission order (YARN's FifoScheduler; the
// policy.JobView list is in submission order): the oldest job with a request that
// fits gets the container.
type fifoAssigner struct{ byName }

func (f *fifoAssigner) Rank(hb *policy.Heartbeat) []policy.Action {
	var out []policy.Action
	for k, j := range hb.Cluster.Jobs {
		out = jobCandidates(out, hb, j, func() string { return fmt.Sprintf("fifo: job %s is number %d in submission order", j.ID, k+1) })
	}
	return out
}

// shareAssigner serves the job with the smallest share per weight first,
// ties by submission: Fair (YARN FairScheduler's default FairSharePolicy,
// which compares memory usage/weight; running containers on a cluster
// without memory) and DRF (Ghodsi et al., NSDI'11: the dominant share
// max_p used_p/total_p, divided by the weight).
type shareAssigner struct {
	byName
	share func(hb *policy.Heartbeat, u jobUsage) (float64, string)
}

func fairShare(hb *policy.Heartbeat, u jobUsage) (float64, string) {
	if p := hb.Cluster.Resources.Index(models.ResourceMemoryMB); p >= 0 && hb.Cluster.Total[p] > 0 {
		return float64(u.resources[p]) / float64(hb.Cluster.Total[p]), "memory share"
	}
	return float64(u.maps + u.reduces), "running tasks"
}

func dominantShare(hb *policy.Heartbeat, u jobUsage) (float64, string) {
	if len(hb.Cluster.Total) == 0 {
		return float64(u.maps + u.reduces), "running tasks"
	}
	return u.resources.DominantShare(hb.Cluster.Total), "dominant share"
}

func (s *shareAssigner) Rank(hb *policy.Heartbeat) []policy.Action {
	if !hb.CanStartAny() {
		return nil
	}
	type ranked struct {
		j     *policy.JobView
		k     int
		share float64
		what  string
	}
	rs := make([]ranked, len(hb.Cluster.Jobs))
	for k, j := range hb.Cluster.Jobs {
		sh, what := s.share(hb, usageOf(hb, j))
		w := j.Weight
		if w <= 0 {
			w = 1
		}
		rs[k] = ranked{j, k, sh / w, what}
	}
	slices.SortStableFunc(rs, func(a, b ranked) int { return cmp.Compare(a.share, b.share) })
	var out []policy.Action
	for _, r := range rs {
		out = jobCandidates(out, hb, r.j, func() string {
			return fmt.Sprintf("%s: job %s has the lowest %s per weight among the jobs left (%.4g)", s.Name(), r.j.ID, r.what, r.share)
		})
	}
	return out
}

// capacityAssigner is YARN's CapacityScheduler: queues (policy.JobView.Queue, ""
// is "default") share the cluster in equal configured capacities, the
// queue with the lowest used/capacity (memory share, else running tasks)
// is served first, and inside a queue applications are served in
// submission order (the default FIFO ordering policy). With a single queue,
// the configuration of HaSTE §5.3, it orders like FIFO.
type capacityAssigner struct{ byName }

func (c *capacityAssigner) Rank(hb *policy.Heartbeat) []policy.Action {
	if !hb.CanStartAny() {
		return nil
	}
	var queues []string
	used := map[string]float64{}
	for _, j := range hb.Cluster.Jobs {
		q := queueOf(j)
		if _, ok := used[q]; !ok {
			queues = append(queues, q)
		}
		sh, _ := fairShare(hb, usageOf(hb, j))
		used[q] += sh
	}
	capacity := 1 / float64(max(len(queues), 1))
	slices.SortStableFunc(queues, func(a, b string) int { return cmp.Compare(used[a], used[b]) })
	var out []policy.Action
	for _, q := range queues {
		for _, j := range hb.Cluster.Jobs {
			if queueOf(j) == q {
				out = jobCandidates(out, hb, j, func() string {
					return fmt.Sprintf("capacity: queue %s uses %.4g of its capacity %.4g; job %s is next in it by submission", q, used[q], capacity, j.ID)
				})
			}
		}
	}
	return out
}

func queueOf(j *policy.JobView) string {
	if j.Queue == "" {
		return "default"
	}
	return j.Queue
}
