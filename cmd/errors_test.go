package cmd

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/optd/optd/cmd/cli"
	"github.com/optd/optd/examples"
)

// badInput is one wrong command line: the files it reads (written to a
// fresh directory, which is the working directory) and its arguments.
type badInput struct {
	name  string
	files map[string]string
	args  []string
}

func one(name, content string) map[string]string { return map[string]string{name: content} }

func example(name string) string {
	data, err := examples.Get(name)
	if err != nil {
		panic(err)
	}
	return string(data)
}

// replace returns the example with old replaced by new (once; it panics
// if old is not there, so a changed example cannot silently make a case
// valid).
func replace(name, old, new string) string {
	s := example(name)
	if !strings.Contains(s, old) {
		panic(fmt.Sprintf("example %s has no %q", name, old))
	}
	return strings.Replace(s, old, new, 1)
}

const (
	itaDoc    = `{"nodes": [{"id": "n1", "capacity": [4, 2]}], "tasks": [{"id": "t1", "demand": [1, 1], "count": 3}]}`
	cluster   = `{"cluster": {"resources": ["memory_mb", "vcores"], "nodes": [{"id": "n1", "rack": "r1", "capacity": [8192, 8]}]}, "jobs": [JOB]}`
	clusterJb = `{"id": "j1", "maps": 2, "reduces": 1, "demand": {"map": [1024, 1], "reduce": [1024, 1]}, "map_work": {"kind": "exponential", "mean": 5}, "reduce_work": {"kind": "exponential", "mean": 5}}`
)

func clusterWith(job string) string { return strings.Replace(cluster, "JOB", job, 1) }

func jobWith(old, new string) string {
	if !strings.Contains(clusterJb, old) {
		panic(old)
	}
	return clusterWith(strings.Replace(clusterJb, old, new, 1))
}

var badInputs = []badInput{
	// optd ita --instance
	{"ita empty file", one("i.json", ""), []string{"ita", "--instance", "i.json"}},
	{"ita array", one("i.json", `[1]`), []string{"ita", "--instance", "i.json"}},
	{"ita unknown top-level field", one("i.json", strings.Replace(itaDoc, `{"nodes"`, `{"colour": "red", "nodes"`, 1)), []string{"ita", "--instance", "i.json"}},
	{"ita unknown node field", one("i.json", strings.Replace(itaDoc, `"id": "n1"`, `"id": "n1", "gpus": 1`, 1)), []string{"ita", "--instance", "i.json"}},
	{"ita capacity a string", one("i.json", strings.Replace(itaDoc, `[4, 2]`, `[4, "2"]`, 1)), []string{"ita", "--instance", "i.json"}},
	{"ita fractional count", one("i.json", strings.Replace(itaDoc, `"count": 3`, `"count": 1.5`, 1)), []string{"ita", "--instance", "i.json"}},
	{"ita negative count", one("i.json", strings.Replace(itaDoc, `"count": 3`, `"count": -1`, 1)), []string{"ita", "--instance", "i.json"}},
	{"ita trailing data", one("i.json", itaDoc+"\n{}"), []string{"ita", "--instance", "i.json"}},
	{"ita syntax error", one("i.json", strings.Replace(itaDoc, `], "tasks"`, `] "tasks"`, 1)), []string{"ita", "--instance", "i.json"}},
	{"ita truncated", one("i.json", itaDoc[:40]), []string{"ita", "--instance", "i.json"}},
	{"ita negative weight", one("i.json", strings.Replace(itaDoc, `{"nodes"`, `{"weights": [1, -1], "nodes"`, 1)), []string{"ita", "--instance", "i.json"}},
	{"ita duplicate node", one("i.json", strings.Replace(itaDoc, `{"id": "n1", "capacity": [4, 2]}`, `{"id": "n1", "capacity": [4, 2]}, {"id": "n1", "capacity": [1, 1]}`, 1)), []string{"ita", "--instance", "i.json"}},
	{"ita short demand", one("i.json", strings.Replace(itaDoc, `"demand": [1, 1]`, `"demand": [1]`, 1)), []string{"ita", "--instance", "i.json"}},
	{"ita long id", one("i.json", strings.Replace(itaDoc, `"id": "t1"`, `"id": "`+strings.Repeat("t", 300)+`"`, 1)), []string{"ita", "--instance", "i.json"}},
	{"ita duplicate field", one("i.json", strings.Replace(itaDoc, `{"nodes"`, `{"tasks": [], "nodes"`, 1)), []string{"ita", "--instance", "i.json"}},
	{"ita nodes an object", one("i.json", `{"nodes": {"id": "n1"}, "tasks": []}`), []string{"ita", "--instance", "i.json"}},
	{"ita given a placement scenario", one("i.json", example("placement-scenario")), []string{"ita", "--instance", "i.json"}},
	{"ita no such file", nil, []string{"ita", "--instance", "nothing.json"}},
	{"ita random too many nodes", nil, []string{"ita", "--random", "1", "--nodes", "100000"}},
	{"ita gap out of range", nil, []string{"ita", "--instance", "haste-table3", "--gap", "2"}},
	{"ita unknown method", nil, []string{"ita", "--instance", "haste-table3", "--method", "fastest"}},

	// optd thresholds --workload
	{"workload empty", one("w.json", "  "), []string{"thresholds", "--workload", "w.json", "--jobs", "2"}},
	{"workload unknown kind", one("w.json", replace("workload", `"uniform"`, `"normal"`)), []string{"thresholds", "--workload", "w.json", "--jobs", "2"}},
	{"workload pareto alpha", one("w.json", `{"data": {"kind": "pareto", "xm": 1, "alpha": 0.8}, "reduces": {"kind": "uniform-int", "min": 1, "max": 2}}`), []string{"thresholds", "--workload", "w.json", "--jobs", "2"}},
	{"workload probs sum", one("w.json", `{"data": {"kind": "discrete", "values": [1, 2], "probs": [0.5, 0.6]}, "reduces": {"kind": "uniform-int", "min": 1, "max": 2}}`), []string{"thresholds", "--workload", "w.json", "--jobs", "2"}},
	{"workload zero reduces", one("w.json", replace("workload", `"min": 1, "max": 4`, `"min": 0, "max": 4`)), []string{"thresholds", "--workload", "w.json", "--jobs", "2"}},
	{"workload joint and data", one("w.json", `{"joint": [{"data": 1, "reduces": 1, "prob": 1}], "data": {"kind": "exponential", "mean": 1}}`), []string{"thresholds", "--workload", "w.json", "--jobs", "2"}},
	{"workload unknown field", one("w.json", replace("workload", `{ "data"`, `{ "colour": 1, "data"`)), []string{"thresholds", "--workload", "w.json", "--jobs", "2"}},
	{"workload min a string", one("w.json", replace("workload", `"min": 1, "max": 100`, `"min": "1", "max": 100`)), []string{"thresholds", "--workload", "w.json", "--jobs", "2"}},
	{"workload given a cluster scenario", one("w.json", example("cluster-scenario")), []string{"thresholds", "--workload", "w.json", "--jobs", "2"}},
	{"thresholds zero jobs", one("w.json", example("workload")), []string{"thresholds", "--workload", "w.json", "--jobs", "0"}},
	{"thresholds unknown format", one("w.json", example("workload")), []string{"thresholds", "--workload", "w.json", "--jobs", "2", "--format", "xml"}},
	{"thresholds too few slot costs", one("w.json", example("workload")), []string{"thresholds", "--workload", "w.json", "--jobs", "2", "--slot-costs", "1,2,3"}},

	// optd bound --scenario
	{"bound fractional K", one("s.json", replace("placement-scenario", `"max_jobs_in_service": 3`, `"max_jobs_in_service": 2.5`)), []string{"bound", "--scenario", "s.json"}},
	{"bound negative seed", one("s.json", replace("placement-scenario", `"seed": 1`, `"seed": -1`)), []string{"bound", "--scenario", "s.json"}},
	{"bound slots missing", one("s.json", replace("placement-scenario", `"slots": {"costs": [1, 1, 2, 3, 5, 8, 13, 21]},`, ``)), []string{"bound", "--scenario", "s.json"}},
	{"bound slot cost a string", one("s.json", replace("placement-scenario", `[1, 1, 2,`, `[1, "1", 2,`)), []string{"bound", "--scenario", "s.json"}},
	{"bound negative arrival rate", one("s.json", replace("placement-scenario", `"arrival_rate": 0.6`, `"arrival_rate": -1`)), []string{"bound", "--scenario", "s.json"}},
	{"bound unknown field", one("s.json", replace("placement-scenario", `"seed": 1`, `"seed": 1, "colour": "red"`)), []string{"bound", "--scenario", "s.json"}},
	{"bound unknown workload kind", one("s.json", replace("placement-scenario", `"kind": "discrete", "values": [5, 40]`, `"kind": "normal", "values": [5, 40]`)), []string{"bound", "--scenario", "s.json"}},
	{"bound too few slots", one("s.json", replace("placement-scenario", `[1, 1, 2, 3, 5, 8, 13, 21]`, `[1, 2]`)), []string{"bound", "--scenario", "s.json"}},
	{"bound trailing data", one("s.json", example("placement-scenario")+"]"), []string{"bound", "--scenario", "s.json"}},
	{"bound given a cluster scenario", one("s.json", example("cluster-scenario")), []string{"bound", "--scenario", "s.json"}},
	{"bound given its own output", one("s.json", `{"policies": {}, "lower_bounds": {}, "optimal": null, "gaps": {}}`), []string{"bound", "--scenario", "s.json"}},
	{"bound unknown policy", one("s.json", example("placement-scenario")), []string{"bound", "--scenario", "s.json", "--policies", "greedy,best"}},
	{"bound bad shard", one("s.json", example("placement-scenario")), []string{"bound", "--scenario", "s.json", "--shard", "4/4"}},

	{"bound memory estimate", one("s.json", replace("placement-scenario", `"jobs": 20000,`, `"jobs": 100000000,`)), []string{"bound", "--scenario", "s.json"}},
	{"bound simulated jobs", one("s.json", replace("placement-scenario", `"jobs": 20000,`, `"jobs": 100000000,`)), []string{"bound", "--scenario", "s.json", "--bounds", "empty-cluster"}},
	{"bound memory limit lowered", one("s.json", strings.Replace(replace("placement-scenario", `"replications": 5`, `"replications": 1`), `"jobs": 20000,`, `"jobs": 2000000,`, 1)), []string{"bound", "--scenario", "s.json", "--max-memory-mb", "100"}},

	// optd simulate --scenario
	{"simulate maps a string", one("c.json", jobWith(`"maps": 2`, `"maps": "x"`)), []string{"simulate", "--scenario", "c.json", "--policy", "fifo"}},
	{"simulate negative weight", one("c.json", jobWith(`"maps": 2`, `"maps": 2, "weight": -1`)), []string{"simulate", "--scenario", "c.json", "--policy", "fifo"}},
	{"simulate too many stages", one("c.json", jobWith(`"maps": 2`, `"maps": 2, "stages": 70000`)), []string{"simulate", "--scenario", "c.json", "--policy", "fifo"}},
	{"simulate cluster missing", one("c.json", `{"jobs": [`+clusterJb+`]}`), []string{"simulate", "--scenario", "c.json", "--policy", "fifo"}},
	{"simulate negative capacity", one("c.json", strings.Replace(clusterWith(clusterJb), `[8192, 8]`, `[8192, -4]`, 1)), []string{"simulate", "--scenario", "c.json", "--policy", "fifo"}},
	{"simulate unknown job field", one("c.json", jobWith(`"maps": 2`, `"maps": 2, "colour": "red"`)), []string{"simulate", "--scenario", "c.json", "--policy", "fifo"}},
	{"simulate unknown skew field", one("c.json", jobWith(`"maps": 2`, `"maps": 2, "map_skew": {"fraction": 0.1, "slowdown": 3}`)), []string{"simulate", "--scenario", "c.json", "--policy", "fifo"}},
	{"simulate unknown task type", one("c.json", jobWith(`"map": [1024, 1]`, `"shuffle": [1024, 1]`)), []string{"simulate", "--scenario", "c.json", "--policy", "fifo"}},
	{"simulate straggler on unknown node", one("c.json", strings.Replace(clusterWith(clusterJb), `"jobs"`, `"stragglers": [{"node": "n9", "speed": 0.5}], "jobs"`, 1)), []string{"simulate", "--scenario", "c.json", "--policy", "fifo"}},
	{"simulate empty file", one("c.json", ""), []string{"simulate", "--scenario", "c.json", "--policy", "fifo"}},
	{"simulate given a placement scenario", one("c.json", example("placement-scenario")), []string{"simulate", "--scenario", "c.json", "--policy", "fifo"}},
	{"simulate neither name nor file", nil, []string{"simulate", "--scenario", "haste-table9", "--policy", "fifo"}},
	{"simulate unknown policy", nil, []string{"simulate", "--scenario", "haste-table3", "--policy", "fifo+fastest"}},

	// optd search --scenario
	{"search given a bound output", one("s.json", `{"policies": {}, "lower_bounds": {}, "optimal": null, "gaps": {}}`), []string{"search", "--scenario", "s.json", "--policy", "state-threshold"}},
	{"search ambiguous scenario", one("s.json", strings.Replace(example("cluster-scenario"), `"seed": 1`, `"seed": 1, "slots": {"costs": [1]}`, 1)), []string{"search", "--scenario", "s.json", "--policy", "haste-a"}},
	{"search given an ITA instance", one("s.json", example("ita-instance")), []string{"search", "--scenario", "s.json", "--policy", "state-threshold"}},
	{"search unknown parameter", one("s.json", example("placement-scenario")), []string{"search", "--scenario", "s.json", "--policy", "state-threshold", "--params", "colour=1"}},
	{"search memory estimate", one("s.json", replace("placement-scenario", `"jobs": 20000,`, `"jobs": 100000000,`)), []string{"search", "--scenario", "s.json", "--policy", "state-threshold", "--replications", "1", "--validation", "1"}},
	{"search exact of a learning policy", one("s.json", example("placement-scenario")), []string{"search", "--scenario", "s.json", "--policy", "rolling-horizon", "--exact"}},
	{"search reversed range", one("s.json", example("placement-scenario")), []string{"search", "--scenario", "s.json", "--policy", "state-threshold", "--params", "free_fraction=1:0"}},

	// merging shards
	{"bound merge given a scenario", one("s.json", example("placement-scenario")), []string{"bound", "merge", "s.json"}},
	{"bound merge unknown field", one("s.json", `{"policies": {}, "lower_bounds": {}, "optimal": null, "gaps": {}, "colour": 1}`), []string{"bound", "merge", "s.json"}},
	{"search merge given a workload", one("s.json", example("workload")), []string{"search", "merge", "s.json"}},

	// optd schema / example
	{"schema unknown format", nil, []string{"schema", "scenario"}},
}

// leaks are what a message to a user must never contain: a Go type name, a
// byte offset without a path, a package prefix, encoding/json's wording.
var leaks = regexp.MustCompile(`\b(?:solver|sim|models|mdp|search|policy|bound|thresholds|trace|lp)\.[A-Z]|\boffset\b|(?:^|: )(?:solver|sim|models|mdp|search|policy|bound|thresholds|json): |Go struct|cannot unmarshal|\bfloat64\b|\bint64\b|\bstring into\b|\bEOF\b`)

// TestBadInputMessages: each bad input exits 1 with one line on stderr,
// nothing on stdout, and exactly the message of testdata/errors.golden
// (go test ./cmd -run TestBadInputMessages -update rewrites it; read the
// diff). No message leaks a Go type, package or bare offset.
func TestBadInputMessages(t *testing.T) {
	if len(badInputs) < 50 {
		t.Fatalf("%d bad inputs; the table keeps at least 50", len(badInputs))
	}
	clearEnv(t)
	// The memory estimate counts the replications run at a time, one per
	// core: fix the cores so the messages do not depend on the machine.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join(wd, "testdata", "errors.golden")
	t.Chdir(t.TempDir())
	var got bytes.Buffer
	seen := map[string]bool{}
	for _, c := range badInputs {
		if seen[c.name] {
			t.Fatalf("duplicate case %q", c.name)
		}
		seen[c.name] = true
		for f := range c.files {
			os.Remove(f)
		}
		for f, content := range c.files {
			if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		var out, errb bytes.Buffer
		code := cli.Run(context.Background(), NewRootCommand(), c.args, &out, &errb)
		msg := errb.String()
		if code != 1 || out.Len() != 0 || strings.Count(msg, "\n") != 1 {
			t.Errorf("%s: exit %d, stdout %q, stderr %q: want exit 1, one line on stderr and nothing on stdout", c.name, code, out.String(), msg)
		}
		if m := leaks.FindString(msg); m != "" {
			t.Errorf("%s: %q leaks %q", c.name, msg, m)
		}
		fmt.Fprintf(&got, "%s\n\t%s", c.name, msg)
	}
	if *update {
		if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != string(want) {
		gl, wl := strings.Split(got.String(), "\n"), strings.Split(string(want), "\n")
		for i := range max(len(gl), len(wl)) {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Errorf("line %d:\n got  %s\n want %s", i+1, g, w)
			}
		}
	}
}
