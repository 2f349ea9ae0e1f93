package sim

import (
	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
)

// viewCache holds the policy views of the last build; dirty marks that the
// state changed since (a start, finish, kill, grant or stage change).
type viewCache struct {
	dirty   bool
	built   bool
	cluster *policy.ClusterView
	node    []*policy.NodeView
}

// clusterView returns the views of the current state, rebuilt only when
// something changed (a start, finish, kill, grant, stage change or, for a
// pipeline that reads progress, a node's progress report).
func (s *clusterSim) clusterView() *policy.ClusterView {
	now := s.eng.Now()
	v := s.views
	if v.built && !v.dirty {
		v.cluster.NowS = now
		return v.cluster
	}
	v.built, v.dirty = true, false
	c := &policy.ClusterView{NowS: now, Resources: s.sc.Cluster.Resources, Total: s.total, SlotBased: s.slots, Racks: s.racks}
	views := map[*simAttempt]*policy.AttemptView{}
	attemptView := func(at *simAttempt) *policy.AttemptView {
		if av, ok := views[at]; ok {
			return av
		}
		av := s.attemptView(at)
		views[at] = av
		return av
	}
	v.node = v.node[:0]
	for _, n := range s.nodes {
		req, _, um, ur := n.used(s.dims)
		nv := &policy.NodeView{ID: n.id, Rack: n.rack, Capacity: n.capacity, MapSlots: n.mapSlots, ReduceSlots: n.reduceSlots,
			FreeMapSlots: max(n.mapSlots-um, 0), FreeReduceSlots: max(n.reduceSlots-ur, 0)}
		if s.dims > 0 {
			nv.Free = n.capacity.Sub(req)
		}
		for _, at := range n.running {
			nv.Running = append(nv.Running, attemptView(at))
		}
		c.Nodes = append(c.Nodes, nv)
		v.node = append(v.node, nv)
	}
	for _, j := range s.active {
		c.Jobs = append(c.Jobs, s.jobView(j, attemptView))
	}
	v.cluster = c
	return c
}

// jobView builds the view of one active job.
func (s *clusterSim) jobView(j *simJob, attemptView func(*simAttempt) *policy.AttemptView) *policy.JobView {
	jv := &policy.JobView{ID: j.spec.ID, SubmitS: j.spec.SubmitS, Queue: j.spec.Queue, Weight: j.spec.Weight,
		Stage: j.stage, Stages: j.spec.Stages, Demand: j.demand,
		MapsTotal: len(j.tasks[0]), MapsDone: j.done[0], MapsAssigned: j.assigned[0],
		ReducesTotal: len(j.tasks[1]), ReducesDone: j.done[1], ReducesAssigned: j.assigned[1],
		SlowStartReached: j.slowStartReached(s.sc.SlowStart),
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
	allowance := j.reduceAllowance(s.sc.ReduceRamp) - s.reducesInFlight(j)
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

func appendUnique(s []string, v string) []string {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}

// attemptView builds the view of one running attempt with the progress its
// node last reported.
func (s *clusterSim) attemptView(at *simAttempt) *policy.AttemptView {
	ph, pr := at.reported.phase, at.reported.progress
	return &policy.AttemptView{ID: at.id, Job: at.task.job.spec.ID, Task: at.task.index, Type: at.task.typ, Node: at.node.id,
		Slot: at.slot, StartS: at.startS, Phase: ph, Progress: pr, Score: models.ProgressScore(at.task.typ, ph, pr),
		Requested: at.requested, Granted: at.granted, Speculative: at.speculative}
}
