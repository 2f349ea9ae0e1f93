package trace

import (
	"io"
	"strings"
)

// swimFields is the number of tab-separated fields of a SWIM record.
const swimFields = 6

// swimColumns names the SWIM fields in order, as errors call them. The order
// is the one SWIM's WorkloadSynthesis.pl writes and GenerateReplayScript.java
// reads (INTER_JOB_SLEEP_TIME = 2, INPUT_DATA_SIZE = 3, SHUFFLE_DATA_SIZE = 4,
// OUTPUT_DATA_SIZE = 5).
var swimColumns = [swimFields]string{"job_id", "submit_s", "gap_s", "input_bytes", "shuffle_bytes", "output_bytes"}

// ReadSWIM reads a SWIM workload-suite TSV (e.g. FB-2009_samples_24_times_1hr_0.tsv):
// one job per line, exactly six tab-separated fields
//
//	job_id  submit_s  gap_s  input_bytes  shuffle_bytes  output_bytes
//
// with no header. SubmitS is the recorded submit_s (seconds from the start of
// the workload); gap_s must be a non-negative number but is not otherwise
// used. SWIM records no task counts, so Maps and Reduces are derived (see the
// package documentation; Derived is true). Blank lines are skipped; job ids
// must be unique.
func ReadSWIM(r io.Reader, opts Options) ([]Job, error) {
	return readSWIM(r, "", opts)
}

func readSWIM(r io.Reader, file string, opts Options) ([]Job, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	lr := newLineReader(r, file)
	seen := make(map[string]int)
	var jobs []Job
	var f [swimFields]string
	var x [swimFields]float64
	for {
		line, ok := lr.next()
		if !ok {
			break
		}
		if n := strings.Count(line, "\t") + 1; n != swimFields {
			return nil, lr.errorf("record", line, "has %d tab-separated fields, want %d", n, swimFields)
		}
		rest := line
		for i := range f {
			f[i], rest, _ = strings.Cut(rest, "\t")
		}
		if f[0] == "" {
			return nil, lr.errorf(swimColumns[0], f[0], "empty")
		}
		if first, dup := seen[f[0]]; dup {
			return nil, lr.errorf(swimColumns[0], f[0], "duplicate job id (first on line %d)", first)
		}
		seen[f[0]] = lr.line
		for i := 1; i < swimFields; i++ {
			if x[i], err = lr.parseBytes(swimColumns[i], f[i]); err != nil {
				return nil, err
			}
		}
		j := Job{
			ID:           f[0],
			SubmitS:      x[1],
			InputBytes:   x[3],
			ShuffleBytes: x[4],
			OutputBytes:  x[5],
			Derived:      true,
		}
		if j.Maps, err = lr.deriveMaps(swimColumns[3], f[3], j.InputBytes, opts.BlockBytes); err != nil {
			return nil, err
		}
		if j.Reduces, err = lr.deriveReduces(swimColumns[4], f[4], j.ShuffleBytes, j.OutputBytes, opts.BytesPerReduce); err != nil {
			return nil, err
		}
		jobs = append(jobs, j)
	}
	if err := lr.err(); err != nil {
		return nil, err
	}
	sortBySubmit(jobs)
	return jobs, nil
}
