package sharing

import (
	"math"
	"testing"

	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
	"github.com/optd/optd/policy/policytest"
	_ "github.com/optd/optd/policy/slots" // mrv1-static, the assignment under test
)

// stealCluster: one node ⟨7 vcores, 7000 MB⟩ with three attempts of one
// job requesting ⟨1000 MB, 1 vcore⟩ each (4 vcores residual), started in
// the order a1, a2, a3:
//
//	a1 start 0,  score 0.5 → rate 1/200, 100 s left (middle)
//	a2 start 10, score 0.9 → rate 1/100, 10 s left  (shortest)
//	a3 start 20, score 0.1 → rate 1/800, 720 s left (longest; fastness 0)
//
// and a2's copy a4 is speculative elsewhere.
func stealCluster(t *testing.T) (*policy.ClusterView, *policy.NodeView, [3]*policy.AttemptView) {
	t.Helper()
	f := policytest.NewFixture(100, false, models.MemoryVCores())
	n := f.Node("n", "r1", 0, 0, models.Resources{7000, 7})
	o := f.Node("o", "r1", 0, 0, models.Resources{7000, 7})
	j := f.Job("j1", 0, 0, models.Resources{1000, 1})
	a1 := f.Run(j, models.MapTask, n, 0, 0.5)
	a2 := f.Run(j, models.MapTask, n, 10, 0.9)
	a3 := f.Run(j, models.MapTask, n, 20, 0.1)
	f.Run(j, models.MapTask, o, 50, 0.5)
	return f.Finish(), n, [3]*policy.AttemptView{a1, a2, a3}
}

// extraVCores maps attempt id → extra vcores granted.
func extraVCores(acts []policy.Action, c *policy.ClusterView) map[int]int64 {
	v := c.Resources.Index(models.ResourceVCores)
	out := map[int]int64{}
	for _, a := range acts {
		if a.Kind == policy.ActionAdjust {
			out[a.Attempt] = a.Resources[v] - 1
			if a.Resources[0] != 1000 {
				panic("memory changed")
			}
		}
	}
	return out
}

func TestResourceStealingSplits(t *testing.T) {
	c, n, at := stealCluster(t)
	a1, a2, a3 := at[0].ID, at[1].ID, at[2].ID
	for _, tc := range []struct {
		mode StealMode
		want map[int]int64
	}{
		{StealEven, map[int]int64{a1: 2, a2: 1, a3: 1}}, // 4 over 3: the remainder to the first
		{StealFCM, map[int]int64{a1: 4}},
		{StealSTLM, map[int]int64{a2: 4}},
		{StealLTLM, map[int]int64{a3: 4}},
		{StealSTM, map[int]int64{a1: 2, a2: 1, a3: 1}}, // no copy on n: Even
		{StealLTM, map[int]int64{a3: 4}},               // a3 finishes last: fastness 0
	} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			s := NewResourceStealing(tc.mode)
			got := extraVCores(s.Share(policy.NewHeartbeat(c, n)), c)
			if len(got) != len(tc.want) {
				t.Fatalf("grants %v, want %v", got, tc.want)
			}
			for id, v := range tc.want {
				if got[id] != v {
					t.Fatalf("grants %v, want %v", got, tc.want)
				}
			}
		})
	}
	// STM with a speculative attempt on the node
	at[1].Speculative = true
	if got := extraVCores(NewResourceStealing(StealSTM).Share(policy.NewHeartbeat(c, n)), c); got[a2] != 4 || len(got) != 1 {
		t.Fatalf("STM with a copy: %v", got)
	}
	// FavouredShare 0.5: 2 to the favoured, 2 evenly
	s := NewResourceStealing(StealFCM)
	if err := s.SetParam("favoured_share", 0.5); err != nil {
		t.Fatal(err)
	}
	if got := extraVCores(s.Share(policy.NewHeartbeat(c, n)), c); got[a1] != 3 || got[a2] != 1 || got[a3] != 0 {
		t.Fatalf("FCM at 0.5: %v", got)
	}
	if f := Fastness(c, at[1]); f != 1 {
		t.Fatalf("fastness of the attempt finishing first: %v", f)
	}
}

// Through the pipeline every grant fits: starts take their request first,
// stealing splits only what is left, and the pipeline rejects nothing.
func TestResourceStealingInPipeline(t *testing.T) {
	c, n, _ := stealCluster(t)
	c.Jobs[0].PendingMaps = []policy.PendingTask{{Index: 99}}
	for _, m := range []string{"even", "fcm", "stlm", "ltlm", "stm", "ltm"} {
		p, err := policy.NewPipeline("mrv1-static+resource-stealing-"+m, policy.HeartbeatConfig{})
		if err != nil {
			t.Fatal(err)
		}
		d := p.Heartbeat(c, n)
		acts := d.Actions
		if d.Dropped != 0 || policytest.Kinds(acts)[policy.ActionStart] != 1 {
			t.Fatalf("%s: rejected %d\n%s", m, d.Dropped, policytest.Reasons(acts))
		}
		total := int64(1) // the start's vcore
		for _, a := range n.Running {
			total += a.Requested[1]
		}
		for _, e := range extraVCores(acts, c) {
			total += e
		}
		if total != 7 {
			t.Fatalf("%s: %d vcores used of 7, want all\n%s", m, total, policytest.Reasons(acts))
		}
	}
}

func TestDynamicAdjustMitigatesTheSkewedTask(t *testing.T) {
	f := policytest.NewFixture(120, false, models.MemoryVCores())
	n := f.Node("n", "r1", 0, 0, models.Resources{7000, 8})
	j := f.Job("j1", 0, 0, models.Resources{1000, 1})
	j.MapsTotal, j.MapsDone, j.MeanMapS = 8, 2, 100
	skewed := f.Run(j, models.MapTask, n, 0, 0.4)  // est 120 + 180 = 300 > 1.5·100
	normal := f.Run(j, models.MapTask, n, 20, 0.9) // est 100 + 11 = 111
	c := f.Finish()
	d := NewDynamicAdjust()
	acts := d.Share(policy.NewHeartbeat(c, n))
	if len(acts) != 1 || acts[0].Attempt != skewed.ID {
		t.Fatalf("want one adjustment of the skewed task, got\n%s", policytest.Reasons(acts))
	}
	// ⌈300/100 · 1⌉ = 3 vcores, memory unchanged
	if got := acts[0].Resources; got[0] != 1000 || got[1] != 3 {
		t.Fatalf("grant %v, want [1000 3]", got)
	}
	// the grant is kept on the next heartbeat
	skewed.Granted = acts[0].Resources
	c.NowS = 123
	skewed.Progress, skewed.Score = 0.45, 0.45
	acts = d.Share(policy.NewHeartbeat(c, n))
	if len(acts) != 1 || acts[0].Attempt != skewed.ID || acts[0].Resources[1] != 3 {
		t.Fatalf("grant not kept:\n%s", policytest.Reasons(acts))
	}
	_ = normal
	// no mitigation before 10% of the tasks finished
	j.MapsDone = 0
	d2 := NewDynamicAdjust()
	if acts := d2.Share(policy.NewHeartbeat(c, n)); len(acts) != 0 {
		t.Fatalf("mitigated before any task finished:\n%s", policytest.Reasons(acts))
	}
}

// Phase-aware remaining time of a reduce: observed in shuffle at 50% at
// t = 10, then in sort at 50% at t = 30. Equal time per progress unit puts
// the shuffle/sort boundary at t = 20; at t = 30 the sort needs 10 s more.
// The reduce phase is estimated from LATE's overall rate until a finished
// attempt gives its mean duration.
func TestDynamicAdjustPhaseAwareRemaining(t *testing.T) {
	f := policytest.NewFixture(10, false, models.MemoryVCores())
	n := f.Node("n", "r1", 0, 0, models.Resources{7000, 8})
	j := f.Job("j1", 0, 0, models.Resources{1000, 1})
	a := f.Run(j, models.ReduceTask, n, 0, 0.5/3) // shuffle, 50%
	c := f.Finish()
	d := NewDynamicAdjust()
	d.observe(c, n)
	c.NowS = 30
	a.Phase, a.Progress, a.Score = models.PhaseSort, 0.5, 1.5/3
	d.observe(c, n)
	tr := d.track[a.ID]
	if tr.k != 1 || math.Abs(tr.startK-20) > 1e-9 || len(tr.done) != 1 || math.Abs(tr.done[0]-20) > 1e-9 {
		t.Fatalf("track %+v, want sort from t = 20 after a 20 s shuffle", *tr)
	}
	// sort: 10·(1−0.5)/0.5 = 10; reduce phase by LATE: (1/3)/(0.5/30) = 20
	if got := d.Remaining(c.NowS, a); math.Abs(got-30) > 1e-9 {
		t.Fatalf("remaining %v, want 30", got)
	}
	// a finished attempt with a 50 s reduce phase
	other := &policy.AttemptView{ID: 99, Job: "j1", Type: models.ReduceTask, Phase: models.PhaseReduce, StartS: 0}
	d.track[99] = &phaseTrack{t: models.ReduceTask, job: "j1", k: 2, startK: -20, done: []float64{math.NaN(), 10}}
	d.TaskFinished(c, other, 50)
	if got := d.Remaining(c.NowS, a); math.Abs(got-60) > 1e-9 {
		t.Fatalf("remaining with history %v, want 10 + 50", got)
	}
	// the next phase change jumps over nothing; a first sighting past the
	// first phase assumes a uniform score rate
	b := f.Run(j, models.ReduceTask, n, 0, 2.5/3) // reduce phase at 50%, score 5/6, at t = 30
	d.observe(c, n)
	if tb := d.track[b.ID]; math.Abs(tb.startK-24) > 1e-9 || tb.k != 2 {
		t.Fatalf("first sighting: start of phase 2 at %v, want 30·(2/3)/(5/6) = 24", tb.startK)
	}
}
