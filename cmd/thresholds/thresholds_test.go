package thresholds

import (
	"context"
	"encoding/json"
	"flag"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/gonum/floats/scalar"

	"github.com/optd/optd/cmd/cli"
	"github.com/optd/optd/models"
	"github.com/optd/optd/thresholds"
)

func init() { cli.QuietPlainProgress() } // stderr is checked empty

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// tol compares numbers that went through a decimal round trip.
const tol = 1e-12

// runCLI runs `optd ARGS` through the real root frame and returns stdout,
// stderr and the exit code.
func runCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return cli.RunCaptured(context.Background(), args, NewCommand)
}

func TestGolden(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
	}{
		{"counterexample.json", []string{"--workload", "testdata/counterexample.json", "--jobs", "2", "--slot-costs", "1,1,2,10"}},
		{"independent.json", []string{"--workload", "testdata/independent.json", "--jobs", "3"}},
		{"joint.csv", []string{"--workload", "testdata/joint.json", "--jobs", "3", "--slot-costs", "5, 1, 4, 2, 3, 6", "--format", "csv"}},
		{"independent.table", []string{"--workload", "testdata/independent.json", "--jobs", "3", "--slot-costs", "9,8,7,6,5,4,3", "--format", "table"}},
		{"one-job.json", []string{"--workload", "testdata/joint.json", "--jobs", "1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr, code := runCLI(t, append([]string{"thresholds"}, c.args...)...)
			if code != 0 || stderr != "" {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			golden := filepath.Join("testdata", c.name+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(stdout), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if stdout != string(want) {
				t.Errorf("output differs from %s:\n%s\nwant:\n%s", golden, stdout, want)
			}
		})
	}
}

// contractOutput is the JSON of docs/formats.md#thresholds-output, decoded strictly.
type contractOutput struct {
	Jobs       int `json:"jobs"`
	MaxReduces int `json:"max_reduces"`
	Stages     []struct {
		Job        int       `json:"job"`
		Thresholds []float64 `json:"thresholds"`
	} `json:"stages"`
	CostCoefficients    []float64 `json:"cost_coefficients"`
	ExpectedOptimalCost *float64  `json:"expected_optimal_cost"`
}

func decodeStrict(t *testing.T, s string) contractOutput {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	var o contractOutput
	if err := dec.Decode(&o); err != nil {
		t.Fatalf("output is not the contract's JSON: %v\n%s", err, s)
	}
	return o
}

// TestJSONContract checks the JSON output against the library table (a
// second path to the same numbers) and the contract's shape, on the
// counterexample of the printed Theorem 2.
func TestJSONContract(t *testing.T) {
	stdout, _, code := runCLI(t, "thresholds", "--workload", "testdata/counterexample.json", "--jobs", "2", "--slot-costs", "10,2,1,1")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	o := decodeStrict(t, stdout)
	w, err := models.LoadWorkload("testdata/counterexample.json")
	if err != nil {
		t.Fatal(err)
	}
	tab, err := thresholds.BuildTable(context.Background(), w, 2, thresholds.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if o.Jobs != 2 || o.MaxReduces != 2 || len(o.Stages) != 2 || o.Stages[0].Job != 1 || o.Stages[1].Job != 2 ||
		len(o.Stages[0].Thresholds) != 2 || len(o.Stages[1].Thresholds) != 0 || len(o.CostCoefficients) != 4 {
		t.Fatalf("shape: %+v", o)
	}
	for j, q := range []float64{7.6, 1.9} {
		if !scalar.EqualWithinAbsOrRel(o.Stages[0].Thresholds[j], q, tol, tol) || o.Stages[0].Thresholds[j] != tab.Stages[0][j] {
			t.Errorf("threshold %d: %v, want %v", j+1, o.Stages[0].Thresholds[j], q)
		}
	}
	var sum float64
	for j, c := range o.CostCoefficients {
		if c != tab.CostCoefficients[j] {
			t.Errorf("c_%d = %v, library %v", j+1, c, tab.CostCoefficients[j])
		}
		sum += c
	}
	if !scalar.EqualWithinAbsOrRel(sum, 2*9.5, tol, tol) { // K·E[X]
		t.Errorf("Σ c_j = %v, want 19", sum)
	}
	// Costs given in any order: sorted 1,1,2,10.
	if o.ExpectedOptimalCost == nil || !scalar.EqualWithinAbsOrRel(*o.ExpectedOptimalCost, 28.88, tol, tol) {
		t.Errorf("expected_optimal_cost = %v, want 28.88", o.ExpectedOptimalCost)
	}
	stdout, _, _ = runCLI(t, "thresholds", "--workload", "testdata/counterexample.json", "--jobs", "2")
	if o := decodeStrict(t, stdout); o.ExpectedOptimalCost != nil {
		t.Error("expected_optimal_cost present without --slot-costs")
	}
}

func TestErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"zero jobs", []string{"--workload", "testdata/joint.json", "--jobs", "0"}, []string{"--jobs = 0: must be at least 1"}},
		{"negative jobs", []string{"--workload", "testdata/joint.json", "--jobs", "-3"}, []string{"--jobs = -3"}},
		{"missing jobs", []string{"--workload", "testdata/joint.json"}, []string{"jobs"}},
		{"missing file", []string{"--workload", "testdata/nope.json", "--jobs", "2"}, []string{"--workload testdata/nope.json", "no such file"}},
		{"invalid workload", []string{"--workload", "testdata/bad_alpha.json", "--jobs", "2"}, []string{"testdata/bad_alpha.json", "data.alpha = 0.8"}},
		{"too few slot costs", []string{"--workload", "testdata/joint.json", "--jobs", "2", "--slot-costs", "1,2,3"}, []string{"--slot-costs: got 3 costs, need at least K·max_reduces = 2·2 = 4"}},
		{"non-numeric slot cost", []string{"--workload", "testdata/joint.json", "--jobs", "2", "--slot-costs", "1,abc,3,4"}, []string{`--slot-costs: value 2 "abc" is not a finite number`}},
		{"empty slot cost", []string{"--workload", "testdata/joint.json", "--jobs", "1", "--slot-costs", ""}, []string{`--slot-costs: value 1 "" is not a finite number`}},
		{"infinite slot cost", []string{"--workload", "testdata/joint.json", "--jobs", "1", "--slot-costs", "1,Inf"}, []string{`value 2 "Inf"`}},
		{"memory limit", []string{"--workload", "testdata/huge.json", "--jobs", "100"}, []string{"--jobs = 100: the table of K = 100 jobs with max_reduces = 100000 needs about 4.1 GiB", "limits.max_memory_mb = 4096", "--max-memory-mb"}},
		{"memory limit lowered", []string{"--workload", "testdata/huge.json", "--jobs", "10", "--max-memory-mb", "20"}, []string{"needs about 72.5 MiB", "limits.max_memory_mb = 20"}},
		{"bad progress", []string{"--workload", "testdata/joint.json", "--jobs", "1", "--progress", "loud"}, []string{`--progress = "loud"`}},
		{"bad format", []string{"--workload", "testdata/joint.json", "--jobs", "1", "--format", "xml"}, []string{`--format = "xml": must be json, csv or table`}},
		{"stray argument", []string{"--workload", "testdata/joint.json", "--jobs", "1", "extra"}, []string{`unexpected argument "extra"`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr, code := runCLI(t, append([]string{"thresholds"}, c.args...)...)
			if code == 0 {
				t.Fatal("exit 0")
			}
			t.Log(strings.TrimSpace(stderr))
			if stdout != "" {
				t.Errorf("stdout %q", stdout)
			}
			if strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "optd: ") {
				t.Errorf("stderr is not one line: %q", stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not contain %q", stderr, w)
				}
			}
		})
	}
}

// TestAppendJSONFloat checks the streamed number format against
// encoding/json.
func TestAppendJSONFloat(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 3))
	xs := []float64{0, 1, -1, 1e-6, 9.99e-7, 1e-7, 1e21, 1e20, 123.456, 5e-324, math.MaxFloat64, 1e-300, 2.5e-10}
	for range 2000 {
		xs = append(xs, math.Exp(rng.NormFloat64()*30), rng.Float64())
	}
	for _, x := range xs {
		want, err := json.Marshal(x)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendJSONFloat(nil, x); string(got) != string(want) {
			t.Errorf("%v: %s, encoding/json %s", x, got, want)
		}
	}
}

// FuzzParseSlotCosts: any --slot-costs value parses to finite numbers, one
// per comma-separated item, or fails with a message naming the flag.
func FuzzParseSlotCosts(f *testing.F) {
	for _, s := range []string{"3,1,2", " 1 , 2 ", "", ",", "1e308,1e309", "NaN", "0x1p-2,-0", "1,,2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		costs, err := ParseSlotCosts(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "--slot-costs: ") {
				t.Fatalf("error %q does not name the flag", err)
			}
			return
		}
		if len(costs) != strings.Count(s, ",")+1 {
			t.Fatalf("%q: %d costs", s, len(costs))
		}
		for _, c := range costs {
			if math.IsNaN(c) || math.IsInf(c, 0) {
				t.Fatalf("%q: cost %v", s, c)
			}
		}
	})
}

// FuzzThresholdsCLI: an arbitrary workload file never panics the command; it
// either fails with one line on stderr or prints the contract's JSON.
func FuzzThresholdsCLI(f *testing.F) {
	for _, name := range []string{"independent.json", "joint.json", "counterexample.json", "bad_alpha.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, uint8(2))
	}
	f.Add([]byte(`{"joint":[{"data":1e308,"reduces":2,"prob":1}]}`), uint8(4))
	f.Add([]byte(`{"data":{"kind":"empirical","file":"/dev/null"},"reduces":{"kind":"uniform-int","min":1,"max":1}}`), uint8(1))
	f.Fuzz(func(t *testing.T, doc []byte, k uint8) {
		w, err := models.DecodeWorkload(doc, t.TempDir())
		if err == nil && w.MaxReduces() > 64 {
			return // keep each input fast
		}
		path := filepath.Join(t.TempDir(), "w.json")
		if err := os.WriteFile(path, doc, 0o644); err != nil {
			t.Fatal(err)
		}
		jobs := 1 + int(k%5)
		stdout, stderr, code := runCLI(t, "thresholds", "--workload", path, "--jobs", strconv.Itoa(jobs))
		if code != 0 {
			if stdout != "" || strings.Count(stderr, "\n") != 1 {
				t.Fatalf("failure output: stdout %q, stderr %q", stdout, stderr)
			}
			return
		}
		o := decodeStrict(t, stdout)
		if o.Jobs != jobs || len(o.CostCoefficients) != jobs*o.MaxReduces {
			t.Fatalf("shape %+v", o)
		}
	})
}
