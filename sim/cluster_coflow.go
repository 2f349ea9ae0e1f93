package sim

import (
	"fmt"

	"github.com/optd/optd/models/trace"
)

// Coflow scenario: the Coflow-Benchmark's Facebook trace (FB2010-1Hr-150,
// data/coflow) on a cluster with the trace's racks, for comparing reduce
// placements where the shuffle crosses oversubscribed rack uplinks. The
// trace gives, per job, its arrival, its mapper racks, its reducer racks
// and each reducer's shuffle volume (ReadCoflow); the cluster it was taken
// from had 150 racks at 10:1 (Chowdhury et al., SIGCOMM 2014). What the
// trace does not give, optd chooses here, none of it fitted to a result:
//
//   - CoflowRackNodes Hadoop 1 nodes per rack (2 map and 2 reduce slots,
//     1 GbE links, heartbeats every 3 s, as the Tan et al. scenarios), the
//     rack uplinks at the trace's 10:1;
//   - a job's reducers: as many as it has reducer racks (the trace merges a
//     rack's reducers into one), each fetching an equal share of the job's
//     shuffle (the trace's per-rack volumes are not kept: where a reducer
//     runs is what the placement decides);
//   - a job's maps: one per mapper rack (the trace's rack-level mappers),
//     its input block replicated on that rack's nodes (InputRacks), each
//     writing an equal part of the shuffle after 20 s (±20%) of work (the
//     trace, made for the network, has no map times; a split into blocks
//     would give the largest job thousands of maps and millions of flows); they run where the scheduler
//     starts them (the simulator's random replicas), not in the trace's
//     mapper racks;
//   - a reducer's sort and reduce write its share at 50 MB/s (the Sort of
//     the Tan et al. scenarios).
const (
	CoflowRacks            = 150
	CoflowRackNodes        = 2
	CoflowOversubscription = 10
)

// CoflowScenario builds the scenario of the first maxJobs jobs of the
// Coflow trace at path (0: all).
func CoflowScenario(path string, maxJobs int) (*ClusterScenario, error) {
	jobs, err := trace.ReadFile(path, trace.Options{})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidScenario, err)
	}
	if maxJobs > 0 && len(jobs) > maxJobs {
		jobs = jobs[:maxJobs]
	}
	sc := tanCluster("coflow-fb2010", racksOf(CoflowRacks, CoflowRackNodes), CoflowOversubscription)
	for _, j := range jobs {
		mb := j.ShuffleBytes / (1 << 20)
		if j.Reduces < 1 || !(mb > 0) {
			continue
		}
		racks := make([]string, len(j.MapperRacks))
		for k, r := range j.MapperRacks {
			racks[k] = fmt.Sprintf("rack%d", r+1)
		}
		sc.Jobs = append(sc.Jobs, ClusterJob{ID: j.ID, SubmitS: j.SubmitS, Maps: j.Maps, Reduces: j.Reduces, InputRacks: racks,
			MapOutputMB: mb / float64(j.Maps), MapWork: uniformAround(20),
			ReduceWork: tanSortReduceWork(mb / float64(j.Reduces))})
	}
	if len(sc.Jobs) == 0 {
		return nil, invalidf("trace", path, "no job with a shuffle")
	}
	return sc, nil
}

// The grown Coflow cluster (CoflowGrownScenario): the trace's cluster as
// clusters grow, its newest CoflowNewRacks racks (rack136..rack150) bought
// with full-bisection (1:1) uplinks while the first ones keep the trace's
// 10:1. A tenth of the racks is a choice, not fitted to a result: a
// cluster that grew by a tenth since its first racks; what it makes is a
// cluster where the racks that fetch fast are few, and a large job's
// shuffle into them runs 10 times as fast as into the others.
const CoflowNewRacks = 15

// CoflowGrownScenario is CoflowScenario on the grown cluster (its newest
// CoflowNewRacks racks at 1:1).
func CoflowGrownScenario(path string, maxJobs int) (*ClusterScenario, error) {
	sc, err := CoflowScenario(path, maxJobs)
	if err != nil {
		return nil, err
	}
	sc.Name = "coflow-fb2010-grown"
	sc.Network.RackOversubscription = newRacks(CoflowRacks, CoflowNewRacks)
	return sc, nil
}

// racksOf is k racks of n nodes each.
func racksOf(k, n int) []int {
	r := make([]int, k)
	for i := range r {
		r[i] = n
	}
	return r
}
