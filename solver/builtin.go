package solver

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/optd/optd/internal/errkind"
)

// ErrUnknownInstance is returned by BuiltinInstance for an unknown name.
var ErrUnknownInstance = errkind.New(errkind.Invalid, "solver: unknown built-in instance")

// HaSTEWeights are the resource weights of the built-in HaSTE instances,
// in units of MB and vcores: w = (1/1024, 1), i.e. one point per GB of
// memory and one per virtual core.
//
// The paper (Yao et al., §3.3) leaves w_p to the operator. Its only worked
// numbers are the fitness scores of §3.4.1 (Eq. 1: 28 = 1·10 + 3·6 for a
// ⟨1 GB, 3 cores⟩ task on ⟨10 GB, 6 cores⟩), which use w = 1 per GB and 1
// per core. On the ⟨8 GB, 8 cores⟩ nodes of Tables 2-4 this is also the
// normalisation by node capacity (both resources count 8 points per node),
// the reading of the paper's "100 percent cpu and 90 percent memory" question.
var HaSTEWeights = []float64{1.0 / 1024, 1}

// gb is one gigabyte in MB.
const gb = 1024

// hasteJob is one row of the paper's Tables 2-5: a job's map tasks.
type hasteJob struct {
	id         string
	maps       int // #Map as printed (summed over iterations for iterative jobs)
	iterations int // #Iteration (1 for non-iterative jobs)
	memGB      int64
	vcores     int64
}

// hasteTables are the map-task rows of Tables 2-5 of Yao et al. (IEEE TCC
// 2021), §4.1, Tables 2-5.
//
// The first batch ITA assigns (§3.2: "assign the first batch of tasks ...
// when all ApplicationMasters have submitted the resource requests") is the
// map tasks of every job (reduce tasks wait for maps). For iterative jobs
// (Pagerank, Kmeans) #Map is "the sum of all iterations" (table footnote a),
// and only the first iteration's maps are pending at the start, so the
// count is ⌈#Map/#Iteration⌉ (the paper does not give the split; 37 maps in
// 2 iterations is taken as 19 in the first).
var hasteTables = map[string]struct {
	nodes  int
	memGB  int64
	vcores int64
	jobs   []hasteJob
	source string
}{
	// §5.2 (line 249): 8 nodes ⟨8G, 8 cores⟩; Table 2: four WordCount jobs.
	"haste-table2": {8, 8, 8, []hasteJob{
		{"job1-map", 52, 1, 1, 2},
		{"job2-map", 52, 1, 1, 3},
		{"job3-map", 52, 1, 1, 4},
		{"job4-map", 52, 1, 1, 5},
	}, "Table 2 (simple workload), 8 nodes <8 GB, 8 vcores> (§5.2)"},
	// Table 3: Terasort, WordCount, WordMean, PiEstimate, two jobs each.
	"haste-table3": {8, 8, 8, []hasteJob{
		{"terasort1-map", 38, 1, 3, 1},
		{"terasort2-map", 76, 1, 4, 1},
		{"wordcount3-map", 52, 1, 2, 3},
		{"wordcount4-map", 26, 1, 2, 4},
		{"wordmean5-map", 52, 1, 2, 2},
		{"wordmean6-map", 26, 1, 2, 1},
		{"piestimate7-map", 50, 1, 1, 3},
		{"piestimate8-map", 100, 1, 1, 4},
	}, "Table 3 (mixed workload case 1), 8 nodes <8 GB, 8 vcores> (§5.2)"},
	// Table 4 (§5.2.3, same 8-node cluster; Fig. 7 text: 64 GB in total).
	"haste-table4": {8, 8, 8, []hasteJob{
		{"terasort-map", 96, 1, 3, 1},
		{"wordcount-map", 81, 1, 1, 3},
		{"scan-map", 20, 1, 1, 1},
		{"pagerank-map", 37, 2, 2, 2},
		{"kmeans-map", 120, 6, 2, 3},
	}, "Table 4 (mixed workload case 2), 8 nodes <8 GB, 8 vcores> (§5.2)"},
	// §5.4 (line 386): 20 nodes ⟨32G, 16 cores⟩; Table 5. The printed job
	// ids of WordCount are "2 4"; they are jobs 3 and 4.
	"haste-table5": {20, 32, 16, []hasteJob{
		{"terasort1-map", 24, 1, 3, 1},
		{"terasort2-map", 96, 1, 5, 2},
		{"wordcount3-map", 36, 1, 2, 3},
		{"wordcount4-map", 162, 1, 4, 4},
		{"dfsioe5-map", 64, 1, 1, 1},
		{"dfsioe6-map", 64, 1, 3, 3},
		{"pagerank7-map", 37, 2, 1, 3},
		{"pagerank8-map", 37, 2, 2, 5},
		{"kmeans9-map", 16, 4, 2, 2},
		{"kmeans10-map", 100, 5, 4, 4},
	}, "Table 5 (mixed workload case 3), 20 nodes <32 GB, 16 vcores> (§5.4)"},
}

// BuiltinNames lists the built-in instance names, sorted.
func BuiltinNames() []string {
	names := make([]string, 0, len(hasteTables))
	for n := range hasteTables {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// BuiltinDescription says where a built-in instance comes from.
func BuiltinDescription(name string) string { return hasteTables[name].source }

// BuiltinInstance returns a fresh copy of a named built-in instance:
// haste-table2 … haste-table5, the first batch of map tasks of the paper's
// workloads, capacities and demands in MB and vcores, weights HaSTEWeights.
func BuiltinInstance(name string) (*Instance, error) {
	t, ok := hasteTables[name]
	if !ok {
		return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownInstance, name, strings.Join(BuiltinNames(), ", "))
	}
	in := &Instance{Weights: slices.Clone(HaSTEWeights)}
	for j := 1; j <= t.nodes; j++ {
		in.Nodes = append(in.Nodes, Node{ID: fmt.Sprintf("node%d", j), Capacity: []int64{t.memGB * gb, t.vcores}})
	}
	for _, job := range t.jobs {
		count := (job.maps + job.iterations - 1) / job.iterations
		in.Tasks = append(in.Tasks, TaskType{ID: job.id, Demand: []int64{job.memGB * gb, job.vcores}, Count: count})
	}
	return in, nil
}
