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
	// scans holds, per job and task type, where BestPending resumes its
	// search for each locality rank (see pendingScan).
	scans map[scanKey]*pendingScan
}

// scanKey names one job's pending tasks of one type.
type scanKey struct {
	job string
	t   models.TaskType
}

// pendingScan makes BestPending linear over a heartbeat instead of
// quadratic: next[r] is the first position of the job's pending list that
// may still hold an untaken task of locality rank r. Within a heartbeat the
// pending list and the node are fixed and a taken task stays taken, so the
// positions before next[r] (other ranks, or taken) never qualify again and
// each cursor only moves forward: a heartbeat that starts k of a job's n
// pending tasks looks at each at most once per rank, O(n + k) in all,
// where rescanning from the start cost O(n·k) (200,000 maps on one node:
// minutes).
type pendingScan struct {
	next [OffRack + 1]int
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
	_, _, ok := h.BestPending(j, t)
	return ok
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
// node: node-local, then rack-local, then any; lowest index first. It
// resumes where the previous call of this heartbeat left off (pendingScan),
// so that repeated calls cost O(pending) in all.
func (h *Heartbeat) BestPending(j *JobView, t models.TaskType) (PendingTask, Locality, bool) {
	src := j.PendingOf(t)
	if len(src) == 0 {
		return PendingTask{}, 0, false
	}
	k := scanKey{j.ID, t}
	sc := h.scans[k]
	if sc == nil {
		if h.scans == nil {
			h.scans = map[scanKey]*pendingScan{}
		}
		sc = &pendingScan{}
		h.scans[k] = sc
	}
	for rank := int(NodeLocal); rank <= int(OffRack); rank++ {
		for ; sc.next[rank] < len(src); sc.next[rank]++ {
			p := src[sc.next[rank]]
			if loc := LocalityOf(p, h.Node); loc.Rank() == rank && !h.Taken(j.ID, t, p.Index) {
				return p, loc, true
			}
		}
	}
	return PendingTask{}, 0, false
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
