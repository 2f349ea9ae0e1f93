package trace

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// formatSWIM writes jobs in SWIM's TSV format, the inverse of ReadSWIM on
// the recorded fields.
func formatSWIM(w *strings.Builder, jobs []Job) {
	prev := 0.0
	for _, j := range jobs {
		for i, v := range []float64{j.SubmitS, j.SubmitS - prev, j.InputBytes, j.ShuffleBytes, j.OutputBytes} {
			if i == 0 {
				w.WriteString(j.ID)
			}
			w.WriteByte('\t')
			w.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
		}
		w.WriteByte('\n')
		prev = j.SubmitS
	}
}

// wantParseError checks that err is a *ParseError wrapping ErrMalformed with
// exactly the message want.
func wantParseError(t *testing.T, err error, want string) {
	t.Helper()
	var pe *ParseError
	switch {
	case err == nil:
		t.Fatalf("no error, want %q", want)
	case err.Error() != want:
		t.Fatalf("error\n got %q\nwant %q", err.Error(), want)
	case !errors.Is(err, ErrMalformed) || !errors.As(err, &pe):
		t.Fatalf("error %v is not a *ParseError wrapping ErrMalformed", err)
	}
}

func TestReadSWIM(t *testing.T) {
	// Out of order on purpose, with CRLF, a blank line and equal times.
	in := "b\t20\t20\t1\t0\t0\r\n" +
		"\r\n" +
		"a\t10\t10\t268435457\t1610612736\t0\r\n" +
		"c\t20\t0\t0\t5\t7\r\n"
	jobs, err := ReadSWIM(strings.NewReader(in), Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Job{
		{ID: "a", SubmitS: 10, InputBytes: 268435457, ShuffleBytes: 1610612736, Maps: 3, Reduces: 2, Derived: true},
		{ID: "b", SubmitS: 20, InputBytes: 1, Maps: 1, Reduces: 0, Derived: true},
		{ID: "c", SubmitS: 20, ShuffleBytes: 5, OutputBytes: 7, Maps: 1, Reduces: 1, Derived: true},
	}
	if !reflect.DeepEqual(jobs, want) {
		t.Errorf("ReadSWIM =\n%+v\nwant\n%+v", jobs, want)
	}
	var b strings.Builder
	formatSWIM(&b, jobs)
	again, err := ReadSWIM(strings.NewReader(b.String()), Options{})
	if err != nil || !reflect.DeepEqual(again, jobs) {
		t.Errorf("round trip through formatSWIM: %v\n%+v", err, again)
	}
	if empty, err := ReadSWIM(strings.NewReader(""), Options{}); err != nil || len(empty) != 0 {
		t.Errorf("empty input: %v, %v; want no jobs and no error", empty, err)
	}
}

func TestReadSWIMErrors(t *testing.T) {
	long := strings.Repeat("x", 100)
	tests := []struct {
		name, in, want string
	}{
		{"five fields", "job0\t1\t1\t10\t0\n",
			`trace: line 1: record = "job0\t1\t1\t10\t0": has 5 tab-separated fields, want 6`},
		{"seven fields", "job0\t1\t1\t10\t0\t0\t0\n",
			`trace: line 1: record = "job0\t1\t1\t10\t0\t0\t0": has 7 tab-separated fields, want 6`},
		{"spaces are not tabs", "job0 1 1 10 0 0\n",
			`trace: line 1: record = "job0 1 1 10 0 0": has 1 tab-separated fields, want 6`},
		{"long record is cut", long + "\t1\n",
			`trace: line 1: record = "` + long[:64] + `...": has 2 tab-separated fields, want 6`},
		{"non-numeric", "job0\t1\t1\t1\t0\t0\njob1\t2\t1\tabc\t0\t0\n",
			`trace: line 2: input_bytes = "abc": not a number`},
		{"empty number", "job0\t\t1\t1\t0\t0\n",
			`trace: line 1: submit_s = "": not a number`},
		{"negative bytes", "job0\t1\t1\t1\t-5\t0\n",
			`trace: line 1: shuffle_bytes = "-5": negative`},
		{"negative gap", "job0\t1\t-1\t1\t0\t0\n",
			`trace: line 1: gap_s = "-1": negative`},
		{"NaN", "job0\t1\t1\t1\t0\tNaN\n",
			`trace: line 1: output_bytes = "NaN": not finite`},
		{"infinite time", "job0\tInf\t1\t1\t0\t0\n",
			`trace: line 1: submit_s = "Inf": not finite`},
		{"empty id", "\t1\t1\t1\t0\t0\n",
			`trace: line 1: job_id = "": empty`},
		{"duplicate id", "job0\t1\t1\t1\t0\t0\n\njob0\t2\t1\t1\t0\t0\n",
			`trace: line 3: job_id = "job0": duplicate job id (first on line 1)`},
		{"too many maps", "job0\t1\t1\t1e300\t0\t0\n",
			`trace: line 1: input_bytes = "1e300": derives 7.451e+291 maps at 134217728 bytes per block, more than 2147483647`},
		{"too many reduces", "job0\t1\t1\t1\t1\t1e300\n",
			`trace: line 1: shuffle_bytes = "1": derives 9.313e+290 reduces at 1073741824 bytes per reduce, more than 2147483647`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadSWIM(strings.NewReader(tc.in), Options{})
			wantParseError(t, err, tc.want)
		})
	}
	t.Run("line too long", func(t *testing.T) {
		in := "job0\t1\t1\t1\t0\t0\n" + strings.Repeat("9", maxLineBytes+1) + "\n"
		_, err := ReadSWIM(strings.NewReader(in), Options{})
		wantParseError(t, err, `trace: line 2: line = "": longer than 16777216 bytes`)
	})
}

// failingReader returns data, then a read error.
type failingReader struct {
	data string
	err  error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if f.data == "" {
		return 0, f.err
	}
	n := copy(p, f.data)
	f.data = f.data[n:]
	return n, nil
}

func TestReadErrorsArePassedOn(t *testing.T) {
	boom := errors.New("disk on fire")
	readers := map[string]func(r *failingReader) error{
		"swim":   func(r *failingReader) error { _, err := ReadSWIM(r, Options{}); return err },
		"coflow": func(r *failingReader) error { _, err := ReadCoflow(r, Options{}); return err },
		"mumak":  func(r *failingReader) error { _, err := ReadMumakAttempts(r, Options{}); return err },
	}
	first := map[string]string{
		"swim":   "job0\t1\t1\t1\t0\t0\n",
		"coflow": "3 2\n1 0 1 0 1 0:1\n",
		"mumak":  MumakHeader + "\n",
	}
	for name, read := range readers {
		t.Run(name, func(t *testing.T) {
			err := read(&failingReader{data: first[name], err: boom})
			want := "trace: reading input after line "
			if !errors.Is(err, boom) || errors.Is(err, ErrMalformed) || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("err = %v, want the read error wrapped as %q...", err, want)
			}
		})
	}
}
