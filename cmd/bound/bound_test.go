package bound

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/optd/optd/bound"
	"github.com/optd/optd/cmd/cli"
)

func init() { cli.QuietPlainProgress() } // stderr is checked empty

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func runCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return cli.RunCaptured(context.Background(), args, NewCommand)
}

// TestGolden pins the output without the MDP (whose last digits depend on
// its solver's tolerance; TestMDPFacts checks that part by its properties).
func TestGolden(t *testing.T) {
	stdout, stderr, code := runCLI(t, "bound", "--scenario", "testdata/tiny.json",
		"--policies", "random,greedy,receding-horizon,rolling-horizon", "--bounds", "hindsight-lp,empty-cluster")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	golden := filepath.Join("testdata", "tiny.json.golden")
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
}

// TestMDPFacts runs every bound and policy, mdp-optimal included, and checks
// the facts the output must satisfy: every lower bound ≤ the optimum, every
// policy's simulated cost not below the optimum and within its CI of the
// MDP's exact evaluation of the same policy.
func TestMDPFacts(t *testing.T) {
	stdout, stderr, code := runCLI(t, "bound", "--scenario", "testdata/tiny.json",
		"--policies", "random,greedy,receding-horizon,rolling-horizon,mdp-optimal")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	var out struct {
		Policies map[string]struct {
			MeanCost float64  `json:"mean_cost"`
			CI95     *float64 `json:"ci95"`
		} `json:"policies"`
		LowerBounds map[string]float64  `json:"lower_bounds"`
		Optimal     *float64            `json:"optimal"`
		Gaps        map[string]*float64 `json:"gaps"`
		MDP         struct {
			PolicyCosts map[string]float64 `json:"policy_costs"`
		} `json:"mdp"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	if out.Optimal == nil {
		t.Fatal("optimal is null on a solvable scenario")
	}
	for name, lb := range out.LowerBounds {
		if lb > *out.Optimal*(1+1e-9) {
			t.Errorf("lower bound %s = %v exceeds the optimum %v", name, lb, *out.Optimal)
		}
	}
	for name, p := range out.Policies {
		if p.CI95 == nil || out.Gaps[name] == nil {
			t.Fatalf("%s: missing ci95 or gap", name)
		}
		// Each policy's simulated cost is within its CI of (or above) the
		// optimum, and of the exact evaluation where the MDP gives one.
		if p.MeanCost+*p.CI95 < *out.Optimal {
			t.Errorf("%s: %v ± %v below the optimum %v", name, p.MeanCost, *p.CI95, *out.Optimal)
		}
		if exact, ok := out.MDP.PolicyCosts[name]; ok && (exact < p.MeanCost-*p.CI95 || exact > p.MeanCost+*p.CI95) {
			t.Errorf("%s: exact %v outside the simulated %v ± %v", name, exact, p.MeanCost, *p.CI95)
		}
	}
}

// TestShardMerge: merging the shards gives exactly the unsharded output.
func TestShardMerge(t *testing.T) {
	args := []string{"bound", "--scenario", "testdata/tiny.json", "--policies", "random,greedy,receding-horizon"}
	full, stderr, code := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("unsharded: exit %d: %s", code, stderr)
	}
	for _, n := range []int{3, 4} {
		dir := t.TempDir()
		var files []string
		for i := n - 1; i >= 0; i-- { // any order
			out, stderr, code := runCLI(t, append(args, "--shard", strings.Join([]string{itoa(i), itoa(n)}, "/"))...)
			if code != 0 {
				t.Fatalf("shard %d/%d: exit %d: %s", i, n, code, stderr)
			}
			if !strings.Contains(out, `"shard"`) {
				t.Fatalf("shard %d/%d output has no shard field", i, n)
			}
			f := filepath.Join(dir, "shard"+itoa(i)+".json")
			if err := os.WriteFile(f, []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		merged, stderr, code := runCLI(t, append([]string{"bound", "merge"}, files...)...)
		if code != 0 {
			t.Fatalf("merge of %d: exit %d: %s", n, code, stderr)
		}
		if merged != full {
			t.Errorf("merge of %d shards differs from the unsharded run:\n%s\nwant:\n%s", n, merged, full)
		}
		if n > 1 {
			if _, stderr, code := runCLI(t, append([]string{"bound", "merge"}, files[1:]...)...); code == 0 || !strings.Contains(stderr, "shards") {
				t.Errorf("merge with a missing shard: exit %d, %q", code, stderr)
			}
			if _, stderr, code := runCLI(t, append([]string{"bound", "merge", files[0]}, files[:n-1]...)...); code == 0 || !strings.Contains(stderr, "twice") {
				t.Errorf("merge with a repeated shard: exit %d, %q", code, stderr)
			}
		}
	}
}

func itoa(i int) string { return string(rune('0' + i)) }

func TestErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bound"}, `"scenario" not set`},
		{[]string{"bound", "--scenario", "testdata/nope.json"}, "--scenario"},
		{[]string{"bound", "--scenario", "testdata/tiny.json", "--policies", "best"}, `unknown policy "best"`},
		{[]string{"bound", "--scenario", "testdata/tiny.json", "--policies", "greedy,greedy"}, `"greedy" listed twice`},
		{[]string{"bound", "--scenario", "testdata/tiny.json", "--bounds", "magic"}, `unknown bound "magic"`},
		{[]string{"bound", "--scenario", "testdata/tiny.json", "--shard", "4/4"}, `--shard = "4/4"`},
		{[]string{"bound", "--scenario", "testdata/tiny.json", "--policies", "mdp-optimal", "--bounds", ""}, "mdp-optimal needs"},
		{[]string{"bound", "--scenario", "testdata/bad.json"}, "max_jobs_in_service = 0"},
		{[]string{"bound", "merge", "testdata/tiny.json"}, "this is a placement scenario (an input of optd bound or optd search), not a shard of optd bound --shard"},
	} {
		_, stderr, code := runCLI(t, c.args...)
		if code == 0 || !strings.Contains(stderr, c.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q, want one line containing %q", c.args, code, stderr, c.want)
		}
	}
}

// TestNoBackend: without the MDP the command still simulates and gives the
// pathwise empty-cluster bound.
func TestNoBackend(t *testing.T) {
	var out, errb bytes.Buffer
	root := cli.NewRoot(func(env *cli.Env) *cobra.Command { return newCommand(env, nil) })
	code := cli.Run(context.Background(), root, []string{"bound", "--scenario", "testdata/tiny.json"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var o bound.Output
	if err := json.Unmarshal(out.Bytes(), &o); err != nil {
		t.Fatal(err)
	}
	if o.Optimal != nil || o.MDP == nil || o.MDP.Solved || o.LowerBounds[bound.BoundEmptyCluster] <= 0 {
		t.Errorf("output %s", out.String())
	}
	for name, p := range o.Policies {
		if p.MeanCost < o.LowerBounds[bound.BoundEmptyCluster] {
			t.Errorf("%s: %v below the empty-cluster bound", name, p.MeanCost)
		}
	}
}
