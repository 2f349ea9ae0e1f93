package ledger

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
)

// driver changes a ledger at random, as a scheduler and its executor do,
// and records the events a server would make durable.
type driver struct {
	rng    *rand.Rand
	l      *Ledger
	events []Event
	now    float64
	jobs   int
}

// clusters are the configurations the property runs on: resources only,
// typed slots only, both, with slow start and ramp-up.
func checkpointClusters() []Config {
	res := models.MemoryVCores()
	var withRes, withSlots, both models.Cluster
	withRes.Resources, both.Resources = res, res
	for i := range 4 {
		id, rack := fmt.Sprint("n", i), fmt.Sprint("r", i%2)
		withRes.Nodes = append(withRes.Nodes, models.Node{ID: id, Rack: rack, Capacity: models.Resources{4096, 4}})
		withSlots.Nodes = append(withSlots.Nodes, models.Node{ID: id, Rack: rack, MapSlots: 2, ReduceSlots: 1})
		both.Nodes = append(both.Nodes, models.Node{ID: id, Rack: rack, Capacity: models.Resources{8192, 4}, MapSlots: 2, ReduceSlots: 2})
	}
	return []Config{{Cluster: withRes, SlowStart: 0.5}, {Cluster: withSlots}, {Cluster: both, SlowStart: 1, ReduceRamp: true}}
}

func (d *driver) node() string { return fmt.Sprint("n", d.rng.IntN(4)) }

// step makes one random change: a submission, a heartbeat's actions (some
// of them refused), a completion, a failure, a removal or a progress
// report.
func (d *driver) step(t *testing.T) {
	t.Helper()
	d.now += float64(d.rng.IntN(5))
	running := slices.Sorted(func(yield func(int) bool) {
		for id := range d.l.attempt {
			if !yield(id) {
				return
			}
		}
	})
	var ev *Event
	switch k := d.rng.IntN(20); {
	case k < 3 || d.l.Active() == 0:
		d.jobs++
		spec := JobSpec{ID: fmt.Sprint("j", d.jobs), SubmitS: d.now, Weight: float64(d.rng.IntN(3))}
		if d.l.dims > 0 {
			dem := models.Resources{int64(512 * (1 + d.rng.IntN(4))), int64(1 + d.rng.IntN(2))}
			spec.Demand = map[models.TaskType]models.Resources{models.MapTask: dem, models.ReduceTask: dem}
		}
		for range 1 + d.rng.IntN(2) {
			st := StageSpec{Reduces: d.rng.IntN(3)}
			for range 1 + d.rng.IntN(4) {
				st.Maps = append(st.Maps, []string{d.node()})
			}
			spec.Stages = append(spec.Stages, st)
		}
		if err := d.l.Submit(spec); err != nil {
			t.Fatal(err)
		}
		ev = &Event{Submit: &spec}
	case k < 11:
		var actions []policy.Action
		for range 1 + d.rng.IntN(4) {
			// Mostly a pending task (the start may still be refused: no
			// room, slow start), sometimes any.
			j := d.l.active[d.rng.IntN(len(d.l.active))]
			a := policy.Action{Kind: policy.ActionStart, Job: j.spec.ID, Type: models.TaskType(1 + d.rng.IntN(2))}
			a.Task = d.rng.IntN(max(len(j.tasks[a.Type-1]), 1))
			for _, ts := range j.tasks {
				for _, t := range ts {
					if !t.done && len(t.attempts) == 0 && d.rng.IntN(3) > 0 {
						a.Type, a.Task = t.typ, t.index
					}
				}
			}
			switch r := d.rng.IntN(10); {
			case r == 0 && len(running) > 0:
				a = policy.Action{Kind: policy.ActionSpeculate, Attempt: running[d.rng.IntN(len(running))]}
			case r == 1 && len(running) > 0:
				a = policy.Action{Kind: policy.ActionKill, Attempt: running[d.rng.IntN(len(running))]}
			case r == 2 && len(running) > 0 && d.l.dims > 0:
				a = policy.Action{Kind: policy.ActionAdjust, Attempt: running[d.rng.IntN(len(running))], Resources: models.Resources{1024, 2}}
			case r == 3:
				a = policy.Action{Kind: policy.ActionSlots, MapSlots: d.rng.IntN(4), ReduceSlots: d.rng.IntN(3)}
			}
			actions = append(actions, a)
		}
		node := d.node()
		if _, _, err := d.l.Apply(node, d.now, actions); err != nil {
			t.Fatal(err)
		}
		ev = &Event{Heartbeat: &HeartbeatEvent{Node: node, NowS: d.now, Actions: Records(actions)}}
	case k < 14 && len(running) > 0:
		id := running[d.rng.IntN(len(running))]
		// Maps report their output, sometimes not (unknown).
		out := 0.0
		if d.l.attempt[id].task.typ == models.MapTask && d.rng.IntN(3) > 0 {
			out = float64(d.rng.IntN(512))
		}
		if _, err := d.l.FinishWithOutput(d.now, id, out, nil); err != nil {
			t.Fatal(err)
		}
		ev = &Event{Finish: &FinishEvent{NowS: d.now, Attempt: id, OutputMB: out}}
	case k < 17 && len(running) > 0:
		id := running[d.rng.IntN(len(running))]
		if err := d.l.Fail(id); err != nil {
			t.Fatal(err)
		}
		ev = &Event{Fail: id}
	case k < 18:
		id := d.l.active[d.rng.IntN(len(d.l.active))].spec.ID
		if err := d.l.Remove(id); err != nil {
			t.Fatal(err)
		}
		ev = &Event{Remove: id}
	case len(running) > 0:
		// A progress report: soft state, no event.
		at := d.l.attempt[running[0]]
		st := []Status{{Attempt: at.id, Phase: at.task.typ.Phases()[0], Progress: 0.5}}
		if err := d.l.CheckHeartbeat(at.node.id, 0, st, nil, nil); err != nil {
			t.Fatal(err)
		}
		d.l.report(st)
	}
	if ev != nil {
		d.events = append(d.events, *ev)
	}
}

// rebuild replays encoded events into a new ledger of cfg.
func rebuild(t *testing.T, cfg Config, events []Event) *Ledger {
	t.Helper()
	l, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range events {
		data, err := e.Encode()
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeEvent(data)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Replay(back); err != nil {
			t.Fatalf("replaying event %d of %d (%s): %v", i, len(events), data, err)
		}
	}
	return l
}

// TestCheckpointRebuildsTheReplayedLedger: at random points of random
// histories on several cluster kinds, a ledger rebuilt from the checkpoint
// alone is the ledger rebuilt from every event (the second method): the
// same view, the same checkpoint, and the same views after the same
// further changes, so that a server may replace its log with a checkpoint
// at any moment.
func TestCheckpointRebuildsTheReplayedLedger(t *testing.T) {
	for ci, cfg := range checkpointClusters() {
		for seed := range 12 {
			rng := rand.New(rand.NewPCG(uint64(ci), uint64(seed)))
			live, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			d := &driver{rng: rng, l: live}
			for range 20 + rng.IntN(200) {
				d.step(t)
			}
			cp := live.Checkpoint()
			replayed := rebuild(t, cfg, d.events)
			restored := rebuild(t, cfg, []Event{cp})
			if !reflect.DeepEqual(replayed.View(d.now), restored.View(d.now)) {
				t.Fatalf("cluster %d, seed %d: the checkpoint's ledger differs from the replayed one:\n%+v\n%+v", ci, seed, replayed.View(d.now), restored.View(d.now))
			}
			a, _ := replayed.Checkpoint().Encode()
			b, _ := restored.Checkpoint().Encode()
			c, _ := cp.Encode()
			if !bytes.Equal(a, b) || !bytes.Equal(a, c) {
				t.Fatalf("cluster %d, seed %d: checkpoints differ:\n%s\n%s\n%s", ci, seed, a, b, c)
			}
			// The same further changes, on the live ledger, recorded, then
			// replayed after the checkpoint and after the whole history.
			mark := len(d.events)
			for range 50 {
				d.step(t)
			}
			after := rebuild(t, cfg, append([]Event{cp}, d.events[mark:]...))
			full := rebuild(t, cfg, d.events)
			if !reflect.DeepEqual(full.View(d.now), after.View(d.now)) {
				t.Fatalf("cluster %d, seed %d: after further changes the ledgers differ", ci, seed)
			}
			for name, l := range map[string]*Ledger{"live": live, "replayed": replayed, "restored": restored, "after": after, "full": full} {
				checkRunningMaps(t, name, l)
			}
		}
	}
}

// TestCheckpointRefusesWhatDoesNotFit: a checkpoint that does not fit the
// cluster is refused with ErrInvalid and no panic.
func TestCheckpointRefusesWhatDoesNotFit(t *testing.T) {
	cfg := checkpointClusters()[0]
	live, _ := New(cfg)
	d := &driver{rng: rand.New(rand.NewPCG(1, 1)), l: live}
	for len(live.attempt) == 0 {
		d.step(t)
	}
	good := live.Checkpoint().Snapshot
	for name, mutate := range map[string]func(s *SnapshotEvent){
		"stage out of range":   func(s *SnapshotEvent) { s.Jobs[0].Stage = 9 },
		"task states too few":  func(s *SnapshotEvent) { s.Jobs[0].Maps = "" },
		"a bad task state":     func(s *SnapshotEvent) { s.Jobs[0].Maps = "x" + s.Jobs[0].Maps[1:] },
		"attempt node unknown": func(s *SnapshotEvent) { s.Jobs[len(s.Jobs)-1].Attempts[0].Node = "zz" },
		"attempt id too high":  func(s *SnapshotEvent) { s.Jobs[len(s.Jobs)-1].Attempts[0].ID = s.NextAttempt + 1 },
		"attempt task unknown": func(s *SnapshotEvent) { s.Jobs[len(s.Jobs)-1].Attempts[0].Task = 99 },
		"a job twice":          func(s *SnapshotEvent) { s.Jobs = append(s.Jobs, s.Jobs[0]) },
	} {
		data, _ := Event{Snapshot: good}.Encode()
		ev, _ := DecodeEvent(data)
		if len(ev.Snapshot.Jobs[len(ev.Snapshot.Jobs)-1].Attempts) == 0 {
			t.Fatal("the last job has no attempt")
		}
		mutate(ev.Snapshot)
		l, _ := New(cfg)
		if err := l.Replay(ev); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// checkRunningMaps: the ledger's count of running map attempts (kept up
// to date for reducer preemption) is the count of its map attempts.
func checkRunningMaps(t *testing.T, name string, l *Ledger) {
	t.Helper()
	n := 0
	for _, at := range l.attempt {
		if at.task.typ == models.MapTask {
			n++
		}
	}
	if l.runningMaps != n {
		t.Fatalf("%s: runningMaps = %d, %d map attempts run", name, l.runningMaps, n)
	}
}
