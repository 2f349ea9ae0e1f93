package sim

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/optd/optd/ledger"
	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
)

// hangTimeout bounds a run that would never end if reducers deadlocked
// with their maps: a hang detector, far above any of these runs' time
// (milliseconds), not a speed test.
const hangTimeout = 2 * time.Minute

// envEarlyReducerScenarios sets how many scenarios
// TestRandomEarlyReducersAlwaysEnd draws (default 60, 20 with -short;
// `make early-reducers` runs 5000).
const envEarlyReducerScenarios = "OPTD_EARLY_REDUCER_SCENARIOS"

// runToEnd runs sc under spec with invariants checked and fails the test
// if it does not end or leaves a job unfinished.
func runToEnd(t *testing.T, what string, sc *ClusterScenario, spec string, seed uint64) *ClusterResult {
	t.Helper()
	pipe, err := policy.NewPipeline(spec, policy.HeartbeatConfig{Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), hangTimeout)
	defer cancel()
	r, err := RunCluster(ctx, sc, pipe, ClusterOptions{Seed: seed, CheckInvariants: true})
	if err != nil {
		t.Fatalf("%s, %s, seed %d: %v", what, spec, seed, err)
	}
	if len(r.Jobs) != len(sc.Jobs) {
		t.Fatalf("%s, %s, seed %d: %d of %d jobs finished", what, spec, seed, len(r.Jobs), len(sc.Jobs))
	}
	return r
}

// TestPreemptionEndsTheFoundDeadlock: the scenario where reducers that
// started at slow start 0 without ramp-up filled the three nodes while
// maps waited (the run never ended) now completes.
func TestPreemptionEndsTheFoundDeadlock(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 3))
	var sc *ClusterScenario
	for k := range 31 {
		sc = randomBoundScenario(rng, k%2 == 1)
	}
	if sc.SlowStart != 0 || sc.ReduceRamp {
		t.Fatalf("the drawn scenario changed: slow start %v, ramp %v", sc.SlowStart, sc.ReduceRamp)
	}
	if r := runToEnd(t, "scenario 30", sc, "fair", 1); r.PreemptedReducers == 0 {
		t.Errorf("the run ended without preempting a reducer")
	}
}

// earlyReducerScenario draws a random scenario (randomBoundScenario's
// clusters and jobs) prone to the deadlock of early reducers: up to 4
// more reduces a job, slow start 0 in three of four (else drawn in
// [0, 1]), ramp-up off in three of four.
func earlyReducerScenario(rng *rand.Rand, slots bool) *ClusterScenario {
	sc := randomBoundScenario(rng, slots)
	for i := range sc.Jobs {
		sc.Jobs[i].Reduces += rng.IntN(5)
	}
	sc.ReduceRamp = rng.IntN(4) == 0
	if rng.IntN(4) == 0 {
		sc.SlowStart = rng.Float64()
	}
	return sc
}

// TestRandomEarlyReducersAlwaysEnd: on random early-reducer scenarios,
// resource and slot clusters, every run of several assignment policies
// ends with every job finished and the simulator's invariants held, and
// some of them did preempt reducers.
func TestRandomEarlyReducersAlwaysEnd(t *testing.T) {
	n := 60
	if testing.Short() {
		n = 20
	}
	if v := os.Getenv(envEarlyReducerScenarios); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("%s = %q: want a count ≥ 1", envEarlyReducerScenarios, v)
		}
	}
	rng := rand.New(rand.NewPCG(7, 11))
	specs := []string{"fair", "fifo", "drf", "capacity", "pd-dhsa", "fair+speculation-hadoop", "fair+resource-stealing-even"}
	preempted, runs := 0, 0
	for k := range n {
		sc := earlyReducerScenario(rng, k%3 == 2)
		seed := uint64(1 + k%3)
		for _, spec := range specs {
			r := runToEnd(t, sc.Name, sc, spec, seed)
			preempted += r.PreemptedReducers
			if r.PreemptedReducers > 0 {
				runs++
			}
			// Killed work is lost, and the bound counts only successful
			// attempts: it stays below runs that preempt.
			pipe, err := policy.NewPipeline(spec, policy.HeartbeatConfig{Seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			b, err := ClusterLowerBound(sc, BoundOptionsFor(pipe, seed))
			if err != nil {
				t.Fatal(err)
			}
			if b.MakespanS > r.MakespanS+boundSlack(r.MakespanS) || b.MeanResponseS > r.MeanResponseS+boundSlack(r.MeanResponseS) {
				t.Errorf("scenario %d, %s: bound %+v above the run's makespan %.9g s, mean response %.9g s", k, spec, b, r.MakespanS, r.MeanResponseS)
			}
		}
	}
	// The generator must reach the deadlock the rule breaks, or this test
	// shows nothing about it.
	if runs == 0 {
		t.Fatalf("none of %d runs preempted a reducer", n*len(specs))
	}
	t.Logf("%d of %d runs preempted %d reducers", runs, n*len(specs), preempted)
}

// TestPreemptionKillsReducersForAWaitingMap: one node full of one job's
// reducers (slow start 0, no ramp-up) while its map waits and nothing
// else runs. The heartbeat kills the reducers with the least progress,
// just enough for the map, with their reason, starts the map in their room
// and leaves their tasks pending; a heartbeat that is not deadlocked kills
// nothing.
func TestPreemptionKillsReducersForAWaitingMap(t *testing.T) {
	c := models.Cluster{Resources: models.MemoryVCores(), Nodes: []models.Node{{ID: "a", Rack: "r", Capacity: models.Resources{4096, 4}}}}
	l, err := ledger.New(ledger.Config{Cluster: c})
	if err != nil {
		t.Fatal(err)
	}
	one := models.Resources{1024, 1}
	spec := ledger.JobSpec{ID: "j", Demand: map[models.TaskType]models.Resources{models.MapTask: {2048, 2}, models.ReduceTask: one},
		Stages: []ledger.StageSpec{{Maps: [][]string{{"a"}}, Reduces: 4}}}
	if err := l.Submit(spec); err != nil {
		t.Fatal(err)
	}
	var fill []policy.Action
	for i := range 4 {
		fill = append(fill, policy.Action{Kind: policy.ActionStart, Job: "j", Type: models.ReduceTask, Task: i})
	}
	if _, rej, err := l.Apply("a", 0, fill); err != nil || rej != 0 {
		t.Fatalf("filling the node: rejected %d, %v", rej, err)
	}
	pipe, err := policy.NewPipeline("fair", policy.HeartbeatConfig{})
	if err != nil {
		t.Fatal(err)
	}
	s := ledger.Scheduler{Ledger: l, Pipe: pipe}
	// Attempts 1..4 are the reducers; 3 and 4 have the least progress.
	running := []ledger.Status{{Attempt: 1, Phase: models.PhaseShuffle, Progress: 0.3}, {Attempt: 2, Phase: models.PhaseShuffle, Progress: 0.2},
		{Attempt: 3, Phase: models.PhaseShuffle, Progress: 0.1}, {Attempt: 4, Phase: models.PhaseShuffle, Progress: 0.1}}
	d, err := s.Heartbeat(t.Context(), ledger.Beat{Node: "a", NowS: 1, Running: running})
	if err != nil {
		t.Fatal(err)
	}
	var killed []int
	var started []string
	for _, a := range d.Applied {
		switch a.Kind {
		case policy.ActionKill:
			killed = append(killed, a.Attempt)
			if !strings.HasPrefix(a.Reason, ledger.PreemptReason+"1 maps of job j wait") {
				t.Errorf("kill of attempt %d: reason %q", a.Attempt, a.Reason)
			}
		case policy.ActionStart:
			started = append(started, a.Job+"/"+a.Type.String())
		}
	}
	// Least progress first, the newest first among equals: 4, then 3.
	if len(killed) != 2 || killed[0] != 4 || killed[1] != 3 || len(started) != 1 || started[0] != "j/map" || d.Rejected != 0 {
		t.Fatalf("applied %v (rejected %d); want kills of attempts 4 and 3, then the map", d.Applied, d.Rejected)
	}
	if got := len(l.View(1).Jobs[0].PendingReduces); got != 2 {
		t.Errorf("%d reduces pending after the preemption, want the 2 killed", got)
	}
	// The map runs now: nothing is deadlocked, nothing is killed.
	d, err = s.Heartbeat(t.Context(), ledger.Beat{Node: "a", NowS: 2, Running: running[:2]})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range d.Applied {
		if a.Kind == policy.ActionKill {
			t.Errorf("a heartbeat with a map running killed %v", a)
		}
	}
}

// TestPreemptionFreesOnlyWhatTheMapLacks: on a slot cluster, a reducer
// borrowed the node's one map slot (as PD-DHSA lets it) and another holds
// the reduce slot. Only the borrower is killed: the other frees nothing a
// map can use.
func TestPreemptionFreesOnlyWhatTheMapLacks(t *testing.T) {
	c := models.Cluster{Nodes: []models.Node{{ID: "a", Rack: "r", MapSlots: 1, ReduceSlots: 1}}}
	l, err := ledger.New(ledger.Config{Cluster: c})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Submit(ledger.JobSpec{ID: "j", Stages: []ledger.StageSpec{{Maps: [][]string{nil}, Reduces: 2}}}); err != nil {
		t.Fatal(err)
	}
	fill := []policy.Action{
		{Kind: policy.ActionStart, Job: "j", Type: models.ReduceTask, Task: 0, Slot: models.ReduceTask},
		{Kind: policy.ActionStart, Job: "j", Type: models.ReduceTask, Task: 1, Slot: models.MapTask},
	}
	if _, rej, err := l.Apply("a", 0, fill); err != nil || rej != 0 {
		t.Fatalf("filling the node: rejected %d, %v", rej, err)
	}
	pipe, err := policy.NewPipeline("fifo", policy.HeartbeatConfig{})
	if err != nil {
		t.Fatal(err)
	}
	s := ledger.Scheduler{Ledger: l, Pipe: pipe}
	// The reduce-slot reducer (attempt 1) has less progress: it would be
	// first, were it of any use.
	running := []ledger.Status{{Attempt: 1, Phase: models.PhaseShuffle, Progress: 0}, {Attempt: 2, Phase: models.PhaseShuffle, Progress: 0.5}}
	d, err := s.Heartbeat(t.Context(), ledger.Beat{Node: "a", NowS: 1, Running: running})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Applied) != 2 || d.Applied[0].Kind != policy.ActionKill || d.Applied[0].Attempt != 2 ||
		d.Applied[1].Kind != policy.ActionStart || d.Applied[1].Type != models.MapTask || d.Applied[1].Slot != models.MapTask {
		t.Fatalf("applied %v; want the kill of attempt 2, then the map in its slot", d.Applied)
	}
}
