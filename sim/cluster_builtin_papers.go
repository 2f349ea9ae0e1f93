package sim

import (
	"fmt"

	"github.com/optd/optd/models"
)

// The setups of DynamicMR (paper 000), resource stealing and BASE (paper
// 003) and DynamicAdjust (paper 004). Where a paper is silent (task works,
// reduce counts, straggler speed, skew factors) the choice is stated here;
// none was fitted to a published figure.

func init() {
	registerCluster("dynamicmr-sort", func() *ClusterScenario { return DynamicMRScenario("dynamicmr-sort", 1, 6) })
	for _, n := range []int{5, 10, 20, 30} {
		name := fmt.Sprintf("dynamicmr-batch-%d", n)
		registerCluster(name, func() *ClusterScenario { return DynamicMRScenario(name, n, 6) })
	}
	for _, u := range []int{25, 50, 75, 90} {
		name := fmt.Sprintf("stealing-grep-%d", u)
		registerCluster(name, func() *ClusterScenario { return StealingGrepScenario(name, float64(u)/100) })
	}
	for _, k := range []int{2, 4} {
		name := fmt.Sprintf("stealing-stragglers-%d", k)
		registerCluster(name, func() *ClusterScenario { return StealingStragglersScenario(name, k) })
	}
	registerCluster("dynamicadjust-invertedindex", func() *ClusterScenario {
		// §3.2 Table 1: 235 maps and 60 reduces, 5 skewed reduces; map
		// skew is milder (a few heavy splits).
		return dynamicAdjustScenario("dynamicadjust-invertedindex", 235, 60, 30, 40,
			Skew{Fraction: 0.03, Factor: 2.5}, Skew{Fraction: 5.0 / 60, Factor: 3})
	})
	registerCluster("dynamicadjust-pagerank", func() *ClusterScenario {
		// 13 GB in 128 MB blocks ≈ 104 maps; skew in the map stage,
		// "extremely slow" skewed tasks (§4.1).
		return dynamicAdjustScenario("dynamicadjust-pagerank", 104, 20, 40, 30,
			Skew{Fraction: 0.04, Factor: 4}, Skew{})
	})
}

// DynamicMRScenario is the DynamicMR testbed (paper 000, §5): 9 slave
// TaskTrackers with 12 CPU cores, one slot per core, mapSlots map slots and
// 12 − mapSlots reduce slots per node (Fig. 8 sweeps 1/11 … 11/1), MRv1
// heartbeats every 3 s, slow-start 0.05 without YARN's ramp. jobs Sort-like
// jobs (20 GB in 128 MB blocks: 160 maps; 30 reduces, chosen) are submitted
// at once; for a batch the input sizes cycle through 1×, ½× and ¼× of that
// job (the paper's batches mix benchmarks of its Table 3, whose sizes the
// text does not list per job). Map work 30 s, reduce work 60 s (±20%).
func DynamicMRScenario(name string, jobs, mapSlots int) *ClusterScenario {
	sc := &ClusterScenario{Name: name, HeartbeatS: 3, Seed: 1}
	for i := 1; i <= 9; i++ {
		sc.Cluster.Nodes = append(sc.Cluster.Nodes, models.Node{ID: fmt.Sprintf("slave%d", i), Rack: "rack1", MapSlots: mapSlots, ReduceSlots: 12 - mapSlots})
	}
	for k := range jobs {
		scale := []int{1, 2, 4}[k%3]
		sc.Jobs = append(sc.Jobs, ClusterJob{ID: fmt.Sprintf("sort%d", k+1), Maps: 160 / scale, Reduces: max(30/scale, 1),
			MapWork: uniformAround(30), ReduceWork: uniformAround(60)})
	}
	return sc
}

// StealingGrepScenario is the resource-stealing testbed (paper 003): 20
// nodes with 7 map slots (and 1 reduce slot), one vcore per slot, and a
// map-only grep job whose maps fill the given fraction of the map slots in
// one wave (25, 50, 75, 90%); map work 20 s ±20%. Resource stealing hands
// the vcores of idle slots to the running maps (see the speed model).
func StealingGrepScenario(name string, utilization float64) *ClusterScenario {
	sc := stealingCluster(name)
	maps := int(utilization*140 + 0.5)
	sc.Jobs = []ClusterJob{{ID: "grep", Maps: maps, MapWork: uniformAround(20),
		Demand: map[models.TaskType]models.Resources{models.MapTask: {1}}}}
	return sc
}

// StealingStragglersScenario: the same cluster with k straggler nodes
// running at a third of the normal speed (chosen), and a map-only job of
// two waves (280 maps of 20 s ±20%) plus a second one of 70 maps submitted
// at 10 s, so that speculation has slow tasks to copy and pending work to
// compete with.
func StealingStragglersScenario(name string, k int) *ClusterScenario {
	sc := stealingCluster(name)
	for i := 1; i <= k; i++ {
		sc.Stragglers = append(sc.Stragglers, Straggler{Node: fmt.Sprintf("node%d", i), Speed: 1.0 / 3})
	}
	d := map[models.TaskType]models.Resources{models.MapTask: {1}}
	sc.Jobs = []ClusterJob{
		{ID: "grep1", Maps: 280, MapWork: uniformAround(20), Demand: d},
		{ID: "grep2", SubmitS: 10, Maps: 70, MapWork: uniformAround(20), Demand: d},
	}
	return sc
}

func stealingCluster(name string) *ClusterScenario {
	sc := &ClusterScenario{Name: name, HeartbeatS: 3, Seed: 1}
	sc.Cluster.Resources = models.ResourceNames{models.ResourceVCores}
	for i := 1; i <= 20; i++ {
		sc.Cluster.Nodes = append(sc.Cluster.Nodes, models.Node{ID: fmt.Sprintf("node%d", i), Rack: fmt.Sprintf("rack%d", (i-1)/10+1),
			Capacity: models.Resources{8}, MapSlots: 7, ReduceSlots: 1})
	}
	return sc
}

// dynamicAdjustScenario is the DynamicAdjust testbed (paper 004, §4): 20
// workers ⟨8 vcores, 7 GB⟩ in one rack, YARN heartbeats every 1 s, one job
// with ⟨1 GB, 1 vcore⟩ containers, skewed tasks as given.
func dynamicAdjustScenario(name string, maps, reduces int, mapS, reduceS float64, mapSkew, reduceSkew Skew) *ClusterScenario {
	sc := &ClusterScenario{Name: name, HeartbeatS: 1, ReduceRamp: true, Seed: 1}
	sc.Cluster.Resources = models.MemoryVCores()
	for i := 1; i <= 20; i++ {
		sc.Cluster.Nodes = append(sc.Cluster.Nodes, models.Node{ID: fmt.Sprintf("worker%d", i), Rack: "rack1", Capacity: models.Resources{7 * 1024, 8}})
	}
	job := ClusterJob{ID: "job", Maps: maps, Reduces: reduces, MapWork: uniformAround(mapS), ReduceWork: uniformAround(reduceS),
		Demand:  map[models.TaskType]models.Resources{models.MapTask: {1024, 1}, models.ReduceTask: {1024, 1}},
		MapSkew: mapSkew, ReduceSkew: reduceSkew}
	sc.Jobs = []ClusterJob{job}
	return sc
}
