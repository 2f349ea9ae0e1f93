package ita

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
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
			if stderr != "" {
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

func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"no instance", nil, []string{"--instance"}},
		{"bad method", []string{"--instance", "haste-table2", "--method", "greedy"}, []string{"--method", `"greedy"`}},
		{"missing file", []string{"--instance", "nope.json"}, []string{`"nope.json"`, "haste-table2"}},
		{"unknown field", []string{"--instance", filepath.Join("testdata", "unknown_field.json")}, []string{"unknown_field.json", `unknown field "gpus"`}},
		{"both sources", []string{"--instance", "haste-table2", "--random", "1"}, []string{"exclude"}},
		{"negative limit", []string{"--instance", "haste-table2", "--time-limit", "-1s"}, []string{"--time-limit"}},
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
