package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
	"github.com/optd/optd/policy/sharing"
	"github.com/optd/optd/policy/slots"
	"github.com/optd/optd/policy/speculation"
)

// boundSlack is the floating-point rounding a simulated time may show
// below the exact time of the model (the simulator accumulates work in
// float64 and ends a task within 1e-9 of its work).
func boundSlack(v float64) float64 { return 1e-9 * math.Max(1, math.Abs(v)) }

// randomBoundScenario draws a small cluster scenario: 2-4 nodes of either
// resource vectors (memory, vcores) or MRv1 slots with a vcores capacity,
// sometimes a straggler; 1-4 jobs submitted over [0, 30] s with 1-2
// stages, 0-6 maps and 0-3 reduces of uniform or listed works, sometimes
// skewed.
func randomBoundScenario(rng *rand.Rand, slots bool) *ClusterScenario {
	sc := &ClusterScenario{Name: fmt.Sprintf("random-slots=%v", slots), HeartbeatS: 1 + float64(rng.IntN(3)), ReduceRamp: rng.IntN(2) == 0}
	if slots {
		sc.Cluster.Resources = models.ResourceNames{models.ResourceVCores}
	} else {
		sc.Cluster.Resources = models.MemoryVCores()
	}
	nodes := 2 + rng.IntN(3)
	for i := range nodes {
		n := models.Node{ID: fmt.Sprintf("n%d", i), Rack: fmt.Sprintf("r%d", i%2)}
		if slots {
			n.Capacity = models.Resources{int64(4 + rng.IntN(5))}
			n.MapSlots, n.ReduceSlots = 1+rng.IntN(3), 1+rng.IntN(2)
		} else {
			n.Capacity = models.Resources{int64(4096 * (1 + rng.IntN(3))), int64(2 + rng.IntN(7))}
		}
		sc.Cluster.Nodes = append(sc.Cluster.Nodes, n)
	}
	if rng.IntN(3) == 0 {
		sc.Stragglers = []Straggler{{Node: "n0", Speed: 0.3 + 0.5*rng.Float64()}}
	}
	demand := func() models.Resources {
		if slots {
			return models.Resources{1}
		}
		return models.Resources{int64(1024 * (1 + rng.IntN(4))), int64(1 + rng.IntN(2))}
	}
	for k := range 1 + rng.IntN(4) {
		j := ClusterJob{ID: fmt.Sprintf("j%d", k), SubmitS: math.Round(30 * rng.Float64()), Stages: 1 + rng.IntN(2),
			Maps: rng.IntN(7), Reduces: rng.IntN(4),
			Demand:  map[models.TaskType]models.Resources{models.MapTask: demand(), models.ReduceTask: demand()},
			MapWork: uniformAround(5 + 20*rng.Float64()), ReduceWork: uniformAround(5 + 30*rng.Float64())}
		if j.Maps+j.Reduces == 0 {
			j.Maps = 1
		}
		if rng.IntN(3) == 0 {
			j.MapSkew = Skew{Fraction: 0.3, Factor: 3}
		}
		if rng.IntN(3) == 0 && j.Maps > 0 {
			for range j.Maps * j.Stages {
				j.MapWorks = append(j.MapWorks, 1+math.Round(20*rng.Float64()))
			}
		}
		sc.Jobs = append(sc.Jobs, j)
	}
	return sc
}

// boundSpecs are every registered assignment policy alone, and fair with
// every add-on (speculation, sharing, slot policies and filters), so that
// each kind of action the simulator accepts is exercised.
func boundSpecs() []string {
	specs := policy.AssignmentNames()
	for _, a := range policy.AddOnNames() {
		specs = append(specs, "fair+"+a)
	}
	return append(specs, slots.NamePIDHSA+"+"+speculation.NameSEPB)
}

// TestClusterLowerBoundBelowEveryPolicy: on small random scenarios (resource
// and slot clusters) and several seeds, the bound of ClusterLowerBound with
// the pipeline's BoundOptionsFor is at most the simulated makespan and mean
// response time of every registered pipeline, and the bound for any policy
// (Sharing and SlotChanges) is never above it.
func TestClusterLowerBoundBelowEveryPolicy(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	specs := boundSpecs()
	for k := range 6 {
		sc := randomBoundScenario(rng, k%2 == 1)
		for seed := uint64(1); seed <= 2; seed++ {
			general, err := ClusterLowerBound(sc, ClusterBoundOptions{Seed: seed, Sharing: true, SlotChanges: true})
			if err != nil {
				t.Fatal(err)
			}
			if !(general.MakespanS > 0 && general.MeanResponseS > 0) {
				t.Fatalf("scenario %d seed %d: vacuous bound %+v", k, seed, general)
			}
			for _, spec := range specs {
				pipe, err := policy.NewPipeline(spec, policy.HeartbeatConfig{Seed: seed})
				if err != nil {
					t.Fatal(err)
				}
				r, err := RunCluster(context.Background(), sc, pipe, ClusterOptions{Seed: seed})
				if err != nil {
					t.Fatalf("scenario %d (%s) under %s: %v", k, sc.Name, spec, err)
				}
				b, err := ClusterLowerBound(sc, BoundOptionsFor(pipe, seed))
				if err != nil {
					t.Fatal(err)
				}
				if b.MakespanS > r.MakespanS+boundSlack(r.MakespanS) || b.MeanResponseS > r.MeanResponseS+boundSlack(r.MeanResponseS) {
					t.Errorf("scenario %d (%s) seed %d under %s: bound %+v above the run (makespan %.9g s, mean response %.9g s)",
						k, sc.Name, seed, spec, b, r.MakespanS, r.MeanResponseS)
				}
				if general.MakespanS > b.MakespanS+boundSlack(b.MakespanS) || general.MeanResponseS > b.MeanResponseS+boundSlack(b.MeanResponseS) {
					t.Errorf("scenario %d seed %d under %s: the bound for any policy %+v is above the pipeline's %+v", k, seed, spec, general, b)
				}
			}
		}
	}
}

// oneTaskScenario is one job of one map of work w on one node of 8 vcores
// requesting 1: heartbeat at 0, so the map runs on [0, w].
func oneTaskScenario(w float64) *ClusterScenario {
	sc := &ClusterScenario{Name: "one-task"}
	sc.Cluster.Resources = models.MemoryVCores()
	sc.Cluster.Nodes = []models.Node{{ID: "n", Rack: "r", Capacity: models.Resources{8192, 8}}}
	sc.Jobs = []ClusterJob{{ID: "j", Maps: 1, MapWorks: []float64{w}, Demand: map[models.TaskType]models.Resources{models.MapTask: {1024, 1}}}}
	return sc
}

// The critical path is attained when nothing waits: one map alone.
func TestClusterLowerBoundTight(t *testing.T) {
	sc := oneTaskScenario(42)
	r := runCluster(t, sc, "fifo", 1)
	b, err := ClusterLowerBound(sc, ClusterBoundOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(b.MakespanS-r.MakespanS) > 1e-9 || math.Abs(b.MeanResponseS-r.MeanResponseS) > 1e-9 || r.MakespanS != 42 {
		t.Fatalf("bound %+v, run makespan %g, mean response %g: want all 42", b, r.MakespanS, r.MeanResponseS)
	}
}

// Sharing is needed: resource stealing lends the node's idle vcores to the
// lone map, which then beats the bound for policies that never share; the
// bound with Sharing still holds.
func TestClusterLowerBoundSharing(t *testing.T) {
	sc := oneTaskScenario(100)
	spec := "fifo+" + sharing.NameResourceStealingPrefix + sharing.StealEven.String()
	r := runCluster(t, sc, spec, 1)
	plain, err := ClusterLowerBound(sc, ClusterBoundOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r.MakespanS >= plain.MakespanS {
		t.Fatalf("%s: makespan %g not below the no-sharing bound %g: the test no longer shows why Sharing exists", spec, r.MakespanS, plain.MakespanS)
	}
	pipe, err := policy.NewPipeline(spec, policy.HeartbeatConfig{})
	if err != nil {
		t.Fatal(err)
	}
	shared, err := ClusterLowerBound(sc, BoundOptionsFor(pipe, 1))
	if err != nil {
		t.Fatal(err)
	}
	if shared.MakespanS > r.MakespanS {
		t.Fatalf("%s: makespan %g below the bound with sharing %g", spec, r.MakespanS, shared.MakespanS)
	}
}

// The area terms: a batch of equal single-map jobs on one node that runs
// one at a time finishes the last at n·w (B4), and SRPT's mean flow is
// (n+1)·w/2 (B6), both attained by FIFO.
func TestClusterLowerBoundArea(t *testing.T) {
	const n, w = 4, 10.0
	sc := oneTaskScenario(w)
	sc.Cluster.Nodes[0].Capacity = models.Resources{1024, 1}
	for k := 1; k < n; k++ {
		j := sc.Jobs[0]
		j.ID = fmt.Sprintf("j%d", k)
		sc.Jobs = append(sc.Jobs, j)
	}
	b, err := ClusterLowerBound(sc, ClusterBoundOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if b.AreaMakespanS != n*w || b.SRPTResponseS != (n+1)*w/2 || b.Binding != models.ResourceMemoryMB {
		t.Fatalf("bound %+v: want area makespan %g (memory_mb), SRPT mean response %g", b, n*w, (n+1)*w/2)
	}
	// Heartbeats every second: each next map waits at most for the next one.
	r := runCluster(t, sc, "fifo", 1)
	if r.MakespanS < b.MakespanS || r.MakespanS > b.MakespanS+n {
		t.Fatalf("fifo makespan %g, bound %g", r.MakespanS, b.MakespanS)
	}
}

// srptTotalFlow is checked by hand on a preemption and against every
// non-preemptive order (which it can never exceed) on random instances.
func TestSRPTTotalFlow(t *testing.T) {
	// Job 0 runs [0, 1], job 1 preempts it on [1, 2], job 0 ends at 5.
	if got := srptTotalFlow([]float64{0, 1}, []float64{4, 1}); got != 6 {
		t.Fatalf("SRPT total flow %g, want 6", got)
	}
	rng := rand.New(rand.NewPCG(3, 5))
	for range 50 {
		n := 1 + rng.IntN(5)
		rel, proc := make([]float64, n), make([]float64, n)
		for i := range n {
			rel[i], proc[i] = float64(rng.IntN(10)), float64(rng.IntN(6))
		}
		srpt := srptTotalFlow(rel, proc)
		best := math.Inf(1)
		perm := make([]int, n)
		for i := range perm {
			perm[i] = i
		}
		for ok := true; ok; ok = nextPermutation(perm) {
			var now, flow float64
			for _, i := range perm {
				now = max(now, rel[i]) + proc[i]
				flow += now - rel[i]
			}
			best = min(best, flow)
		}
		var sum float64
		for _, p := range proc {
			sum += p
		}
		if srpt > best+1e-9 || srpt < sum-1e-9 {
			t.Fatalf("releases %v, works %v: SRPT flow %g, best non-preemptive %g, total work %g", rel, proc, srpt, best, sum)
		}
	}
}

// nextPermutation advances p to the next permutation in lexicographic
// order and reports false after the last.
func nextPermutation(p []int) bool {
	i := len(p) - 2
	for i >= 0 && p[i] >= p[i+1] {
		i--
	}
	if i < 0 {
		return false
	}
	j := len(p) - 1
	for p[j] <= p[i] {
		j--
	}
	p[i], p[j] = p[j], p[i]
	slices.Reverse(p[i+1:])
	return true
}

// A scenario the simulator would refuse gets the same error.
func TestClusterLowerBoundInvalid(t *testing.T) {
	sc := oneTaskScenario(1)
	sc.Jobs[0].SubmitS = -1
	_, err := ClusterLowerBound(sc, ClusterBoundOptions{})
	if !errors.Is(err, ErrInvalidScenario) || !strings.Contains(err.Error(), "jobs[0].submit_s") {
		t.Fatalf("error %v, want ErrInvalidScenario naming jobs[0].submit_s", err)
	}
}
