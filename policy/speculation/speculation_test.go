package speculation

import (
	"math"
	"strings"
	"testing"

	_ "github.com/optd/optd/policy/slots" // mrv1-static, the assignment under test

	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
	"github.com/optd/optd/policy/policytest"
)

// copies returns the attempts copied by a speculator's actions.
func copies(acts []policy.Action) []int {
	var out []int
	for _, a := range acts {
		if a.Kind == policy.ActionSpeculate {
			out = append(out, a.Attempt)
		}
	}
	return out
}

func TestHadoopSpeculationPicksSlowestLongestLeft(t *testing.T) {
	f := policytest.NewFixture(100, true, nil)
	h := f.Node("h", "r1", 2, 0, nil)
	w := f.Node("w", "r1", 10, 0, nil)
	j := f.Job("j1", 0, 0, nil)
	for range 4 {
		f.Run(j, models.MapTask, w, 0, 0.9) // rate 0.009
	}
	slow := f.Run(j, models.MapTask, w, 0, 0.1) // rate 0.001: < mean − std
	young := f.Run(j, models.MapTask, w, 50, 0.02)
	_ = young // rate 0.0004, slower still, but ran < MinRunS
	busy := f.Job("j2", 1, 0, nil)
	f.Run(busy, models.MapTask, w, 0, 0.01)
	f.Run(busy, models.MapTask, w, 0, 0.9)
	c := f.Finish()
	s := NewHadoopSpeculation()
	acts := actionsOf(s.Speculate(policy.NewHeartbeat(c, h)))
	if got := copies(acts); len(got) != 1 || got[0] != slow.ID {
		t.Fatalf("copies %v, want [%d] only (young attempt and job with pending maps excluded)\n%s", got, slow.ID, policytest.Reasons(acts))
	}
	if acts[0].Node != "h" || acts[0].Slot != models.MapTask {
		t.Fatalf("copy placed %v", acts[0])
	}
	// never on the node of the attempt copied
	if got := copies(actionsOf(s.Speculate(policy.NewHeartbeat(c, w)))); len(got) != 0 {
		t.Fatalf("copies on the straggler's own node: %v", got)
	}
	// a task with a copy running is not copied again
	cp := f.Run(j, models.MapTask, h, 90, 0.5)
	cp.Task, cp.Speculative = slow.Task, true
	c = f.Finish()
	if got := copies(actionsOf(s.Speculate(policy.NewHeartbeat(c, h)))); len(got) != 0 {
		t.Fatalf("copied a task that has a copy: %v", got)
	}
}

// fig5 builds DynamicMR's Fig. 5 example: six jobs whose straggler counts
// are 5, 4, 3, 2, 1, 0 and pending task counts 0, 0, 10, 10, 15, 20; the
// heartbeating node h has 4 idle map slots and LATE's cap allows 4 copies.
func fig5() (*policy.ClusterView, *policy.NodeView) {
	f := policytest.NewFixture(100, true, nil)
	h := f.Node("h", "r1", 4, 0, nil)
	w := f.Node("w", "r1", 196, 0, nil) // 200 slots: cap 0.02·200 = 4
	stragglers := []int{5, 4, 3, 2, 1, 0}
	pending := []int{0, 0, 10, 10, 15, 20}
	for i := range 6 {
		j := f.Job(string(rune('1'+i)), pending[i], 0, nil)
		j.ID = "J" + j.ID
		k := stragglers[i]
		for range k {
			f.Run(j, models.MapTask, w, 0, 0.1) // rate 0.001
		}
		// enough normal attempts that the 25th percentile lies above the
		// stragglers' rate: 0.25·(n−1) > k−1
		for range 4*k + 2 {
			f.Run(j, models.MapTask, w, 0, 0.9)
		}
	}
	return f.Finish(), h
}

func TestSEPBFig5(t *testing.T) {
	c, h := fig5()
	late := NewLATE()
	late.SpeculativeCap = 0.02
	acts := actionsOf(late.Speculate(policy.NewHeartbeat(c, h)))
	if len(acts) != 4 {
		t.Fatalf("LATE: want 4 copies, got\n%s", policytest.Reasons(acts))
	}
	for _, a := range acts {
		if a.Job != "J1" {
			t.Fatalf("LATE: want all 4 copies for J1, got\n%s", policytest.Reasons(acts))
		}
	}
	// SEPB with maxNumOfJobsCheckedForPendingTasks = 4 of 6 jobs: J1 and
	// J2 are skipped (J3, J4 in their windows have pending maps), J3-J5
	// have pending maps of their own, J6 has no straggler: the 4 idle slots
	// stay for the pending tasks.
	s := NewSEPB()
	s.SpeculativeCap = 0.02
	s.PercentageOfJobsCheckedForPendingTasks = 4.0 / 6
	if acts := actionsOf(s.Speculate(policy.NewHeartbeat(c, h))); len(acts) != 0 {
		t.Fatalf("SEPB: want no copy, got\n%s", policytest.Reasons(acts))
	}
	skip, why := s.SkipJob(c, "J1", models.MapTask)
	if !skip || !strings.Contains(why, "max 4 checked") {
		t.Fatalf("SkipJob(J1) = %v %q", skip, why)
	}
	// J6 is the last job: its window (J6 alone) has 20 pending maps but J6
	// itself has pending maps, so condition (1) fails.
	if skip, _ := s.SkipJob(c, "J6", models.MapTask); skip {
		t.Fatal("J6 skipped although condition (1) fails")
	}
	// percentage 0 checks no job: plain LATE.
	s.PercentageOfJobsCheckedForPendingTasks = 0
	if got := copies(actionsOf(s.Speculate(policy.NewHeartbeat(c, h)))); len(got) != 4 {
		t.Fatalf("SEPB at 0%%: want LATE's 4 copies, got %v", got)
	}
	// SEPB also vets another add-on's copies as a filter
	s.PercentageOfJobsCheckedForPendingTasks = 4.0 / 6
	if ok, _ := s.Admit(policy.NewHeartbeat(c, h), acts[0]); ok {
		t.Fatal("SEPB filter admitted a copy of J1")
	}
}

func TestSEPBKillsAtTwiceTheMean(t *testing.T) {
	f := policytest.NewFixture(100, true, nil)
	h := f.Node("h", "r1", 1, 1, nil)
	w := f.Node("w", "r1", 4, 4, nil)
	j := f.Job("j1", 0, 0, nil)
	j.MeanMapS, j.MeanReduceS = 40, 30
	long := f.Run(j, models.MapTask, w, 10, 0.5)   // 90 s > 2·40
	f.Run(j, models.MapTask, w, 30, 0.5)           // 70 s < 80
	red := f.Run(j, models.ReduceTask, w, 10, 0.2) // 90 s > 60 but maps unfinished
	c := f.Finish()
	s := NewSEPB()
	acts := actionsOf(s.Speculate(policy.NewHeartbeat(c, h)))
	kills := 0
	for _, a := range acts {
		if a.Kind == policy.ActionKill {
			kills++
			if a.Attempt != long.ID {
				t.Fatalf("killed %d, want %d\n%s", a.Attempt, long.ID, policytest.Reasons(acts))
			}
		}
	}
	if kills != 1 {
		t.Fatalf("want 1 kill, got\n%s", policytest.Reasons(acts))
	}
	for _, a := range acts { // as the pipeline does with the kills it accepts
		s.Commit(nil, a, nil)
	}
	// at most MaxKillsPerTask kills per task: the restarted attempt lives
	if again := policytest.Kinds(actionsOf(s.Speculate(policy.NewHeartbeat(c, h))))[policy.ActionKill]; again != 0 {
		t.Fatalf("killed the same task twice")
	}
	// once the maps are done the straggling reduce is killed too
	j.MapsDone = j.MapsTotal
	acts = actionsOf(s.Speculate(policy.NewHeartbeat(c, h)))
	if k := policytest.Kinds(acts)[policy.ActionKill]; k != 1 || acts[0].Attempt != red.ID {
		t.Fatalf("want the reduce killed, got\n%s", policytest.Reasons(acts))
	}
	// the pipeline accepts the kills (they free the attempts' slots)
	p, _ := policy.NewPipeline("mrv1-static+sepb", policy.HeartbeatConfig{})
	d := p.Heartbeat(c, w)
	acts = d.Actions
	if k := policytest.Kinds(acts)[policy.ActionKill]; k != 2 || d.Dropped != 0 {
		t.Fatalf("want both stragglers killed and nothing rejected (%d), got\n%s", d.Dropped, policytest.Reasons(acts))
	}
}

// BASE's rejection: the paper's example (§I) — task A is 90% done but
// slow (rate 0.01/s, 10 s left); a copy on node h, where the job's
// attempts run at 0.05/s, would need 20 s: no copy. A at 20% (360 s left)
// is copied.
func TestBASERejectsCopiesThatFinishLater(t *testing.T) {
	build := func(scoreA float64) (*policy.ClusterView, *policy.NodeView, *policy.AttemptView) {
		f := policytest.NewFixture(90, true, nil)
		h := f.Node("h", "r1", 2, 0, nil)
		w := f.Node("w", "r1", 40, 0, nil)
		j := f.Job("j1", 0, 0, nil)
		a := f.Run(j, models.MapTask, w, 0, scoreA)
		f.Run(j, models.MapTask, h, 80, 0.5)
		f.Run(j, models.MapTask, w, 80, 0.5)
		f.Run(j, models.MapTask, w, 80, 0.5)
		return f.Finish(), h, a
	}
	c, h, a := build(0.9)
	if got := copies(actionsOf(NewHadoopSpeculation().Speculate(policy.NewHeartbeat(c, h)))); len(got) != 1 || got[0] != a.ID {
		t.Fatalf("Hadoop detection should copy A: %v", got)
	}
	b := NewBASE(1)
	est, how := b.CopyEstimate(c, c.Jobs[0], a, "h")
	if math.Abs(est-20) > 1e-9 || math.Abs(a.TimeLeft(c.NowS)-10) > 1e-9 {
		t.Fatalf("estimate %v (%s), time left %v", est, how, a.TimeLeft(c.NowS))
	}
	acts := actionsOf(b.Speculate(policy.NewHeartbeat(c, h)))
	if len(acts) != 0 {
		t.Fatalf("BASE copied A although its copy would finish later:\n%s", policytest.Reasons(acts))
	}
	// as a filter on LATE's copy
	p, err := policy.NewPipeline("mrv1-static+late+base", policy.HeartbeatConfig{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := copies(p.Heartbeat(c, h).Actions); len(got) != 0 {
		t.Fatalf("late+base copied A: %v", got)
	}
	p, _ = policy.NewPipeline("mrv1-static+late", policy.HeartbeatConfig{})
	if got := copies(p.Heartbeat(c, h).Actions); len(got) != 1 {
		t.Fatalf("late alone should copy A: %v", got)
	}
	c, h, a = build(0.2)
	if got := copies(actionsOf(NewBASE(1).Speculate(policy.NewHeartbeat(c, h)))); len(got) != 1 || got[0] != a.ID {
		t.Fatalf("BASE should copy A at 20%%: %v", got)
	}
}

// BASE's rule 2: no attempt of the job ever ran on the node, so the rate is
// drawn from the job's scheduled attempts, reproducibly.
func TestBASEEstimateWithoutLocalHistory(t *testing.T) {
	f := policytest.NewFixture(90, true, nil)
	x := f.Node("x", "r1", 2, 0, nil)
	w := f.Node("w", "r1", 40, 0, nil)
	j := f.Job("j1", 0, 0, nil)
	a := f.Run(j, models.MapTask, w, 0, 0.9)
	f.Run(j, models.MapTask, w, 80, 0.5)
	c := f.Finish()
	b := NewBASE(7)
	est, _ := b.CopyEstimate(c, j, a, "x")
	if est != 100 && est != 20 {
		t.Fatalf("estimate %v not 1/rate of a scheduled attempt (100 or 20)", est)
	}
	if again, _ := b.CopyEstimate(c, j, a, "x"); again != est {
		t.Fatal("draw not reproducible")
	}
	// a finished attempt on x makes rule 1 apply: 1/duration
	b.TaskFinished(c, &policy.AttemptView{Job: "j1", Type: models.MapTask, Node: "x"}, 25)
	if est, _ := b.CopyEstimate(c, j, a, "x"); est != 25 {
		t.Fatalf("rule 1 estimate %v, want 25", est)
	}
	_ = x
}

func TestLATESlowNodeAndCap(t *testing.T) {
	f := policytest.NewFixture(100, true, nil)
	slowNode := f.Node("s", "r1", 4, 0, nil)
	fast := f.Node("f", "r1", 4, 0, nil)
	other := f.Node("o", "r1", 12, 0, nil)
	third := f.Node("t", "r1", 20, 0, nil)
	j1 := f.Job("j1", 0, 0, nil)
	j2 := f.Job("j2", 0, 0, nil)
	// node s runs only a j2 attempt at a tenth of j2's usual rate: its
	// speed is the lowest, below the 25th percentile of the node speeds
	lame := f.Run(j2, models.MapTask, slowNode, 0, 0.08)
	for range 3 {
		f.Run(j2, models.MapTask, fast, 0, 0.8)
	}
	// j1's straggler runs on o among normal attempts
	straggler := f.Run(j1, models.MapTask, other, 0, 0.05)
	for range 6 {
		f.Run(j1, models.MapTask, other, 0, 0.9)
		f.Run(j1, models.MapTask, third, 0, 0.9)
	}
	c := f.Finish()
	l := NewLATE()
	if got := copies(actionsOf(l.Speculate(policy.NewHeartbeat(c, slowNode)))); len(got) != 0 {
		t.Fatalf("copy launched on a slow node: %v", got)
	}
	// from a normal node both stragglers are copied, longest time left
	// first (1900 s for j1's, 1150 s for j2's)
	if got := copies(actionsOf(l.Speculate(policy.NewHeartbeat(c, third)))); len(got) != 2 || got[0] != straggler.ID || got[1] != lame.ID {
		t.Fatalf("copies from a normal node %v, want [%d %d]", got, straggler.ID, lame.ID)
	}
	// cap: 10% of 40 slots = 4 copies, 4 already running
	for range 4 {
		cp := f.Run(j1, models.MapTask, third, 99, 0.01)
		cp.Speculative = true
	}
	c = f.Finish()
	if got := copies(actionsOf(l.Speculate(policy.NewHeartbeat(c, third)))); len(got) != 0 {
		t.Fatalf("copies beyond SpeculativeCap: %v", got)
	}
}

// actionsOf drops a Speculate's vetoes.
func actionsOf(actions []policy.Action, _ []policy.Veto) []policy.Action { return actions }
