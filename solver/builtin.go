package solver

import (
	"fmt"
	"slices"
	"strings"

	"github.com/optd/optd/internal/errkind"
	"github.com/optd/optd/models/haste"
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

// BuiltinNames lists the built-in instance names, sorted: one per table of
// package haste (the HaSTE paper's Tables 2-5).
func BuiltinNames() []string { return haste.Names() }

// BuiltinDescription says where a built-in instance comes from.
func BuiltinDescription(name string) string {
	t, _ := haste.Lookup(name)
	return t.Source
}

// BuiltinInstance returns a fresh copy of a named built-in instance:
// haste-table2 … haste-table5, the first batch of map tasks of the paper's
// workloads, capacities and demands in MB and vcores, weights HaSTEWeights.
//
// The first batch ITA assigns (§3.2: "assign the first batch of tasks ...
// when all ApplicationMasters have submitted the resource requests") is the
// map tasks of every job (reduce tasks wait for maps); for an iterative job
// (Pagerank, Kmeans) only its first iteration's maps are pending at the
// start (haste.Job.MapsPerIteration). A task type is named after its job
// with "-map" appended.
func BuiltinInstance(name string) (*Instance, error) {
	t, ok := haste.Lookup(name)
	if !ok {
		return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownInstance, name, strings.Join(BuiltinNames(), ", "))
	}
	in := &Instance{Weights: slices.Clone(HaSTEWeights)}
	for j := 1; j <= t.Nodes; j++ {
		in.Nodes = append(in.Nodes, Node{ID: fmt.Sprintf("node%d", j), Capacity: []int64{t.NodeMemGB * gb, t.NodeVCores}})
	}
	for _, job := range t.Jobs {
		in.Tasks = append(in.Tasks, TaskType{ID: job.ID + "-map", Demand: []int64{job.MapMemGB * gb, job.MapVCores}, Count: job.MapsPerIteration()})
	}
	return in, nil
}
