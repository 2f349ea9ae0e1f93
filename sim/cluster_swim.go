package sim

import (
	"fmt"
	"math"

	"github.com/optd/optd/models/trace"
)

// SWIM scenarios on a grown cluster: a SWIM Facebook day (data/swim)
// replayed on a cluster built as clusters grow, for comparing reduce
// placements where the racks are not alike. The trace gives, per job, its
// arrival and its input, shuffle and output bytes; maps and reduces are
// derived by SWIM's rules (trace.ReadSWIM: one map per 128 MB block, one
// reducer per GB of shuffle and output). What the trace does not give,
// optd chooses here, none of it fitted to a result:
//
//   - racks of SWIMRackNodes Hadoop 1 nodes (2 map and 2 reduce slots,
//     1 GbE links, heartbeats every 3 s, as the Tan et al. scenarios): the
//     rack size of the Coflow trace's cluster (3000 machines in 150
//     racks);
//   - the first racks' uplinks at the Coflow trace's 10:1 (Facebook's
//     cluster of 2010), the newest tenth of the racks (rounded up) bought
//     later with full-bisection (1:1) uplinks;
//   - a cluster smaller than the trace's replays it scaled as SWIM's
//     replay scales a workload to a smaller cluster: every byte size times
//     the ratio of the cluster sizes (SWIMCluster.Scale), so the load per
//     node is the recorded one;
//   - a map reads and sorts its block in 20 s (±20%) and writes its share
//     of the job's shuffle; a reducer's sort and reduce write its share
//     at 50 MB/s (the Sort of the Tan et al. scenarios); inputs on random
//     nodes (3 replicas).
const SWIMRackNodes = 20

// SWIMCluster is the grown cluster a SWIM trace is replayed on.
type SWIMCluster struct {
	// Racks of SWIMRackNodes nodes; the last ⌈Racks/10⌉ are the new ones.
	Racks int
	// Scale multiplies every byte size of the trace (1: as recorded).
	Scale float64
}

// The SWIM traces' clusters: FB-2009 was sampled from 600 machines and is
// replayed on 600 (30 racks); FB-2010 from 3000 machines (Chen et al.,
// MASCOTS 2011, and the Coflow trace's 150 racks), replayed on a tenth of
// them (15 racks) with its bytes scaled by a tenth.
var (
	SWIMFB2009Cluster = SWIMCluster{Racks: 30, Scale: 1}
	SWIMFB2010Cluster = SWIMCluster{Racks: 15, Scale: 0.1}
)

// NewRacks is how many of the cluster's racks are new (full bisection).
func (c SWIMCluster) NewRacks() int { return int(math.Ceil(float64(c.Racks) / 10)) }

// SWIMGrownScenario builds the scenario of the first maxJobs jobs of the
// SWIM trace at path (0: all) on cluster c.
func SWIMGrownScenario(path string, maxJobs int, c SWIMCluster) (*ClusterScenario, error) {
	if !(c.Scale > 0 && c.Scale <= 1) || c.Racks < 1 {
		return nil, invalidf("cluster", fmt.Sprintf("%+v", c), "needs racks ≥ 1 and a scale in (0, 1]")
	}
	// Scaling the bytes by s is scaling the derivation's units by 1/s.
	jobs, err := trace.ReadFile(path, trace.Options{BlockBytes: trace.DefaultBlockBytes / c.Scale, BytesPerReduce: trace.DefaultBytesPerReduce / c.Scale})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidScenario, err)
	}
	if maxJobs > 0 && len(jobs) > maxJobs {
		jobs = jobs[:maxJobs]
	}
	sc := tanCluster("swim-grown", racksOf(c.Racks, SWIMRackNodes), CoflowOversubscription)
	sc.Network.RackOversubscription = newRacks(c.Racks, c.NewRacks())
	for _, j := range jobs {
		job := ClusterJob{ID: j.ID, SubmitS: j.SubmitS, Maps: j.Maps, Reduces: j.Reduces, MapWork: uniformAround(20)}
		if mb := j.ShuffleBytes * c.Scale / (1 << 20); j.Reduces > 0 && mb > 0 {
			job.MapOutputMB = mb / float64(j.Maps)
			job.ReduceWork = tanSortReduceWork(mb / float64(j.Reduces))
		} else {
			job.Reduces = 0
		}
		sc.Jobs = append(sc.Jobs, job)
	}
	if len(sc.Jobs) == 0 {
		return nil, invalidf("trace", path, "no job")
	}
	return sc, nil
}

// newRacks is the RackOversubscription of a cluster of k racks whose
// newest n (the last ones) have full-bisection uplinks.
func newRacks(k, n int) map[string]float64 {
	m := map[string]float64{}
	for r := k - n + 1; r <= k; r++ {
		m[fmt.Sprintf("rack%d", r)] = 1
	}
	return m
}
