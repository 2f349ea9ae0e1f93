package benchmarks

import (
	"context"
	"fmt"
	"strings"

	"github.com/optd/optd/models"
	"github.com/optd/optd/sim"
)

// hasteTablePolicies are the schedulers HaSTE (Yao et al., TCC 2021, §6)
// compares, in the paper's order.
var hasteTablePolicies = []string{"fifo", "fair", "drf", "capacity", "ffd-dp", "haste", "haste-a"}

// hasteTables simulates the workloads of HaSTE's Tables 2-5 (batch
// submission; the built-in haste-table* scenarios) under every scheduler:
// makespan, mean response time and utilization, the mean over seeds.
// The paper's headline figures: HaSTE's makespan 36.3% below FIFO on
// Table 3, HaSTE-A's 26.4% below FIFO on Table 4.
func hasteTables(ctx context.Context, env *Env) (*Output, error) {
	seeds := Pick(env, 1, 5)
	var b strings.Builder
	fmt.Fprintf(&b, "Each workload is the built-in scenario of its table (8 nodes ⟨8 GB, 8 vcores⟩; Table 5: 20 nodes ⟨32 GB, 16 vcores⟩), "+
		"all jobs submitted at 0, mean over %d seeds (block replicas, task works); utilization is the time-average share of memory and CPU "+
		"granted. Reduction is 1 − makespan/FIFO's.\n\n", seeds)
	var t3, t4 map[string]float64
	t3resp, t3cpu := map[string]float64{}, map[string]float64{}
	for _, table := range []string{"haste-table2", "haste-table3", "haste-table4", "haste-table5"} {
		t := newTable("scheduler", "makespan (s)", "vs FIFO", "mean response (s)", "memory util.", "CPU util.")
		mk := map[string]float64{}
		for _, spec := range hasteTablePolicies {
			var m, resp, mem, cpu float64
			for k := range seeds {
				sc, err := sim.BuiltinCluster(table)
				if err != nil {
					return nil, err
				}
				r, err := hbRun(ctx, sc, spec, env.Seed+uint64(k))
				if err != nil {
					return nil, err
				}
				m += r.MakespanS / float64(seeds)
				resp += r.MeanResponseS / float64(seeds)
				mem += r.Utilization[models.ResourceMemoryMB] / float64(seeds)
				cpu += r.Utilization[models.ResourceVCores] / float64(seeds)
			}
			mk[spec] = m
			if table == "haste-table3" {
				t3resp[spec], t3cpu[spec] = resp, cpu
			}
			t.add(spec, m, pct(reduction(mk["fifo"], m)), resp, pct(mem), pct(cpu))
		}
		fmt.Fprintf(&b, "**%s**\n\n%s\n", strings.TrimPrefix(table, "haste-"), t.String())
		switch table {
		case "haste-table3":
			t3 = mk
		case "haste-table4":
			t4 = mk
		}
	}
	fmt.Fprintf(&b, "**Paper vs optd.** Table 3: the paper's HaSTE makespan is 36.3%% below FIFO; optd's is %s below FIFO (FFD-DP %s, DRF %s, Fair %s). "+
		"Table 4: the paper's HaSTE-A is 26.4%% below FIFO; optd's is %s below FIFO and %s below HaSTE. "+
		"On Table 3 optd's FFD-DP, which packs each heartbeat by the dot-product fitness alone, reaches %s CPU utilization and a "+
		"makespan of %s s against HaSTE's %s and %s s; HaSTE's urgency term (Eqs. 2-3) favours jobs close to finishing, which gives "+
		"the lowest mean response time (%s s against FFD-DP's %s s) at the cost of packing. The paper reports HaSTE below FFD-DP in makespan "+
		"as well; a likely cause, not verified here: its testbed's task durations vary with co-located load, which the simulator's speed model (tasks slow down only "+
		"with the resources granted) does not reproduce. The model is not tuned to match.\n",
		pct(reduction(t3["fifo"], t3["haste"])), pct(reduction(t3["fifo"], t3["ffd-dp"])), pct(reduction(t3["fifo"], t3["drf"])),
		pct(reduction(t3["fifo"], t3["fair"])), pct(reduction(t4["fifo"], t4["haste-a"])), pct(reduction(t4["haste"], t4["haste-a"])),
		pct(t3cpu["ffd-dp"]), num(t3["ffd-dp"]), pct(t3cpu["haste"]), num(t3["haste"]), num(t3resp["haste"]), num(t3resp["ffd-dp"]))
	return &Output{Markdown: b.String()}, nil
}
