package ledger

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
)

// twoNodes is a cluster of two 4 GB / 2 vcore nodes in two racks.
func twoNodes(t *testing.T, slowStart float64) *Ledger {
	t.Helper()
	c := models.Cluster{Resources: models.MemoryVCores(), Nodes: []models.Node{
		{ID: "a", Rack: "r1", Capacity: models.Resources{4096, 2}},
		{ID: "b", Rack: "r2", Capacity: models.Resources{4096, 2}},
	}}
	l, err := New(Config{Cluster: c, SlowStart: slowStart})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// twoStageJob has two stages of two maps (inputs on a and b) and one reduce, 1 GB
// and 1 vcore a task.
func twoStageJob(id string) JobSpec {
	d := models.Resources{1024, 1}
	st := StageSpec{Maps: [][]string{{"a"}, {"b"}}, Reduces: 1}
	return JobSpec{ID: id, Demand: map[models.TaskType]models.Resources{models.MapTask: d, models.ReduceTask: d}, Stages: []StageSpec{st, st}}
}

func start(id string, tt models.TaskType, task int) policy.Action {
	return policy.Action{Kind: policy.ActionStart, Job: id, Type: tt, Task: task}
}

// TestApplyRefusesWhatDoesNotFit: every rule of Apply refuses its action,
// counts it and changes nothing.
func TestApplyRefusesWhatDoesNotFit(t *testing.T) {
	l := twoNodes(t, 1)
	if err := l.Submit(twoStageJob("j")); err != nil {
		t.Fatal(err)
	}
	if _, rej, err := l.Apply("a", 1, []policy.Action{start("j", models.MapTask, 0)}); err != nil || rej != 0 {
		t.Fatalf("a valid start: rejected %d, %v", rej, err)
	}
	big := start("j", models.MapTask, 1)
	big.Resources = models.Resources{8192, 1}
	small := start("j", models.MapTask, 1)
	small.Resources = models.Resources{512, 1}
	for name, a := range map[string]policy.Action{
		"unknown job":             start("x", models.MapTask, 0),
		"bad type":                start("j", 0, 0),
		"task out of range":       start("j", models.MapTask, 2),
		"already running":         start("j", models.MapTask, 0),
		"reduce before slowstart": start("j", models.ReduceTask, 0),
		"over capacity":           big,
		"less than the demand":    small,
		"speculate unknown":       {Kind: policy.ActionSpeculate, Attempt: 99},
		"kill unknown":            {Kind: policy.ActionKill, Attempt: 99},
		"adjust other node":       {Kind: policy.ActionAdjust, Attempt: 1, Resources: models.Resources{1024, 1}},
		"unknown kind":            {Kind: 42},
	} {
		node := "a"
		if name == "adjust other node" {
			node = "b"
		}
		before := l.View(2)
		applied, rej, err := l.Apply(node, 2, []policy.Action{a})
		if err != nil || rej != 1 || len(applied) != 0 {
			t.Errorf("%s: applied %v, rejected %d, %v; want one refusal", name, applied, rej, err)
		}
		if after := l.View(2); !reflect.DeepEqual(before, after) {
			t.Errorf("%s: the refused action changed the view", name)
		}
	}
	if _, _, err := l.Apply("zz", 2, nil); !errors.Is(err, ErrUnknown) {
		t.Errorf("unknown node: %v", err)
	}
}

// TestFinishKillsCopiesAndAdvancesStages: the first attempt to finish
// completes the task and its copy is killed; the last task of a stage
// starts the next; the last stage ends the job.
func TestFinishKillsCopiesAndAdvancesStages(t *testing.T) {
	l := twoNodes(t, 0)
	if err := l.Submit(twoStageJob("j")); err != nil {
		t.Fatal(err)
	}
	ap, _, _ := l.Apply("a", 0, []policy.Action{start("j", models.MapTask, 0), start("j", models.MapTask, 1)})
	sp, _, _ := l.Apply("b", 1, []policy.Action{{Kind: policy.ActionSpeculate, Attempt: ap[1].Attempt}, start("j", models.ReduceTask, 0)})
	if len(sp) != 2 || sp[0].Source != ap[1].Attempt || sp[0].Task != 1 {
		t.Fatalf("speculate: %+v", sp)
	}
	var seen []float64
	observe := func(c *policy.ClusterView, a *policy.AttemptView, d float64) { seen = append(seen, d) }
	for _, id := range []int{ap[0].Attempt, sp[0].Attempt} {
		if done, err := l.Finish(5, id, observe); err != nil || done {
			t.Fatalf("finish %d: %v %v", id, done, err)
		}
	}
	if l.Running() != 1 || !reflect.DeepEqual(seen, []float64{5, 4}) {
		t.Fatalf("after the maps: %d running (want the reduce), durations %v", l.Running(), seen)
	}
	if _, err := l.Finish(4, ap[1].Attempt, nil); !errors.Is(err, ErrUnknown) {
		t.Errorf("the killed original still finishes: %v", err)
	}
	if done, err := l.Finish(6, sp[1].Attempt, nil); err != nil || done {
		t.Fatalf("reduce: %v %v", done, err)
	}
	v := l.View(6).Jobs[0]
	if v.Stage != 1 || len(v.PendingMaps) != 2 || v.MapsDone != 0 {
		t.Fatalf("second stage: %+v", v)
	}
	ids := []int{}
	for i, node := range []string{"a", "b"} {
		a, _, _ := l.Apply(node, 7, []policy.Action{start("j", models.MapTask, i)})
		ids = append(ids, a[0].Attempt)
	}
	a, _, _ := l.Apply("a", 7, []policy.Action{start("j", models.ReduceTask, 0)})
	ids = append(ids, a[0].Attempt)
	for k, id := range ids {
		done, err := l.Finish(9, id, nil)
		if err != nil || done != (k == len(ids)-1) {
			t.Fatalf("finish %d: done %v, %v", id, done, err)
		}
	}
	if l.Active() != 0 {
		t.Fatal("the job is still active")
	}
}

// TestGrantsLastOneHeartbeat: an adjustment beyond the request holds until
// the node's next Apply, which resets it.
func TestGrantsLastOneHeartbeat(t *testing.T) {
	l := twoNodes(t, 1)
	if err := l.Submit(twoStageJob("j")); err != nil {
		t.Fatal(err)
	}
	ap, _, _ := l.Apply("a", 0, []policy.Action{start("j", models.MapTask, 0)})
	id := ap[0].Attempt
	adj := policy.Action{Kind: policy.ActionAdjust, Attempt: id, Resources: models.Resources{4096, 2}}
	if _, rej, _ := l.Apply("a", 1, []policy.Action{adj}); rej != 0 || !l.Granting("a") {
		t.Fatalf("adjust refused (%d) or not granted", rej)
	}
	if g := l.View(1).Nodes[0].Running[0].Granted; !g.Equal(models.Resources{4096, 2}) {
		t.Fatalf("granted %v", g)
	}
	over := adj
	over.Resources = models.Resources{8192, 2}
	if _, rej, _ := l.Apply("a", 2, []policy.Action{over}); rej != 1 || l.Granting("a") {
		t.Fatalf("an adjustment over capacity: rejected %d, granting %v (want refused, grant reset)", rej, l.Granting("a"))
	}
}

// TestViewsStayAsReturned: a view handed out is never modified by later
// changes (the ledger rebuilds what changed).
func TestViewsStayAsReturned(t *testing.T) {
	l := twoNodes(t, 0)
	if err := l.Submit(twoStageJob("j")); err != nil {
		t.Fatal(err)
	}
	v1 := l.View(0)
	snapshot := func(c *policy.ClusterView) string {
		return fmt.Sprint(c.Nodes[0].Free, len(c.Jobs[0].PendingMaps), len(c.Nodes[0].Running), c.Jobs[0].Running)
	}
	want := snapshot(v1)
	ap, _, _ := l.Apply("a", 1, []policy.Action{start("j", models.MapTask, 0)})
	if err := l.CheckHeartbeat("a", 0, []Status{{Attempt: ap[0].Attempt, Phase: models.PhaseMap, Progress: 0.5}}, nil, nil); err != nil {
		t.Fatal(err)
	}
	l.report([]Status{{Attempt: ap[0].Attempt, Phase: models.PhaseMap, Progress: 0.5}})
	v2 := l.View(2)
	if snapshot(v1) != want {
		t.Fatal("an earlier view changed")
	}
	if v2.Nodes[0].Running[0].Progress != 0.5 || len(v2.Jobs[0].PendingMaps) != 1 || v2.Nodes[1] != v1.Nodes[1] {
		t.Fatalf("the new view: %+v; the unchanged node's view is not reused", v2.Nodes[0])
	}
}

// TestSnapshotAndReplay: an idle ledger's snapshot rebuilds it (attempt ids
// and changed slots); a busy one has none; malformed events are refused.
func TestSnapshotAndReplay(t *testing.T) {
	c := models.Cluster{Nodes: []models.Node{{ID: "a", Rack: "r", MapSlots: 2, ReduceSlots: 1}}}
	l, err := New(Config{Cluster: c})
	if err != nil {
		t.Fatal(err)
	}
	j := JobSpec{ID: "j", Stages: []StageSpec{{Maps: [][]string{{}}, Reduces: 0}}}
	if err := l.Submit(j); err != nil {
		t.Fatal(err)
	}
	if _, ok := l.Snapshot(); ok {
		t.Fatal("a busy ledger has a snapshot")
	}
	ap, _, _ := l.Apply("a", 0, []policy.Action{{Kind: policy.ActionSlots, MapSlots: 3, ReduceSlots: 0}, start("j", models.MapTask, 0)})
	if _, err := l.Finish(1, ap[1].Attempt, nil); err != nil {
		t.Fatal(err)
	}
	ev, ok := l.Snapshot()
	if !ok {
		t.Fatal("an idle ledger has no snapshot")
	}
	data, _ := ev.Encode()
	back, err := DecodeEvent(data)
	if err != nil {
		t.Fatal(err)
	}
	fresh, _ := New(Config{Cluster: c})
	if err := fresh.Replay(back); err != nil {
		t.Fatal(err)
	}
	if err := fresh.Submit(j); err != nil {
		t.Fatal(err)
	}
	a2, _, _ := fresh.Apply("a", 2, []policy.Action{start("j", models.MapTask, 0)})
	if a2[0].Attempt != ap[1].Attempt+1 || fresh.View(2).Nodes[0].MapSlots != 3 {
		t.Fatalf("restored: attempt %d (want %d), map slots %d (want 3)", a2[0].Attempt, ap[1].Attempt+1, fresh.View(2).Nodes[0].MapSlots)
	}
	for _, e := range []Event{{}, {Fail: 3, Remove: "j"}} {
		if err := fresh.Replay(e); !errors.Is(err, ErrInvalid) {
			t.Errorf("Replay(%+v) = %v, want ErrInvalid", e, err)
		}
	}
	if err := fresh.Replay(Event{Snapshot: &SnapshotEvent{NextAttempt: 1}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("a snapshot on a busy ledger: %v", err)
	}
}

// TestMapOutputs: the job's view counts the maps finished on each node
// with their reported output (X_done), stage by stage; outputs that do not
// fit (negative, not finite, of a reduce, of an attempt the heartbeat does
// not finish) are refused naming output_mb.
func TestMapOutputs(t *testing.T) {
	for seed := uint64(1); seed <= 10; seed++ {
		l := twoNodes(t, 0)
		if err := l.Submit(twoStageJob("j")); err != nil {
			t.Fatal(err)
		}
		applied, _, err := l.Apply("a", 0, []policy.Action{start("j", models.MapTask, 0), start("j", models.MapTask, 1)})
		if err != nil || len(applied) != 2 {
			t.Fatalf("apply: %v %v", applied, err)
		}
		red, _, err := l.Apply("b", 0, []policy.Action{start("j", models.ReduceTask, 0)})
		if err != nil || len(red) != 1 {
			t.Fatalf("apply: %v %v", red, err)
		}
		m0, m1, r0 := applied[0].Attempt, applied[1].Attempt, red[0].Attempt
		mb := float64(seed) * 10
		for _, bad := range []map[int]float64{{m0: -1}, {m0: math.NaN()}, {m0: math.Inf(1)}, {m1: 5}, {r0: 5}} {
			err := l.checkOutputs([]int{m0, r0}, bad)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "output_mb") {
				t.Fatalf("outputs %v: err %v, want ErrInvalid naming output_mb", bad, err)
			}
		}
		if _, err := l.FinishWithOutput(1, r0, 3, nil); !errors.Is(err, ErrInvalid) {
			t.Fatalf("a reduce's output: err %v, want ErrInvalid", err)
		}
		if _, err := l.FinishWithOutput(1, m0, mb, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := l.FinishWithOutput(2, m1, 0, nil); err != nil {
			t.Fatal(err)
		}
		j := l.View(2).Job("j")
		want := []policy.NodeOutput{{Node: "a", Maps: 2, MB: mb}}
		if !reflect.DeepEqual(j.MapOutputs, want) || j.MapOutputMB() != mb {
			t.Fatalf("outputs %+v (X_done %v), want %+v", j.MapOutputs, j.MapOutputMB(), want)
		}
		if _, err := l.Finish(3, r0, nil); err != nil {
			t.Fatal(err)
		}
		if j := l.View(3).Job("j"); j.Stage != 1 || len(j.MapOutputs) != 0 {
			t.Fatalf("the second stage starts with outputs %+v (stage %d)", j.MapOutputs, j.Stage)
		}
	}
}
