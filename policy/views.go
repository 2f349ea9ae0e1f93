package policy

import (
	"fmt"
	"math"

	"github.com/optd/optd/models"
)

// This file holds what a heartbeat policy sees (read-only views built by
// package ledger) and what it returns (Action). The heartbeat's tentative
// state is in heartbeat.go, the interfaces of the stages in stages.go, the
// pipeline that chains them in pipeline.go.

// ClusterView is the cluster as a heartbeat policy sees it. Policies must not
// modify any view: the ledger owns them and updates them between
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
	// FetchMBps is a reduce attempt's fetch rate over the network as last
	// reported, MB/s (0: not fetching or unknown).
	FetchMBps float64
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
	// MapOutputs are the outputs of the stage's finished maps by the node
	// that holds them (where reducers fetch them from), sorted by node:
	// what a reduce-placement stage estimates X and the fetch costs H(v)
	// from.
	MapOutputs []NodeOutput
	// MeanMapS/MeanReduceS are the mean durations of the stage's finished
	// tasks (0 while none finished): what speculation and DynamicAdjust
	// compare against.
	MeanMapS, MeanReduceS float64
}

// NodeOutput is the output of a job's finished maps held by one node: how
// many maps, and their output in MB as reported (0 when unknown).
type NodeOutput struct {
	Node string  `json:"node"`
	Maps int     `json:"maps"`
	MB   float64 `json:"mb,omitempty"`
}

// MapOutputMB is X_done, the reported output of the stage's finished maps.
func (j *JobView) MapOutputMB() float64 {
	x := 0.0
	for _, o := range j.MapOutputs {
		x += o.MB
	}
	return x
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

// PendingOf returns the job's tasks of type t that may start, taken in
// this heartbeat or not: its pending maps, and its pending reduces once
// slow-start is reached (none before).
func (j *JobView) PendingOf(t models.TaskType) []PendingTask {
	if t == models.ReduceTask {
		if !j.SlowStartReached {
			return nil
		}
		return j.PendingReduces
	}
	return j.PendingMaps
}

// MeanDurationS is the mean duration of the stage's finished tasks of type
// t (0 while none finished).
func (j *JobView) MeanDurationS(t models.TaskType) float64 {
	if t == models.ReduceTask {
		return j.MeanReduceS
	}
	return j.MeanMapS
}

// ProgressRate is LATE's Eq. (1) (Zaharia et al., OSDI'08 §4; Guo et al.,
// Cluster'12 Eq. 1): ProgressScore / T, with T the time the attempt has
// run. It is 0 for an attempt that has not run yet (T ≤ 0).
func (a *AttemptView) ProgressRate(nowS float64) float64 {
	t := nowS - a.StartS
	if t <= 0 {
		return 0
	}
	return a.Score / t
}

// TimeLeft is LATE's Eq. (2): (1 − ProgressScore) / ProgressRate, assuming
// the attempt keeps its rate. It is +Inf for an attempt without progress
// (rate 0) and 0 for a finished one.
func (a *AttemptView) TimeLeft(nowS float64) float64 {
	if a.Score >= 1 {
		return 0
	}
	r := a.ProgressRate(nowS)
	if r <= 0 {
		return math.Inf(1)
	}
	return (1 - a.Score) / r
}

// TaskKey names one task of a job: (job, type, index in the stage).
type TaskKey struct {
	Job  string
	Type models.TaskType
	Task int
}

// TaskKey is the attempt's task.
func (a *AttemptView) TaskKey() TaskKey { return TaskKey{a.Job, a.Type, a.Task} }

// Job returns the active job with the given id, or nil.
func (c *ClusterView) Job(id string) *JobView {
	for _, j := range c.Jobs {
		if j.ID == id {
			return j
		}
	}
	return nil
}

// Node returns the node with the given id, or nil.
func (c *ClusterView) Node(id string) *NodeView {
	for _, n := range c.Nodes {
		if n.ID == id {
			return n
		}
	}
	return nil
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

// SlotOrType is the typed slot a Start or Speculate occupies on a
// slot-based cluster: Slot, or the task's own type when Slot is 0.
func (a Action) SlotOrType() models.TaskType {
	if a.Slot != 0 {
		return a.Slot
	}
	return a.Type
}

func (a Action) String() string {
	return fmt.Sprintf("%v %s/%v#%d attempt=%d node=%s res=%v: %s", a.Kind, a.Job, a.Type, a.Task, a.Attempt, a.Node, a.Resources, a.Reason)
}

// Veto is a candidate a stage refused, and why: a Start a launch filter
// vetoed, or a copy a gate withheld. A heartbeat returns its vetoes with
// its actions, so that an operator can learn why a job did not start.
type Veto struct {
	// Stage is the name of the stage that refused ("delay-scheduling").
	Stage string
	// Kind is the refused action's kind (ActionStart or ActionSpeculate);
	// Job, Type and Task name its task, Attempt the attempt a refused copy
	// would have copied.
	Kind    ActionKind
	Job     string
	Type    models.TaskType
	Task    int
	Attempt int
	Reason  string
}

// VetoOf is the veto of candidate a by stage.
func VetoOf(stage string, a Action, reason string) Veto {
	return Veto{Stage: stage, Kind: a.Kind, Job: a.Job, Type: a.Type, Task: a.Task, Attempt: a.Attempt, Reason: reason}
}

// Decision is what one heartbeat decided: the actions in order, the
// candidates refused (each once, with the first reason), and the number of
// actions the pipeline dropped because they did not fit the node (a
// stage's mistake, never applied).
type Decision struct {
	Actions []Action
	Vetoes  []Veto
	Dropped int
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

// Rank orders localities best first (none, i.e. no input, counts as
// node-local).
func (l Locality) Rank() int {
	if l == LocalityNone {
		return int(NodeLocal)
	}
	return int(l)
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
