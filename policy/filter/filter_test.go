package filter

import (
	"testing"

	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
	"github.com/optd/optd/policy/policytest"
	_ "github.com/optd/optd/policy/slots" // mrv1-static, the assignment under test
)

func TestDelaySchedulingLevels(t *testing.T) {
	d, err := NewDelayScheduling(5, 5)
	if err != nil {
		t.Fatal(err)
	}
	f := policytest.NewFixture(0, true, nil)
	n := f.Node("a", "r1", 2, 0, nil)
	f.Job("j1", 1, 0, nil)
	c := f.Finish()
	hb := policy.NewHeartbeat(c, n)
	start := func(l policy.Locality) policy.Action {
		return policy.Action{Kind: policy.ActionStart, Job: "j1", Type: models.MapTask, Node: "a", Locality: l}
	}
	// at decides a candidate as the pipeline does: Admit, then Commit
	// with the outcome.
	at := func(now float64, l policy.Locality) bool {
		c.NowS = now
		a := start(l)
		ok, why := d.Admit(hb, a)
		if ok {
			d.Commit(hb, a, nil)
		} else {
			v := policy.VetoOf(d.Name(), a, why)
			d.Commit(hb, a, &v)
		}
		return ok
	}
	if at(0, policy.RackLocal) {
		t.Fatal("rack-local admitted without waiting")
	}
	if at(4.9, policy.RackLocal) || at(4.9, policy.OffRack) {
		t.Fatal("admitted before W1")
	}
	if !at(5, policy.RackLocal) || at(5, policy.OffRack) {
		t.Fatal("after W1: want rack-local only")
	}
	if !at(10, policy.OffRack) {
		t.Fatal("after W1+W2: want off-rack")
	}
	if !at(10, policy.NodeLocal) {
		t.Fatal("node-local refused")
	}
	// a node-local launch reset the wait
	if at(11, policy.RackLocal) {
		t.Fatal("wait not reset by a node-local launch")
	}
	// Admit only reads: asking again and again starts no clock
	fresh, _ := NewDelayScheduling(5, 5)
	for now := range 20 {
		c.NowS = float64(now)
		if ok, _ := fresh.Admit(hb, start(policy.RackLocal)); ok {
			t.Fatalf("at %d s: admitted a rack-local map of a job whose clock never started", now)
		}
	}
	// a node-local map that another filter vetoes did not start: the wait
	// goes on (the clock started at 11 above)
	other := policy.Veto{Stage: NameSlotPreScheduling}
	c.NowS = 16
	d.Commit(hb, start(policy.NodeLocal), &other)
	if !at(16, policy.RackLocal) {
		t.Fatal("a node-local map vetoed by another filter reset the wait")
	}
	// reduces and copies pass
	if ok, _ := d.Admit(hb, policy.Action{Kind: policy.ActionStart, Job: "j1", Type: models.ReduceTask}); !ok {
		t.Fatal("reduce vetoed")
	}
	if ok, _ := d.Admit(hb, policy.Action{Kind: policy.ActionSpeculate, Job: "j1", Type: models.MapTask, Locality: policy.OffRack}); !ok {
		t.Fatal("copy vetoed")
	}
}

// Delay scheduling in a pipeline: the head job's non-local map is skipped
// and the slot goes to the next job, which is node-local.
func TestDelaySchedulingSkipsToNextJob(t *testing.T) {
	f := policytest.NewFixture(0, true, nil)
	a := f.Node("a", "r1", 1, 0, nil)
	f.Node("b", "r2", 1, 0, nil)
	j1 := f.Job("j1", 1, 0, nil)
	j2 := f.Job("j2", 1, 0, nil)
	j1.PendingMaps[0].PreferredNodes, j1.PendingMaps[0].PreferredRacks = []string{"b"}, []string{"r2"}
	j2.PendingMaps[0].PreferredNodes, j2.PendingMaps[0].PreferredRacks = []string{"a"}, []string{"r1"}
	c := f.Finish()
	p, err := policy.NewPipeline("mrv1-static+delay-scheduling", policy.HeartbeatConfig{})
	if err != nil {
		t.Fatal(err)
	}
	acts := p.Heartbeat(c, a).Actions
	if len(acts) != 1 || acts[0].Job != "j2" || acts[0].Locality != policy.NodeLocal {
		t.Fatalf("want j2's node-local map, got\n%s", policytest.Reasons(acts))
	}
	p, _ = policy.NewPipeline("mrv1-static", policy.HeartbeatConfig{})
	if acts := p.Heartbeat(c, a).Actions; len(acts) != 1 || acts[0].Job != "j1" {
		t.Fatalf("without delay scheduling want j1 first, got\n%s", policytest.Reasons(acts))
	}
}

// policy.Slot PreScheduling (§2.3): 2 nodes × 4 map slots, 2 maps running on a and
// 1 pending: load factor 3/8, usable ⌈0.375·4⌉ = 2 on a, so no allowable
// idle slot; the load manager vetoes a non-local map, pre-scheduling admits
// a node-local one into an extra idle slot.
func TestSlotPreScheduling(t *testing.T) {
	f := policytest.NewFixture(0, true, nil)
	a := f.Node("a", "r1", 4, 0, nil)
	f.Node("b", "r1", 4, 0, nil)
	j := f.Job("j1", 1, 0, nil)
	f.Run(j, models.MapTask, a, 0, 0.5)
	f.Run(j, models.MapTask, a, 0, 0.5)
	c := f.Finish()
	hb := policy.NewHeartbeat(c, a)
	if lf := MapSlotsLoadFactor(c); lf != 3.0/8 {
		t.Fatalf("load factor %v", lf)
	}
	if got := AllowableIdleMapSlots(hb); got != 0 {
		t.Fatalf("allowable idle map slots %d, want 0", got)
	}
	local := policy.Action{Kind: policy.ActionStart, Job: "j1", Type: models.MapTask, Slot: models.MapTask, Locality: policy.NodeLocal}
	remote := local
	remote.Locality = policy.OffRack
	on, off := &SlotPreScheduling{Enabled: true}, &SlotPreScheduling{}
	if ok, why := on.Admit(hb, local); !ok {
		t.Fatalf("node-local vetoed: %s", why)
	}
	if ok, _ := on.Admit(hb, remote); ok {
		t.Fatal("off-rack admitted beyond the load cap")
	}
	if ok, _ := off.Admit(hb, local); ok {
		t.Fatal("load manager alone admitted beyond the cap")
	}
	// node b has allowable slots: admitted whatever the locality
	if ok, _ := on.Admit(policy.NewHeartbeat(c, f.NodeByID("b")), remote); !ok {
		t.Fatal("vetoed on a node with allowable idle slots")
	}
}
