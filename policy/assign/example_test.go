package assign_test

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
	_ "github.com/optd/optd/policy/builtin" // delay-scheduling
	"github.com/optd/optd/policy/policytest"
)

// The minimal policy of docs/architecture.md ("Adding a policy"): the
// page's code is this file's, between the markers, so that what the page
// shows compiles and does what it says (TestArchitecturePageShowsThisCode).

// --- begin: policy/assign/lifo.go
var _ policy.Assigner = lifo{}

// NameLIFO serves the newest job first.
const NameLIFO = "lifo"

// lifo offers each job's best-placed pending task, newest job first, reduces
// before maps (YARN's request order); the pipeline starts the first that
// fits and every filter admits, then asks again.
type lifo struct{}

// Name implements policy.Plugin.
func (lifo) Name() string { return NameLIFO }

// Rank implements policy.Assigner.
func (lifo) Rank(hb *policy.Heartbeat) []policy.Action {
	var out []policy.Action
	for k := len(hb.Cluster.Jobs) - 1; k >= 0; k-- {
		j := hb.Cluster.Jobs[k]
		for _, t := range []models.TaskType{models.ReduceTask, models.MapTask} {
			if a, ok := hb.StartCandidate(j, t, func() string { return "lifo: job " + j.ID + " is the newest" }); ok {
				out = append(out, a)
			}
		}
	}
	return out
}

// --- end

func init() {
	// --- begin: the line added to policy/assign/register.go's map
	policy.Must(policy.RegisterAssignment(NameLIFO, func(policy.HeartbeatConfig) (policy.Stages, error) { return policy.Stages{Assigner: lifo{}}, nil }))
	// --- end
}

// A node with room for two tasks of three jobs' maps: the newest two jobs
// get them.
func Example_lifo() {
	f := policytest.NewFixture(0, false, models.MemoryVCores())
	n := f.Node("n", "r1", 0, 0, models.Resources{2048, 2})
	for _, id := range []string{"old", "mid", "new"} {
		f.Job(id, 1, 0, models.Resources{1024, 1})
	}
	c := f.Finish()
	p, err := policy.NewPipeline("lifo+delay-scheduling", policy.HeartbeatConfig{})
	if err != nil {
		panic(err)
	}
	d := p.Heartbeat(c, n)
	for _, a := range d.Actions {
		fmt.Println(a.Kind, a.Job, a.Reason)
	}
	// Output:
	// start new lifo: job new is the newest
	// start mid lifo: job mid is the newest
}

// TestArchitecturePageShowsThisCode: every block of this file between
// "--- begin: NAME" and "--- end" is, line for line, the code block of
// docs/architecture.md that follows the line "NAME:".
func TestArchitecturePageShowsThisCode(t *testing.T) {
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	begin := regexp.MustCompile(`(?m)^\t*// --- begin: (.*)\n`)
	end := regexp.MustCompile(`(?m)^\t*// --- end$`)
	blocks := 0
	rest := string(src)
	for {
		m := begin.FindStringSubmatchIndex(rest)
		if m == nil {
			break
		}
		name := rest[m[2]:m[3]]
		rest = rest[m[1]:]
		e := end.FindStringIndex(rest)
		if e == nil {
			t.Fatalf("block %s has no end", name)
		}
		body := rest[:e[0]]
		rest = rest[e[1]:]
		lines := strings.Split(strings.TrimRight(body, "\n\t "), "\n")
		indent := len(lines[0]) - len(strings.TrimLeft(lines[0], "\t")) // the block's own indentation
		for k, l := range lines {
			lines[k] = strings.TrimPrefix(l, strings.Repeat("\t", indent))
		}
		want := "`" + name + "`:\n\n```go\n" + strings.Join(lines, "\n") + "\n```"
		if !strings.Contains(string(page), want) {
			t.Errorf("docs/architecture.md does not show %s as:\n%s", name, want)
		}
		blocks++
	}
	if blocks != 2 {
		t.Fatalf("%d marked blocks", blocks)
	}
}
