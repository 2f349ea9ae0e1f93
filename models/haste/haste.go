// Package haste holds the workloads of the HaSTE paper (Yao, Gao, Wang,
// Sheng, Mi, "Design and Implementation of a Scheduler for Hadoop YARN",
// IEEE TCC 2021, §4.1 and §5): its Tables 2-5, one job a row, and the
// cluster each table runs on. It is the one transcription of those tables:
// the Initial Task Assignment instances of package solver take their map
// rows, the cluster scenarios of package sim take every column.
package haste

import (
	"slices"
	"sort"
)

// Job is one row of a table: a job's benchmark, its iterations and tasks as
// printed, and the per-task requests ⟨GB, vcores⟩ R^m and R^r.
type Job struct {
	// ID is the job's name in the table ("job1", "terasort1").
	ID string
	// Bench is the benchmark ("wordcount", "terasort", ...).
	Bench string
	// Iterations is #Iteration (1 for a non-iterative job).
	Iterations int
	// Maps and Reduces are #Map and #Reduce as printed: summed over the
	// iterations of an iterative job (the tables' footnote a).
	Maps, Reduces int
	// MapMemGB, MapVCores, ReduceMemGB and ReduceVCores are the requests.
	MapMemGB, MapVCores       int64
	ReduceMemGB, ReduceVCores int64
}

// MapsPerIteration is ⌈#Map/#Iteration⌉, the maps of one iteration (the
// paper does not give the split; 37 maps in 2 iterations is taken as 19).
func (j Job) MapsPerIteration() int { return ceilDiv(j.Maps, j.Iterations) }

// ReducesPerIteration is ⌈#Reduce/#Iteration⌉.
func (j Job) ReducesPerIteration() int { return ceilDiv(j.Reduces, j.Iterations) }

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// Table is one of Tables 2-5 with its cluster: Nodes nodes of ⟨NodeMemGB,
// NodeVCores⟩.
type Table struct {
	// Name is "haste-table2" … "haste-table5".
	Name                  string
	Nodes                 int
	NodeMemGB, NodeVCores int64
	// Source says where in the paper the table and its cluster are.
	Source string
	Jobs   []Job
}

var tables = []Table{
	// §5.2 (line 249): 8 nodes ⟨8G, 8 cores⟩; Table 2: four WordCount jobs,
	// 52 maps and 5 reduces each.
	{"haste-table2", 8, 8, 8, "Table 2 (simple workload), 8 nodes <8 GB, 8 vcores> (§5.2)", []Job{
		{"job1", "wordcount", 1, 52, 5, 1, 2, 1, 2},
		{"job2", "wordcount", 1, 52, 5, 1, 3, 1, 2},
		{"job3", "wordcount", 1, 52, 5, 1, 4, 1, 3},
		{"job4", "wordcount", 1, 52, 5, 1, 5, 1, 3},
	}},
	// Table 3: Terasort, WordCount, WordMean, PiEstimate, two jobs each.
	{"haste-table3", 8, 8, 8, "Table 3 (mixed workload case 1), 8 nodes <8 GB, 8 vcores> (§5.2)", []Job{
		{"terasort1", "terasort", 1, 38, 6, 3, 1, 2, 1},
		{"terasort2", "terasort", 1, 76, 12, 4, 1, 2, 1},
		{"wordcount3", "wordcount", 1, 52, 12, 2, 3, 1, 2},
		{"wordcount4", "wordcount", 1, 26, 6, 2, 4, 1, 2},
		{"wordmean5", "wordmean", 1, 52, 8, 2, 2, 1, 1},
		{"wordmean6", "wordmean", 1, 26, 4, 2, 1, 1, 1},
		{"piestimate7", "piestimate", 1, 50, 1, 1, 3, 1, 1},
		{"piestimate8", "piestimate", 1, 100, 1, 1, 4, 1, 1},
	}},
	// Table 4 (§5.2.3, same 8-node cluster; Fig. 7 text: 64 GB in total):
	// mixed workload case 2, with the iterative Pagerank and Kmeans.
	{"haste-table4", 8, 8, 8, "Table 4 (mixed workload case 2), 8 nodes <8 GB, 8 vcores> (§5.2)", []Job{
		{"terasort", "terasort", 1, 96, 12, 3, 1, 2, 1},
		{"wordcount", "wordcount", 1, 81, 12, 1, 3, 1, 2},
		{"scan", "scan", 1, 20, 6, 1, 1, 1, 1},
		{"pagerank", "pagerank", 2, 37, 12, 2, 2, 2, 2},
		{"kmeans", "kmeans", 6, 120, 5, 2, 3, 1, 3},
	}},
	// §5.4 (line 386): 20 nodes ⟨32G, 16 cores⟩; Table 5, mixed workload
	// case 3. The printed job ids of WordCount are "2 4"; they are jobs 3
	// and 4.
	{"haste-table5", 20, 32, 16, "Table 5 (mixed workload case 3), 20 nodes <32 GB, 16 vcores> (§5.4)", []Job{
		{"terasort1", "terasort", 1, 24, 6, 3, 1, 4, 2},
		{"terasort2", "terasort", 1, 96, 6, 5, 2, 6, 4},
		{"wordcount3", "wordcount", 1, 36, 12, 2, 3, 1, 3},
		{"wordcount4", "wordcount", 1, 162, 12, 4, 4, 2, 5},
		{"dfsioe5", "dfsioe", 1, 64, 1, 1, 1, 1, 3},
		{"dfsioe6", "dfsioe", 1, 64, 1, 3, 3, 2, 4},
		{"pagerank7", "pagerank", 2, 37, 24, 1, 3, 2, 2},
		{"pagerank8", "pagerank", 2, 37, 24, 2, 5, 3, 4},
		{"kmeans9", "kmeans", 4, 16, 3, 2, 2, 1, 3},
		{"kmeans10", "kmeans", 5, 100, 4, 4, 4, 2, 4},
	}},
}

// Names lists the tables' names, sorted.
func Names() []string {
	names := make([]string, len(tables))
	for i, t := range tables {
		names[i] = t.Name
	}
	sort.Strings(names)
	return names
}

// Lookup returns a copy of the table named name.
func Lookup(name string) (Table, bool) {
	for _, t := range tables {
		if t.Name == name {
			t.Jobs = slices.Clone(t.Jobs)
			return t, true
		}
	}
	return Table{}, false
}
