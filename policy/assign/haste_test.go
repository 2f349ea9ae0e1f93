package assign

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
	"github.com/optd/optd/policy/policytest"
)

// hbCluster builds a one-node heartbeat: node capacity and free given, and
// jobs with per-type demands and pending counts.
type hbJob struct {
	id             string
	maps, reduces  int
	mapD, reduceD  models.Resources
	stage, stages  int
	mapsAssigned   int
	reducesRunning int
	slowStart      bool
}

func hbOf(capacity, free models.Resources, jobs ...hbJob) (*policy.ClusterView, *policy.NodeView) {
	n := &policy.NodeView{ID: "n1", Rack: "r1", Capacity: capacity, Free: free}
	c := &policy.ClusterView{Resources: models.MemoryVCores(), Total: capacity, Nodes: []*policy.NodeView{n}}
	for k, j := range jobs {
		jv := &policy.JobView{ID: j.id, SubmitS: float64(k), Weight: 1, Stage: j.stage, Stages: max(j.stages, 1),
			Demand:    map[models.TaskType]models.Resources{models.MapTask: j.mapD, models.ReduceTask: j.reduceD},
			MapsTotal: j.maps + j.mapsAssigned, MapsAssigned: j.mapsAssigned, ReducesTotal: j.reduces, SlowStartReached: j.slowStart}
		for i := range j.maps {
			jv.PendingMaps = append(jv.PendingMaps, policy.PendingTask{Index: j.mapsAssigned + i})
		}
		for i := range j.reduces {
			jv.PendingReduces = append(jv.PendingReduces, policy.PendingTask{Index: i})
		}
		for i := range j.reducesRunning {
			jv.Running = append(jv.Running, &policy.AttemptView{ID: 100*k + i, Job: j.id, Type: models.ReduceTask, Requested: j.reduceD})
		}
		c.Jobs = append(c.Jobs, jv)
	}
	return c, n
}

func gb(g, cores int64) models.Resources { return models.Resources{g * 1024, cores} }

func startsOf(actions []policy.Action) []string {
	var out []string
	for _, a := range actions {
		if a.Kind == policy.ActionStart {
			out = append(out, a.Job+"/"+a.Type.String())
		}
	}
	return out
}

// TestFitnessTable reproduces the worked table of HaSTE §3.4.1: a node
// with residual ⟨10 GB, 6 cores⟩ and tasks of type I ⟨1 GB, 3 cores⟩ and
// type II ⟨3 GB, 1 core⟩; FFD-DP picks II, II, I/II tie, II with the
// printed fitness scores, ending with 3 of type II and 1 of type I (100%
// utilization).
func TestFitnessTable(t *testing.T) {
	w := []float64{1.0 / 1024, 1}
	free := []models.Resources{gb(10, 6), gb(7, 5), gb(4, 4), gb(3, 1)}
	wantI := []float64{28, 22, 16, 6}
	wantII := []float64{36, 26, 16, 10}
	for k, f := range free {
		if got := fitness(gb(1, 3), f, w); got != wantI[k] {
			t.Errorf("type I on %v: %v, want %v", f, got, wantI[k])
		}
		if got := fitness(gb(3, 1), f, w); got != wantII[k] {
			t.Errorf("type II on %v: %v, want %v", f, got, wantII[k])
		}
	}
	c, n := hbOf(gb(10, 6), gb(10, 6), hbJob{id: "typeI", maps: 4, mapD: gb(1, 3)}, hbJob{id: "typeII", maps: 4, mapD: gb(3, 1)})
	p, err := policy.NewPipeline("ffd-dp", policy.HeartbeatConfig{})
	if err != nil {
		t.Fatal(err)
	}
	acts := p.Heartbeat(c, n).Actions
	got := strings.Join(startsOf(acts), ",")
	// At ⟨4, 4⟩ both score 16; the tie goes to the earlier job (type I),
	// leaving ⟨3, 1⟩ for a type II: 3 of type II and 1 of type I either way.
	if want := "typeII/map,typeII/map,typeI/map,typeII/map"; got != want {
		t.Fatalf("starts %s, want %s\n%s", got, want, policytest.Reasons(acts))
	}
}

// TestFig1FFD is HaSTE's Fig. 1: a 4 GB node, job 1 (first) with four 1 GB
// tasks and job 2 with four 3 GB tasks. FFD starts a 3 GB and a 1 GB task
// together (4 time units for both jobs); FIFO fills the node with job 1's
// four 1 GB tasks.
func TestFig1FFD(t *testing.T) {
	mk := func() (*policy.ClusterView, *policy.NodeView) {
		return hbOf(gb(4, 8), gb(4, 8), hbJob{id: "job1", maps: 4, mapD: gb(1, 1)}, hbJob{id: "job2", maps: 4, mapD: gb(3, 1)})
	}
	for _, c := range []struct{ spec, want string }{
		{"ffd-dp", "job2/map,job1/map"},
		{"fifo", "job1/map,job1/map,job1/map,job1/map"},
		{"haste", "job2/map,job1/map"},
	} {
		p, err := policy.NewPipeline(c.spec, policy.HeartbeatConfig{})
		if err != nil {
			t.Fatal(err)
		}
		cv, n := mk()
		acts := p.Heartbeat(cv, n).Actions
		if got := strings.Join(startsOf(acts), ","); got != c.want {
			t.Errorf("%s: starts %s, want %s\n%s", c.spec, got, c.want, policytest.Reasons(acts))
		}
		for _, a := range acts {
			if a.Reason == "" {
				t.Errorf("%s: action without reason: %v", c.spec, a)
			}
		}
	}
}

// TestFig2Alignment is HaSTE-A's Fig. 2 (memory only matters): jobs 1 and
// 2 are regular with large tasks, job 3 is iterative (3 stages) with small
// tasks. HaSTE fills the node with jobs 1 and 2 (fitness); HaSTE-A starts
// job 3 first (alignment, Eq. 5, weighted by β3 = 0.6 in Eq. 6).
func TestFig2Alignment(t *testing.T) {
	mk := func() (*policy.ClusterView, *policy.NodeView) {
		return hbOf(gb(6, 16), gb(6, 16),
			hbJob{id: "job1", maps: 2, mapD: gb(3, 1)},
			hbJob{id: "job2", maps: 2, mapD: gb(2, 1)},
			hbJob{id: "job3", maps: 1, mapD: gb(1, 1), stages: 3})
	}
	first := func(spec string) string {
		p, err := policy.NewPipeline(spec, policy.HeartbeatConfig{})
		if err != nil {
			t.Fatal(err)
		}
		c, n := mk()
		acts := p.Heartbeat(c, n).Actions
		s := startsOf(acts)
		if len(s) == 0 {
			t.Fatalf("%s started nothing", spec)
		}
		return s[0]
	}
	if got := first("haste"); got != "job1/map" {
		t.Errorf("haste starts %s first, want job1/map (highest fitness)", got)
	}
	if got := first("haste-a"); got != "job3/map" {
		t.Errorf("haste-a starts %s first, want job3/map (alignment)", got)
	}
	// Eq. 5: A = (I + I_current)/Σ I.
	c, n := mk()
	c.Jobs[2].Stage = 1
	p, _ := policy.NewPipeline("haste-a", policy.HeartbeatConfig{})
	acts := p.Heartbeat(c, n).Actions
	if !strings.Contains(acts[0].Reason, "A 0.8 ") { // (3+1)/(1+1+3)
		t.Errorf("reason %q does not show A = 0.8", acts[0].Reason)
	}
}

// TestUrgency checks Eqs. 2-3 and rule R3 on hand-computed values.
func TestUrgency(t *testing.T) {
	w := []float64{1.0 / 1024, 1}
	j := &policy.JobView{Demand: map[models.TaskType]models.Resources{models.MapTask: gb(2, 2), models.ReduceTask: gb(1, 1)}, MapsTotal: 10}
	am := 2.5 // ⟨1536 MB, 1 vcore⟩
	u := jobUsage{mapsAssigned: 5, reducesAssigned: 2, maps: 3, reduces: 2}
	// U^m = (5/10)·(2·2 + 1·2.5) = 3.25
	if got := urgency(j, models.MapTask, u, w, am); math.Abs(got-3.25) > 1e-12 {
		t.Errorf("U^m = %v, want 3.25", got)
	}
	// U^r = 3.25·0.5·(3·4 + 2·2)/(2·2) = 6.5
	if got := urgency(j, models.ReduceTask, u, w, am); math.Abs(got-6.5) > 1e-12 {
		t.Errorf("U^r = %v, want 6.5", got)
	}
	u.reduces = 0
	if got := urgency(j, models.ReduceTask, u, w, am); !math.IsInf(got, 1) {
		t.Errorf("U^r with no reduce running = %v, want +Inf (R3)", got)
	}
	u.mapsAssigned = 0
	if got := urgency(j, models.ReduceTask, u, w, am); got != 0 {
		t.Errorf("U^r with no map assigned = %v, want 0", got)
	}
	if norm(math.Inf(1), 0, 1) != 1 || norm(3, 3, 3) != 0 || norm(2, 1, 3) != 0.5 {
		t.Error("norm")
	}
}

// TestBaselineOrders: FIFO serves the oldest job, Fair the one with the
// least memory, DRF the one with the least dominant share, and reduces
// come before maps inside a job (YARN's MR request priorities).
func TestBaselineOrders(t *testing.T) {
	mk := func() (*policy.ClusterView, *policy.NodeView) {
		c, n := hbOf(gb(64, 64), gb(4, 4),
			hbJob{id: "old", maps: 1, mapD: gb(1, 1), reduces: 1, reduceD: gb(1, 1), slowStart: true, reducesRunning: 1},
			hbJob{id: "new", maps: 1, mapD: gb(1, 1)})
		c.Jobs[0].Running[0].Requested = gb(1, 30) // old holds little memory, many cores
		return c, n
	}
	for _, c := range []struct{ spec, want string }{
		{"fifo", "old/reduce"},
		{"capacity", "old/reduce"},
		{"fair", "new/map"},
		{"drf", "new/map"},
	} {
		p, err := policy.NewPipeline(c.spec, policy.HeartbeatConfig{})
		if err != nil {
			t.Fatal(err)
		}
		cv, n := mk()
		acts := p.Heartbeat(cv, n).Actions
		if s := startsOf(acts); len(s) == 0 || s[0] != c.want {
			t.Errorf("%s: starts %v, want %s first\n%s", c.spec, s, c.want, policytest.Reasons(acts))
		}
	}
	// Fair by memory: a job holding more memory but fewer cores waits.
	cv, n := hbOf(gb(64, 64), gb(4, 4),
		hbJob{id: "a", maps: 1, mapD: gb(1, 1), reducesRunning: 1, reduceD: gb(8, 1)},
		hbJob{id: "b", maps: 1, mapD: gb(1, 1), reducesRunning: 1, reduceD: gb(1, 16)})
	p, _ := policy.NewPipeline("fair", policy.HeartbeatConfig{})
	if s := startsOf(p.Heartbeat(cv, n).Actions); s[0] != "b/map" {
		t.Errorf("fair starts %v, want b/map first (less memory)", s)
	}
	cv, n = hbOf(gb(64, 64), gb(4, 4),
		hbJob{id: "a", maps: 1, mapD: gb(1, 1), reducesRunning: 1, reduceD: gb(8, 1)},
		hbJob{id: "b", maps: 1, mapD: gb(1, 1), reducesRunning: 1, reduceD: gb(1, 16)})
	p, _ = policy.NewPipeline("drf", policy.HeartbeatConfig{})
	if s := startsOf(p.Heartbeat(cv, n).Actions); s[0] != "a/map" {
		t.Errorf("drf starts %v, want a/map first (dominant share 8/64 < 16/64)", s)
	}
}

// TestHasteITA: the first heartbeat starts the exact ITA's plan. On a node
// ⟨10 GB, 6 cores⟩ with types I and II the optimum packs the node fully
// (value 16 with w = 1/GB, 1/core), which the plan reproduces.
func TestHasteITA(t *testing.T) {
	c, n := hbOf(gb(10, 6), gb(10, 6), hbJob{id: "typeI", maps: 4, mapD: gb(1, 3)}, hbJob{id: "typeII", maps: 4, mapD: gb(3, 1)})
	p, err := policy.NewPipeline("haste", policy.HeartbeatConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Init(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	acts := p.Heartbeat(c, n).Actions
	used := models.Resources{0, 0}
	ita := 0
	for _, a := range acts {
		used = used.Add(a.Resources)
		if strings.Contains(a.Reason, "ITA") {
			ita++
		}
	}
	if !used.Equal(gb(10, 6)) || ita == 0 {
		t.Fatalf("used %v (want the full node) with %d ITA starts\n%s", used, ita, policytest.Reasons(acts))
	}
}
