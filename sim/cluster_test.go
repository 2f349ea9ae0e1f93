package sim

import (
	"context"
	"errors"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
)

func runCluster(t *testing.T, sc *ClusterScenario, spec string, seed uint64) *ClusterResult {
	t.Helper()
	pipe, err := policy.NewPipeline(spec, policy.HeartbeatConfig{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := RunCluster(context.Background(), sc, pipe, ClusterOptions{Seed: seed, CheckInvariants: true})
	if err != nil {
		t.Fatalf("%s under %s: %v", sc.Name, spec, err)
	}
	return r
}

// TestClusterInvariants runs built-in scenarios of every kind (resource
// vectors, MRv1 slots, iterative jobs, stragglers, skew, successive
// submissions) under every assignment policy with the invariants checked
// after every event: no node over capacity or slots, every task completed
// exactly once, no reducer finishing before its stage's maps, and nothing
// left running at the end.
func TestClusterInvariants(t *testing.T) {
	// Every policy on the iterative HaSTE table; three on the others (the
	// invariant checks cost O(cluster) per event).
	cases := map[string][]string{"haste-table4": policy.AssignmentNames()}
	if !testing.Short() {
		for _, n := range []string{"haste-table2", "dynamicmr-batch-5", "stealing-stragglers-2", "dynamicadjust-pagerank", "haste-table4-successive-60"} {
			cases[n] = []string{"fifo", "fair", "haste-a"}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(cases)) {
		for _, spec := range cases[name] {
			t.Run(name+"/"+spec, func(t *testing.T) {
				sc, err := BuiltinCluster(name)
				if err != nil {
					t.Fatal(err)
				}
				r := runCluster(t, sc, spec, 7)
				if r.Rejected != 0 {
					t.Errorf("%d actions rejected", r.Rejected)
				}
				if len(r.Jobs) != len(sc.Jobs) || !(r.MakespanS > 0) {
					t.Fatalf("jobs %d, makespan %v", len(r.Jobs), r.MakespanS)
				}
				for _, j := range r.Jobs {
					if j.FinishS < j.SubmitS || j.FinishS-r.MakespanS > 1e-9 {
						t.Errorf("job %s: submit %v finish %v makespan %v", j.ID, j.SubmitS, j.FinishS, r.MakespanS)
					}
				}
				busy := false
				for k, u := range r.Utilization {
					if !(u >= 0 && u <= 1+1e-9) {
						t.Errorf("utilization %s = %v", k, u)
					}
					busy = busy || u > 0
				}
				if !busy {
					t.Errorf("utilization %v: nothing was used", r.Utilization)
				}
				if l := r.Locality; math.Abs(l.NodeLocal+l.RackLocal+l.OffRack-1) > 1e-9 {
					t.Errorf("locality shares sum to %v", l.NodeLocal+l.RackLocal+l.OffRack)
				}
			})
		}
	}
}

func TestClusterDeterministic(t *testing.T) {
	sc, _ := BuiltinCluster("haste-table3")
	a := runCluster(t, sc, "haste", 3)
	sc, _ = BuiltinCluster("haste-table3")
	b := runCluster(t, sc, "haste", 3)
	a.Series, b.Series = nil, nil
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("two runs with seed 3 differ:\n%+v\n%+v", a, b)
	}
	sc, _ = BuiltinCluster("haste-table3")
	c := runCluster(t, sc, "haste", 4)
	if c.MakespanS == a.MakespanS {
		t.Errorf("seeds 3 and 4 give the same makespan %v: the seed is not used", a.MakespanS)
	}
}

// oneNode is a one-node cluster with the given capacity and jobs.
func oneNode(capacity models.Resources, jobs ...ClusterJob) *ClusterScenario {
	sc := &ClusterScenario{Name: "one", HeartbeatS: 1, SlowStart: 1e-9}
	sc.Cluster.Resources = models.MemoryVCores()
	sc.Cluster.Nodes = []models.Node{{ID: "n1", Rack: "r1", Capacity: capacity}}
	sc.Jobs = jobs
	return sc
}

// TestShuffleBarrier: a reduce whose own work is short still finishes only
// after the stage's last map (its shuffle waits), then does the rest of
// its work: finish = map end + (1 − ShuffleFraction)·work.
func TestShuffleBarrier(t *testing.T) {
	d := models.Resources{1024, 1}
	job := ClusterJob{ID: "j", Maps: 2, Reduces: 1, MapWork: nil, MapWorks: []float64{10, 100}, ReduceWorks: []float64{6},
		Demand: map[models.TaskType]models.Resources{models.MapTask: d, models.ReduceTask: d}}
	r := runCluster(t, oneNode(models.Resources{8192, 8}, job), "fifo", 1)
	// Both maps start at 0; the reduce at the heartbeat after the first
	// map ends (t = 11, slow-start reached); maps end at 100; the reduce
	// then needs (2/3)·6 = 4 s.
	if got, want := r.Jobs[0].FinishS, 104.0; math.Abs(got-want) > 1e-6 {
		t.Fatalf("finish %v, want %v", got, want)
	}
}

// TestSpeedModel: Amdahl's law of granted over requested vcores.
func TestSpeedModel(t *testing.T) {
	req := models.Resources{1024, 2}
	for _, c := range []struct {
		g    int64
		p    float64
		want float64
	}{{2, 0.5, 1}, {4, 0.5, 1 / (0.5 + 0.25)}, {1, 0.5, 1 / (0.5 + 1)}, {8, 0.8, 1 / (0.2 + 0.2)}, {0, 0.5, 0}} {
		if got := speedOf(1, c.p, 1, req, models.Resources{1024, c.g}); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("g=%d p=%v: %v, want %v", c.g, c.p, got, c.want)
		}
	}
	if got := speedOf(0.5, 0.5, 1, req, req); got != 0.5 {
		t.Errorf("node speed 0.5: %v", got)
	}
	if got := speedOf(1, 0.5, -1, nil, nil); got != 1 {
		t.Errorf("no vcores dimension: %v", got)
	}
}

// TestIterativeStages: a job of 3 stages of one 10 s map runs them one
// after the other; each stage ends at an integer time, just before the
// node's heartbeat of that instant, which starts the next stage.
func TestIterativeStages(t *testing.T) {
	d := models.Resources{1024, 1}
	job := ClusterJob{ID: "it", Stages: 3, Maps: 1, MapWorks: []float64{10, 10, 10}, Demand: map[models.TaskType]models.Resources{models.MapTask: d}}
	r := runCluster(t, oneNode(models.Resources{8192, 8}, job), "fifo", 1)
	if got, want := r.Jobs[0].FinishS, 30.0; math.Abs(got-want) > 1e-6 {
		t.Fatalf("finish %v, want %v (stages at 0, 10, 20)", got, want)
	}
}

// TestStraggler: a node at speed 1/2 doubles a task's duration.
func TestStraggler(t *testing.T) {
	d := models.Resources{1024, 1}
	sc := oneNode(models.Resources{8192, 8}, ClusterJob{ID: "j", Maps: 1, MapWorks: []float64{10}, Demand: map[models.TaskType]models.Resources{models.MapTask: d}})
	sc.Stragglers = []Straggler{{Node: "n1", Speed: 0.5}}
	if got := runCluster(t, sc, "fifo", 1).Jobs[0].FinishS; math.Abs(got-20) > 1e-9 {
		t.Fatalf("finish %v, want 20", got)
	}
}

// TestUtilizationExact: one task holding half the node for 10 s of a 10 s
// makespan gives utilization 1/2 in both resources.
func TestUtilizationExact(t *testing.T) {
	d := models.Resources{4096, 4}
	sc := oneNode(models.Resources{8192, 8}, ClusterJob{ID: "j", Maps: 1, MapWorks: []float64{10}, Demand: map[models.TaskType]models.Resources{models.MapTask: d}})
	r := runCluster(t, sc, "fifo", 1)
	if r.MakespanS != 10 || math.Abs(r.Utilization[models.ResourceMemoryMB]-0.5) > 1e-12 || math.Abs(r.Utilization[models.ResourceVCores]-0.5) > 1e-12 {
		t.Fatalf("makespan %v utilization %v", r.MakespanS, r.Utilization)
	}
}

func TestClusterValidate(t *testing.T) {
	d := models.Resources{1024, 1}
	good := func() *ClusterScenario {
		return oneNode(models.Resources{8192, 8}, ClusterJob{ID: "j", Maps: 1, MapWorks: []float64{10}, Demand: map[models.TaskType]models.Resources{models.MapTask: d}})
	}
	for _, c := range []struct {
		name, field string
		mut         func(*ClusterScenario)
	}{
		{"no jobs", "jobs", func(s *ClusterScenario) { s.Jobs = nil }},
		{"too big", "demand.map", func(s *ClusterScenario) { s.Jobs[0].Demand[models.MapTask] = models.Resources{1 << 20, 1} }},
		{"no work", "reduce_work", func(s *ClusterScenario) { s.Jobs[0].Reduces = 1 }},
		{"works count", "map_works", func(s *ClusterScenario) { s.Jobs[0].MapWorks = []float64{1, 2} }},
		{"dup id", "id", func(s *ClusterScenario) { s.Jobs = append(s.Jobs, s.Jobs[0]) }},
		{"straggler", "stragglers[0].node", func(s *ClusterScenario) { s.Stragglers = []Straggler{{Node: "x", Speed: 0.5}} }},
		{"slow start", "slow_start", func(s *ClusterScenario) { s.SlowStart = 2 }},
		{"skew", "map_skew.factor", func(s *ClusterScenario) { s.Jobs[0].MapSkew = Skew{Fraction: 0.5, Factor: 0.5} }},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc := good()
			c.mut(sc)
			err := sc.withDefaults().Validate()
			if !errors.Is(err, ErrInvalidScenario) || !strings.Contains(err.Error(), c.field) {
				t.Fatalf("error %v, want ErrInvalidScenario naming %s", err, c.field)
			}
		})
	}
	if err := good().withDefaults().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestBuiltinClusterUnknown(t *testing.T) {
	_, err := BuiltinCluster("haste-table9")
	if !errors.Is(err, ErrUnknownScenario) || !strings.Contains(err.Error(), "haste-table3") {
		t.Fatalf("error %v, want ErrUnknownScenario listing the names", err)
	}
	for _, n := range []string{"haste-table2", "haste-table3", "haste-table4", "haste-table5", "dynamicmr-sort", "dynamicmr-batch-5", "dynamicmr-batch-10",
		"dynamicmr-batch-20", "dynamicmr-batch-30", "stealing-grep-25", "stealing-grep-50", "stealing-grep-75", "stealing-grep-90",
		"stealing-stragglers-2", "stealing-stragglers-4", "dynamicadjust-invertedindex", "dynamicadjust-pagerank"} {
		sc, err := BuiltinCluster(n)
		if err != nil {
			t.Fatalf("built-in scenario %s: %v", n, err)
		}
		if err := sc.withDefaults().Validate(); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
	}
}

func TestClusterCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	sc, _ := BuiltinCluster("haste-table2")
	pipe, _ := policy.NewPipeline("fifo", policy.HeartbeatConfig{})
	if _, err := RunCluster(ctx, sc, pipe, ClusterOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
}
