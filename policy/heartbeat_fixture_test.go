package policy

import (
	"fmt"

	"github.com/optd/optd/models"
)

// fixture builds hand-made cluster views for the heartbeat policy tests.
type fixture struct {
	c      *ClusterView
	nextID int
}

func newFixture(now float64, slotBased bool, res models.ResourceNames) *fixture {
	return &fixture{c: &ClusterView{NowS: now, SlotBased: slotBased, Resources: res}, nextID: 1}
}

// node adds a node with map/reduce slots and capacity (nil on slot-only
// clusters); free slots and resources are derived by finish().
func (f *fixture) node(id, rack string, mapSlots, reduceSlots int, capacity models.Resources) *NodeView {
	n := &NodeView{ID: id, Rack: rack, MapSlots: mapSlots, ReduceSlots: reduceSlots, Capacity: capacity}
	f.c.Nodes = append(f.c.Nodes, n)
	return n
}

// job adds a job with pending maps/reduces (indexes after the running ones).
func (f *fixture) job(id string, pendingMaps, pendingReduces int, demand models.Resources) *JobView {
	j := &JobView{ID: id, SubmitS: float64(len(f.c.Jobs)), Weight: 1, Stage: 0, Stages: 1, SlowStartReached: true,
		Demand: map[models.TaskType]models.Resources{models.MapTask: demand, models.ReduceTask: demand}}
	for k := range pendingMaps {
		j.PendingMaps = append(j.PendingMaps, PendingTask{Index: 1000 + k})
	}
	for k := range pendingReduces {
		j.PendingReduces = append(j.PendingReduces, PendingTask{Index: 1000 + k})
	}
	j.MapsTotal, j.ReducesTotal = pendingMaps, pendingReduces
	f.c.Jobs = append(f.c.Jobs, j)
	return j
}

// run adds a running attempt of job j on node n with the given start time
// and progress score (a map's score is its progress; a reduce's phase is
// derived from the score).
func (f *fixture) run(j *JobView, t models.TaskType, n *NodeView, startS, score float64) *AttemptView {
	ph, prog := models.PhaseAt(t, score)
	a := &AttemptView{ID: f.nextID, Job: j.ID, Task: f.nextID, Type: t, Node: n.ID, StartS: startS,
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

// finish derives free slots and resources and the cluster total.
func (f *fixture) finish() *ClusterView {
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

func (f *fixture) nodeByID(id string) *NodeView {
	for _, n := range f.c.Nodes {
		if n.ID == id {
			return n
		}
	}
	panic(fmt.Sprintf("no node %s", id))
}

// kinds counts a heartbeat's actions by kind.
func kinds(actions []Action) map[ActionKind]int {
	m := map[ActionKind]int{}
	for _, a := range actions {
		m[a.Kind]++
	}
	return m
}
