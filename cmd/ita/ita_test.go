package ita

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// execute runs the command with args and returns stdout, stderr and the error.
func execute(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	cmd := NewCommand(nil)
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(t.Context())
	return out.String(), errOut.String(), err
}

// withoutElapsed decodes a result and drops the timing field.
func withoutElapsed(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, s)
	}
	if _, ok := m["elapsed_ms"]; !ok {
		t.Fatalf("output lacks elapsed_ms: %s", s)
	}
	delete(m, "elapsed_ms")
	return m
}

func TestGolden(t *testing.T) {
	for _, tc := range []struct{ name, golden string }{
		{"exact", "small.exact.golden.json"},
		{"per-node", "small.per-node.golden.json"},
		{"ffd-dp", "small.ffd-dp.golden.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, err := execute(t, "--instance", filepath.Join("testdata", "small.json"), "--method", tc.name)
			if err != nil {
				t.Fatal(err)
			}
			// the exact method reports progress on stderr (a line when
			// each phase starts and a closing "done" line), the others
			// print nothing there
			if tc.name == "exact" {
				if !strings.Contains(stderr, "ita:") || !strings.Contains(stderr, " done ") || !strings.Contains(stderr, "bound 16") {
					t.Errorf("no progress lines on stderr: %q", stderr)
				}
			} else if stderr != "" {
				t.Errorf("stderr not empty: %q", stderr)
			}
			got := withoutElapsed(t, out)
			path := filepath.Join("testdata", tc.golden)
			if *update {
				b, _ := json.MarshalIndent(got, "", "  ")
				if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create)", err)
			}
			var want map[string]any
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatal(err)
			}
			gb, _ := json.Marshal(got)
			wb, _ := json.Marshal(want)
			if !bytes.Equal(gb, wb) {
				t.Errorf("output differs from %s:\n got %s\nwant %s", path, gb, wb)
			}
		})
	}
}

func TestContractFields(t *testing.T) {
	out, _, err := execute(t, "--instance", "haste-table2")
	if err != nil {
		t.Fatal(err)
	}
	m := withoutElapsed(t, out)
	for _, f := range []string{"method", "objective", "upper_bound", "optimal", "assignment"} {
		if _, ok := m[f]; !ok {
			t.Errorf("missing contract field %q", f)
		}
	}
	if m["method"] != "exact" || m["optimal"] != true || m["objective"] != 96.0 || m["upper_bound"] != 96.0 {
		t.Errorf("haste-table2 exact: %v", m)
	}
	a := m["assignment"].([]any)[0].(map[string]any)
	for _, f := range []string{"node", "task", "count"} {
		if _, ok := a[f]; !ok {
			t.Errorf("assignment entry lacks %q: %v", f, a)
		}
	}
}

func TestRandomInstance(t *testing.T) {
	out1, _, err := execute(t, "--random", "7", "--nodes", "6", "--types", "4", "--resources", "3", "--method", "ffd-dp")
	if err != nil {
		t.Fatal(err)
	}
	out2, _, _ := execute(t, "--random", "7", "--nodes", "6", "--types", "4", "--resources", "3", "--method", "ffd-dp")
	a, b := withoutElapsed(t, out1), withoutElapsed(t, out2)
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if !bytes.Equal(ja, jb) {
		t.Errorf("same seed, different results")
	}
}

// TestGapAndFamily solves a family instance with a loose gap: the result
// is within the gap of its proven bound, and stopped by it unless proven.
func TestGapAndFamily(t *testing.T) {
	out, stderr, err := execute(t, "--family", "hetero-3r", "--random", "1", "--gap", "0.01", "--time-limit", "20s", "--progress", "none")
	if err != nil {
		t.Fatal(err)
	}
	if stderr != "" {
		t.Errorf("--progress none printed %q", stderr)
	}
	var r struct {
		Obj     float64 `json:"objective"`
		UB      float64 `json:"upper_bound"`
		Optimal bool    `json:"optimal"`
		Stats   struct {
			Stopped string `json:"stopped"`
		} `json:"stats"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.UB-r.Obj > 0.01*r.UB || (!r.Optimal && r.Stats.Stopped != "gap") {
		t.Errorf("objective %v bound %v optimal %v stopped %q: want within 1%% of the bound", r.Obj, r.UB, r.Optimal, r.Stats.Stopped)
	}
}

// TestWorkLimit: --work-limit stops the exact method at a count of work,
// with the same answer in every run (the same beside CPU-burning
// goroutines is solver's TestSameSeedSamePathUnderLoad).
func TestWorkLimit(t *testing.T) {
	args := []string{"--family", "hetero-3r", "--random", "3", "--work-limit", "20ms", "--seed", "5", "--progress", "none"}
	var first map[string]any
	for run := range 2 {
		out, _, err := execute(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		got := withoutElapsed(t, out)
		stats, _ := got["stats"].(map[string]any)
		if stats["stopped"] != "work_limit" {
			t.Fatalf("stats %v: want stopped by the work limit", stats)
		}
		if w, _ := stats["work_ms"].(float64); w < 20 {
			t.Errorf("work_ms %v below the limit of 20 ms", w)
		}
		if run == 0 {
			first = got
		} else if !reflect.DeepEqual(got, first) {
			t.Errorf("second run %v, first %v", got, first)
		}
	}
}

// TestProgressModes: --progress takes the mode of the other verbs; plain
// (and auto off a terminal) prints MIP-style lines, bar draws a bar,
// none nothing; the former numeric form still works with a deprecation
// note. The result on stdout is the same in every mode.
func TestProgressModes(t *testing.T) {
	small := filepath.Join("testdata", "small.json")
	var want map[string]any
	for _, tc := range []struct {
		name   string
		args   []string
		stderr []string // substrings; nil: stderr empty
	}{
		{"auto off a terminal", nil, []string{"ita:", " done ", "incumbent 16", "bound 16", "gap 0.000%"}},
		{"plain", []string{"--progress", "plain", "--progress-interval", "50ms"}, []string{"ita:", " done ", "bound 16"}},
		{"bar", []string{"--progress", "bar"}, []string{"heuristics", "done, incumbent 16  bound 16", "/1000"}},
		{"none", []string{"--progress", "none"}, nil},
		{"deprecated zero", []string{"--progress", "0"}, []string{"--progress 0 is deprecated", "--progress none"}},
		{"deprecated interval", []string{"--progress", "250ms"}, []string{"--progress 250ms is deprecated", "--progress plain --progress-interval 250ms", "ita:", " done "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, err := execute(t, append([]string{"--instance", small}, tc.args...)...)
			if err != nil {
				t.Fatal(err)
			}
			if tc.stderr == nil && stderr != "" {
				t.Errorf("stderr %q, want nothing", stderr)
			}
			for _, w := range tc.stderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q lacks %q", stderr, w)
				}
			}
			got := withoutElapsed(t, out)
			if want == nil {
				want = got
			}
			a, _ := json.Marshal(got)
			b, _ := json.Marshal(want)
			if !bytes.Equal(a, b) {
				t.Errorf("result %s differs from the first mode's %s", a, b)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"no instance", nil, []string{"--instance"}},
		{"bad method", []string{"--instance", "haste-table2", "--method", "greedy"}, []string{"--method", `"greedy"`}},
		{"missing file", []string{"--instance", "nope.json"}, []string{`"nope.json"`, "haste-table2"}},
		{"unknown field", []string{"--instance", filepath.Join("testdata", "unknown_field.json")}, []string{"unknown_field.json", `nodes[0].gpus: unknown field`}},
		{"both sources", []string{"--instance", "haste-table2", "--random", "1"}, []string{"exclude"}},
		{"negative limit", []string{"--instance", "haste-table2", "--time-limit", "-1s"}, []string{"--time-limit"}},
		{"negative work limit", []string{"--instance", "haste-table2", "--work-limit", "-1s"}, []string{"--work-limit", "negative"}},
		{"gap too large", []string{"--instance", "haste-table2", "--gap", "1"}, []string{"--gap", "[0, 1)"}},
		{"negative gap", []string{"--instance", "haste-table2", "--gap", "-0.1"}, []string{"--gap"}},
		{"negative progress", []string{"--instance", "haste-table2", "--progress", "-1s"}, []string{"--progress", "negative", "plain"}},
		{"unknown progress mode", []string{"--instance", "haste-table2", "--progress", "loud"}, []string{`--progress = "loud"`, "auto, bar, plain, none", "--progress-interval"}},
		{"zero progress interval", []string{"--instance", "haste-table2", "--progress-interval", "0s"}, []string{"--progress-interval", "positive"}},
		{"deprecated interval and the new flag", []string{"--instance", "haste-table2", "--progress", "2s", "--progress-interval", "1s"}, []string{"--progress 2s", "--progress-interval", "exclude"}},
		{"family without seed", []string{"--family", "yarn"}, []string{"--family", "--random"}},
		{"unknown family", []string{"--family", "nope", "--random", "1"}, []string{"--family", `"nope"`, "yarn"}},
		{"extra argument", []string{"haste-table2"}, []string{"unknown command"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := execute(t, tc.args...)
			if err == nil {
				t.Fatal("no error")
			}
			if out != "" {
				t.Errorf("stdout not empty on error: %q", out)
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("error is not one line: %q", msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not mention %q", msg, w)
				}
			}
		})
	}
}
