package sim

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
)

// stragglerScenario: 6 MRv1 nodes ⟨6 vcores⟩ with 4 map and 2 reduce
// slots, node1 at a fifth of the normal speed, two jobs of 100 s tasks:
// speculation has stragglers to copy, SEPB stragglers to kill, stealing
// idle vcores to lend.
func stragglerScenario() *ClusterScenario {
	sc := &ClusterScenario{Name: "stragglers", HeartbeatS: 3, Seed: 1, Stragglers: []Straggler{{Node: "node1", Speed: 0.2}}}
	sc.Cluster.Resources = models.ResourceNames{models.ResourceVCores}
	for i := 1; i <= 6; i++ {
		sc.Cluster.Nodes = append(sc.Cluster.Nodes, models.Node{ID: fmt.Sprintf("node%d", i), Rack: fmt.Sprintf("rack%d", (i-1)/3+1),
			Capacity: models.Resources{6}, MapSlots: 4, ReduceSlots: 2})
	}
	d := map[models.TaskType]models.Resources{models.MapTask: {1}, models.ReduceTask: {1}}
	work := uniformAround(100)
	sc.Jobs = []ClusterJob{
		{ID: "a", Maps: 30, Reduces: 4, MapWork: work, ReduceWork: work, Demand: d},
		{ID: "b", SubmitS: 50, Maps: 12, Reduces: 2, MapWork: work, ReduceWork: work, Demand: d},
	}
	return sc
}

func runChecked(t *testing.T, sc *ClusterScenario, spec string) *ClusterResult {
	t.Helper()
	p, err := policy.NewPipeline(spec, policy.HeartbeatConfig{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	r, err := RunCluster(context.Background(), sc, p, ClusterOptions{Seed: 1, CheckInvariants: true})
	if err != nil {
		t.Fatalf("%s on %s: %v", spec, sc.Name, err)
	}
	if r.Rejected != 0 {
		t.Fatalf("%s on %s: %d actions rejected (by the ledger or dropped by the pipeline)", spec, sc.Name, r.Rejected)
	}
	if len(r.Jobs) != len(sc.Jobs) {
		t.Fatalf("%s: %d of %d jobs reported", spec, len(r.Jobs), len(sc.Jobs))
	}
	return r
}

// Every slot, speculation and sharing policy runs in the simulator with its
// invariants checked after every event (no node over capacity or slots,
// every task once, reduces after maps) and no action rejected.
func TestHeartbeatAddOnsInSimulator(t *testing.T) {
	specs := []string{
		"mrv1-static", "pi-dhsa", "pd-dhsa",
		"pi-dhsa+sepb+slot-prescheduling", "pd-dhsa+delay-scheduling+slot-prescheduling", "mrv1-static+load-balance+speculation-hadoop",
		"mrv1-static+speculation-hadoop", "mrv1-static+late", "mrv1-static+sepb", "mrv1-static+base", "mrv1-static+late+base",
		"fifo+dynamic-adjust", "fair+resource-stealing-ltm+base",
	}
	for _, m := range []string{"even", "fcm", "stlm", "ltlm", "stm", "ltm"} {
		specs = append(specs, "mrv1-static+speculation-hadoop+resource-stealing-"+m)
	}
	for _, spec := range specs {
		t.Run(spec, func(t *testing.T) {
			r := runChecked(t, stragglerScenario(), spec)
			speculates := slices.ContainsFunc([]string{"speculation-hadoop", "late", "sepb", "base"}, func(s string) bool { return slices.Contains(strings.Split(spec, "+"), s) })
			if speculates && !strings.Contains(spec, "stealing") && r.Speculative.Launched == 0 {
				t.Fatalf("%s launched no copy with a node at a fifth of the speed", spec)
			}
		})
	}
}

// The papers' qualitative claims the model must show on their setups:
// DHSA beats static slots at the worst configuration (DynamicMR Fig. 8),
// stealing shortens a map-only job at low utilization (paper 003 Fig. 2),
// BASE wastes fewer copies than Hadoop's speculation (Figs. 2d, 3),
// DynamicAdjust shortens a skewed job (paper 004 Fig. 5).
func TestHeartbeatPapersDirection(t *testing.T) {
	static := runChecked(t, DynamicMRScenario("dmr-1/11", 1, 1), "mrv1-static").MakespanS
	for _, spec := range []string{"pi-dhsa", "pd-dhsa"} {
		if got := runChecked(t, DynamicMRScenario("dmr-1/11", 1, 1), spec).MakespanS; got >= static {
			t.Errorf("%s at 1/11: makespan %.1f not below static %.1f", spec, got, static)
		}
	}
	grep := func() *ClusterScenario { sc, _ := BuiltinCluster("stealing-grep-25"); return sc }
	if a, b := runChecked(t, grep(), "fifo").MakespanS, runChecked(t, grep(), "fifo+resource-stealing-even").MakespanS; b >= a {
		t.Errorf("stealing at 25%%: %.1f not below %.1f", b, a)
	}
	h := runChecked(t, stragglerScenario(), "mrv1-static+speculation-hadoop").Speculative
	b := runChecked(t, stragglerScenario(), "mrv1-static+base").Speculative
	t.Logf("stragglers: Hadoop %+v, BASE %+v", h, b)
	if h.Launched == 0 || b.Wasted > h.Wasted {
		t.Errorf("BASE wasted %d copies, Hadoop %d", b.Wasted, h.Wasted)
	}
	pr := func() *ClusterScenario { sc, _ := BuiltinCluster("dynamicadjust-pagerank"); return sc }
	if a, d := runChecked(t, pr(), "fifo").MakespanS, runChecked(t, pr(), "fifo+dynamic-adjust").MakespanS; d >= a {
		t.Errorf("DynamicAdjust on pagerank: %.1f not below %.1f", d, a)
	}
}
