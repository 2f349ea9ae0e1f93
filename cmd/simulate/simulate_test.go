package simulate

import (
	"github.com/optd/optd/cmd/cli"

	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func init() { cli.QuietPlainProgress() } // stderr is checked empty

var update = flag.Bool("update", false, "rewrite the golden files")

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

// TestGolden: the JSON of a small scenario file (docs/formats.md#cluster-scenario fields) is
// stable.
func TestGolden(t *testing.T) {
	dir := t.TempDir()
	csv, png := filepath.Join(dir, "u.csv"), filepath.Join(dir, "u.svg")
	out, stderr, err := execute(t, "--scenario", filepath.Join("testdata", "small.json"), "--policy", "haste", "--seed", "2", "--csv", csv, "--plot", png)
	if err != nil {
		t.Fatal(err)
	}
	if stderr != "" {
		t.Errorf("stderr not empty on a non-terminal: %q", stderr)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	for _, f := range []string{"scenario", "policy", "seed", "makespan_s", "mean_response_s", "utilization", "locality", "speculative", "jobs"} {
		if _, ok := m[f]; !ok {
			t.Errorf("output lacks %q", f)
		}
	}
	path := filepath.Join("testdata", "small.haste.golden.json")
	if *update {
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if out != string(want) {
		t.Errorf("output differs from %s (run with -update if intended):\n%s", path, out)
	}
	data, err := os.ReadFile(csv)
	if err != nil || !strings.HasPrefix(string(data), "time_s,memory_mb,vcores\n") {
		t.Errorf("csv: %v %q", err, string(data[:min(len(data), 40)]))
	}
	if st, err := os.Stat(png); err != nil || st.Size() == 0 {
		t.Errorf("plot: %v", err)
	}
}

func TestBuiltinScenario(t *testing.T) {
	out, _, err := execute(t, "--scenario", "stealing-grep-50", "--policy", "fair")
	if err != nil {
		t.Fatal(err)
	}
	var o struct {
		Scenario  string             `json:"scenario"`
		MakespanS float64            `json:"makespan_s"`
		Util      map[string]float64 `json:"utilization"`
	}
	if err := json.Unmarshal([]byte(out), &o); err != nil || o.Scenario != "stealing-grep-50" || !(o.MakespanS > 0) || o.Util["vcores"] == 0 {
		t.Fatalf("%v %+v", err, o)
	}
}

func TestErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--scenario", "haste-table9", "--policy", "fifo"}, "haste-table3"},
		{[]string{"--scenario", "haste-table2", "--policy", "fofo"}, "known: capacity, drf, fair"},
		{[]string{"--scenario", "haste-table2", "--policy", "fifo+nope"}, "add-on"},
		{[]string{"--scenario", "haste-table2", "--policy", "fifo", "--plot", "x.jpg"}, ".png or .svg"},
		{[]string{"--scenario", filepath.Join("testdata", "bad.json"), "--policy", "fifo"}, "jobs[0].maps"},
	} {
		_, _, err := execute(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one mentioning %q", c.args, err, c.want)
		}
	}
}

// TestExplain: --explain adds the vetoes, counted by stage, job and task
// type with their last reason, and changes nothing else in the output.
func TestExplain(t *testing.T) {
	args := []string{"--scenario", "haste-table3", "--policy", "fair+delay-scheduling+sepb"}
	plain, _, err := execute(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	explained, _, err := execute(t, append(args, "--explain")...)
	if err != nil {
		t.Fatal(err)
	}
	var with map[string]json.RawMessage
	if err := json.Unmarshal([]byte(explained), &with); err != nil {
		t.Fatal(err)
	}
	var vetoes []struct {
		Stage, Kind, Job string
		Count            int
		FirstS           float64 `json:"first_s"`
		LastS            float64 `json:"last_s"`
		Reason           string  `json:"last_reason"`
	}
	if err := json.Unmarshal(with["vetoes"], &vetoes); err != nil || len(vetoes) == 0 {
		t.Fatalf("vetoes %s: %v", with["vetoes"], err)
	}
	for _, v := range vetoes {
		if v.Stage != "delay-scheduling" && v.Stage != "sepb" || v.Count < 1 || v.LastS < v.FirstS || !strings.HasPrefix(v.Reason, v.Stage+": ") {
			t.Errorf("veto %+v", v)
		}
	}
	delete(with, "vetoes")
	var without map[string]json.RawMessage
	if err := json.Unmarshal([]byte(plain), &without); err != nil {
		t.Fatal(err)
	}
	if _, ok := without["vetoes"]; ok {
		t.Fatal("vetoes without --explain")
	}
	a, _ := json.Marshal(with)
	b, _ := json.Marshal(without)
	if string(a) != string(b) {
		t.Fatalf("--explain changed the run:\n%s\n%s", a, b)
	}
}

// TestFittedPlacement: a placement policy fitted on a queueing model runs
// in the pipeline with --placement-model, and without one, or with a model
// but no placement, the command says what is missing.
func TestFittedPlacement(t *testing.T) {
	model := filepath.Join("..", "..", "examples", "placement-scenario.json")
	out, _, err := execute(t, "--scenario", "tan-fig10-sort", "--policy", "fair",
		"--placement", "adp-bid-price:fit_steps=5;fit_jobs=100", "--placement-model", model)
	if err != nil {
		t.Fatal(err)
	}
	var o struct {
		Placement string  `json:"placement"`
		MakespanS float64 `json:"makespan_s"`
	}
	if err := json.Unmarshal([]byte(out), &o); err != nil || o.Placement != "adp-bid-price:fit_steps=5;fit_jobs=100" || !(o.MakespanS > 0) {
		t.Fatalf("%v %+v", err, o)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--placement", "adp-bid-price"}, "needs the cluster's queueing model"},
		{[]string{"--placement-model", model}, "give --placement too"},
		{[]string{"--placement", "adp-penalty", "--placement-model", "nope.json"}, "--placement-model"},
		{[]string{"--placement", "state-threshold:base=-1"}, "parameter base = -1"},
	} {
		_, _, err := execute(t, append([]string{"--scenario", "tan-fig10-sort", "--policy", "fair"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one mentioning %q", c.args, err, c.want)
		}
	}
}
