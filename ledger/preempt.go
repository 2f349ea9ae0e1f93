package ledger

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
)

// Reducer preemption: the MapReduce AM's answer to reducers that hold the
// cluster while maps wait (Hadoop's RMContainerAllocator.
// preemptReducesIfNeeded). Reduces that start early (slow start reached,
// no ramp-up) can fill every node while maps of their own or another job
// wait: the maps can never start and the reducers, which wait for them,
// never finish. Scheduler.Heartbeat then kills, on the heartbeating node,
// reducers of jobs whose maps are not done (least progress first, then the
// newest) just until one waiting map fits, and starts that map in the
// freed room; each killed reducer's task is pending again.
//
// It is a rule of the ledger's scheduler path, not a pipeline stage,
// because it is a liveness guarantee every pipeline needs (a cluster whose
// spec forgot the stage would hang), and because it must be decided on the
// ledger's whole-cluster state (which attempts can still finish, whether a
// map fits on any node), which one node's heartbeat view does not promise.
//
// Unlike Hadoop, which preempts as soon as the headroom cannot fit a map
// (after mapreduce.job.reducer.unconditional-preempt.delay.sec), the rule
// fires only on a true deadlock: a map waits, no node can start any waiting
// map, and no running attempt can finish (no map runs, and every running
// reducer belongs to a job whose maps are not done). Every attempt that can
// finish would free room, so until then the pipeline decides alone, and a
// run that never deadlocks is exactly what it was without the rule. It
// still guarantees progress: each preemption starts a map that can finish,
// a finished map is never undone, and a run has finitely many maps.

// PreemptReason begins the reason of every kill of a preempted reducer,
// by which an executor (and the simulator's count) tells it from the
// kills a policy decided.
const PreemptReason = "preempt reducer: "

// preempt returns, when the cluster is deadlocked, the kills of reducers
// on node id and the start of the waiting map they make room for; nil
// otherwise (or when no reducer of the node can make room for any map).
func (l *Ledger) preempt(id string) []policy.Action {
	if !l.deadlocked() {
		return nil
	}
	n := l.nodeAt[id]
	victims := l.victims(n)
	if len(victims) == 0 {
		return nil
	}
	for _, j := range l.active {
		t := j.waitingMap(n)
		if t == nil {
			continue
		}
		kills, ok := l.makeRoom(n, victims, t.job.demand[models.MapTask])
		if !ok {
			continue
		}
		waiting := countFunc(j.tasks[0], func(t *task) bool { return !t.done && len(t.attempts) == 0 })
		var out []policy.Action
		for _, v := range kills {
			out = append(out, policy.Action{Kind: policy.ActionKill, Job: v.task.job.spec.ID, Type: models.ReduceTask, Task: v.task.index,
				Attempt: v.id, Node: n.id, Reason: PreemptReason + fmt.Sprintf(
					"%d maps of job %s wait, none fits on any node, and reducers of jobs whose maps are not done hold the room (progress %.2f)",
					waiting, j.spec.ID, v.progress)})
		}
		start := policy.Action{Kind: policy.ActionStart, Job: j.spec.ID, Type: models.MapTask, Task: t.index, Node: n.id,
			Locality: l.localityOf(t, n), Reason: fmt.Sprintf("map in the room of %d preempted reducers", len(kills))}
		if l.slots {
			start.Slot = models.MapTask
		}
		return append(out, start)
	}
	return nil
}

// deadlocked: a map waits, no node can start one, and no running attempt
// can finish (every one is a reducer of a job whose maps are not done).
func (l *Ledger) deadlocked() bool {
	// The running attempts first: in a run that progresses one of them can
	// finish, which settles it at once (a running map, nearly always).
	if l.runningMaps > 0 {
		return false
	}
	for _, at := range l.attempt {
		if at.task.typ == models.MapTask || at.task.job.done[0] == len(at.task.job.tasks[0]) {
			return false
		}
	}
	waiting := false
	for _, j := range l.active {
		if j.waitingMap(nil) == nil {
			continue
		}
		waiting = true
		for _, n := range l.nodes {
			if l.fits(n, n.used(l.dims), j.demand[models.MapTask]) {
				return false
			}
		}
	}
	return waiting
}

// waitingMap is a map of the job's stage that waits for room (not done, no
// attempt): one whose input is on node n if there is one (n may be nil),
// else the first.
func (j *job) waitingMap(n *node) *task {
	var first *task
	for _, t := range j.tasks[0] {
		if t.done || len(t.attempts) > 0 {
			continue
		}
		if n == nil {
			return t
		}
		if slices.Contains(t.pending.PreferredNodes, n.id) {
			return t
		}
		if first == nil {
			first = t
		}
	}
	return first
}

// fits: a map of demand d can start on n, whose attempts hold o.
func (l *Ledger) fits(n *node, o models.Occupancy, d models.Resources) bool {
	if l.dims > 0 && !o.Requested.Add(d).Fits(n.capacity) {
		return false
	}
	return !l.slots || o.MapSlots < n.mapSlots
}

// victims are node n's reducers of jobs whose maps are not done, in the
// order they are preempted: least progress first, then the newest.
func (l *Ledger) victims(n *node) []*attempt {
	var out []*attempt
	for _, at := range n.running {
		if j := at.task.job; at.task.typ == models.ReduceTask && j.done[0] < len(j.tasks[0]) {
			out = append(out, at)
		}
	}
	slices.SortFunc(out, func(a, b *attempt) int {
		if c := cmp.Compare(a.progress, b.progress); c != 0 {
			return c
		}
		if c := cmp.Compare(b.startS, a.startS); c != 0 {
			return c
		}
		return cmp.Compare(b.id, a.id)
	})
	return out
}

// makeRoom picks, in order, the victims whose kill frees something a map
// of demand d still lacks on n, until it fits; ok is false if all of them
// do not make enough room.
func (l *Ledger) makeRoom(n *node, victims []*attempt, d models.Resources) (kills []*attempt, ok bool) {
	o := n.used(l.dims)
	for _, v := range victims {
		if l.fits(n, o, d) {
			return kills, true
		}
		if !l.frees(n, o, d, v) {
			continue
		}
		o.Remove(v.requested, v.granted, v.slot)
		kills = append(kills, v)
	}
	return kills, l.fits(n, o, d)
}

// frees: killing v gives back something a map of demand d lacks on n.
func (l *Ledger) frees(n *node, o models.Occupancy, d models.Resources, v *attempt) bool {
	if l.slots && o.MapSlots >= n.mapSlots && v.slot == models.MapTask {
		return true
	}
	if l.dims == 0 {
		return false
	}
	lack := o.Requested.Add(d)
	for q := range lack {
		if lack[q] > n.capacity[q] && v.requested[q] > 0 {
			return true
		}
	}
	return false
}

// localityOf is the locality of map t on node n.
func (l *Ledger) localityOf(t *task, n *node) policy.Locality {
	return policy.LocalityOf(t.pending, &policy.NodeView{ID: n.id, Rack: n.rack})
}
