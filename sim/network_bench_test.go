package sim

import (
	"context"
	"testing"

	"github.com/optd/optd/policy"
)

// BenchmarkSimulateNetwork simulates HaSTE's Table 5 scenario under fair
// without and with the shuffle network (one rack, and the 20 nodes in 4
// racks at 4:1): the ratio of their ns/op is the network model's cost
// (target: within 3x, and under 1 s a run).
func BenchmarkSimulateNetwork(b *testing.B) {
	base, err := BuiltinCluster("haste-table5")
	if err != nil {
		b.Fatal(err)
	}
	racked := *base
	racked.Cluster.Nodes = nil
	for i, n := range base.Cluster.Nodes {
		n.Rack = []string{"r1", "r2", "r3", "r4"}[i%4]
		racked.Cluster.Nodes = append(racked.Cluster.Nodes, n)
	}
	for _, c := range []struct {
		name string
		sc   *ClusterScenario
		net  *Network
	}{{"network=off", base, nil}, {"network=1rack", base, &Network{}}, {"network=4racks-4to1", &racked, &Network{Oversubscription: 4}},
		{"network=4racks-grown", &racked, &Network{Oversubscription: 4, RackOversubscription: map[string]float64{"r4": 1}}}} {
		sc := *c.sc
		sc.Network = c.net
		b.Run(c.name, func(b *testing.B) {
			var makespan float64
			for b.Loop() {
				pipe, err := policy.NewPipeline("fair", policy.HeartbeatConfig{})
				if err != nil {
					b.Fatal(err)
				}
				r, err := RunCluster(context.Background(), &sc, pipe, ClusterOptions{Seed: 1})
				if err != nil {
					b.Fatal(err)
				}
				makespan = r.MakespanS
			}
			b.ReportMetric(makespan, "makespan_s")
		})
	}
}
