package search

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/optd/optd/cmd/bound"
	"github.com/optd/optd/cmd/cli"
	"github.com/optd/optd/cmd/simulate"
	"github.com/optd/optd/policy"
	"github.com/optd/optd/search"
)

func init() { cli.QuietPlainProgress() } // stderr is checked empty

func runCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return cli.RunCaptured(context.Background(), args, NewCommand, bound.NewCommand, simulate.NewCommand)
}

func decode(t *testing.T, s string) *Output {
	t.Helper()
	var o Output
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil {
		t.Fatalf("%v in %s", err, s)
	}
	return &o
}

var small = []string{"search", "--scenario", "testdata/tiny.json", "--policy", "state-threshold",
	"--params", "window=50,free_fraction=1", "--evaluations", "12", "--validation", "2"}

// smallCluster is a short search of HaSTE-A's β on the smallest HaSTE
// table (a built-in cluster scenario), β_urgency fixed.
var smallCluster = []string{"search", "--scenario", "haste-table2", "--policy", "haste-a",
	"--params", "haste-a.beta_urgency=0.2", "--evaluations", "6", "--replications", "2", "--validation", "2"}

// The kebab-case names of earlier versions still work, with a note.
func TestKebabCaseParamsDeprecated(t *testing.T) {
	args := slices.Clone(small)
	args[slices.Index(args, "window=50,free_fraction=1")] = "window=50,free-fraction=1"
	stdout, stderr, code := runCLI(t, args...)
	if code != 0 || !strings.Contains(stderr, `--params: "free-fraction" is deprecated: write free_fraction`) {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if o := decode(t, stdout); o.Result.Params["free_fraction"] != 1 {
		t.Errorf("free_fraction = %v", o.Result.Params["free_fraction"])
	}
}

func TestSearchOutput(t *testing.T) {
	stdout, stderr, code := runCLI(t, small...)
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	o := decode(t, stdout)
	r := o.Result
	if r.Search.Replications != 3 || r.Validation == nil || r.Validation.Replications != 2 {
		t.Fatalf("replications: search %d, validation %+v", r.Search.Replications, r.Validation)
	}
	if r.Search.Best.Mean > r.Search.Default.Mean {
		t.Errorf("best %v worse than the default %v on the search seeds", r.Search.Best.Mean, r.Search.Default.Mean)
	}
	if len(r.Validation.References) != 2 || len(r.Validation.LowerBounds) != 2 || r.Validation.Gap == nil {
		t.Errorf("validation references %v, bounds %v", r.Validation.References, r.Validation.LowerBounds)
	}
	if r.Params["window"] != 50 || r.Params["free_fraction"] != 1 {
		t.Errorf("fixed parameters moved: %v", r.Params)
	}
	// The printed policy is accepted by `optd bound` and costs there what
	// the search reported on the search replications (the same seeds).
	bout, berr, code := runCLI(t, "bound", "--scenario", "testdata/tiny.json", "--policies", o.BestPolicy, "--bounds", "")
	if code != 0 {
		t.Fatalf("bound: exit %d: %s", code, berr)
	}
	var b struct {
		Policies map[string]struct {
			MeanCost float64 `json:"mean_cost"`
		} `json:"policies"`
	}
	if err := json.Unmarshal([]byte(bout), &b); err != nil {
		t.Fatal(err)
	}
	if got := b.Policies[o.BestPolicy].MeanCost; got != r.Search.Best.Mean {
		t.Errorf("optd bound gives %v for %s, the search %v", got, o.BestPolicy, r.Search.Best.Mean)
	}
}

// TestClusterSearchOutput: a short search of HaSTE-A's β on a built-in
// cluster scenario prints the placement mode's shape (best, default, paired
// difference, fresh validation, references, the cluster lower bound) with
// the cluster's objective, and its figure for the defaults on replication 0 is the makespan
// `optd simulate --seed 1` prints for the same policy (a second path).
func TestClusterSearchOutput(t *testing.T) {
	stdout, stderr, code := runCLI(t, append(slices.Clone(smallCluster), "--references", "haste")...)
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	o := decode(t, stdout)
	r := o.Result
	if o.Kind != KindCluster || o.Objective != search.ObjectiveMakespan {
		t.Errorf("kind %q, objective %q", o.Kind, o.Objective)
	}
	if names := []string{o.Space[0].Name, o.Space[1].Name, o.Space[2].Name}; len(o.Space) != 3 ||
		!slices.Equal(names, []string{"haste-a.beta_fitness", "haste-a.beta_urgency", "haste-a.beta_alignment"}) {
		t.Fatalf("space %+v", o.Space)
	}
	if r.Search.Replications != 2 || r.Validation == nil || r.Validation.Replications != 2 || r.Evaluations != 6 {
		t.Fatalf("replications: search %d, validation %+v, evaluations %d", r.Search.Replications, r.Validation, r.Evaluations)
	}
	if r.Search.Best.Mean > r.Search.Default.Mean || r.Search.Best.CI95 == nil || r.Search.BestMinusDefault.CI95 == nil {
		t.Errorf("search phase: best %+v, default %+v, paired %+v", r.Search.Best, r.Search.Default, r.Search.BestMinusDefault)
	}
	if _, ok := r.Validation.BestMinusReference["haste"]; !ok || r.Validation.LowerBounds[search.BoundCluster].Mean <= 0 || r.Validation.Gap == nil {
		t.Errorf("validation references %v, bounds %v, gap %v", r.Validation.BestMinusReference, r.Validation.LowerBounds, r.Validation.Gap)
	}
	// The cluster lower bound is below every policy on every replication.
	for _, rep := range r.Validation.Raw {
		lb := rep.LowerBounds[search.BoundCluster]
		if lb <= 0 || lb > rep.Best || lb > rep.Default || lb > rep.References["haste"] {
			t.Errorf("validation replication %+v: the bound is not below every policy", rep)
		}
	}
	if r.Params["haste-a.beta_urgency"] != 0.2 {
		t.Errorf("fixed parameter moved: %v", r.Params)
	}
	sout, serr, code := runCLI(t, "simulate", "--scenario", "haste-table2", "--policy", "haste-a", "--seed", "1")
	if code != 0 {
		t.Fatalf("simulate: exit %d: %s", code, serr)
	}
	var sim struct {
		MakespanS float64 `json:"makespan_s"`
	}
	if err := json.Unmarshal([]byte(sout), &sim); err != nil {
		t.Fatal(err)
	}
	if r.Search.Raw[0].Default != sim.MakespanS {
		t.Errorf("default on replication 0: %v, optd simulate --seed 1: %v", r.Search.Raw[0].Default, sim.MakespanS)
	}
}

// TestClusterSearchFile: a cluster scenario file with a pipeline of
// add-ons, --objective mean-response and a range restricted by --params.
func TestClusterSearchFile(t *testing.T) {
	stdout, stderr, code := runCLI(t, "search", "--scenario", "../simulate/testdata/small.json", "--policy", "fair+sepb",
		"--objective", "mean-response", "--params", "sepb.kill_factor=1.5:3", "--evaluations", "4", "--replications", "2", "--validation", "-1")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	o := decode(t, stdout)
	if o.Kind != KindCluster || o.Objective != search.ObjectiveMeanResponse || o.Result.Validation != nil {
		t.Errorf("kind %q, objective %q, validation %+v", o.Kind, o.Objective, o.Result.Validation)
	}
	for _, p := range o.Space {
		v := o.Result.Params[p.Name]
		if !strings.HasPrefix(p.Name, "sepb.") || v < p.Min || v > p.Max {
			t.Errorf("%s = %v in [%v, %v]", p.Name, v, p.Min, p.Max)
		}
		if p.Name == "sepb.kill_factor" && (p.Min != 1.5 || p.Max != 3) {
			t.Errorf("kill_factor range [%v, %v], want [1.5, 3]", p.Min, p.Max)
		}
	}
}

func TestSearchExact(t *testing.T) {
	stdout, stderr, code := runCLI(t, "search", "--scenario", "testdata/tiny.json", "--policy", "state-threshold",
		"--exact", "--evaluations", "30", "--params", "window=50")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	o := decode(t, stdout)
	e := o.Exact
	if e == nil || e.GapClosed == nil {
		t.Fatalf("exact %+v", e)
	}
	if e.Best < e.Optimal*(1-1e-9) || e.Best > e.Default || e.Optimal > e.Greedy {
		t.Errorf("optimum %v, tuned %v, default %v, greedy %v", e.Optimal, e.Best, e.Default, e.Greedy)
	}
}

func TestSearchErrors(t *testing.T) {
	cluster := []string{"--scenario", "haste-table2"}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown policy", []string{"--policy", "nope"}, "unknown placement policy"},
		{"no parameters", []string{"--policy", "greedy"}, "no parameters"},
		{"unknown param", []string{"--policy", "state-threshold", "--params", "beta=1:2"}, `unknown parameter "beta"`},
		{"reversed range", []string{"--policy", "state-threshold", "--params", "base=3:1"}, "lower bound 3 > upper bound 1"},
		{"outside range", []string{"--policy", "state-threshold", "--params", "ratio=0:2"}, "outside the parameter's range"},
		{"not name=value", []string{"--policy", "state-threshold", "--params", "base"}, "want name=lo:hi"},
		{"bad shard", []string{"--policy", "state-threshold", "--shard", "2/2"}, "--shard"},
		{"bad method", []string{"--policy", "state-threshold", "--method", "bfgs"}, "--method"},
		{"bad reference", []string{"--policy", "state-threshold", "--references", "greedy,,random"}, "empty item"},
		{"unknown reference", []string{"--policy", "state-threshold", "--references", "nope"}, "reference"},
		{"exact on a drawn cluster", []string{"--policy", "state-threshold", "--exact", "--scenario", "../../search/testdata/fig9-rho0.6.json"}, "slots.costs"},
		{"objective on placement", []string{"--policy", "state-threshold", "--objective", "makespan"}, "whose objective is mean-cost"},
		{"pipeline on placement", []string{"--policy", "haste-a"}, `"haste-a" is a heartbeat pipeline`},
		{"unknown scenario", []string{"--scenario", "haste-table9", "--policy", "haste-a"}, "neither a built-in cluster scenario"},
		{"family on cluster", append(cluster, "--policy", "state-threshold"), `"state-threshold" is a placement family`},
		{"unknown pipeline", append(cluster, "--policy", "haste-b"), `assignment "haste-b"`},
		{"pipeline without parameters", append(cluster, "--policy", "fifo"), "no parameters to search"},
		{"unknown cluster param", append(cluster, "--policy", "haste-a", "--params", "beta=1"), `unknown parameter "beta" (the policy has: haste-a.beta_fitness`},
		{"reversed cluster range", append(cluster, "--policy", "haste-a", "--params", "haste-a.beta_fitness=0.5:0.1"), "lower bound 0.5 > upper bound 0.1"},
		{"cluster range outside", append(cluster, "--policy", "haste-a", "--params", "haste-a.beta_fitness=0:1"), "outside the parameter's range [0.01, 1]"},
		{"cluster objective", append(cluster, "--policy", "haste-a", "--objective", "mean-cost"), `--objective "mean-cost"`},
		{"placement flag on cluster", append(cluster, "--policy", "haste-a", "--exact"), "--exact applies to placement scenarios only"},
		{"unknown cluster reference", append(cluster, "--policy", "haste-a", "--references", "fair+nope"), `reference "fair+nope"`},
		{"ambiguous file", []string{"--policy", "haste-a", "--scenario", jsonFile(t, `{"cluster": {}, "slots": {}}`)}, `ambiguous: "cluster" makes it a cluster scenario`},
		{"unknown file kind", []string{"--policy", "haste-a", "--scenario", jsonFile(t, `{"name": "x"}`)}, "neither a cluster scenario"},
		{"bad cluster file", []string{"--policy", "haste-a", "--scenario", "../simulate/testdata/bad.json"}, "bad.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"search", "--scenario", "testdata/tiny.json", "--evaluations", "2"}, tc.args...)
			stdout, stderr, code := runCLI(t, args...)
			if code == 0 || stdout != "" || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
				t.Errorf("exit %d, stdout %q, stderr %q (want one line with %q)", code, stdout, stderr, tc.want)
			}
		})
	}
}

func TestShardsAndMerge(t *testing.T) {
	for _, tc := range []struct {
		name, policy string
		args         []string
	}{
		{"placement", "state-threshold", small},
		{"cluster", "haste-a", smallCluster},
	} {
		t.Run(tc.name, func(t *testing.T) { testShardsAndMerge(t, tc.args, tc.policy) })
	}
}

// testShardsAndMerge: merging the one shard of 0/1 reproduces the unsharded
// output, merging 0/2 and 1/2 keeps the better restart, and bad shard sets
// are refused.
func testShardsAndMerge(t *testing.T, args []string, family string) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	shard := func(spec string) string {
		out, stderr, code := runCLI(t, append(slices.Clone(args), "--shard", spec)...)
		if code != 0 {
			t.Fatalf("shard %s: exit %d: %s", spec, code, stderr)
		}
		return out
	}
	// One shard of one: merging it prints the unsharded output.
	single := write("single.json", shard("0/1"))
	merged, stderr, code := runCLI(t, "search", "merge", single)
	if code != 0 {
		t.Fatal(stderr)
	}
	plain, _, _ := runCLI(t, args...)
	a, b := decode(t, merged), decode(t, plain)
	for _, o := range []*Output{a, b} {
		o.Result.SearchMS, o.Result.TotalMS, o.Restarts[0].SearchMS = 0, 0, 0
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if !bytes.Equal(ja, jb) {
		t.Errorf("merge of 0/1 differs from the unsharded run:\n%s\n%s", ja, jb)
	}
	// Two restarts: the merge keeps the better one and lists both.
	s0, s1 := write("s0.json", shard("0/2")), write("s1.json", shard("1/2"))
	out, stderr, code := runCLI(t, "search", "merge", s1, s0)
	if code != 0 {
		t.Fatal(stderr)
	}
	m := decode(t, out)
	if len(m.Restarts) != 2 || m.Restarts[0].Shard != 0 || m.Restarts[1].Shard != 1 || m.Shard != nil {
		t.Fatalf("restarts %+v, shard %+v", m.Restarts, m.Shard)
	}
	best := min(m.Restarts[0].Objective, m.Restarts[1].Objective)
	if m.Result.Search.Best.Mean != best {
		t.Errorf("merged objective %v, best restart %v", m.Result.Search.Best.Mean, best)
	}
	if reflect.DeepEqual(m.Restarts[0].Start, m.Restarts[1].Start) {
		t.Error("restart 1 started at the defaults too")
	}
	if name, _, err := policy.ParsePlacementSpec(m.BestPolicy); err != nil || name != family {
		t.Errorf("best_policy %q: %v", m.BestPolicy, err)
	}
	other := write("other.json", strings.Replace(shard("1/2"), `"time_budget_ms": 0`, `"time_budget_ms": 5`, 1))
	for _, tc := range []struct {
		name  string
		files []string
		want  string
	}{
		{"missing shard", []string{s0}, "got 1 shards"},
		{"twice", []string{s0, s0}, "given twice"},
		{"unsharded", []string{s0, write("plain.json", plain)}, "no \"shard\""},
		{"settings differ", []string{s0, other}, "has settings"},
		{"not json", []string{s0, write("bad.json", "{")}, "not an `optd search` output"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := runCLI(t, append([]string{"search", "merge"}, tc.files...)...)
			if code == 0 || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q, want %q", code, stderr, tc.want)
			}
		})
	}
}

// jsonFile writes data to a file in a fresh directory and returns its path.
func jsonFile(t *testing.T, data string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "scenario.json")
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestBuiltinNameThatIsAFile: a --scenario that names a built-in cluster
// scenario and an existing file is ambiguous; ./NAME picks the file.
func TestBuiltinNameThatIsAFile(t *testing.T) {
	data, err := os.ReadFile("../simulate/testdata/small.json")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	if err := os.WriteFile("haste-table2", data, 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"search", "--policy", "fair+sepb", "--evaluations", "1", "--replications", "2", "--validation", "-1", "--scenario"}
	_, stderr, code := runCLI(t, append(args, "haste-table2")...)
	if code == 0 || !strings.Contains(stderr, "write ./haste-table2 for the file") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	out, stderr, code := runCLI(t, append(args, "./haste-table2")...)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if o := decode(t, out); o.Kind != KindCluster || o.Result.Search.Best.Mean <= 0 {
		t.Errorf("kind %q, best %+v", o.Kind, o.Result.Search.Best)
	}
}

// FuzzDecodeShard: any input either fails to decode with an error or
// merges on its own without panicking.
func FuzzDecodeShard(f *testing.F) {
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"shard": {"index": 0, "count": 1, "settings": {}}, "result": {"search": {"best": {"mean": 1}}}, "restarts": [{"shard": 0}]}`))
	f.Add([]byte(`{"shard": {"index": 3, "count": 2, "settings": {}}, "result": {}, "restarts": [{}]}`))
	f.Add([]byte(`{"shard": null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		o, err := decodeShard(data)
		if err != nil {
			return
		}
		if m, err := Merge([]*Output{o}); err == nil && (m.Shard != nil || len(m.Restarts) != 1) {
			t.Fatalf("merge of one shard: %+v", m)
		}
	})
}
