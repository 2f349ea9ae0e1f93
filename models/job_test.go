package models

import (
	"encoding/json"
	"errors"
	"math"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/optd/optd/internal/testenv"
	"github.com/optd/optd/models/trace"
)

func sampleJob() Job {
	return Job{
		ID: "j1", SubmitS: 12.5, Queue: "default", User: "alice", Priority: 2,
		Maps: 2, Reduces: 1,
		Demand:     map[TaskType]Resources{MapTask: {1024, 1}, ReduceTask: {2048, 2}},
		InputBytes: 256 << 20, ShuffleBytes: 64 << 20, OutputBytes: 1 << 20,
		Tasks: []Task{
			{ID: "m0", JobID: "j1", Type: MapTask, PreferredNodes: []string{"n1", "n3"}},
			{ID: "m1", JobID: "j1", Type: MapTask, Phase: PhaseMap, Progress: 0.5},
			{ID: "r0", JobID: "j1", Type: ReduceTask, Phase: PhaseShuffle, Progress: 0.1, Demand: Resources{4096, 2}},
		},
	}
}

func TestJobValidate(t *testing.T) {
	names := MemoryVCores()
	j := sampleJob()
	if err := j.Validate(names); err != nil {
		t.Fatalf("valid job rejected: %v", err)
	}
	tests := []struct {
		name   string
		modify func(*Job)
		want   string
	}{
		{"empty id", func(j *Job) { j.ID = "" }, `models: invalid job: id = "": empty`},
		{"negative submit", func(j *Job) { j.SubmitS = -1 }, `models: invalid job: submit_s = -1: must be a finite number ≥ 0 (job "j1")`},
		{"NaN submit", func(j *Job) { j.SubmitS = math.NaN() }, `models: invalid job: submit_s = NaN: must be a finite number ≥ 0 (job "j1")`},
		{"negative maps", func(j *Job) { j.Maps = -1 }, `models: invalid job: maps = -1: negative (job "j1")`},
		{"negative reduces", func(j *Job) { j.Reduces = -3 }, `models: invalid job: reduces = -3: negative (job "j1")`},
		{"no tasks at all", func(j *Job) { j.Maps, j.Reduces, j.Tasks, j.ShuffleBytes = 0, 0, nil, 0 },
			`models: invalid job: maps = 0: job "j1" has no map and no reduce task`},
		{"negative input", func(j *Job) { j.InputBytes = -5 }, `models: invalid job: input_bytes = -5: must be a finite number ≥ 0 (job "j1")`},
		{"infinite output", func(j *Job) { j.OutputBytes = math.Inf(1) }, `models: invalid job: output_bytes = +Inf: must be a finite number ≥ 0 (job "j1")`},
		{"shuffle without reducers", func(j *Job) { j.Reduces, j.Tasks = 0, nil },
			`models: invalid job: shuffle_bytes = 6.7108864e+07: job "j1" shuffles data but has no reduce task`},
		{"unknown demand type", func(j *Job) { j.Demand[TaskType(7)] = Resources{1, 1} },
			`models: invalid job: demand = 7: unknown task type (job "j1")`},
		{"negative demand", func(j *Job) { j.Demand[ReduceTask] = Resources{2048, -2} },
			`models: invalid job: demand.reduce[1] = -2: negative vcores`},
		{"demand dimensions", func(j *Job) { j.Demand[MapTask] = Resources{1024} },
			`models: invalid job: demand.map = [1024]: has 1 dimensions, want 2 [memory_mb vcores]`},
		{"invalid task", func(j *Job) { j.Tasks[1].Progress = 2 },
			`models: invalid job: tasks[1].progress = 2: must be in [0, 1]`},
		{"task of another job", func(j *Job) { j.Tasks[2].JobID = "j2" },
			`models: invalid job: tasks[2].job_id = "j2": task of job "j2" listed in job "j1"`},
		{"duplicate task id", func(j *Job) { j.Tasks[1].ID = "m0" },
			`models: invalid job: tasks[1].id = "m0": duplicate task id (also tasks[0])`},
		{"counts disagree", func(j *Job) { j.Maps = 3 },
			`models: invalid job: tasks = 3: lists 2 map and 1 reduce tasks, but job "j1" has maps = 3, reduces = 1`},
		{"types disagree", func(j *Job) { j.Tasks[1].Type, j.Tasks[1].Phase = ReduceTask, PhaseSort },
			`models: invalid job: tasks = 3: lists 1 map and 2 reduce tasks, but job "j1" has maps = 2, reduces = 1`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := sampleJob()
			tc.modify(&j)
			err := j.Validate(names)
			if !errors.Is(err, ErrInvalidJob) || err.Error() != tc.want {
				t.Errorf("Validate = %v\nwant %q", err, tc.want)
			}
		})
	}
	t.Run("counts without tasks", func(t *testing.T) {
		j := Job{ID: "j", Maps: 10, Reduces: 0}
		if err := j.Validate(nil); err != nil {
			t.Errorf("count-only job rejected: %v", err)
		}
	})
}

func TestTaskDemand(t *testing.T) {
	j := sampleJob()
	for i, want := range []Resources{{1024, 1}, {1024, 1}, {4096, 2}} {
		if got := j.TaskDemand(&j.Tasks[i]); !got.Equal(want) {
			t.Errorf("task %s demand %v, want %v", j.Tasks[i].ID, got, want)
		}
	}
	j.Demand = nil
	if got := j.TaskDemand(&j.Tasks[0]); got != nil {
		t.Errorf("no job demand: got %v, want nil", got)
	}
}

func TestJobJSONRoundTrip(t *testing.T) {
	j := sampleJob()
	b, err := json.Marshal(&j)
	if err != nil {
		t.Fatal(err)
	}
	var back Job
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, j) {
		t.Errorf("round trip through %s:\n%+v", b, back)
	}
}

// TestJobFromTraceValidates converts every job of every real trace and
// checks that each is a valid Job carrying the trace's figures.
func TestJobFromTraceValidates(t *testing.T) {
	data := testenv.TraceData(t)
	for _, f := range []string{
		"swim/FB-2009_samples_24_times_1hr_0.tsv",
		"swim/FB-2010_samples_24_times_1hr_0.tsv",
		"coflow/FB2010-1Hr-150-0.txt",
		"hadoop-mumak/19-jobs.attempts.csv",
	} {
		t.Run(filepath.Base(f), func(t *testing.T) {
			tjs, err := trace.ReadFile(filepath.Join(data, f), trace.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, tj := range tjs {
				j := JobFromTrace(tj)
				if err := j.Validate(nil); err != nil {
					t.Fatalf("%s: %v", tj.ID, err)
				}
				if j.ID != tj.ID || j.SubmitS != tj.SubmitS || j.Maps != tj.Maps || j.Reduces != tj.Reduces ||
					j.InputBytes != tj.InputBytes || j.ShuffleBytes != tj.ShuffleBytes || j.OutputBytes != tj.OutputBytes {
					t.Fatalf("%s: JobFromTrace = %+v from %+v", tj.ID, j, tj)
				}
			}
		})
	}
}

// FuzzJobJSON decodes arbitrary JSON as a job: decoding and validation never
// panic, and every task of a valid job has a demand over the names.
func FuzzJobJSON(f *testing.F) {
	seed, _ := json.Marshal(sampleJob())
	f.Add(string(seed))
	f.Add(`{"id":"j","maps":1,"reduces":0,"demand":{"map":[1,2]}}`)
	f.Add(`{"id":"j","maps":0,"reduces":1,"shuffle_bytes":5,"tasks":[{"id":"r","job_id":"j","type":"reduce","phase":"reduce","progress":1}]}`)
	f.Add(`{"id":"j","maps":1,"demand":{"shuffle":[1,2]}}`)
	f.Fuzz(func(t *testing.T, in string) {
		var j Job
		if json.Unmarshal([]byte(in), &j) != nil {
			return
		}
		names := MemoryVCores()
		if err := j.Validate(names); err != nil {
			if !errors.Is(err, ErrInvalidJob) {
				t.Fatalf("error %v does not wrap ErrInvalidJob", err)
			}
			return
		}
		for i := range j.Tasks {
			if d := j.TaskDemand(&j.Tasks[i]); d != nil && len(d) != len(names) {
				t.Fatalf("valid job with task demand %v", d)
			}
			_ = j.Tasks[i].ProgressScore()
		}
	})
}
