package slots

import (
	"errors"
	"strings"
	"testing"

	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
	"github.com/optd/optd/policy/policytest"
)

// dhsaCluster: three nodes configured 2 map / 2 reduce slots (S_M = S_R =
// 6). Node a runs usedM maps and usedR reduces of job j1; the pending tasks
// make the demands N_M, N_R.
func dhsaCluster(usedM, usedR, pendM, pendR int) (*policytest.Fixture, *policy.Heartbeat) {
	f := policytest.NewFixture(100, true, nil)
	a := f.Node("a", "r1", 2, 2, nil)
	f.Node("b", "r1", 2, 2, nil)
	f.Node("c", "r1", 2, 2, nil)
	j := f.Job("j1", pendM, pendR, nil)
	for range usedM {
		f.Run(j, models.MapTask, a, 90, 0.5)
	}
	for range usedR {
		f.Run(j, models.ReduceTask, a, 90, 0.5)
	}
	c := f.Finish()
	return f, policy.NewHeartbeat(c, a)
}

func TestPIDHSAFourCases(t *testing.T) {
	for _, tc := range []struct {
		name                      string
		usedM, usedR, pendM, pend int
		wantM, wantR              int
		wantCase                  string
	}{
		// N_M = 4 ≤ 6, N_R = 2 ≤ 6: configured slots.
		{"case 1", 2, 1, 2, 1, 2, 2, "case 1"},
		// N_M = 2+10 > 6, N_R = 1 < 6: node a lends its 1 idle reduce slot.
		{"case 2", 2, 1, 10, 0, 3, 1, "case 2"},
		// N_M = 1 < 6, N_R = 2+10 > 6: node a lends its 1 idle map slot.
		{"case 3", 1, 2, 0, 10, 1, 3, "case 3"},
		// both overloaded: no movement.
		{"case 4", 2, 2, 10, 10, 2, 2, "case 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, hb := dhsaCluster(tc.usedM, tc.usedR, tc.pendM, tc.pend)
			d, err := NewPIDHSA(DefaultDHSAParams())
			if err != nil {
				t.Fatal(err)
			}
			m, r, why := d.Slots(hb)
			if m != tc.wantM || r != tc.wantR || !strings.Contains(why, tc.wantCase) {
				t.Fatalf("Slots = %d/%d (%s), want %d/%d under %s", m, r, why, tc.wantM, tc.wantR, tc.wantCase)
			}
		})
	}
}

// The paper's slot-weight example (§2.1): a node configured 8/4 with
// weights 1 and 2 runs at most 16 maps or 8 reduces.
func TestPIDHSASlotWeights(t *testing.T) {
	build := func(pendM, pendR int) *policy.Heartbeat {
		f := policytest.NewFixture(0, true, nil)
		n := f.Node("a", "r1", 8, 4, nil)
		f.Job("j1", pendM, pendR, nil)
		return policy.NewHeartbeat(f.Finish(), n)
	}
	p := DefaultDHSAParams()
	p.ReduceSlotWeight = 2
	d, err := NewPIDHSA(p)
	if err != nil {
		t.Fatal(err)
	}
	if m, r, why := d.Slots(build(100, 0)); m != 16 || r != 0 {
		t.Errorf("maps only: %d/%d (%s), want 16/0", m, r, why)
	}
	d, _ = NewPIDHSA(p)
	if m, r, why := d.Slots(build(0, 100)); m != 0 || r != 8 {
		t.Errorf("reduces only: %d/%d (%s), want 0/8", m, r, why)
	}
}

func TestPIDHSABorrowPercentageAndClusterLimit(t *testing.T) {
	// 4 idle reduce slots on a, 50%: lend 2.
	f := policytest.NewFixture(0, true, nil)
	a := f.Node("a", "r1", 2, 4, nil)
	b := f.Node("b", "r1", 2, 4, nil)
	f.Job("j1", 100, 0, nil)
	c := f.Finish()
	p := DefaultDHSAParams()
	p.PercentageOfBorrowedReduceSlots = 0.5
	d, _ := NewPIDHSA(p)
	if m, r, why := d.Slots(policy.NewHeartbeat(c, a)); m != 4 || r != 2 {
		t.Fatalf("50%%: %d/%d (%s), want 4/2", m, r, why)
	}
	// The cluster limit: maps lack N_M − S_M = 3 slots; node b already
	// lends 2 (its counts show it), so a lends only 1 more.
	f = policytest.NewFixture(0, true, nil)
	a = f.Node("a", "r1", 2, 4, nil)
	b = f.Node("b", "r1", 2, 4, nil)
	f.Job("j1", 7, 0, nil)
	c = f.Finish()
	d, _ = NewPIDHSA(DefaultDHSAParams())
	d.learn(c) // configured 2/4 everywhere
	b.MapSlots, b.ReduceSlots, b.FreeMapSlots, b.FreeReduceSlots = 4, 2, 4, 2
	if m, r, why := d.Slots(policy.NewHeartbeat(c, a)); m != 3 || r != 3 {
		t.Fatalf("cluster limit: %d/%d (%s), want 3/3", m, r, why)
	}
}

// Borrowed slots come back when the case changes (here to Case 4, both
// types overloaded), but not below the slots in use.
func TestPIDHSARestoreKeepsSlotsInUse(t *testing.T) {
	f := policytest.NewFixture(0, true, nil)
	a := f.Node("a", "r1", 2, 3, nil)
	j := f.Job("j1", 0, 4, nil) // 4 pending reduces: N_R = 4 > S_R = 3
	c := f.Finish()
	d, _ := NewPIDHSA(DefaultDHSAParams())
	d.learn(c) // configured 2/3
	// a lent all 3 reduce slots: 5 map slots, 4 running maps.
	for range 4 {
		f.Run(j, models.MapTask, a, 0, 0.5)
	}
	a.MapSlots, a.ReduceSlots = 5, 0
	c = f.Finish()
	if m, r, why := d.Slots(policy.NewHeartbeat(c, a)); m != 4 || r != 1 || !strings.Contains(why, "case 4") {
		t.Fatalf("restore with 4 maps running: %d/%d (%s), want 4/1", m, r, why)
	}
}

func TestPIDHSAThroughPipeline(t *testing.T) {
	_, hb := dhsaCluster(2, 0, 10, 0) // case 2, a has 2 idle reduce slots
	p, err := policy.NewPipeline("pi-dhsa", policy.HeartbeatConfig{})
	if err != nil {
		t.Fatal(err)
	}
	d := p.Heartbeat(hb.Cluster, hb.Node)
	acts := d.Actions
	k := policytest.Kinds(acts)
	if k[policy.ActionSlots] != 1 || k[policy.ActionStart] != 2 || d.Dropped != 0 {
		t.Fatalf("want 1 slots action and 2 map starts in lent slots, got\n%s", policytest.Reasons(acts))
	}
	if acts[0].MapSlots != 4 || acts[0].ReduceSlots != 0 {
		t.Fatalf("slots %d/%d, want 4/0", acts[0].MapSlots, acts[0].ReduceSlots)
	}
}

func TestPDDHSAFourCases(t *testing.T) {
	// Node a: map slots full, 2 idle reduce slots, only maps pending:
	// case (3) puts maps in reduce slots.
	f := policytest.NewFixture(0, true, nil)
	a := f.Node("a", "r1", 1, 2, nil)
	j := f.Job("j1", 5, 0, nil)
	f.Run(j, models.MapTask, a, 0, 0.2)
	c := f.Finish()
	p, err := policy.NewPipeline("pd-dhsa", policy.HeartbeatConfig{})
	if err != nil {
		t.Fatal(err)
	}
	acts := p.Heartbeat(c, a).Actions
	if len(acts) != 2 {
		t.Fatalf("want 2 starts, got\n%s", policytest.Reasons(acts))
	}
	for _, x := range acts {
		if x.Type != models.MapTask || x.Slot != models.ReduceTask || !strings.Contains(x.Reason, "case (3)") {
			t.Fatalf("want maps in borrowed reduce slots, got %v", x)
		}
	}
	// 50% of the idle reduce slots only: one of the two is lent.
	half, _ := policy.NewPipeline("pd-dhsa", policy.HeartbeatConfig{})
	if err := half.SetParam("pd-dhsa.percentage_of_borrowed_reduce_slots", 0.5); err != nil {
		t.Fatal(err)
	}
	if acts := half.Heartbeat(c, a).Actions; len(acts) != 1 || acts[0].Slot != models.ReduceTask {
		t.Fatalf("at 50%% of 2 idle reduce slots, want one map in a borrowed slot, got\n%s", policytest.Reasons(acts))
	}
	// Cases (1), (2) first: a free map slot and a free reduce slot with
	// both types pending: a map in the map slot, a reduce in the reduce slot.
	f = policytest.NewFixture(0, true, nil)
	a = f.Node("a", "r1", 1, 1, nil)
	f.Job("j1", 3, 3, nil)
	c = f.Finish()
	p, _ = policy.NewPipeline("pd-dhsa", policy.HeartbeatConfig{})
	acts = p.Heartbeat(c, a).Actions
	if len(acts) != 2 || acts[0].Slot != models.MapTask || acts[0].Type != models.MapTask || acts[1].Slot != models.ReduceTask || acts[1].Type != models.ReduceTask {
		t.Fatalf("want case (1) then case (2), got\n%s", policytest.Reasons(acts))
	}
	// Case (4): only reduces pending, an idle map slot.
	f = policytest.NewFixture(0, true, nil)
	a = f.Node("a", "r1", 1, 0, nil)
	f.Job("j1", 0, 3, nil)
	c = f.Finish()
	p, _ = policy.NewPipeline("pd-dhsa", policy.HeartbeatConfig{})
	acts = p.Heartbeat(c, a).Actions
	if len(acts) != 1 || acts[0].Type != models.ReduceTask || acts[0].Slot != models.MapTask || !strings.Contains(acts[0].Reason, "case (4)") {
		t.Fatalf("want case (4), got\n%s", policytest.Reasons(acts))
	}
	if _, err := NewPDDHSA(DHSAParams{PercentageOfBorrowedMapSlots: 1, PercentageOfBorrowedReduceSlots: 1, MapSlotWeight: 1, ReduceSlotWeight: 2}); !errors.Is(err, policy.ErrInvalidConfig) {
		t.Fatalf("weights ≠ 1: err = %v", err)
	}
}

// Fair order: the pool with fewer running tasks goes first.
func TestFairSlotsOrder(t *testing.T) {
	f := policytest.NewFixture(0, true, nil)
	a := f.Node("a", "r1", 3, 0, nil)
	b := f.Node("b", "r1", 4, 0, nil)
	j1 := f.Job("j1", 5, 0, nil)
	j2 := f.Job("j2", 5, 0, nil)
	j1.Queue, j2.Queue = "p1", "p2"
	for range 3 {
		f.Run(j1, models.MapTask, b, 0, 0.1)
	}
	c := f.Finish()
	p, _ := policy.NewPipeline("mrv1-static", policy.HeartbeatConfig{})
	acts := p.Heartbeat(c, a).Actions
	// j2 (0 running) gets slots until it catches up with j1 (3 running).
	got := ""
	for _, x := range acts {
		got += x.Job + " "
	}
	if got != "j2 j2 j2 " {
		t.Fatalf("starts = %q, want j2 j2 j2\n%s", got, policytest.Reasons(acts))
	}
}

// On a container cluster PD-DHSA has no slot to borrow and assigns maps and
// reduces by the fair pool order alone.
func TestPDDHSAOnContainerCluster(t *testing.T) {
	f := policytest.NewFixture(0, false, models.MemoryVCores())
	a := f.Node("a", "r1", 0, 0, models.Resources{4096, 4})
	f.Job("j1", 2, 1, models.Resources{1024, 1})
	c := f.Finish()
	p, err := policy.NewPipeline("pd-dhsa", policy.HeartbeatConfig{})
	if err != nil {
		t.Fatal(err)
	}
	d := p.Heartbeat(c, a)
	acts := d.Actions
	if k := policytest.Kinds(acts); k[policy.ActionStart] != 3 || d.Dropped != 0 {
		t.Fatalf("want 2 maps and 1 reduce started, got\n%s", policytest.Reasons(acts))
	}
	for _, x := range acts {
		if x.Slot != 0 {
			t.Fatalf("slot %v on a container cluster", x.Slot)
		}
	}
}
