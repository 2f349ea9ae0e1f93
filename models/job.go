package models

import (
	"fmt"
	"math"
	"slices"

	"github.com/optd/optd/models/trace"
)

// Job is one MapReduce job as submitted: its identity and queue, task counts,
// per-type resource requests and data sizes. Tasks optionally lists the
// individual tasks (e.g. with their preferred locations); when present it
// must agree with the counts.
type Job struct {
	ID string `json:"id"`
	// SubmitS is the submission time in seconds (simulated or since the
	// trace start).
	SubmitS float64 `json:"submit_s"`
	Queue   string  `json:"queue,omitempty"`
	User    string  `json:"user,omitempty"`
	// Priority orders jobs for priority-aware policies; larger is more
	// urgent. Any integer is allowed.
	Priority int `json:"priority,omitempty"`

	Maps    int `json:"maps"`
	Reduces int `json:"reduces"`
	// Demand is the resource request of one task of each type, over the
	// cluster's resource names (HaSTE's per-task demand vectors, Yao et al.,
	// TCC'21). A missing type means no request (typed-slot clusters).
	Demand map[TaskType]Resources `json:"demand,omitempty"`

	// InputBytes is the map input; ShuffleBytes the intermediate data the
	// reducers fetch (X in Tan et al., INFOCOM'13, so each of R reducers
	// fetches Y = X/R); OutputBytes the job output.
	InputBytes   float64 `json:"input_bytes"`
	ShuffleBytes float64 `json:"shuffle_bytes"`
	OutputBytes  float64 `json:"output_bytes"`

	Tasks []Task `json:"tasks,omitempty"`
}

// TaskDemand returns the resource request of t: its own Demand if set, else
// the job's request for its type (nil if none).
func (j *Job) TaskDemand(t *Task) Resources {
	if t.Demand != nil {
		return t.Demand
	}
	return j.Demand[t.Type]
}

// Validate checks the job against the cluster's resource names: non-empty
// ID; finite SubmitS ≥ 0; Maps, Reduces ≥ 0 with at least one task; finite
// byte sizes ≥ 0, and no shuffle without reducers; demands of valid types
// with one non-negative amount per name; and, if Tasks is set, one task per
// counted task, of this job, with distinct IDs, each valid (Task.Validate).
// The error wraps ErrInvalidJob.
func (j *Job) Validate(names ResourceNames) error {
	return j.check(names).wrap(ErrInvalidJob)
}

func (j *Job) check(names ResourceNames) *domainIssue {
	switch {
	case j.ID == "":
		return newIssue("id", j.ID, "empty")
	case math.IsNaN(j.SubmitS) || math.IsInf(j.SubmitS, 0) || j.SubmitS < 0:
		return newIssue("submit_s", j.SubmitS, "must be a finite number ≥ 0 (job %q)", j.ID)
	case j.Maps < 0:
		return newIssue("maps", j.Maps, "negative (job %q)", j.ID)
	case j.Reduces < 0:
		return newIssue("reduces", j.Reduces, "negative (job %q)", j.ID)
	case j.Maps+j.Reduces == 0:
		return newIssue("maps", j.Maps, "job %q has no map and no reduce task", j.ID)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"input_bytes", j.InputBytes}, {"shuffle_bytes", j.ShuffleBytes}, {"output_bytes", j.OutputBytes}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 {
			return newIssue(f.name, f.v, "must be a finite number ≥ 0 (job %q)", j.ID)
		}
	}
	if j.ShuffleBytes > 0 && j.Reduces == 0 {
		return newIssue("shuffle_bytes", j.ShuffleBytes, "job %q shuffles data but has no reduce task", j.ID)
	}
	types := make([]TaskType, 0, len(j.Demand))
	for tt := range j.Demand {
		types = append(types, tt)
	}
	slices.Sort(types) // deterministic error for several bad entries
	for _, tt := range types {
		if !tt.Valid() {
			return newIssue("demand", uint8(tt), "unknown task type (job %q)", j.ID)
		}
		if d := j.Demand[tt].check(names); d != nil {
			return d.under("demand." + tt.String())
		}
	}
	if len(j.Tasks) == 0 {
		return nil
	}
	var count [ReduceTask + 1]int
	seen := make(map[string]int, len(j.Tasks))
	for i := range j.Tasks {
		t := &j.Tasks[i]
		path := fmt.Sprintf("tasks[%d]", i)
		if d := t.check(names); d != nil {
			return d.under(path)
		}
		if t.JobID != j.ID {
			return newIssue(path+".job_id", t.JobID, "task of job %q listed in job %q", t.JobID, j.ID)
		}
		if first, dup := seen[t.ID]; dup {
			return newIssue(path+".id", t.ID, "duplicate task id (also tasks[%d])", first)
		}
		seen[t.ID] = i
		count[t.Type]++
	}
	if count[MapTask] != j.Maps || count[ReduceTask] != j.Reduces {
		return newIssue("tasks", len(j.Tasks), "lists %d map and %d reduce tasks, but job %q has maps = %d, reduces = %d",
			count[MapTask], count[ReduceTask], j.ID, j.Maps, j.Reduces)
	}
	return nil
}

// JobFromTrace converts a trace record (see package trace) to a Job with its
// ID, submit time, task counts and byte sizes; queue, user, priority,
// demands and tasks are left for the caller to set.
func JobFromTrace(tj trace.Job) Job {
	return Job{
		ID:           tj.ID,
		SubmitS:      tj.SubmitS,
		Maps:         tj.Maps,
		Reduces:      tj.Reduces,
		InputBytes:   tj.InputBytes,
		ShuffleBytes: tj.ShuffleBytes,
		OutputBytes:  tj.OutputBytes,
	}
}
