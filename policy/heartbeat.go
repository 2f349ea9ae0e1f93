package policy

import (
	"github.com/optd/optd/models"
)

// Heartbeat is one node's heartbeat as the pipeline's stages see it: the
// cluster, the node, and the tentative state after the actions already
// decided in this heartbeat (Free, FreeMapSlots, FreeReduceSlots, the tasks
// taken). Stages read it; only the Pipeline updates it.
type Heartbeat struct {
	Cluster *ClusterView
	Node    *NodeView
	// Free, FreeMapSlots and FreeReduceSlots are what is left on the node
	// after the actions decided so far in this heartbeat.
	Free                          models.Resources
	FreeMapSlots, FreeReduceSlots int
	// Actions decided so far in this heartbeat, in order.
	Actions []Action
	taken   map[TaskKey]bool
}

// NewHeartbeat starts a heartbeat of node n.
func NewHeartbeat(c *ClusterView, n *NodeView) *Heartbeat {
	return &Heartbeat{Cluster: c, Node: n, Free: n.Free.Clone(), FreeMapSlots: n.FreeMapSlots, FreeReduceSlots: n.FreeReduceSlots}
}

// Taken reports whether a Start of this heartbeat already took the task.
func (h *Heartbeat) Taken(job string, t models.TaskType, task int) bool {
	return h.taken[TaskKey{job, t, task}]
}

// Pending returns the job's tasks of type t that can start now: not taken in
// this heartbeat, and for reduces only once slow-start is reached.
func (h *Heartbeat) Pending(j *JobView, t models.TaskType) []PendingTask {
	src := j.PendingOf(t)
	if len(h.taken) == 0 {
		return src
	}
	out := make([]PendingTask, 0, len(src))
	for _, p := range src {
		if !h.Taken(j.ID, t, p.Index) {
			out = append(out, p)
		}
	}
	return out
}

// HasPending reports whether the job has a task of type t that can start.
func (h *Heartbeat) HasPending(j *JobView, t models.TaskType) bool {
	for _, p := range j.PendingOf(t) {
		if !h.Taken(j.ID, t, p.Index) {
			return true
		}
	}
	return false
}

// Fits reports whether a task of type t requesting d fits the tentative free
// resources and (slot-based) a free slot of type t.
func (h *Heartbeat) Fits(t models.TaskType, d models.Resources) bool {
	if h.Cluster.SlotBased && h.freeSlots(t) < 1 {
		return false
	}
	return len(h.Free) == 0 || len(d) == 0 || d.Fits(h.Free)
}

func (h *Heartbeat) freeSlots(t models.TaskType) int {
	if t == models.ReduceTask {
		return h.FreeReduceSlots
	}
	return h.FreeMapSlots
}

// BestPending returns the job's best-placed pending task of type t on this
// node: node-local, then rack-local, then any; lowest index first. It scans
// the job's pending tasks in place and stops at the first node-local one,
// typically a few dozen into a job's hundreds.
func (h *Heartbeat) BestPending(j *JobView, t models.TaskType) (PendingTask, Locality, bool) {
	best, bestLoc, found := PendingTask{}, Locality(0), false
	for _, p := range j.PendingOf(t) {
		if h.Taken(j.ID, t, p.Index) {
			continue
		}
		loc := LocalityOf(p, h.Node)
		if !found || loc.Rank() < bestLoc.Rank() {
			best, bestLoc, found = p, loc, true
			if loc <= NodeLocal {
				break
			}
		}
	}
	return best, bestLoc, found
}

// StartCandidate builds a Start of the job's best-placed pending task of
// type t on this node (BestPending), with the job's request for t. ok is
// false if none can start or it does not fit. reason (nil: none) is called
// only for a candidate, so that a full node costs no formatting.
func (h *Heartbeat) StartCandidate(j *JobView, t models.TaskType, reason func() string) (Action, bool) {
	d := j.Demand[t]
	if !h.Fits(t, d) {
		return Action{}, false
	}
	best, loc, found := h.BestPending(j, t)
	if !found {
		return Action{}, false
	}
	a := Action{Kind: ActionStart, Job: j.ID, Type: t, Task: best.Index, Node: h.Node.ID, Slot: h.SlotFor(t),
		Resources: d.Clone(), Locality: loc}
	if reason != nil {
		a.Reason = reason()
	}
	return a, true
}

// CanStartAny reports whether some job's request of some type fits the
// node now. When none does, no StartCandidate exists, and an assigner whose
// ranking has no side effect can skip it: on a full node, the heartbeats of
// a busy cluster.
func (h *Heartbeat) CanStartAny() bool {
	for _, j := range h.Cluster.Jobs {
		for _, t := range [...]models.TaskType{models.ReduceTask, models.MapTask} {
			if h.Fits(t, j.Demand[t]) {
				return true
			}
		}
	}
	return false
}

// SlotFor is the typed slot a start of type t takes on this cluster: t on
// a slot-based cluster, 0 otherwise.
func (h *Heartbeat) SlotFor(t models.TaskType) models.TaskType {
	if h.Cluster.SlotBased {
		return t
	}
	return 0
}

// Started counts the starts and copies of type t for job that this
// heartbeat decided so far.
func (h *Heartbeat) Started(job string, t models.TaskType) int {
	n := 0
	for _, a := range h.Actions {
		if (a.Kind == ActionStart || a.Kind == ActionSpeculate) && a.Job == job && a.Type == t {
			n++
		}
	}
	return n
}

// Killed reports whether this heartbeat already decided to kill attempt.
func (h *Heartbeat) Killed(attempt int) bool {
	for _, a := range h.Actions {
		if a.Kind == ActionKill && a.Attempt == attempt {
			return true
		}
	}
	return false
}

// Copied reports whether this heartbeat already decided a copy of the task
// (two speculation add-ons must not both copy it).
func (h *Heartbeat) Copied(k TaskKey) bool {
	for _, a := range h.Actions {
		if a.Kind == ActionSpeculate && a.Job == k.Job && a.Type == k.Type && a.Task == k.Task {
			return true
		}
	}
	return false
}

// commit records an accepted action in the tentative state.
func (h *Heartbeat) commit(a Action) {
	h.Actions = append(h.Actions, a)
	switch a.Kind {
	case ActionStart, ActionSpeculate:
		if len(h.Free) > 0 && a.Resources != nil {
			h.Free = h.Free.Sub(a.Resources)
		}
		slot := a.Slot
		if slot == 0 && h.Cluster.SlotBased {
			slot = a.Type
		}
		switch slot {
		case models.MapTask:
			h.FreeMapSlots--
		case models.ReduceTask:
			h.FreeReduceSlots--
		}
		if a.Kind == ActionStart {
			if h.taken == nil {
				h.taken = map[TaskKey]bool{}
			}
			h.taken[TaskKey{a.Job, a.Type, a.Task}] = true
		}
	case ActionKill:
		if at := h.attempt(a.Attempt); at != nil && at.Node == h.Node.ID {
			if len(h.Free) > 0 {
				h.Free = h.Free.Add(at.Requested)
			}
			switch at.Slot {
			case models.MapTask:
				h.FreeMapSlots++
			case models.ReduceTask:
				h.FreeReduceSlots++
			}
		}
	}
}

// attempt finds a running attempt on this node by id.
func (h *Heartbeat) attempt(id int) *AttemptView {
	for _, a := range h.Node.Running {
		if a.ID == id {
			return a
		}
	}
	return nil
}
