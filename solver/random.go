package solver

import (
	"fmt"
	"math/rand/v2"
)

// RandomSpec describes a family of random instances.
type RandomSpec struct {
	Nodes     int // number of nodes (≥ 1)
	Types     int // number of task types (≥ 1)
	Resources int // k (≥ 1)
	// Classes is the number of distinct node capacities; nodes are spread
	// over them round-robin. 0 means every node draws its own capacity
	// (heterogeneous cluster).
	Classes int
	// CapMin and CapMax bound each capacity component, drawn uniformly
	// (defaults 16 and 64).
	CapMin, CapMax int64
	// DemandMaxFrac caps a demand component at this fraction of CapMin
	// (default 0.5); demands are drawn uniformly in [1, DemandMaxFrac·CapMin].
	DemandMaxFrac float64
	// Supply is the ratio of the total demand of all tasks to the total
	// capacity, per resource on average (default 1.5: more tasks than fit).
	Supply float64
	// Weights of the resources (default: all 1).
	Weights []float64
}

func (s RandomSpec) withDefaults() RandomSpec {
	if s.CapMin == 0 {
		s.CapMin = 16
	}
	if s.CapMax == 0 {
		s.CapMax = 64
	}
	if s.DemandMaxFrac == 0 {
		s.DemandMaxFrac = 0.5
	}
	if s.Supply == 0 {
		s.Supply = 1.5
	}
	return s
}

// RandomInstance draws an instance from spec with the given source of
// randomness; the same seed gives the same instance. Every task type fits
// on every node (demands are at most DemandMaxFrac·CapMin ≤ CapMin). Task
// counts split Supply × (total capacity) of demand evenly across types:
// count_i = max(1, round(Supply·Σ_j Σ_p C[j,p] / (n·Σ_p R[i,p]))).
func RandomInstance(rng *rand.Rand, spec RandomSpec) (*Instance, error) {
	s := spec.withDefaults()
	switch {
	case s.Nodes < 1 || s.Nodes > MaxNodes:
		return nil, invalid("spec.Nodes", s.Nodes, "must be in [1, %d]", MaxNodes)
	case s.Types < 1 || s.Types > MaxTaskTypes:
		return nil, invalid("spec.Types", s.Types, "must be in [1, %d]", MaxTaskTypes)
	case s.Resources < 1 || s.Resources > MaxResources:
		return nil, invalid("spec.Resources", s.Resources, "must be in [1, %d]", MaxResources)
	case s.CapMin < 1 || s.CapMax < s.CapMin || s.CapMax > MaxQuantity:
		return nil, invalid("spec.CapMin", fmt.Sprintf("%d..%d", s.CapMin, s.CapMax), "need 1 ≤ CapMin ≤ CapMax ≤ %d", MaxQuantity)
	case s.DemandMaxFrac <= 0 || s.DemandMaxFrac > 1:
		return nil, invalid("spec.DemandMaxFrac", s.DemandMaxFrac, "must be in (0, 1]")
	case s.Supply <= 0:
		return nil, invalid("spec.Supply", s.Supply, "must be positive")
	case s.Weights != nil && len(s.Weights) != s.Resources:
		return nil, invalid("spec.Weights", len(s.Weights), "want %d weights", s.Resources)
	}
	in := &Instance{Weights: s.Weights}
	if in.Weights == nil {
		in.Weights = make([]float64, s.Resources)
		for p := range in.Weights {
			in.Weights[p] = 1
		}
	}
	classes := s.Classes
	if classes <= 0 || classes > s.Nodes {
		classes = s.Nodes
	}
	shapes := make([][]int64, classes)
	for c := range shapes {
		shapes[c] = make([]int64, s.Resources)
		for p := range shapes[c] {
			shapes[c][p] = s.CapMin + rng.Int64N(s.CapMax-s.CapMin+1)
		}
	}
	var totalCap int64
	for j := 0; j < s.Nodes; j++ {
		c := shapes[j%classes]
		in.Nodes = append(in.Nodes, Node{ID: fmt.Sprintf("n%d", j+1), Capacity: append([]int64(nil), c...)})
		for _, q := range c {
			totalCap += q
		}
	}
	dmax := max(1, int64(s.DemandMaxFrac*float64(s.CapMin)))
	for i := 0; i < s.Types; i++ {
		d := make([]int64, s.Resources)
		var size int64
		for p := range d {
			d[p] = 1 + rng.Int64N(dmax)
			size += d[p]
		}
		count := int(s.Supply*float64(totalCap)/float64(int64(s.Types)*size) + 0.5)
		count = min(max(count, 1), MaxCount)
		in.Tasks = append(in.Tasks, TaskType{ID: fmt.Sprintf("t%d", i+1), Demand: d, Count: count})
	}
	return in, in.Validate()
}
