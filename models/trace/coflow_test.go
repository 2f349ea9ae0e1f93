package trace

import (
	"reflect"
	"strings"
	"testing"
)

func TestReadCoflow(t *testing.T) {
	in := "3 2\n" +
		"7 1500 1 2 2 1:2.5 0:0\n" +
		"4 0 2 0 1 1 2:1\n"
	jobs, err := ReadCoflow(strings.NewReader(in), Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Job{
		{ID: "4", SubmitS: 0, ShuffleBytes: MiB, Maps: 2, Reduces: 1,
			ReducerShuffleBytes: []float64{MiB}, MapperRacks: []int{0, 1}, ReducerRacks: []int{2}},
		{ID: "7", SubmitS: 1.5, ShuffleBytes: 2.5 * MiB, Maps: 1, Reduces: 2,
			ReducerShuffleBytes: []float64{2.5 * MiB, 0}, MapperRacks: []int{2}, ReducerRacks: []int{1, 0}},
	}
	if !reflect.DeepEqual(jobs, want) {
		t.Errorf("ReadCoflow =\n%+v\nwant\n%+v", jobs, want)
	}
	if none, err := ReadCoflow(strings.NewReader("150 0\n"), Options{}); err != nil || len(none) != 0 {
		t.Errorf("header only: %v, %v; want no coflows and no error", none, err)
	}
}

func TestReadCoflowErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", "",
			`trace: line 1: header = "": missing: want "<racks> <coflows>"`},
		{"header with three fields", "150 1 2\n",
			`trace: line 1: header = "150 1 2": has 3 fields, want 2: "<racks> <coflows>"`},
		{"no racks", "0 1\n",
			`trace: line 1: racks = "0": must be at least 1`},
		{"coflow count not a number", "150 x\n",
			`trace: line 1: coflows = "x": not an integer`},
		{"negative coflow count", "150 -1\n",
			`trace: line 1: coflows = "-1": negative`},
		{"short line", "3 1\n1 0 1\n",
			`trace: line 2: record = "1 0 1": has 3 fields, want at least 5: <id> <arrival_ms> <M> <mapper racks> <R> <reducers>`},
		{"truncated mapper list", "3 2\n1 0 1 0 1 0:1\n2 10 3 0 1\n",
			`trace: line 3: mappers = "3": announces 3 mapper racks but the line ends after 2 fields`},
		{"truncated reducer list", "3 1\n1 0 1 0 3 0:1 1:2\n",
			`trace: line 2: reducers = "3": announces 3 reducers but the line lists 2`},
		{"extra reducer", "3 1\n1 0 1 0 1 0:1 1:2\n",
			`trace: line 2: reducers = "1": announces 1 reducers but the line lists 2`},
		{"zero mappers", "3 1\n1 0 0 1 0:1\n",
			`trace: line 2: mappers = "0": must be at least 1`},
		{"reducer count not a number", "3 1\n1 0 1 0 r 0:1\n",
			`trace: line 2: reducers = "r": not an integer`},
		{"arrival not a number", "3 1\n1 soon 1 0 1 0:1\n",
			`trace: line 2: arrival_ms = "soon": not a number`},
		{"negative arrival", "3 1\n1 -5 1 0 1 0:1\n",
			`trace: line 2: arrival_ms = "-5": negative`},
		{"mapper rack out of range", "3 1\n1 0 1 3 1 0:1\n",
			`trace: line 2: mapper_rack = "3": rack index out of range [0, 3)`},
		{"mapper rack twice", "3 1\n1 0 2 1 1 1 0:1\n",
			`trace: line 2: mapper_rack = "1": rack listed twice`},
		{"reducer rack twice", "3 1\n1 0 1 0 2 1:1 1:2\n",
			`trace: line 2: reducer_rack = "1": rack listed twice`},
		{"reducer without colon", "3 1\n1 0 1 0 1 1\n",
			`trace: line 2: reducer = "1": want <rack>:<shuffle_MB>`},
		{"negative shuffle", "3 1\n1 0 1 0 1 1:-1.0\n",
			`trace: line 2: shuffle_mb = "-1.0": negative`},
		{"shuffle not a number", "3 1\n1 0 1 0 1 1:lots\n",
			`trace: line 2: shuffle_mb = "lots": not a number`},
		{"duplicate id", "3 2\n1 0 1 0 1 0:1\n1 5 1 0 1 0:1\n",
			`trace: line 3: coflow_id = "1": duplicate coflow id (first on line 2)`},
		{"fewer coflows than announced", "3 2\n1 0 1 0 1 0:1\n",
			`trace: line 1: coflows = "2": header announces 2 coflows, the file has 1`},
		{"more coflows than announced", "3 0\n1 0 1 0 1 0:1\n",
			`trace: line 1: coflows = "0": header announces 0 coflows, the file has 1`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadCoflow(strings.NewReader(tc.in), Options{})
			wantParseError(t, err, tc.want)
		})
	}
}
