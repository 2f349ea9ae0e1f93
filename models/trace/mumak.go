package trace

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Columns of the Mumak attempts CSV, in order (see MumakHeader).
const (
	colJobID = iota
	colJobSubmitMs
	colTaskID
	colTaskType
	colTaskStartMs
	colTaskFinishMs
	colAttemptID
	colAttemptResult
	colRack
	colHost
	colAttemptStartMs
	colAttemptFinishMs
	colShuffleFinishedMs
	colHDFSBytesRead
	colHDFSBytesWritten
	colFileBytesRead
	colFileBytesWritten
	colMapOutputBytes
	colReduceShuffleBytes
	mumakColumns
)

var mumakNames = strings.Split(MumakHeader, ",")

// ReadMumakAttempts reads the per-attempt CSV flattening of the Mumak Rumen
// trace (19-jobs.attempts.csv): the header MumakHeader, then one row per
// task attempt. Rows of one job need not be adjacent. Per job:
//
//   - Maps and Reduces count the distinct task ids of type MAP and REDUCE
//     (Derived is false). Only tasks with at least one attempt have rows:
//     the Rumen trace also lists 155 of its 11,829 tasks with no attempt
//     (91 maps of job 0007, 11 of job 0008, 53 reduces of job 0012), which
//     are not counted here; and Rumen's totalReduces = 1 of job 0018 lists
//     no reduce task, so that job reads as map-only. Setup and cleanup
//     tasks are not in the CSV;
//   - InputBytes = Σ hdfs_bytes_read over successful MAP attempts,
//     OutputBytes = Σ hdfs_bytes_written over successful attempts,
//     ShuffleBytes = Σ reduce_shuffle_bytes over successful REDUCE attempts,
//     each sum skipping values that are -1 ("not recorded", as in Rumen);
//   - ReducerShuffleBytes lists reduce_shuffle_bytes of each successful
//     REDUCE attempt that recorded it, in file order (so a reduce task that
//     never succeeded is absent);
//   - SubmitS = (job_submit_ms − the smallest job_submit_ms in the file)/1000;
//   - Attempts holds every row of the job in file order.
//
// Validation: the header must match exactly; every row has 19 fields;
// task_type is MAP or REDUCE; attempt_result is SUCCESS, FAILED or KILLED;
// job, task and attempt ids are non-empty; numbers are integers ≥ -1
// (job_submit_ms ≥ 0 and equal on all rows of a job); a task keeps one job and
// one type; attempt ids are unique; a task has at most one successful
// attempt. opts is validated but not otherwise used.
func ReadMumakAttempts(r io.Reader, opts Options) ([]Job, error) {
	return readMumakAttempts(r, "", opts)
}

// mumakTask is what the reader remembers about a task id.
type mumakTask struct {
	job         string
	typ         string
	successLine int // line of its successful attempt, 0 if none yet
}

func readMumakAttempts(r io.Reader, file string, opts Options) ([]Job, error) {
	if _, err := opts.withDefaults(); err != nil {
		return nil, err
	}
	src := source{file: file}
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	readRow := func() ([]string, error) {
		rec, err := cr.Read()
		if err == nil {
			src.line, _ = cr.FieldPos(0)
			return rec, nil
		}
		if errors.Is(err, io.EOF) {
			return nil, err
		}
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			src.line = pe.Line
			return nil, src.errorf("record", "", "%v (column %d)", pe.Err, pe.Column)
		}
		return nil, fmt.Errorf("trace: reading %s after line %d: %w", src.name(), src.line, err)
	}

	header, err := readRow()
	if errors.Is(err, io.EOF) {
		src.line = 1
		return nil, src.errorf("header", "", "missing: want %q", MumakHeader)
	}
	if err != nil {
		return nil, err
	}
	if got := strings.Join(header, ","); got != MumakHeader {
		return nil, src.errorf("header", got, "want %q", MumakHeader)
	}

	var (
		jobs      []Job
		jobIndex  = make(map[string]int) // job id → index in jobs
		jobSubmit []int64                // parallel to jobs
		jobLine   []int                  // line of the job's first row
		tasks     = make(map[string]*mumakTask)
		attempts  = make(map[string]int) // attempt id → line
	)
	for {
		rec, err := readRow()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if len(rec) != mumakColumns {
			return nil, src.errorf("record", strings.Join(rec, ","), "has %d comma-separated fields, want %d", len(rec), mumakColumns)
		}
		for _, c := range []int{colJobID, colTaskID, colAttemptID} {
			if rec[c] == "" {
				return nil, src.errorf(mumakNames[c], "", "empty")
			}
		}
		var num [mumakColumns]int64
		for _, c := range []int{colJobSubmitMs, colTaskStartMs, colTaskFinishMs, colAttemptStartMs, colAttemptFinishMs,
			colShuffleFinishedMs, colHDFSBytesRead, colHDFSBytesWritten, colFileBytesRead, colFileBytesWritten,
			colMapOutputBytes, colReduceShuffleBytes} {
			v, err := strconv.ParseInt(rec[c], 10, 64)
			if err != nil {
				return nil, src.errorf(mumakNames[c], rec[c], "%v", errNotInteger)
			}
			if v < NotRecorded {
				return nil, src.errorf(mumakNames[c], rec[c], "negative (only -1, not recorded, is allowed)")
			}
			num[c] = v
		}
		if num[colJobSubmitMs] < 0 {
			return nil, src.errorf(mumakNames[colJobSubmitMs], rec[colJobSubmitMs], "not recorded (-1); a job needs its submit time")
		}
		typ := rec[colTaskType]
		if typ != TaskMap && typ != TaskReduce {
			return nil, src.errorf(mumakNames[colTaskType], typ, "want %s or %s", TaskMap, TaskReduce)
		}
		result := rec[colAttemptResult]
		if result != ResultSuccess && result != ResultFailed && result != ResultKilled {
			return nil, src.errorf(mumakNames[colAttemptResult], result, "want %s, %s or %s", ResultSuccess, ResultFailed, ResultKilled)
		}

		jobID := rec[colJobID]
		ji, known := jobIndex[jobID]
		if !known {
			ji = len(jobs)
			jobIndex[jobID] = ji
			jobs = append(jobs, Job{ID: jobID})
			jobSubmit = append(jobSubmit, num[colJobSubmitMs])
			jobLine = append(jobLine, src.line)
		} else if jobSubmit[ji] != num[colJobSubmitMs] {
			return nil, src.errorf(mumakNames[colJobSubmitMs], rec[colJobSubmitMs],
				"job %s was submitted at %d on line %d", jobID, jobSubmit[ji], jobLine[ji])
		}
		j := &jobs[ji]

		taskID := rec[colTaskID]
		t := tasks[taskID]
		switch {
		case t == nil:
			t = &mumakTask{job: jobID, typ: typ}
			tasks[taskID] = t
			if typ == TaskMap {
				j.Maps++
			} else {
				j.Reduces++
			}
		case t.job != jobID:
			return nil, src.errorf(mumakNames[colTaskID], taskID, "task already seen in job %s", t.job)
		case t.typ != typ:
			return nil, src.errorf(mumakNames[colTaskType], typ, "task %s already seen as %s", taskID, t.typ)
		}

		attemptID := rec[colAttemptID]
		if first, dup := attempts[attemptID]; dup {
			return nil, src.errorf(mumakNames[colAttemptID], attemptID, "duplicate attempt id (first on line %d)", first)
		}
		attempts[attemptID] = src.line

		if result == ResultSuccess {
			if t.successLine != 0 {
				return nil, src.errorf(mumakNames[colAttemptResult], result, "task %s already succeeded on line %d", taskID, t.successLine)
			}
			t.successLine = src.line
			if b := num[colHDFSBytesRead]; typ == TaskMap && b != NotRecorded {
				j.InputBytes += float64(b)
			}
			if b := num[colHDFSBytesWritten]; b != NotRecorded {
				j.OutputBytes += float64(b)
			}
			if b := num[colReduceShuffleBytes]; typ == TaskReduce && b != NotRecorded {
				j.ShuffleBytes += float64(b)
				j.ReducerShuffleBytes = append(j.ReducerShuffleBytes, float64(b))
			}
		}
		j.Attempts = append(j.Attempts, Attempt{
			TaskID:             taskID,
			Type:               typ,
			AttemptID:          attemptID,
			Result:             result,
			Rack:               rec[colRack],
			Host:               rec[colHost],
			TaskStartMs:        num[colTaskStartMs],
			TaskFinishMs:       num[colTaskFinishMs],
			StartMs:            num[colAttemptStartMs],
			FinishMs:           num[colAttemptFinishMs],
			ShuffleFinishedMs:  num[colShuffleFinishedMs],
			HDFSBytesRead:      num[colHDFSBytesRead],
			HDFSBytesWritten:   num[colHDFSBytesWritten],
			FileBytesRead:      num[colFileBytesRead],
			FileBytesWritten:   num[colFileBytesWritten],
			MapOutputBytes:     num[colMapOutputBytes],
			ReduceShuffleBytes: num[colReduceShuffleBytes],
		})
	}
	if len(jobs) > 0 {
		start := jobSubmit[0]
		for _, s := range jobSubmit {
			start = min(start, s)
		}
		for i := range jobs {
			jobs[i].SubmitS = float64(jobSubmit[i]-start) / 1000
		}
	}
	sortBySubmit(jobs)
	return jobs, nil
}
