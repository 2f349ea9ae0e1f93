package trace

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/gonum/floats/scalar"

	"github.com/optd/optd/internal/testenv"
)

// Real trace files, relative to the data directory.
const (
	fileFB2009 = "swim/FB-2009_samples_24_times_1hr_0.tsv"
	fileFB2010 = "swim/FB-2010_samples_24_times_1hr_0.tsv"
	fileCoflow = "coflow/FB2010-1Hr-150-0.txt"
	fileMumak  = "hadoop-mumak/19-jobs.attempts.csv"
)

func readReal(tb testing.TB, name string) []Job {
	tb.Helper()
	jobs, err := ReadFile(filepath.Join(testenv.TraceData(tb), name), Options{})
	if err != nil {
		tb.Fatal(err)
	}
	return jobs
}

// near reports whether got matches a figure quoted by the data README to
// the precision it is quoted with (halfUnit = half a unit in its last digit).
func near(t *testing.T, what string, got, want, halfUnit float64) {
	t.Helper()
	if !scalar.EqualWithinAbs(got, want, halfUnit) {
		t.Errorf("%s = %.6g, README says %.6g (±%g)", what, got, want, halfUnit)
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// TestREADMEStatistics checks each reader against the statistics the data
// README computed independently.
func TestREADMEStatistics(t *testing.T) {
	tests := []struct {
		file                              string
		jobs                              int
		lastSubmitS, lastHalfUnit         float64
		mapOnly                           float64
		input, inputHalf, shuffle, shHalf float64
	}{
		{fileFB2009, 5894, 86404, 0.5, 0.755, 2.69e13, 0.005e13, 2.22e13, 0.005e13},
		{fileFB2010, 24442, 86408, 0.5, 0.341, 1.08e15, 0.005e15, 4.38e14, 0.005e14},
	}
	for _, tc := range tests {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			jobs := readReal(t, tc.file)
			s := Summarize(jobs)
			if s.Jobs != tc.jobs {
				t.Errorf("jobs = %d, README says %d", s.Jobs, tc.jobs)
			}
			near(t, "last submit s", s.LastSubmitS, tc.lastSubmitS, tc.lastHalfUnit)
			near(t, "map-only fraction", s.MapOnlyFraction, tc.mapOnly, 0.0005)
			near(t, "Σinput bytes", s.TotalInputBytes, tc.input, tc.inputHalf)
			near(t, "Σshuffle bytes", s.TotalShuffleBytes, tc.shuffle, tc.shHalf)
			// Second method: the map-only fraction counted from the raw
			// shuffle column equals the one counted from derived reduces.
			zero := 0
			for _, j := range jobs {
				if j.ShuffleBytes == 0 {
					zero++
				}
			}
			if got := float64(zero) / float64(len(jobs)); got != s.MapOnlyFraction {
				t.Errorf("fraction with shuffle = 0 is %g, fraction with 0 reduces is %g", got, s.MapOnlyFraction)
			}
		})
	}

	t.Run("coflow", func(t *testing.T) {
		jobs := readReal(t, fileCoflow)
		s := Summarize(jobs)
		if s.Jobs != 526 {
			t.Errorf("coflows = %d, README says 526", s.Jobs)
		}
		near(t, "last arrival s", s.LastSubmitS, 3629, 0.5)
		var maps, reduces, shuffleMiB []float64
		for _, j := range jobs {
			maps = append(maps, float64(j.Maps))
			reduces = append(reduces, float64(j.Reduces))
			shuffleMiB = append(shuffleMiB, j.ShuffleBytes/MiB)
		}
		for _, c := range []struct {
			what              string
			xs                []float64
			median, max, half float64
		}{
			{"mappers per coflow", maps, 3, 147, 0},
			{"reducers per coflow", reduces, 1, 145, 0},
			{"shuffle MB per coflow", shuffleMiB, 25, 8501205, 0.5},
		} {
			near(t, "median "+c.what, median(c.xs), c.median, c.half)
			near(t, "max "+c.what, slices.Max(c.xs), c.max, c.half)
		}
	})

	t.Run("mumak", func(t *testing.T) {
		jobs := readReal(t, fileMumak)
		if len(jobs) != 19 {
			t.Fatalf("jobs = %d, README says 19", len(jobs))
		}
		byID := make(map[string]Job)
		tasks := 0
		results := make(map[string]int)
		for _, j := range jobs {
			byID[j.ID] = j
			tasks += j.Maps + j.Reduces
			for _, a := range j.Attempts {
				results[a.Type+" "+a.Result]++
			}
		}
		// The README's 11,829 tasks count the JSON trace, where 155 tasks
		// have no attempt and hence no CSV row (TestMumakCSVMatchesRumenJSON).
		if tasks != 11829-155 {
			t.Errorf("tasks with attempts = %d, want 11,829 - 155", tasks)
		}
		wantResults := map[string]int{
			"MAP SUCCESS": 5650, "MAP FAILED": 3345, "MAP KILLED": 621,
			"REDUCE SUCCESS": 2754, "REDUCE KILLED": 475, "REDUCE FAILED": 151,
		}
		if !reflect.DeepEqual(results, wantResults) {
			t.Errorf("attempt results = %v, README says %v", results, wantResults)
		}
		for _, c := range []struct {
			id                     string
			maps, reduces          int
			medianMB, maxMB, maxUn float64
		}{
			{"job_200904211745_0004", 131, 47, 4.4, 0, 0},
			{"job_200904211745_0020", 329, 101, 8.1, 14.7, 0.05},
		} {
			j, ok := byID[c.id]
			if !ok {
				t.Errorf("job %s missing", c.id)
				continue
			}
			if j.Maps != c.maps || j.Reduces != c.reduces {
				t.Errorf("%s: %d maps, %d reduces; README says %d, %d", c.id, j.Maps, j.Reduces, c.maps, c.reduces)
			}
			// The README quotes decimal MB here (1 MB = 10^6 bytes).
			near(t, c.id+" median shuffle MB per reduce", median(j.ReducerShuffleBytes)/1e6, c.medianMB, 0.05)
			if c.maxMB > 0 {
				near(t, c.id+" max shuffle MB per reduce", slices.Max(j.ReducerShuffleBytes)/1e6, c.maxMB, c.maxUn)
			}
			// Second method: ShuffleBytes is also the sum over attempts.
			sum := 0.0
			for _, a := range j.Attempts {
				if a.Type == TaskReduce && a.Result == ResultSuccess && a.ReduceShuffleBytes != NotRecorded {
					sum += float64(a.ReduceShuffleBytes)
				}
			}
			if sum != j.ShuffleBytes {
				t.Errorf("%s: ShuffleBytes = %g, sum over attempts = %g", c.id, j.ShuffleBytes, sum)
			}
		}
		// README: several jobs have 500 reduces and 1 map.
		n := 0
		for _, j := range jobs {
			if j.Maps == 1 && j.Reduces == 500 {
				n++
			}
		}
		if n < 2 {
			t.Errorf("%d jobs with 1 map and 500 reduces, README says several", n)
		}
		if jobs[0].SubmitS != 0 || !slices.IsSortedFunc(jobs, func(a, b Job) int { return cmp.Compare(a.SubmitS, b.SubmitS) }) {
			t.Errorf("jobs not in submit order from 0: first %g", jobs[0].SubmitS)
		}
	})
}

// TestDerivedCountsOnRealTrace checks the derivation rules job by job on
// FB-2009 against their definitions evaluated independently.
func TestDerivedCountsOnRealTrace(t *testing.T) {
	jobs := readReal(t, fileFB2009)
	for _, j := range jobs {
		if !j.Derived {
			t.Fatalf("%s: Derived = false for a SWIM job", j.ID)
		}
		wantMaps := 1
		for float64(wantMaps)*DefaultBlockBytes < j.InputBytes { // smallest m with m·block ≥ input
			wantMaps++
		}
		if j.Maps != wantMaps {
			t.Fatalf("%s: input %g bytes gives %d maps, want %d", j.ID, j.InputBytes, j.Maps, wantMaps)
		}
		if (j.Reduces == 0) != (j.ShuffleBytes == 0) {
			t.Fatalf("%s: %d reduces with shuffle %g", j.ID, j.Reduces, j.ShuffleBytes)
		}
		if j.Reduces > 0 {
			// round(x) = r ⇔ r-1/2 ≤ x < r+1/2, with r ≥ 1.
			x := (j.ShuffleBytes + j.OutputBytes) / DefaultBytesPerReduce
			if r := float64(j.Reduces); x >= r+0.5 || (r > 1 && x < r-0.5) {
				t.Fatalf("%s: (shuffle+output)/1GiB = %g gives %d reduces", j.ID, x, j.Reduces)
			}
		}
	}
}

func TestDerivationRules(t *testing.T) {
	tests := []struct {
		name                   string
		input, shuffle, output float64
		opts                   Options
		maps, reduces          int
	}{
		{"empty job", 0, 0, 0, Options{}, 1, 0},
		{"one byte", 1, 0, 5, Options{}, 1, 0},
		{"exactly one block", DefaultBlockBytes, 0, 0, Options{}, 1, 0},
		{"one block and a byte", DefaultBlockBytes + 1, 1, 0, Options{}, 2, 1},
		{"tiny shuffle still one reduce", 10, 1, 1, Options{}, 1, 1},
		{"round half up", 0, 1.5 * GiB, 0, Options{}, 1, 2},
		{"round down", 0, 1.49 * GiB, 0, Options{}, 1, 1},
		{"output counts", 0, 1 * GiB, 2 * GiB, Options{}, 1, 3},
		{"custom sizes", 1000, 300, 100, Options{BlockBytes: 100, BytesPerReduce: 100}, 10, 4},
		{"shuffle zero means map-only", 1e12, 0, 1e12, Options{}, 7451, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			formatSWIM(&b, []Job{{ID: "j", InputBytes: tc.input, ShuffleBytes: tc.shuffle, OutputBytes: tc.output}})
			jobs, err := ReadSWIM(strings.NewReader(b.String()), tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if jobs[0].Maps != tc.maps || jobs[0].Reduces != tc.reduces {
				t.Errorf("maps, reduces = %d, %d; want %d, %d", jobs[0].Maps, jobs[0].Reduces, tc.maps, tc.reduces)
			}
		})
	}
}

func TestOptionsValidation(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"negative block", Options{BlockBytes: -1}, "trace: invalid options: BlockBytes = -1: must be a positive finite number of bytes (0 means 134217728)"},
		{"NaN per reduce", Options{BytesPerReduce: math.NaN()}, "trace: invalid options: BytesPerReduce = NaN: must be a positive finite number of bytes (0 means 1073741824)"},
		{"Inf per reduce", Options{BytesPerReduce: math.Inf(1)}, "trace: invalid options: BytesPerReduce = +Inf: must be a positive finite number of bytes (0 means 1073741824)"},
	}
	readers := map[string]func(string, Options) error{
		"swim":   func(s string, o Options) error { _, err := ReadSWIM(strings.NewReader(s), o); return err },
		"coflow": func(s string, o Options) error { _, err := ReadCoflow(strings.NewReader(s), o); return err },
		"mumak":  func(s string, o Options) error { _, err := ReadMumakAttempts(strings.NewReader(s), o); return err },
	}
	for _, tc := range tests {
		for name, read := range readers {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				err := read("", tc.opts)
				if !errors.Is(err, ErrInvalidOptions) || err.Error() != tc.want {
					t.Errorf("err = %v, want %q", err, tc.want)
				}
			})
		}
	}
}

// writeTemp writes content to dir/name, gzip-compressed when gz is set.
func writeTemp(t *testing.T, dir, name string, content []byte, gz bool) string {
	t.Helper()
	if gz {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		if _, err := zw.Write(content); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		content = b.Bytes()
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, content, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDetect(t *testing.T) {
	dir := t.TempDir()
	swim := []byte("job0\t49\t49\t740773\t2339561\t627471\n")
	coflow := []byte("150 1\n1 0 1 22 1 65:1.0\n")
	mumak := []byte(MumakHeader + "\r\n")
	tests := []struct {
		name    string
		content []byte
		gz      bool
		want    Format
		wantErr string
	}{
		{"swim.tsv", swim, false, FormatSWIM, ""},
		{"swim-named.csv", swim, false, FormatSWIM, ""},
		{"swim.tsv.gz", swim, true, FormatSWIM, ""},
		{"swim-gzip-without-gz-suffix", swim, true, FormatSWIM, ""},
		{"leading-blank-lines.txt", append([]byte("\n  \n"), coflow...), false, FormatCoflow, ""},
		{"coflow.txt", coflow, false, FormatCoflow, ""},
		{"attempts.csv", mumak, false, FormatMumak, ""},
		{"attempts.csv.gz", mumak, true, FormatMumak, ""},
		{"notes.tsv", []byte("# a comment\n"), false, "", `trace: unknown format: DIR/notes.tsv: first line "# a comment" is none of: swim (6 tab-separated fields: job id, submit_s, gap_s, input, shuffle, output bytes), coflow (header "<racks> <coflows>"), mumak (CSV header "job_id,job_submit_ms,task_id,...")`},
		{"five-fields.tsv", []byte("job0\t1\t1\t1\t1\n"), false, "", `trace: unknown format: DIR/five-fields.tsv: first line "job0\t1\t1\t1\t1" is none of`},
		{"empty.txt", nil, false, "", "trace: unknown format: DIR/empty.txt: no non-blank line in the first 65536 bytes"},
		{"plain.gz", swim, false, "", "trace: malformed input: DIR/plain.gz: name ends in .gz but content is not gzip"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := writeTemp(t, dir, tc.name, tc.content, tc.gz)
			got, err := Detect(p)
			if tc.wantErr == "" {
				if err != nil || got != tc.want {
					t.Fatalf("Detect = %q, %v; want %q", got, err, tc.want)
				}
				return
			}
			want := strings.ReplaceAll(tc.wantErr, "DIR", dir)
			if err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("Detect error = %v, want prefix %q", err, want)
			}
			if _, rerr := ReadFile(p, Options{}); rerr == nil || rerr.Error() != err.Error() {
				t.Errorf("ReadFile error = %v, want the Detect error", rerr)
			}
		})
	}
	t.Run("missing file", func(t *testing.T) {
		_, err := Detect(filepath.Join(dir, "nope"))
		if !errors.Is(err, os.ErrNotExist) {
			t.Errorf("err = %v, want a not-exist error", err)
		}
	})
}

// TestReadFileMatchesReaders checks that ReadFile (detection, gzip) gives
// exactly what the format's own reader gives on the same bytes.
func TestReadFileMatchesReaders(t *testing.T) {
	data := testenv.TraceData(t)
	dir := t.TempDir()
	readers := []struct {
		file string
		read func(*bytes.Reader, Options) ([]Job, error)
	}{
		{fileFB2009, func(r *bytes.Reader, o Options) ([]Job, error) { return ReadSWIM(r, o) }},
		{fileCoflow, func(r *bytes.Reader, o Options) ([]Job, error) { return ReadCoflow(r, o) }},
		{fileMumak, func(r *bytes.Reader, o Options) ([]Job, error) { return ReadMumakAttempts(r, o) }},
	}
	opts := Options{BlockBytes: 64 * MiB, BytesPerReduce: 256 * MiB}
	for _, rd := range readers {
		t.Run(filepath.Base(rd.file), func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(data, rd.file))
			if err != nil {
				t.Fatal(err)
			}
			want, err := rd.read(bytes.NewReader(raw), opts)
			if err != nil {
				t.Fatal(err)
			}
			gz := writeTemp(t, dir, filepath.Base(rd.file)+".gz", raw, true)
			got, err := ReadFile(gz, opts)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("ReadFile(%s) differs from the format reader", gz)
			}
		})
	}
}

func TestReadFileErrorsNameTheFile(t *testing.T) {
	dir := t.TempDir()
	p := writeTemp(t, dir, "bad.tsv", []byte("job0\t1\t1\t1\t0\t0\njob1\t2\t1\tlots\t0\t0\n"), false)
	_, err := ReadFile(p, Options{})
	want := `trace: ` + p + `:2: input_bytes = "lots": not a number`
	var pe *ParseError
	if err == nil || err.Error() != want || !errors.As(err, &pe) || !errors.Is(err, ErrMalformed) {
		t.Fatalf("err = %v, want %q wrapping ErrMalformed", err, want)
	}
	if pe.File != p || pe.Line != 2 || pe.Field != "input_bytes" || pe.Value != "lots" {
		t.Errorf("ParseError = %+v", *pe)
	}
}

func TestSummarize(t *testing.T) {
	jobs := []Job{
		{SubmitS: 3, InputBytes: 10, ShuffleBytes: 0, OutputBytes: 1, Reduces: 0},
		{SubmitS: 7, InputBytes: 20, ShuffleBytes: 5, OutputBytes: 2, Reduces: 1},
		{SubmitS: 5, InputBytes: 30, ShuffleBytes: 6, OutputBytes: 3, Reduces: 2},
		{SubmitS: 6, InputBytes: 40, ShuffleBytes: 0, OutputBytes: 4, Reduces: 0},
	}
	want := Stats{Jobs: 4, LastSubmitS: 7, MapOnlyFraction: 0.5, TotalInputBytes: 100, TotalShuffleBytes: 11, TotalOutputBytes: 10}
	if got := Summarize(jobs); got != want {
		t.Errorf("Summarize = %+v, want %+v", got, want)
	}
	if got := Summarize(nil); got != (Stats{}) {
		t.Errorf("Summarize(nil) = %+v, want zero", got)
	}
}

// BenchmarkReadFile measures ReadFile on the FB-2010 SWIM day (MB/s from
// b.SetBytes).
func BenchmarkReadFile(b *testing.B) {
	p := filepath.Join(testenv.TraceData(b), fileFB2010)
	info, err := os.Stat(p)
	if err != nil {
		b.Fatal(err)
	}
	jobs, err := ReadFile(p, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("swim/jobs="+strconv.Itoa(len(jobs)), func(b *testing.B) {
		b.SetBytes(info.Size())
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ReadFile(p, Options{}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(jobs)), "ns/job")
	})
}

// rumenJob holds the fields of a Rumen LoggedJob that the cross-check uses.
type rumenJob struct {
	JobID       string      `json:"jobID"`
	SubmitTime  int64       `json:"submitTime"`
	MapTasks    []rumenTask `json:"mapTasks"`
	ReduceTasks []rumenTask `json:"reduceTasks"`
}

type rumenTask struct {
	TaskID   string `json:"taskID"`
	Attempts []struct {
		Result             string `json:"result"`
		HDFSBytesRead      int64  `json:"hdfsBytesRead"`
		ReduceShuffleBytes int64  `json:"reduceShuffleBytes"`
	} `json:"attempts"`
}

// TestMumakCSVMatchesRumenJSON checks ReadMumakAttempts on the flattened CSV
// against the original Rumen JSON stream, decoded independently: task
// counts (tasks with attempts), attempt counts, input and shuffle sums and
// submit times, job by job.
func TestMumakCSVMatchesRumenJSON(t *testing.T) {
	data := testenv.TraceData(t)
	f, err := os.Open(filepath.Join(data, "hadoop-mumak", "19-jobs.trace.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(zr)
	var rumen []rumenJob
	for {
		var j rumenJob
		if err := dec.Decode(&j); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		rumen = append(rumen, j)
	}
	jobs := readReal(t, fileMumak)
	byID := make(map[string]Job)
	for _, j := range jobs {
		byID[j.ID] = j
	}
	if len(rumen) != len(jobs) {
		t.Fatalf("JSON has %d jobs, CSV reader %d", len(rumen), len(jobs))
	}
	allTasks, noAttempt, attempts := 0, 0, 0
	minSubmit := rumen[0].SubmitTime
	for _, rj := range rumen {
		minSubmit = min(minSubmit, rj.SubmitTime)
	}
	for _, rj := range rumen {
		j, ok := byID[rj.JobID]
		if !ok {
			t.Errorf("job %s of the JSON is missing", rj.JobID)
			continue
		}
		var input, shuffle float64
		count := func(tasks []rumenTask) int {
			n := 0
			for _, task := range tasks {
				allTasks++
				if len(task.Attempts) == 0 {
					noAttempt++
					continue
				}
				n++
				for _, a := range task.Attempts {
					attempts++
					if a.Result != ResultSuccess {
						continue
					}
					if a.HDFSBytesRead != NotRecorded && strings.Contains(task.TaskID, "_m_") {
						input += float64(a.HDFSBytesRead)
					}
					if a.ReduceShuffleBytes != NotRecorded && strings.Contains(task.TaskID, "_r_") {
						shuffle += float64(a.ReduceShuffleBytes)
					}
				}
			}
			return n
		}
		maps, reduces := count(rj.MapTasks), count(rj.ReduceTasks)
		if j.Maps != maps || j.Reduces != reduces {
			t.Errorf("%s: CSV gives %d maps, %d reduces; JSON has %d, %d with attempts", rj.JobID, j.Maps, j.Reduces, maps, reduces)
		}
		if j.InputBytes != input || j.ShuffleBytes != shuffle {
			t.Errorf("%s: CSV gives input %g, shuffle %g; JSON %g, %g", rj.JobID, j.InputBytes, j.ShuffleBytes, input, shuffle)
		}
		if want := float64(rj.SubmitTime-minSubmit) / 1000; j.SubmitS != want {
			t.Errorf("%s: SubmitS = %g, JSON gives %g", rj.JobID, j.SubmitS, want)
		}
	}
	if allTasks != 11829 || noAttempt != 155 || attempts != 12996 {
		t.Errorf("JSON: %d tasks, %d without attempts, %d attempts; want 11,829, 155, 12,996 (README)", allTasks, noAttempt, attempts)
	}
	csvAttempts := 0
	for _, j := range jobs {
		csvAttempts += len(j.Attempts)
	}
	if csvAttempts != attempts {
		t.Errorf("CSV has %d attempts, JSON %d", csvAttempts, attempts)
	}
}
