package sim

import (
	"context"
	"testing"

	"github.com/optd/optd/policy"
)

// BenchmarkSimulateTable5AddOns simulates HaSTE's Table 5 scenario under
// FIFO with each speculation and sharing add-on, which read every running
// attempt's progress on every heartbeat: the add-ons' cost over plain FIFO
// (BenchmarkSimulateTable5/policy=fifo), in simulated events per second.
func BenchmarkSimulateTable5AddOns(b *testing.B) {
	sc, err := BuiltinCluster("haste-table5")
	if err != nil {
		b.Fatal(err)
	}
	for _, addOn := range []string{policy.NameSpeculationHadoop, policy.NameLATE, policy.NameSEPB, policy.NameBASE,
		policy.NameResourceStealingPrefix + "even", policy.NameResourceStealingPrefix + "ltm", policy.NameDynamicAdjust} {
		spec := "fifo+" + addOn
		b.Run("policy="+spec, func(b *testing.B) {
			var events uint64
			var makespan float64
			for b.Loop() {
				pipe, err := policy.NewPipeline(spec, policy.HeartbeatConfig{})
				if err != nil {
					b.Fatal(err)
				}
				r, err := RunCluster(context.Background(), sc, pipe, ClusterOptions{Seed: 1})
				if err != nil {
					b.Fatal(err)
				}
				events += r.Events
				makespan = r.MakespanS
			}
			b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(makespan, "makespan_s")
		})
	}
}
