package sim

import (
	"context"
	"testing"

	"github.com/optd/optd/policy"
)

// BenchmarkSimulateTable5 simulates HaSTE's Table 5 scenario (20 nodes
// ⟨32 GB, 16 vcores⟩, 10 jobs, iterative Pagerank and Kmeans) under each
// assignment policy, reporting simulated events per second of wall clock
// and the makespan.
func BenchmarkSimulateTable5(b *testing.B) {
	benchTable5(b, policy.AssignmentNames())
}

// benchTable5 simulates HaSTE's Table 5 scenario under each spec.
func benchTable5(b *testing.B, specs []string) {
	sc, err := BuiltinCluster("haste-table5")
	if err != nil {
		b.Fatal(err)
	}
	if err := sc.withDefaults().Validate(); err != nil {
		b.Fatal(err)
	}
	for _, spec := range specs {
		b.Run("policy="+spec, func(b *testing.B) {
			b.ReportAllocs()
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
