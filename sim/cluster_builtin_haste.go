package sim

import (
	"fmt"

	"github.com/optd/optd/models"
	"github.com/optd/optd/models/haste"
)

// The HaSTE scenarios (Yao et al., TCC'21, §5; the tables are package
// haste's): Tables 2-4 on 8 nodes ⟨8 GB, 8 vcores⟩ (§5.2), Table 5 on 20
// nodes ⟨32 GB, 16 vcores⟩ (§5.4), every job submitted at time 0 (batch,
// §5.2), and Table 4 with successive submissions at uniform random
// intervals of 0-60 s and 60-120 s (§5.3, Fig. 9).
//
// What the paper gives: nodes, jobs, #Map and #Reduce (summed over the
// iterations of Pagerank and Kmeans, footnote a: optd runs ⌈#Map/I⌉ maps
// and ⌈#Reduce/I⌉ reduces per iteration, one stage an iteration), and the
// requests R^m, R^r. What it does not give, and optd chooses: the work of a
// task. A task's work depends on the benchmark, not on its request (YARN
// does not isolate vcores, footnote 3: a request orders, it does not speed
// up), and is drawn uniformly within ±20% of the benchmark's mean below, in
// reference seconds, chosen once from the nature of each benchmark
// (CPU-bound WordCount and Kmeans maps are long, Terasort has heavy
// reduces, PiEstimate and Scan are short); they were not fitted to any
// figure of the paper. The YARN MapReduce ApplicationMaster's reduce
// ramp-up and slow-start 0.05 are on; heartbeats every 1 s; HDFS 3
// replicas; one rack.
var hasteBench = map[string]struct{ mapS, reduceS float64 }{
	"terasort":   {25, 60},
	"wordcount":  {40, 30},
	"wordmean":   {30, 15},
	"piestimate": {20, 5},
	"pagerank":   {30, 30},
	"kmeans":     {35, 15},
	"scan":       {15, 10},
	"dfsioe":     {30, 10},
}

// hasteScenario builds the scenario of table (package haste); interval > 0
// submits the jobs one after another at uniform random gaps in
// [interval−60, interval] seconds.
func hasteScenario(name, table string, interval float64) *ClusterScenario {
	t, ok := haste.Lookup(table)
	if !ok {
		panic("sim: no HaSTE table " + table) // the built-in names are constants
	}
	sc := &ClusterScenario{Name: name, ReduceRamp: true, HeartbeatS: 1, Seed: 1}
	sc.Cluster.Resources = models.MemoryVCores()
	for i := 1; i <= t.Nodes; i++ {
		sc.Cluster.Nodes = append(sc.Cluster.Nodes, models.Node{ID: fmt.Sprintf("node%d", i), Rack: "rack1", Capacity: models.Resources{t.NodeMemGB * 1024, t.NodeVCores}})
	}
	gaps := NewRand(sc.Seed, StreamArrivals)
	submit := 0.0
	for k, r := range t.Jobs {
		if interval > 0 && k > 0 {
			submit += interval - 60 + 60*gaps.Float64()
		}
		b := hasteBench[r.Bench]
		sc.Jobs = append(sc.Jobs, ClusterJob{
			ID: r.ID, SubmitS: submit, Stages: r.Iterations,
			Maps: r.MapsPerIteration(), Reduces: r.ReducesPerIteration(),
			Demand: map[models.TaskType]models.Resources{
				models.MapTask:    {r.MapMemGB * 1024, r.MapVCores},
				models.ReduceTask: {r.ReduceMemGB * 1024, r.ReduceVCores},
			},
			MapWork:    uniformAround(b.mapS),
			ReduceWork: uniformAround(b.reduceS),
		})
	}
	return sc
}

// uniformAround is the uniform law on [0.8·m, 1.2·m].
func uniformAround(m float64) models.Dist {
	d, err := models.DecodeDist([]byte(fmt.Sprintf(`{"kind":"uniform","min":%g,"max":%g}`, 0.8*m, 1.2*m)), "", "work")
	if err != nil {
		panic(err) // constant input
	}
	return d
}
