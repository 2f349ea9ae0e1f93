package trace

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// checkReadResult asserts the properties every reader guarantees: on
// failure an error wrapping ErrMalformed (the options are valid); on
// success jobs in submit order with finite, non-negative sizes and
// consistent counts.
func checkReadResult(t *testing.T, jobs []Job, err error) {
	t.Helper()
	if err != nil {
		if !errors.Is(err, ErrMalformed) {
			t.Fatalf("error %v does not wrap ErrMalformed", err)
		}
		if jobs != nil {
			t.Fatalf("jobs returned with an error")
		}
		return
	}
	ids := make(map[string]bool)
	for i, j := range jobs {
		if ids[j.ID] {
			t.Fatalf("duplicate id %q", j.ID)
		}
		ids[j.ID] = true
		if i > 0 && jobs[i-1].SubmitS > j.SubmitS {
			t.Fatalf("jobs %d and %d out of submit order: %g > %g", i-1, i, jobs[i-1].SubmitS, j.SubmitS)
		}
		for _, x := range []float64{j.SubmitS, j.InputBytes, j.ShuffleBytes, j.OutputBytes} {
			if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
				t.Fatalf("job %q has a field %g", j.ID, x)
			}
		}
		if j.Maps < 0 || j.Reduces < 0 || j.Maps > maxTasks || j.Reduces > maxTasks {
			t.Fatalf("job %q has %d maps, %d reduces", j.ID, j.Maps, j.Reduces)
		}
	}
}

func FuzzReadSWIM(f *testing.F) {
	for _, s := range []string{
		"job0\t49\t49\t740773\t2339561\t627471\njob1\t101\t52\t736346\t1700537\t432269\n",
		"job0\t9\t9\t1762\t0\t14347\r\njob1\t18\t9\t970\t609\t697\r\n",
		"b\t20\t20\t1\t0\t0\n\na\t10\t10\t268435457\t1610612736\t0\n",
		"job0\t1\t1\t10\t0\n",
		"job0\t1\t1\t1e300\t0\t0\n",
		"job0\t1\t1\t1\t0\tNaN\n",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		jobs, err := ReadSWIM(strings.NewReader(in), Options{})
		checkReadResult(t, jobs, err)
		for _, j := range jobs {
			if !j.Derived || j.Maps < 1 || (j.Reduces == 0) != (j.ShuffleBytes == 0) {
				t.Fatalf("job %+v breaks the derivation rules", j)
			}
		}
	})
}

func FuzzReadCoflow(f *testing.F) {
	for _, s := range []string{
		"150 3\n1 0 1 22 1 65:1.0\n2 10833 2 104 132 1 140:48.0\n3 13122 2 66 138 1 38:4.0\n",
		"3 2\n7 1500 1 2 2 1:2.5 0:0\n4 0 2 0 1 1 2:1\n",
		"3 2\n1 0 1 0 1 0:1\n2 10 3 0 1\n",
		"3 1\n1 0 1 0 2 1:1 1:2\n",
		"3 1\n1 0 1 0 1 1\n",
		"150 0\n",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		jobs, err := ReadCoflow(strings.NewReader(in), Options{})
		checkReadResult(t, jobs, err)
		for _, j := range jobs {
			if j.Maps != len(j.MapperRacks) || j.Reduces != len(j.ReducerRacks) || j.Reduces != len(j.ReducerShuffleBytes) || j.Maps < 1 || j.Reduces < 1 {
				t.Fatalf("coflow %+v: counts and lists disagree", j)
			}
		}
	})
}

func FuzzReadMumakAttempts(f *testing.F) {
	ok := mumakRow(nil)
	for _, s := range []string{
		mumakCSV(ok),
		mumakCSV(ok, mumakRow(row{"task_id": "r1", "task_type": "REDUCE", "attempt_id": "a2", "reduce_shuffle_bytes": "60"})),
		mumakCSV(ok, mumakRow(row{"job_id": "j0", "job_submit_ms": "5", "task_id": "t9", "attempt_id": "a9"})),
		mumakCSV(ok, "j1,1000,t1"),
		mumakCSV(ok, `j1,1000,t"2`),
		mumakCSV(mumakRow(row{"reduce_shuffle_bytes": "-2"})),
		MumakHeader + "\n",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		jobs, err := ReadMumakAttempts(strings.NewReader(in), Options{})
		checkReadResult(t, jobs, err)
		for _, j := range jobs {
			tasks := make(map[string]bool)
			for _, a := range j.Attempts {
				tasks[a.TaskID] = true
			}
			if len(tasks) != j.Maps+j.Reduces {
				t.Fatalf("job %q: %d distinct tasks, %d maps + %d reduces", j.ID, len(tasks), j.Maps, j.Reduces)
			}
		}
	})
}
