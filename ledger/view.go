package ledger

import (
	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
)

// View builds the heartbeat policies' view of the cluster at time now.
// The views are fresh: the caller may keep them; the ledger never modifies
// them.
func (l *Ledger) View(now float64) *policy.ClusterView {
	c := &policy.ClusterView{NowS: now, Resources: l.cfg.Cluster.Resources, Total: l.total, SlotBased: l.slots, Racks: l.racks}
	views := make(map[*attempt]*policy.AttemptView, len(l.attempt))
	attemptView := func(at *attempt) *policy.AttemptView {
		av, ok := views[at]
		if !ok {
			av = l.attemptView(at)
			views[at] = av
		}
		return av
	}
	for _, n := range l.nodes {
		req, _, um, ur := n.used(l.dims)
		nv := &policy.NodeView{ID: n.id, Rack: n.rack, Capacity: n.capacity, MapSlots: n.mapSlots, ReduceSlots: n.reduceSlots,
			FreeMapSlots: max(n.mapSlots-um, 0), FreeReduceSlots: max(n.reduceSlots-ur, 0)}
		if l.dims > 0 {
			nv.Free = n.capacity.Sub(req)
		}
		for _, at := range n.running {
			nv.Running = append(nv.Running, attemptView(at))
		}
		c.Nodes = append(c.Nodes, nv)
	}
	for _, j := range l.active {
		c.Jobs = append(c.Jobs, l.jobView(j, attemptView))
	}
	return c
}

// NodeView returns node id's view in c (nil if none).
func NodeView(c *policy.ClusterView, id string) *policy.NodeView {
	for _, n := range c.Nodes {
		if n.ID == id {
			return n
		}
	}
	return nil
}

func (l *Ledger) jobView(j *job, attemptView func(*attempt) *policy.AttemptView) *policy.JobView {
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
	for _, t := range j.tasks[0] {
		if t.done {
			continue
		}
		if len(t.attempts) == 0 {
			jv.PendingMaps = append(jv.PendingMaps, t.pending)
		}
		for _, at := range t.attempts {
			jv.Running = append(jv.Running, attemptView(at))
		}
	}
	allowance := j.reduceAllowance(l.cfg.ReduceRamp) - j.reducesInFlight()
	for _, t := range j.tasks[1] {
		if t.done {
			continue
		}
		if len(t.attempts) == 0 && allowance > 0 {
			jv.PendingReduces = append(jv.PendingReduces, t.pending)
			allowance--
		}
		for _, at := range t.attempts {
			jv.Running = append(jv.Running, attemptView(at))
		}
	}
	return jv
}

func (l *Ledger) attemptView(at *attempt) *policy.AttemptView {
	return &policy.AttemptView{ID: at.id, Job: at.task.job.spec.ID, Task: at.task.index, Type: at.task.typ, Node: at.node.id,
		Slot: at.slot, StartS: at.startS, Phase: at.phase, Progress: at.progress,
		Score:     models.ProgressScore(at.task.typ, at.phase, at.progress),
		Requested: at.requested, Granted: at.granted, Speculative: at.speculative}
}
