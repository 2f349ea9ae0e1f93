package sim

import (
	"fmt"

	"github.com/optd/optd/models"
)

// The testbed experiments of Tan et al. (INFOCOM 2013) with the shuffle
// network on: Fig. 3 (one Sort on 7 nodes, a bad against a good reducer
// placement) and Fig. 10 (two Sort jobs on 15 nodes, placement by fetch
// costs against the Fair Scheduler's heartbeat order). The paper gives the
// node counts, the jobs' maps, reduces, input sizes and submission gap
// (Fig. 10); what it does not give, optd chooses here, from Hadoop 1 and
// 1 GbE defaults, and none of it was fitted to a figure:
//
//   - Hadoop 1 TaskTrackers with 2 map and 2 reduce slots, heartbeats
//     every 3 s, slow-start 0.05, 3 HDFS replicas;
//   - 1 GbE node links (125 MB/s); racks of 5 nodes (Fig. 10: 3 racks) or
//     a 5 + 2 split (Fig. 3: 7 nodes on two switches), uplinks
//     oversubscribed 5:1 (Fig. 10) and 2:1 (Fig. 3);
//   - Sort: a map's output equals its input block; a map reads and sorts
//     its block in 20 s (±20%); a reducer's sort and reduce, the 2/3 of
//     its work after the shuffle, write its share of the output at 50 MB/s.
func init() {
	registerCluster("tan-fig3-sort", TanFig3Scenario)
	registerCluster("tan-fig10-sort", TanFig10Scenario)
}

// tanSortReduceWork is the work of a Sort reducer of share mb MB: its sort
// and reduce (1 − ShuffleFraction of the work) write mb at 50 MB/s.
func tanSortReduceWork(mb float64) models.Dist {
	return uniformAround(mb / 50 / (1 - DefaultShuffleFraction))
}

// tanCluster is n Hadoop 1 nodes in racks of the given sizes.
func tanCluster(name string, racks []int, oversubscription float64) *ClusterScenario {
	sc := &ClusterScenario{Name: name, HeartbeatS: 3, Seed: 1, Network: &Network{NodeMBps: 125, Oversubscription: oversubscription}}
	k := 0
	for r, n := range racks {
		for range n {
			k++
			sc.Cluster.Nodes = append(sc.Cluster.Nodes, models.Node{ID: fmt.Sprintf("slave%d", k), Rack: fmt.Sprintf("rack%d", r+1), MapSlots: 2, ReduceSlots: 2})
		}
	}
	return sc
}

// TanFig3Scenario is Fig. 3's setup: one Sort of 10 GB (80 maps of
// 128 MB) with 7 reducers on 7 nodes, on two switches (5 + 2 nodes, 2:1).
// Compare the placements (`optd simulate --placement costliest` against
// `greedy`): Tan et al. measured the bad one 1.75 times slower.
func TanFig3Scenario() *ClusterScenario {
	sc := tanCluster("tan-fig3-sort", []int{5, 2}, 2)
	const maps, reduces, blockMB = 80, 7, 128
	sc.Jobs = []ClusterJob{{ID: "sort", Maps: maps, Reduces: reduces, MapOutputMB: blockMB,
		MapWork: uniformAround(20), ReduceWork: tanSortReduceWork(maps * blockMB / reduces)}}
	return sc
}

// TanFig10Scenario is Fig. 10's setup (§V-C): 15 nodes in 3 racks (5:1),
// Sort of RandomPair3 (4.3 GB: 64 maps, 2 reduces) at 0 s and of
// RandomPair1 (15.0 GB: 224 maps, 4 reduces) one minute later.
func TanFig10Scenario() *ClusterScenario {
	sc := tanCluster("tan-fig10-sort", []int{5, 5, 5}, 5)
	for _, j := range []struct {
		id            string
		submitS, gb   float64
		maps, reduces int
	}{{"sort-randompair3", 0, 4.3, 64, 2}, {"sort-randompair1", 60, 15.0, 224, 4}} {
		mb := j.gb * 1024
		sc.Jobs = append(sc.Jobs, ClusterJob{ID: j.id, SubmitS: j.submitS, Maps: j.maps, Reduces: j.reduces,
			MapOutputMB: mb / float64(j.maps), MapWork: uniformAround(20), ReduceWork: tanSortReduceWork(mb / float64(j.reduces))})
	}
	return sc
}
