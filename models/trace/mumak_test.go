package trace

import (
	"reflect"
	"strings"
	"testing"
)

// mumakRow builds one CSV row: the 19 fields of a successful map attempt of
// task t1 of job j1 with every optional number not recorded, then the
// overrides (column name → value).
func mumakRow(overrides map[string]string) string {
	f := []string{"j1", "1000", "t1", "MAP", "-1", "-1", "a1", "SUCCESS", "/r1", "h1",
		"-1", "-1", "-1", "-1", "-1", "-1", "-1", "-1", "-1"}
	for k, v := range overrides {
		i := -1
		for c, name := range mumakNames {
			if name == k {
				i = c
			}
		}
		if i < 0 {
			panic("mumakRow: no column " + k)
		}
		f[i] = v
	}
	return strings.Join(f, ",")
}

func mumakCSV(rows ...string) string {
	return MumakHeader + "\r\n" + strings.Join(rows, "\r\n") + "\r\n"
}

type row = map[string]string

func TestReadMumakAttempts(t *testing.T) {
	in := mumakCSV(
		// Job j1 (submitted at 1000 ms): two maps, t1 failed once; one reduce.
		mumakRow(row{"attempt_id": "a1", "attempt_result": "FAILED", "hdfs_bytes_read": "999",
			"attempt_start_ms": "1100", "attempt_finish_ms": "1200"}),
		mumakRow(row{"attempt_id": "a2", "hdfs_bytes_read": "100", "map_output_bytes": "40"}),
		mumakRow(row{"task_id": "t2", "attempt_id": "a3", "hdfs_bytes_read": "50"}),
		// Job j0 (submitted earlier, listed later): map-only, writes to HDFS.
		mumakRow(row{"job_id": "j0", "job_submit_ms": "500", "task_id": "t9", "attempt_id": "a9",
			"hdfs_bytes_read": "7", "hdfs_bytes_written": "3"}),
		mumakRow(row{"task_id": "r1", "task_type": "REDUCE", "attempt_id": "a4", "attempt_result": "KILLED",
			"reduce_shuffle_bytes": "60"}),
		mumakRow(row{"task_id": "r1", "task_type": "REDUCE", "attempt_id": "a5", "reduce_shuffle_bytes": "60",
			"hdfs_bytes_written": "20", "shuffle_finished_ms": "2500", "rack": "/r2", "host": "h2"}),
	)
	jobs, err := ReadMumakAttempts(strings.NewReader(in), Options{})
	if err != nil {
		t.Fatal(err)
	}
	notRec := Attempt{TaskStartMs: -1, TaskFinishMs: -1, StartMs: -1, FinishMs: -1, ShuffleFinishedMs: -1,
		HDFSBytesRead: -1, HDFSBytesWritten: -1, FileBytesRead: -1, FileBytesWritten: -1, MapOutputBytes: -1, ReduceShuffleBytes: -1,
		Rack: "/r1", Host: "h1"}
	at := func(task, typ, id, result string, set func(*Attempt)) Attempt {
		a := notRec
		a.TaskID, a.Type, a.AttemptID, a.Result = task, typ, id, result
		if set != nil {
			set(&a)
		}
		return a
	}
	want := []Job{
		{ID: "j0", SubmitS: 0, InputBytes: 7, OutputBytes: 3, Maps: 1, Attempts: []Attempt{
			at("t9", TaskMap, "a9", ResultSuccess, func(a *Attempt) { a.HDFSBytesRead, a.HDFSBytesWritten = 7, 3 }),
		}},
		{ID: "j1", SubmitS: 0.5, InputBytes: 150, ShuffleBytes: 60, OutputBytes: 20, Maps: 2, Reduces: 1,
			ReducerShuffleBytes: []float64{60}, Attempts: []Attempt{
				at("t1", TaskMap, "a1", ResultFailed, func(a *Attempt) { a.HDFSBytesRead, a.StartMs, a.FinishMs = 999, 1100, 1200 }),
				at("t1", TaskMap, "a2", ResultSuccess, func(a *Attempt) { a.HDFSBytesRead, a.MapOutputBytes = 100, 40 }),
				at("t2", TaskMap, "a3", ResultSuccess, func(a *Attempt) { a.HDFSBytesRead = 50 }),
				at("r1", TaskReduce, "a4", ResultKilled, func(a *Attempt) { a.ReduceShuffleBytes = 60 }),
				at("r1", TaskReduce, "a5", ResultSuccess, func(a *Attempt) {
					a.ReduceShuffleBytes, a.HDFSBytesWritten, a.ShuffleFinishedMs, a.Rack, a.Host = 60, 20, 2500, "/r2", "h2"
				}),
			}},
	}
	if !reflect.DeepEqual(jobs, want) {
		t.Errorf("ReadMumakAttempts =\n%+v\nwant\n%+v", jobs, want)
	}
	if none, err := ReadMumakAttempts(strings.NewReader(MumakHeader+"\n"), Options{}); err != nil || len(none) != 0 {
		t.Errorf("header only: %v, %v; want no jobs and no error", none, err)
	}
}

func TestReadMumakAttemptsErrors(t *testing.T) {
	ok := mumakRow(nil)
	tests := []struct {
		name, in, want string
	}{
		{"empty", "",
			`trace: line 1: header = "": missing: want "` + MumakHeader + `"`},
		{"wrong header", "job_id,job_submit_ms\n",
			`trace: line 1: header = "job_id,job_submit_ms": want "` + MumakHeader + `"`},
		{"wrong field count", mumakCSV(ok, "j1,1000,t1"),
			`trace: line 3: record = "j1,1000,t1": has 3 comma-separated fields, want 19`},
		{"non-numeric", mumakCSV(mumakRow(row{"hdfs_bytes_read": "12k"})),
			`trace: line 2: hdfs_bytes_read = "12k": not an integer`},
		{"fractional", mumakCSV(mumakRow(row{"attempt_start_ms": "1.5"})),
			`trace: line 2: attempt_start_ms = "1.5": not an integer`},
		{"negative bytes", mumakCSV(mumakRow(row{"reduce_shuffle_bytes": "-2"})),
			`trace: line 2: reduce_shuffle_bytes = "-2": negative (only -1, not recorded, is allowed)`},
		{"submit not recorded", mumakCSV(mumakRow(row{"job_submit_ms": "-1"})),
			`trace: line 2: job_submit_ms = "-1": not recorded (-1); a job needs its submit time`},
		{"task type", mumakCSV(mumakRow(row{"task_type": "SETUP"})),
			`trace: line 2: task_type = "SETUP": want MAP or REDUCE`},
		{"attempt result", mumakCSV(mumakRow(row{"attempt_result": "success"})),
			`trace: line 2: attempt_result = "success": want SUCCESS, FAILED or KILLED`},
		{"empty task id", mumakCSV(mumakRow(row{"task_id": ""})),
			`trace: line 2: task_id = "": empty`},
		{"submit time changes", mumakCSV(ok, mumakRow(row{"job_submit_ms": "1001", "task_id": "t2", "attempt_id": "a2"})),
			`trace: line 3: job_submit_ms = "1001": job j1 was submitted at 1000 on line 2`},
		{"task changes job", mumakCSV(ok, mumakRow(row{"job_id": "j2", "attempt_id": "a2"})),
			`trace: line 3: task_id = "t1": task already seen in job j1`},
		{"task changes type", mumakCSV(ok, mumakRow(row{"task_type": "REDUCE", "attempt_id": "a2"})),
			`trace: line 3: task_type = "REDUCE": task t1 already seen as MAP`},
		{"duplicate attempt", mumakCSV(ok, mumakRow(row{"task_id": "t2"})),
			`trace: line 3: attempt_id = "a1": duplicate attempt id (first on line 2)`},
		{"two successes", mumakCSV(ok, mumakRow(row{"attempt_id": "a2"})),
			`trace: line 3: attempt_result = "SUCCESS": task t1 already succeeded on line 2`},
		{"bad quoting", mumakCSV(ok, `j1,1000,t"2`),
			`trace: line 3: record = "": bare " in non-quoted-field (column 10)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadMumakAttempts(strings.NewReader(tc.in), Options{})
			wantParseError(t, err, tc.want)
		})
	}
}
