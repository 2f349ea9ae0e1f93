package policy

import (
	"fmt"
	"strings"

	"github.com/optd/optd/models"
)

// This file holds what a heartbeat policy sees (read-only views built by the
// simulator or the server), what it returns (Action) and the one small
// interface per kind of heartbeat decision. The pipeline that chains them is
// in heartbeat_pipeline.go, the registry of names in heartbeat_registry.go.

// ClusterView is the cluster as a heartbeat policy sees it. Policies must not
// modify any view: the simulator owns them and updates them between
// heartbeats.
type ClusterView struct {
	// NowS is the current time in seconds.
	NowS float64
	// Resources names the dimensions of every resource vector (empty on a
	// pure MRv1 slot cluster).
	Resources models.ResourceNames
	// Total is Σ_nodes Capacity (DRF's and Fair's denominators).
	Total models.Resources
	// SlotBased is true when nodes offer typed MRv1 map/reduce slots;
	// starts then need a free slot of the task's type (and, if Resources is
	// not empty, the resources too).
	SlotBased bool
	Nodes     []*NodeView
	Racks     []models.Rack
	// Jobs are the active (submitted, unfinished) jobs in submission order.
	Jobs []*JobView
}

// NodeView is one node's committed state (before the current heartbeat's
// actions).
type NodeView struct {
	ID, Rack string
	// Capacity and Free are over ClusterView.Resources. Free is Capacity
	// minus the resources *requested* by the running attempts: resources a
	// Sharer granted beyond a request are revocable and count as free.
	Capacity, Free models.Resources
	// MapSlots/ReduceSlots are the node's current typed slots (as last set
	// by the SlotPolicy), FreeMapSlots/FreeReduceSlots those not occupied.
	MapSlots, ReduceSlots         int
	FreeMapSlots, FreeReduceSlots int
	// Running are the task attempts on the node.
	Running []*AttemptView
}

// AttemptView is one running task attempt.
type AttemptView struct {
	// ID is unique in the cluster for its lifetime.
	ID   int
	Job  string
	Task int // index among the job's tasks of Type in the current stage
	Type models.TaskType
	Node string
	// Slot is the typed slot the attempt occupies on a slot-based cluster
	// (a map may run in a borrowed reduce slot under DHSA), 0 otherwise.
	Slot   models.TaskType
	StartS float64
	// Phase and Progress (fraction of the phase) give Hadoop's progress
	// score Score = models.ProgressScore(Type, Phase, Progress) in [0, 1].
	Phase    models.Phase
	Progress float64
	Score    float64
	// Requested is the task's request; Granted what it currently holds
	// (more after resource stealing, different after DynamicAdjust).
	Requested, Granted models.Resources
	Speculative        bool
}

// PendingTask is a task waiting to start.
type PendingTask struct {
	Index int
	// PreferredNodes hold a replica of a map's input block; PreferredRacks
	// are their racks. Both empty for reduces and for tasks without input.
	PreferredNodes, PreferredRacks []string
}

// JobView is one active job. Stage counts refer to the current stage (the
// current iteration of an iterative job).
type JobView struct {
	ID      string
	SubmitS float64
	Queue   string
	// Weight is the job's fair-share weight (default 1).
	Weight float64
	// Stage is the number of finished stages (I_i^current of HaSTE-A's
	// Eq. 5); Stages is their total I_i (1 for a plain MapReduce job).
	Stage, Stages int
	// Demand is the per-type resource request.
	Demand map[models.TaskType]models.Resources
	// PendingMaps and PendingReduces wait to start (reduces only matter
	// once SlowStartReached).
	PendingMaps    []PendingTask
	PendingReduces []PendingTask
	// MapsTotal/ReducesTotal are T_i^m and the number of reduces of the
	// stage; MapsDone/ReducesDone have finished; MapsAssigned and
	// ReducesAssigned (A_i^m, A_i^r) have been started at least once.
	MapsTotal, MapsDone, MapsAssigned          int
	ReducesTotal, ReducesDone, ReducesAssigned int
	// SlowStartReached: the map fraction done reached the reduce slow-start
	// threshold, so reduces may start.
	SlowStartReached bool
	// Running are the job's running attempts (all nodes).
	Running []*AttemptView
	// MeanMapS/MeanReduceS are the mean durations of the stage's finished
	// tasks (0 while none finished): what speculation and DynamicAdjust
	// compare against.
	MeanMapS, MeanReduceS float64
}

// RunningOf counts the job's running attempts of type t (O_i^m, O_i^r).
func (j *JobView) RunningOf(t models.TaskType) int {
	n := 0
	for _, a := range j.Running {
		if a.Type == t {
			n++
		}
	}
	return n
}

// ActionKind is what an Action does.
type ActionKind uint8

// Action kinds.
const (
	// ActionStart starts pending task (Job, Type, Task) on Node with
	// Resources (and in a slot of type Slot on a slot-based cluster).
	ActionStart ActionKind = iota + 1
	// ActionSpeculate starts a speculative copy of the running Attempt's
	// task on Node. The task finishes with the first attempt that finishes;
	// the others are then killed.
	ActionSpeculate
	// ActionKill kills Attempt. If it was its task's last attempt, the task
	// becomes pending again.
	ActionKill
	// ActionAdjust sets Attempt's granted resources to Resources (on its
	// own node). Grants beyond the request last until the node's next
	// heartbeat; a Sharer re-issues them on each heartbeat.
	ActionAdjust
	// ActionSlots sets the node's typed slot counts to MapSlots and
	// ReduceSlots (the SlotPolicy's decision on a slot-based cluster).
	ActionSlots
)

var actionNames = [...]string{ActionStart: "start", ActionSpeculate: "speculate", ActionKill: "kill", ActionAdjust: "adjust", ActionSlots: "slots"}

func (k ActionKind) String() string {
	if k >= ActionStart && k <= ActionSlots {
		return actionNames[k]
	}
	return fmt.Sprintf("ActionKind(%d)", uint8(k))
}

// Action is one decision of a heartbeat policy, with its reason.
type Action struct {
	Kind ActionKind
	Job  string
	Type models.TaskType
	// Task is the task index (Start); Attempt the attempt acted on
	// (Speculate: the attempt copied; Kill, Adjust).
	Task    int
	Attempt int
	Node    string
	// Slot is the typed slot a Start or Speculate uses on a slot-based
	// cluster (0 otherwise; the task's own type by default).
	Slot      models.TaskType
	Resources models.Resources
	// MapSlots and ReduceSlots are the slot counts of an ActionSlots.
	MapSlots, ReduceSlots int
	// Locality of a map Start on Node (set by the pipeline).
	Locality Locality
	Reason   string
}

func (a Action) String() string {
	return fmt.Sprintf("%v %s/%v#%d attempt=%d node=%s res=%v: %s", a.Kind, a.Job, a.Type, a.Task, a.Attempt, a.Node, a.Resources, a.Reason)
}

// Locality of a map task's input relative to the node it runs on.
type Locality uint8

// Locality levels; the zero value is "no input" (reduces, input-less maps).
const (
	LocalityNone Locality = iota
	NodeLocal
	RackLocal
	OffRack
)

var localityNames = [...]string{"none", "node_local", "rack_local", "off_rack"}

func (l Locality) String() string {
	if int(l) < len(localityNames) {
		return localityNames[l]
	}
	return fmt.Sprintf("Locality(%d)", uint8(l))
}

// LocalityOf returns the locality of pending task p on node n.
func LocalityOf(p PendingTask, n *NodeView) Locality {
	if len(p.PreferredNodes) == 0 {
		return LocalityNone
	}
	for _, id := range p.PreferredNodes {
		if id == n.ID {
			return NodeLocal
		}
	}
	for _, r := range p.PreferredRacks {
		if r == n.Rack {
			return RackLocal
		}
	}
	return OffRack
}

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
	taken   map[taskKey]bool
}

type taskKey struct {
	job  string
	typ  models.TaskType
	task int
}

// NewHeartbeat starts a heartbeat of node n.
func NewHeartbeat(c *ClusterView, n *NodeView) *Heartbeat {
	return &Heartbeat{Cluster: c, Node: n, Free: n.Free.Clone(), FreeMapSlots: n.FreeMapSlots, FreeReduceSlots: n.FreeReduceSlots}
}

// Taken reports whether a Start of this heartbeat already took the task.
func (h *Heartbeat) Taken(job string, t models.TaskType, task int) bool {
	return h.taken[taskKey{job, t, task}]
}

// Pending returns the job's tasks of type t that can start now: not taken in
// this heartbeat, and for reduces only once slow-start is reached.
func (h *Heartbeat) Pending(j *JobView, t models.TaskType) []PendingTask {
	src := pendingOf(j, t)
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

// pendingOf is the job's pending tasks of type t, taken or not (none for
// reduces before slow-start).
func pendingOf(j *JobView, t models.TaskType) []PendingTask {
	if t == models.ReduceTask {
		if !j.SlowStartReached {
			return nil
		}
		return j.PendingReduces
	}
	return j.PendingMaps
}

// HasPending reports whether the job has a task of type t that can start.
func (h *Heartbeat) HasPending(j *JobView, t models.TaskType) bool {
	for _, p := range pendingOf(j, t) {
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

// StartCandidate builds a Start of the job's best-placed pending task of
// type t on this node (node-local, then rack-local, then any; lowest index
// first), with the job's request for t. ok is false if none can start or it
// does not fit. reason (nil: none) is called only for a candidate, so that
// a full node costs no formatting.
func (h *Heartbeat) StartCandidate(j *JobView, t models.TaskType, reason func() string) (Action, bool) {
	d := j.Demand[t]
	if !h.Fits(t, d) {
		return Action{}, false
	}
	best, bestLoc, found := PendingTask{}, Locality(0), false
	// Scans in place (not Pending's copy): it stops at the first node-local
	// task, typically a few dozen into a job's hundreds.
	for _, p := range pendingOf(j, t) {
		if h.Taken(j.ID, t, p.Index) {
			continue
		}
		loc := LocalityOf(p, h.Node)
		if !found || rankLocality(loc) < rankLocality(bestLoc) {
			best, bestLoc, found = p, loc, true
			if loc <= NodeLocal {
				break
			}
		}
	}
	if !found {
		return Action{}, false
	}
	a := Action{Kind: ActionStart, Job: j.ID, Type: t, Task: best.Index, Node: h.Node.ID, Slot: h.slotFor(t),
		Resources: d.Clone(), Locality: bestLoc}
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
		for _, t := range typeOrder {
			if h.Fits(t, j.Demand[t]) {
				return true
			}
		}
	}
	return false
}

func (h *Heartbeat) slotFor(t models.TaskType) models.TaskType {
	if h.Cluster.SlotBased {
		return t
	}
	return 0
}

// rankLocality orders localities best first (none counts as node-local).
func rankLocality(l Locality) int {
	if l == LocalityNone {
		return int(NodeLocal)
	}
	return int(l)
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
				h.taken = map[taskKey]bool{}
			}
			h.taken[taskKey{a.Job, a.Type, a.Task}] = true
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

// Job returns the active job with the given id, or nil.
func (c *ClusterView) Job(id string) *JobView {
	for _, j := range c.Jobs {
		if j.ID == id {
			return j
		}
	}
	return nil
}

// Assigner chooses what to start on the node that heartbeats: Rank returns
// Start candidates, best first. The pipeline takes the first candidate that
// fits and that every LaunchFilter admits, commits it, and calls Rank again
// with the updated tentative state, until no candidate is accepted; so an
// Assigner only orders, it never has to track the node's residual capacity.
type Assigner interface {
	Plugin
	Rank(hb *Heartbeat) []Action
}

// SlotPolicy sets how many map and reduce slots the node offers now (MRv1
// static slots; DynamicMR's DHSA borrowing between the two pools). It is
// consulted first on every heartbeat of a slot-based cluster.
type SlotPolicy interface {
	Plugin
	// Slots returns the node's map and reduce slot counts for this
	// heartbeat, and why. A count may not drop below the slots in use.
	Slots(hb *Heartbeat) (mapSlots, reduceSlots int, reason string)
}

// LaunchFilter may veto or defer a Start the Assigner proposes (delay
// scheduling, Slot PreScheduling). A vetoed candidate is skipped and the
// pipeline tries the next one.
type LaunchFilter interface {
	Plugin
	Admit(hb *Heartbeat, a Action) (ok bool, reason string)
}

// Speculator launches speculative copies of running attempts on the
// heartbeating node (ActionSpeculate, which must fit its free resources)
// and kills attempts anywhere in the cluster (ActionKill).
type Speculator interface {
	Plugin
	Speculate(hb *Heartbeat) []Action
}

// Sharer adjusts the resources of the node's running attempts
// (ActionAdjust): resource stealing hands out what is still idle after the
// other stages, DynamicAdjust rebalances CPU toward skewed tasks. The sum of
// the grants on the node must not exceed its capacity.
type Sharer interface {
	Plugin
	Share(hb *Heartbeat) []Action
}

// Observer is optionally implemented by any stage that learns from the run
// (completion times for speculation estimates, etc.): the simulator calls
// TaskFinished when an attempt finishes successfully.
type Observer interface {
	TaskFinished(c *ClusterView, a *AttemptView, durationS float64)
}

// FormatReasons joins the reasons of a heartbeat's actions, one per line
// (for logs and tests).
func FormatReasons(actions []Action) string {
	var b strings.Builder
	for _, a := range actions {
		b.WriteString(a.String())
		b.WriteByte('\n')
	}
	return b.String()
}
