// Package policytest builds hand-made cluster views for the tests of the
// heartbeat policies, and random requests for the placement policies' tests.
package policytest

import (
	"fmt"
	"strings"

	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
)

// Fixture builds a cluster view node by node, job by job.
type Fixture struct {
	c      *policy.ClusterView
	nextID int
}

// NewFixture starts an empty cluster at time now.
func NewFixture(now float64, slotBased bool, res models.ResourceNames) *Fixture {
	return &Fixture{c: &policy.ClusterView{NowS: now, SlotBased: slotBased, Resources: res}, nextID: 1}
}

// Node adds a node with map/reduce slots and capacity (nil on slot-only
// clusters); free slots and resources are derived by Finish.
func (f *Fixture) Node(id, rack string, mapSlots, reduceSlots int, capacity models.Resources) *policy.NodeView {
	n := &policy.NodeView{ID: id, Rack: rack, MapSlots: mapSlots, ReduceSlots: reduceSlots, Capacity: capacity}
	f.c.Nodes = append(f.c.Nodes, n)
	return n
}

// Job adds a job with pending maps/reduces (indexes after the running ones).
func (f *Fixture) Job(id string, pendingMaps, pendingReduces int, demand models.Resources) *policy.JobView {
	j := &policy.JobView{ID: id, SubmitS: float64(len(f.c.Jobs)), Weight: 1, Stage: 0, Stages: 1, SlowStartReached: true,
		Demand: map[models.TaskType]models.Resources{models.MapTask: demand, models.ReduceTask: demand}}
	for k := range pendingMaps {
		j.PendingMaps = append(j.PendingMaps, policy.PendingTask{Index: 1000 + k})
	}
	for k := range pendingReduces {
		j.PendingReduces = append(j.PendingReduces, policy.PendingTask{Index: 1000 + k})
	}
	j.MapsTotal, j.ReducesTotal = pendingMaps, pendingReduces
	f.c.Jobs = append(f.c.Jobs, j)
	return j
}

// Run adds a running attempt of job j on node n with the given start time
// and progress score (a map's score is its progress; a reduce's phase is
// derived from the score).
func (f *Fixture) Run(j *policy.JobView, t models.TaskType, n *policy.NodeView, startS, score float64) *policy.AttemptView {
	ph, prog := models.PhaseAt(t, score)
	a := &policy.AttemptView{ID: f.nextID, Job: j.ID, Task: f.nextID, Type: t, Node: n.ID, StartS: startS,
		Phase: ph, Progress: prog, Score: score, Requested: j.Demand[t].Clone(), Granted: j.Demand[t].Clone()}
	if f.c.SlotBased {
		a.Slot = t
	}
	f.nextID++
	j.Running = append(j.Running, a)
	n.Running = append(n.Running, a)
	if t == models.MapTask {
		j.MapsTotal++
		j.MapsAssigned++
	} else {
		j.ReducesTotal++
		j.ReducesAssigned++
	}
	return a
}

// Finish derives free slots and resources and the cluster total.
func (f *Fixture) Finish() *policy.ClusterView {
	f.c.Total = nil
	for _, n := range f.c.Nodes {
		um, ur := 0, 0
		var used models.Resources
		if n.Capacity != nil {
			used = make(models.Resources, len(n.Capacity))
			if f.c.Total == nil {
				f.c.Total = make(models.Resources, len(n.Capacity))
			}
			f.c.Total = f.c.Total.Add(n.Capacity)
		}
		for _, a := range n.Running {
			switch a.Slot {
			case models.MapTask:
				um++
			case models.ReduceTask:
				ur++
			}
			if used != nil {
				used = used.Add(a.Requested)
			}
		}
		n.FreeMapSlots, n.FreeReduceSlots = n.MapSlots-um, n.ReduceSlots-ur
		if n.Capacity != nil {
			n.Free = n.Capacity.Sub(used)
		}
	}
	return f.c
}

// NodeByID returns the node with that id; it panics if there is none.
func (f *Fixture) NodeByID(id string) *policy.NodeView {
	for _, n := range f.c.Nodes {
		if n.ID == id {
			return n
		}
	}
	panic(fmt.Sprintf("no node %s", id))
}

// Kinds counts a heartbeat's actions by kind.
func Kinds(actions []policy.Action) map[policy.ActionKind]int {
	m := map[policy.ActionKind]int{}
	for _, a := range actions {
		m[a.Kind]++
	}
	return m
}

// Reasons formats actions one per line with their reasons (for test
// failures).
func Reasons(actions []policy.Action) string {
	var b strings.Builder
	for _, a := range actions {
		b.WriteString(a.String())
		b.WriteByte('\n')
	}
	return b.String()
}
