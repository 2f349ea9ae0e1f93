package solver

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Family is a named generator of Initial Task Assignment instances of one
// kind a scheduler meets: the robustness suite of the exact method (the
// benchmark report runs optd, CBC and HiGHS on every instance of every
// family; the tests check the exact method against them). Instances are
// drawn from the PCG stream (seed, the family's stream), so the same
// family and seed give the same instance on every machine.
type Family struct {
	// Name identifies the family (FamilyInstance, `optd ita --family`).
	Name string
	// Description says what the instances look like.
	Description string
	stream      uint64
	draw        func(rng *rand.Rand) *Instance
}

// Instance draws the instance of the family with this seed.
func (f Family) Instance(seed uint64) *Instance {
	return f.draw(rand.New(rand.NewPCG(seed, f.stream)))
}

// FamilySeeds is the number of seeds per family in the suite (seeds
// 0..FamilySeeds−1): 13 families × 10 seeds = 130 instances.
const FamilySeeds = 10

// Families returns the families of the robustness suite.
func Families() []Family {
	return []Family{
		{"hetero-3r", "30-50 heterogeneous nodes, 8-12 types, 3 resources; the third has small demands (1-20 of 50-200) and weight 0.1", 1, drawHetero3R},
		{"yarn", "40-80 YARN-like nodes (64-128 GB in MB, 16-48 vcores), 10-20 container shapes (0.5-8 GB, 1-4 vcores), 1.2-2 times more tasks than fit; weights 1/1024 and 1", 2, drawYARN},
		{"identical", "100 identical nodes, 8-12 types, 2 resources", 3, drawIdentical},
		{"large", "400 nodes of 8 hardware classes × 20 types, 2 resources", 4, drawLarge},
		{"zero-demand", "20-40 nodes, 3 resources, 30% of the demands 0, scarce supply (0.6-0.9 of the capacity)", 5, drawZeroDemand},
		{"memory-only", "20-60 nodes, 10-30 types, one resource (memory in MB)", 6, drawMemoryOnly},
		{"many-resources", "10-30 nodes, 6-12 types, 4-6 resources", 7, uniformFamily{resources: [2]int{4, 6},
			nodes: [2]int{10, 30}, types: [2]int{6, 12}, capLo: 16, capHi: 64, demandLo: 1, demandHi: 8, supply: [2]float64{1.5, 1.5}}.draw},
		{"nearly-fits", "20-50 nodes, 10-20 small types whose total demand is 0.95-1.05 of the capacity", 8, uniformFamily{weights: []float64{1, 1},
			nodes: [2]int{20, 50}, types: [2]int{10, 20}, capLo: 32, capHi: 64, demandLo: 1, demandHi: 4, supply: [2]float64{0.95, 1.05}}.draw},
		{"tight", "10-30 nodes, 5-10 large types (20-60% of a node), twice more tasks than fit", 9, uniformFamily{weights: []float64{1, 1},
			nodes: [2]int{10, 30}, types: [2]int{5, 10}, capLo: 80, capHi: 100, demandLo: 16, demandHi: 48, supply: [2]float64{2, 2}}.draw},
		{"huge-small", "20-50 nodes, 8-16 types: half huge (30-70% of a node), half small (1-5%)", 10, drawHugeSmall},
		{"tiny-types", "10-30 nodes, 100-200 task types of tiny demands", 11, uniformFamily{weights: []float64{1, 1},
			nodes: [2]int{10, 30}, types: [2]int{100, 200}, capLo: 32, capHi: 64, demandLo: 1, demandHi: 4, supply: [2]float64{1.5, 1.5}}.draw},
		{"live-cluster", "20-60 nodes whose free capacity is 0 in some resource, task types larger than every node, some counts 0", 12, drawLiveCluster},
		{"single-node", "one node, 10-40 types, 2-3 resources", 13, uniformFamily{resources: [2]int{2, 3},
			nodes: [2]int{1, 1}, types: [2]int{10, 40}, capLo: 100, capHi: 400, demandLo: 1, demandHi: 60, supply: [2]float64{1.5, 1.5}}.draw},
	}
}

// FamilyNames lists the names of Families.
func FamilyNames() []string {
	var names []string
	for _, f := range Families() {
		names = append(names, f.Name)
	}
	return names
}

// FamilyInstance draws the instance of the named family with this seed.
func FamilyInstance(name string, seed uint64) (*Instance, error) {
	for _, f := range Families() {
		if f.Name == name {
			return f.Instance(seed), nil
		}
	}
	return nil, fmt.Errorf("%w: unknown family %q (want one of %v)", ErrInvalidInstance, name, FamilyNames())
}

// between draws uniformly from [lo, hi] (lo itself, drawing nothing, when
// hi = lo).
func between(rng *rand.Rand, lo, hi int) int {
	if hi == lo {
		return lo
	}
	return lo + rng.IntN(hi-lo+1)
}

// between64 draws uniformly from [lo, hi].
func between64(rng *rand.Rand, lo, hi int64) int64 { return lo + rng.Int64N(hi-lo+1) }

// familyBuilder assembles an instance: nodes and task types with ids n1…
// and t1….
type familyBuilder struct{ in Instance }

func (b *familyBuilder) node(c []int64) {
	b.in.Nodes = append(b.in.Nodes, Node{ID: fmt.Sprintf("n%d", len(b.in.Nodes)+1), Capacity: c})
}

func (b *familyBuilder) task(d []int64, count int) {
	b.in.Tasks = append(b.in.Tasks, TaskType{ID: fmt.Sprintf("t%d", len(b.in.Tasks)+1), Demand: d, Count: count})
}

// counts sets each task type's count so that the whole supply demands
// about supply × the cluster's capacity in every resource, split evenly
// over the types: count_i = round(supply/n · min_p ΣC_p/R[i,p]) over the
// resources type i uses, at least 1.
func (b *familyBuilder) counts(supply float64) {
	k := b.in.Resources()
	total := make([]float64, k)
	for _, n := range b.in.Nodes {
		for p, c := range n.Capacity {
			total[p] += float64(c)
		}
	}
	for i := range b.in.Tasks {
		t := &b.in.Tasks[i]
		share := math.Inf(1)
		for p, d := range t.Demand {
			if d > 0 {
				share = math.Min(share, total[p]/float64(d))
			}
		}
		c := 1.0
		if !math.IsInf(share, 1) {
			c = math.Max(1, math.Round(supply*share/float64(len(b.in.Tasks))))
		}
		t.Count = int(math.Min(c, MaxCount))
	}
}

func (b *familyBuilder) done() *Instance { in := b.in; return &in }

// uniformVec draws each component from [lo_p, hi_p].
func uniformVec(rng *rand.Rand, lo, hi []int64) []int64 {
	v := make([]int64, len(lo))
	for p := range v {
		v[p] = between64(rng, lo[p], hi[p])
	}
	return v
}

func drawHetero3R(rng *rand.Rand) *Instance {
	b := &familyBuilder{in: Instance{Weights: []float64{1, 1, 0.1}}}
	for range between(rng, 30, 50) {
		b.node(uniformVec(rng, []int64{16, 16, 50}, []int64{64, 64, 200}))
	}
	for range between(rng, 8, 12) {
		b.task(uniformVec(rng, []int64{1, 1, 1}, []int64{8, 8, 20}), 0)
	}
	b.counts(1.5)
	return b.done()
}

func drawYARN(rng *rand.Rand) *Instance {
	b := &familyBuilder{in: Instance{Weights: []float64{1.0 / 1024, 1}}}
	for range between(rng, 40, 80) {
		b.node([]int64{1024 * between64(rng, 64, 128), between64(rng, 16, 48)})
	}
	for range between(rng, 10, 20) {
		b.task([]int64{512 * between64(rng, 1, 16), between64(rng, 1, 4)}, 0)
	}
	b.counts(1.2 + 0.8*rng.Float64())
	return b.done()
}

// drawClasses draws nodes nodes of classes distinct capacities (round
// robin) and types task types of demands up to half the smallest capacity.
func drawClasses(rng *rand.Rand, nodes, classes, types int) *Instance {
	b := &familyBuilder{in: Instance{Weights: []float64{1, 1}}}
	shapes := make([][]int64, classes)
	for c := range shapes {
		shapes[c] = uniformVec(rng, []int64{16, 16}, []int64{64, 64})
	}
	for j := range nodes {
		b.node(slices.Clone(shapes[j%classes]))
	}
	for range types {
		b.task(uniformVec(rng, []int64{1, 1}, []int64{8, 8}), 0)
	}
	b.counts(1.5)
	return b.done()
}

func drawIdentical(rng *rand.Rand) *Instance { return drawClasses(rng, 100, 1, between(rng, 8, 12)) }

func drawLarge(rng *rand.Rand) *Instance { return drawClasses(rng, 400, 8, 20) }

func drawZeroDemand(rng *rand.Rand) *Instance {
	b := &familyBuilder{in: Instance{Weights: []float64{1, 1, 1}}}
	for range between(rng, 20, 40) {
		b.node(uniformVec(rng, []int64{16, 16, 16}, []int64{64, 64, 64}))
	}
	for range between(rng, 8, 12) {
		d := uniformVec(rng, []int64{1, 1, 1}, []int64{12, 12, 12})
		for p := range d {
			if rng.Float64() < 0.3 {
				d[p] = 0
			}
		}
		if slices.Max(d) == 0 {
			d[rng.IntN(len(d))] = between64(rng, 1, 12)
		}
		b.task(d, 0)
	}
	b.counts(0.6 + 0.3*rng.Float64())
	return b.done()
}

func drawMemoryOnly(rng *rand.Rand) *Instance {
	b := &familyBuilder{}
	for range between(rng, 20, 60) {
		b.node([]int64{1024 * between64(rng, 16, 64)})
	}
	for range between(rng, 10, 30) {
		b.task([]int64{256 * between64(rng, 1, 32)}, 0)
	}
	b.counts(1.5)
	return b.done()
}

func drawHugeSmall(rng *rand.Rand) *Instance {
	b := &familyBuilder{in: Instance{Weights: []float64{1, 1}}}
	for range between(rng, 20, 50) {
		b.node(uniformVec(rng, []int64{90, 90}, []int64{110, 110}))
	}
	types := between(rng, 8, 16)
	for i := range types {
		if i%2 == 0 {
			b.task(uniformVec(rng, []int64{30, 30}, []int64{70, 70}), 0)
		} else {
			b.task(uniformVec(rng, []int64{1, 1}, []int64{5, 5}), 0)
		}
	}
	b.counts(1.3)
	return b.done()
}

func drawLiveCluster(rng *rand.Rand) *Instance {
	b := &familyBuilder{in: Instance{Weights: []float64{1.0 / 1024, 1}}}
	for range between(rng, 20, 60) {
		c := []int64{512 * between64(rng, 0, 64), between64(rng, 0, 16)}
		switch r := rng.Float64(); {
		case r < 0.15:
			c[0] = 0 // memory used up
		case r < 0.3:
			c[1] = 0 // vcores used up
		}
		b.node(c)
	}
	for range between(rng, 8, 16) {
		d := []int64{512 * between64(rng, 1, 16), between64(rng, 1, 4)}
		if rng.Float64() < 0.15 {
			d[0] = 512 * between64(rng, 65, 128) // larger than every node's free memory
		}
		b.task(d, 0)
	}
	b.counts(1.5)
	for i := range b.in.Tasks {
		if rng.Float64() < 0.1 {
			b.in.Tasks[i].Count = 0
		}
	}
	return b.done()
}

// uniformFamily is a family whose nodes and task types draw every
// resource uniformly from the same ranges.
type uniformFamily struct {
	weights            []float64 // nil: k resources of weight 1 (k from resources)
	resources          [2]int    // k drawn from [lo, hi] when weights is nil
	nodes, types       [2]int    // counts drawn from [lo, hi]
	capLo, capHi       int64     // each capacity component
	demandLo, demandHi int64     // each demand component
	supply             [2]float64
}

func (f uniformFamily) draw(rng *rand.Rand) *Instance {
	k := len(f.weights)
	if k == 0 {
		k = between(rng, f.resources[0], f.resources[1])
	}
	b := &familyBuilder{in: Instance{Weights: f.weights}}
	lo, hi, dlo, dhi := make([]int64, k), make([]int64, k), make([]int64, k), make([]int64, k)
	for p := range k {
		lo[p], hi[p], dlo[p], dhi[p] = f.capLo, f.capHi, f.demandLo, f.demandHi
	}
	for range between(rng, f.nodes[0], f.nodes[1]) {
		b.node(uniformVec(rng, lo, hi))
	}
	for range between(rng, f.types[0], f.types[1]) {
		b.task(uniformVec(rng, dlo, dhi), 0)
	}
	b.counts(f.supply[0] + (f.supply[1]-f.supply[0])*rng.Float64())
	return b.done()
}
