package ledger

import (
	"slices"

	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
)

// View builds the heartbeat policies' view of the cluster at time now. The
// views of nodes, jobs and attempts that did not change since the last View
// are reused (a heartbeat changes a node and a few jobs of a large
// cluster); a changed one is built afresh, never modified, so a view once
// returned stays as it was. Policies must not modify views.
func (l *Ledger) View(now float64) *policy.ClusterView {
	c := &policy.ClusterView{NowS: now, Resources: l.cfg.Cluster.Resources, Total: l.total, SlotBased: l.slots, Racks: l.racks,
		Nodes: make([]*policy.NodeView, len(l.nodes)), Jobs: make([]*policy.JobView, len(l.active))}
	for i, n := range l.nodes {
		if n.view == nil {
			n.view = l.nodeView(n)
		}
		c.Nodes[i] = n.view
	}
	for i, j := range l.active {
		switch {
		case j.view == nil:
			j.view = l.jobView(j)
		case j.runningStale:
			v := *j.view
			v.Running = l.jobRunning(j)
			j.view = &v
		}
		j.runningStale = false
		c.Jobs[i] = j.view
	}
	return c
}

func (l *Ledger) nodeView(n *node) *policy.NodeView {
	o := n.used(l.dims)
	nv := &policy.NodeView{ID: n.id, Rack: n.rack, Capacity: n.capacity, MapSlots: n.mapSlots, ReduceSlots: n.reduceSlots,
		FreeMapSlots: max(n.mapSlots-o.MapSlots, 0), FreeReduceSlots: max(n.reduceSlots-o.ReduceSlots, 0)}
	if l.dims > 0 {
		nv.Free = n.capacity.Sub(o.Requested)
	}
	if len(n.running) > 0 {
		nv.Running = make([]*policy.AttemptView, len(n.running))
		for i, at := range n.running {
			nv.Running[i] = l.cachedAttemptView(at)
		}
	}
	return nv
}

func (l *Ledger) jobView(j *job) *policy.JobView {
	jv := &policy.JobView{ID: j.spec.ID, SubmitS: j.spec.SubmitS, Queue: j.spec.Queue, Weight: j.spec.Weight,
		Stage: j.stage, Stages: len(j.spec.Stages), Demand: j.demand,
		MapsTotal: len(j.tasks[0]), MapsDone: j.done[0], MapsAssigned: j.assigned[0],
		ReducesTotal: len(j.tasks[1]), ReducesDone: j.done[1], ReducesAssigned: j.assigned[1],
		SlowStartReached: j.slowStartReached(l.cfg.SlowStart),
	}
	if j.done[0] > 0 {
		jv.MeanMapS = j.durSum[0] / float64(j.done[0])
	}
	if j.done[1] > 0 {
		jv.MeanReduceS = j.durSum[1] / float64(j.done[1])
	}
	pending := func(t *task) bool { return !t.done && len(t.attempts) == 0 }
	if n := countFunc(j.tasks[0], pending); n > 0 {
		jv.PendingMaps = make([]policy.PendingTask, 0, n)
		for _, t := range j.tasks[0] {
			if pending(t) {
				jv.PendingMaps = append(jv.PendingMaps, t.pending)
			}
		}
	}
	allowance := j.reduceAllowance(l.cfg.ReduceRamp) - j.reducesInFlight()
	if n := min(countFunc(j.tasks[1], pending), allowance); n > 0 {
		jv.PendingReduces = make([]policy.PendingTask, 0, n)
		for _, t := range j.tasks[1] {
			if len(jv.PendingReduces) < n && pending(t) {
				jv.PendingReduces = append(jv.PendingReduces, t.pending)
			}
		}
	}
	jv.Running = l.jobRunning(j)
	jv.MapOutputs = slices.Clone(j.outputs)
	return jv
}

func countFunc(ts []*task, f func(*task) bool) int {
	n := 0
	for _, t := range ts {
		if f(t) {
			n++
		}
	}
	return n
}

// jobRunning lists the job's running attempts, maps then reduces, by task,
// then by start.
func (l *Ledger) jobRunning(j *job) []*policy.AttemptView {
	var out []*policy.AttemptView
	for _, ts := range j.tasks {
		for _, t := range ts {
			if t.done {
				continue
			}
			for _, at := range t.attempts {
				out = append(out, l.cachedAttemptView(at))
			}
		}
	}
	return out
}

func (l *Ledger) cachedAttemptView(at *attempt) *policy.AttemptView {
	if at.view == nil {
		at.view = l.attemptView(at)
	}
	return at.view
}

func (l *Ledger) attemptView(at *attempt) *policy.AttemptView {
	return &policy.AttemptView{ID: at.id, Job: at.task.job.spec.ID, Task: at.task.index, Type: at.task.typ, Node: at.node.id,
		Slot: at.slot, StartS: at.startS, Phase: at.phase, Progress: at.progress, FetchMBps: at.fetchMBps,
		Score:     models.ProgressScore(at.task.typ, at.phase, at.progress),
		Requested: at.requested, Granted: at.granted, Speculative: at.speculative}
}
