package models

import (
	"fmt"
	"math"
)

// TaskType is the kind of a MapReduce task. The zero value is not a valid
// type, so an unset type is caught by validation.
type TaskType uint8

// Task types.
const (
	MapTask TaskType = iota + 1
	ReduceTask
)

var taskTypeNames = [...]string{MapTask: "map", ReduceTask: "reduce"}

// Valid reports whether t is MapTask or ReduceTask.
func (t TaskType) Valid() bool { return t == MapTask || t == ReduceTask }

// String returns "map" or "reduce" (or "TaskType(n)" for an invalid value).
func (t TaskType) String() string {
	if t.Valid() {
		return taskTypeNames[t]
	}
	return fmt.Sprintf("TaskType(%d)", uint8(t))
}

// MarshalText encodes t as "map" or "reduce".
func (t TaskType) MarshalText() ([]byte, error) {
	if !t.Valid() {
		return nil, fmt.Errorf("%w: task type = %d: want map or reduce", ErrInvalidTask, uint8(t))
	}
	return []byte(taskTypeNames[t]), nil
}

// UnmarshalText decodes "map" or "reduce".
func (t *TaskType) UnmarshalText(b []byte) error {
	for v := MapTask; v <= ReduceTask; v++ {
		if string(b) == taskTypeNames[v] {
			*t = v
			return nil
		}
	}
	return fmt.Errorf("%w: task type = %q: want map or reduce", ErrInvalidTask, b)
}

// Phase is the stage a running task is in. A map task has one working phase
// (PhaseMap: reading and processing its input split); a reduce task has
// three (Hadoop's copy, sort and reduce, which the DynamicAdjust paper,
// Liu et al., IEICE'16 §3.2, times separately for its phase-aware remaining
// time prediction). PhasePending, the zero value, is a task not yet started.
type Phase uint8

// Phases, in execution order.
const (
	PhasePending Phase = iota
	// PhaseMap: a map task reading its input.
	PhaseMap
	// PhaseShuffle: a reduce task copying (fetching) map outputs; Hadoop's
	// "copy" phase.
	PhaseShuffle
	// PhaseSort: a reduce task merging the fetched runs; Hadoop's "sort"
	// phase, also called merge.
	PhaseSort
	// PhaseReduce: a reduce task running the reduce function and writing
	// its output.
	PhaseReduce
)

var phaseNames = [...]string{PhasePending: "pending", PhaseMap: "map", PhaseShuffle: "shuffle", PhaseSort: "sort", PhaseReduce: "reduce"}

var (
	mapPhases    = []Phase{PhaseMap}
	reducePhases = []Phase{PhaseShuffle, PhaseSort, PhaseReduce}
)

// Phases returns the working phases of a task of type t, in order (nil for
// an invalid type). The caller must not modify the slice.
func (t TaskType) Phases() []Phase {
	switch t {
	case MapTask:
		return mapPhases
	case ReduceTask:
		return reducePhases
	}
	return nil
}

// String returns the phase name ("pending", "map", "shuffle", "sort",
// "reduce").
func (p Phase) String() string {
	if int(p) < len(phaseNames) {
		return phaseNames[p]
	}
	return fmt.Sprintf("Phase(%d)", uint8(p))
}

// MarshalText encodes p by name.
func (p Phase) MarshalText() ([]byte, error) {
	if int(p) >= len(phaseNames) {
		return nil, fmt.Errorf("%w: phase = %d: unknown", ErrInvalidTask, uint8(p))
	}
	return []byte(phaseNames[p]), nil
}

// UnmarshalText decodes a phase name.
func (p *Phase) UnmarshalText(b []byte) error {
	for v, name := range phaseNames {
		if string(b) == name {
			*p = Phase(v)
			return nil
		}
	}
	return fmt.Errorf("%w: phase = %q: want pending, map, shuffle, sort or reduce", ErrInvalidTask, b)
}

// phaseIndex returns the 0-based position of p among t's working phases, or
// -1 if p is not one of them.
func phaseIndex(t TaskType, p Phase) int {
	for i, q := range t.Phases() {
		if q == p {
			return i
		}
	}
	return -1
}

// ProgressScore returns Hadoop's progress score in [0, 1] of a task of type
// t in phase p, having done the fraction progress ∈ [0, 1] of that phase.
// As described in the LATE paper (Zaharia et al., OSDI'08, §2.1) and used by
// the speculation and resource-stealing policies built on it (Guo et al.,
// Cluster'12, eqs. 1-2; Liu et al., IEICE'16, §3.2):
//
//   - map task: the fraction of its input data read, so score = progress;
//   - reduce task: copy, sort and reduce each weigh 1/3, and within a phase
//     the score is the fraction of that phase's data processed, so
//     score = (k + progress)/3 with k = 0, 1, 2 for shuffle, sort, reduce.
//
// In general score = (k + progress)/n over the n working phases of t. A
// pending task scores 0. (Hadoop 2's MapTask further splits a map with
// reducers into map 2/3 and sort 1/3; optd follows the papers' single map
// phase.) It panics on a phase that t does not have or a progress outside
// [0, 1]; Task.Validate reports those as errors.
func ProgressScore(t TaskType, p Phase, progress float64) float64 {
	if !(progress >= 0 && progress <= 1) {
		panic(fmt.Sprintf("models: ProgressScore: progress %g outside [0, 1]", progress))
	}
	if p == PhasePending {
		if progress != 0 {
			panic(fmt.Sprintf("models: ProgressScore: pending task with progress %g", progress))
		}
		return 0
	}
	k := phaseIndex(t, p)
	if k < 0 {
		panic(fmt.Sprintf("models: ProgressScore: a %v task has no %v phase", t, p))
	}
	return (float64(k) + progress) / float64(len(t.Phases()))
}

// PhaseAt inverts ProgressScore for a started task: the phase and the
// fraction of it done at progress score s ∈ [0, 1] of a task of type t. A
// score on a phase boundary k/n belongs to the start of phase k+1 (progress
// 0), except s = 1, which is the end of the last phase (progress 1). It
// panics on an invalid type or a score outside [0, 1].
func PhaseAt(t TaskType, s float64) (Phase, float64) {
	phases := t.Phases()
	if phases == nil || !(s >= 0 && s <= 1) {
		panic(fmt.Sprintf("models: PhaseAt(%v, %g): invalid type or score outside [0, 1]", t, s))
	}
	n := float64(len(phases))
	k := min(int(math.Floor(s*n)), len(phases)-1)
	progress := math.Min(1, math.Max(0, s*n-float64(k)))
	return phases[k], progress
}

// Task is one map or reduce task of a job, as reported by a heartbeat or
// tracked by the simulator.
type Task struct {
	ID    string   `json:"id"`
	JobID string   `json:"job_id"`
	Type  TaskType `json:"type"`
	Phase Phase    `json:"phase"`
	// Progress is the fraction in [0, 1] of the current phase done (0 while
	// pending). ProgressScore gives the task's overall score.
	Progress float64 `json:"progress"`
	// Demand is the task's resource request over the cluster's resource
	// names; nil means the job's per-type request (Job.Demand[Type]).
	Demand Resources `json:"demand,omitempty"`
	// PreferredNodes are the nodes holding a replica of the task's input
	// block (map tasks), for locality.
	PreferredNodes []string `json:"preferred_nodes,omitempty"`
}

// ProgressScore returns the task's phase-weighted progress score (see the
// function ProgressScore). It panics on an invalid task.
func (t *Task) ProgressScore() float64 { return ProgressScore(t.Type, t.Phase, t.Progress) }

// Validate checks the task against the cluster's resource names: non-empty
// ID and JobID; a valid type; a phase of that type (or pending); progress in
// [0, 1] (0 while pending); a non-negative demand over names if set; distinct
// non-empty preferred nodes. The error wraps ErrInvalidTask.
func (t *Task) Validate(names ResourceNames) error {
	return t.check(names).wrap(ErrInvalidTask)
}

func (t *Task) check(names ResourceNames) *domainIssue {
	switch {
	case t.ID == "":
		return newIssue("id", t.ID, "empty")
	case t.JobID == "":
		return newIssue("job_id", t.JobID, "empty (task %q)", t.ID)
	case !t.Type.Valid():
		return newIssue("type", uint8(t.Type), "want map (%d) or reduce (%d)", uint8(MapTask), uint8(ReduceTask))
	case t.Phase != PhasePending && phaseIndex(t.Type, t.Phase) < 0:
		return newIssue("phase", t.Phase.String(), "not a phase of a %v task (pending or %v)", t.Type, t.Type.Phases())
	case !(t.Progress >= 0 && t.Progress <= 1):
		return newIssue("progress", t.Progress, "must be in [0, 1]")
	case t.Phase == PhasePending && t.Progress != 0:
		return newIssue("progress", t.Progress, "a pending task has progress 0")
	}
	if t.Demand != nil {
		if d := t.Demand.check(names); d != nil {
			return d.under("demand")
		}
	}
	for i, n := range t.PreferredNodes {
		if n == "" {
			return newIssue(fmt.Sprintf("preferred_nodes[%d]", i), n, "empty")
		}
		for k := range i {
			if t.PreferredNodes[k] == n {
				return newIssue(fmt.Sprintf("preferred_nodes[%d]", i), n, "listed twice")
			}
		}
	}
	return nil
}
