package server

import (
	"fmt"
	"testing"

	optdv1 "github.com/optd/optd/proto/optd/v1"
)

// bigJobCluster is the stall: one 4-vcore node and one job of maps
// maps without demands (so every map fits the node at once).
func bigJobCluster(id, spec string, maps int) (*optdv1.RegisterClusterRequest, *optdv1.SubmitJobRequest) {
	zero := 0.0
	reg := &optdv1.RegisterClusterRequest{ClusterId: id,
		Nodes:     []*optdv1.Node{{Id: "n", Capacity: map[string]float64{"vcores": 4}}},
		Heartbeat: &optdv1.HeartbeatPolicy{Spec: spec, Resources: []string{"vcores"}}}
	sub := &optdv1.SubmitJobRequest{ClusterId: id, JobId: "big", Maps: int32(maps), Reduces: 0, SubmitS: &zero}
	return reg, sub
}

// BenchmarkHeartbeatBigJob measures the first heartbeat of bigJobCluster
// end to end (gRPC, decision, commit) for growing job sizes: the time per
// pending task must stay flat (linear decision).
func BenchmarkHeartbeatBigJob(b *testing.B) {
	ts := startServer(b, "", Options{}, nil)
	ctx := b.Context()
	for _, maps := range benchSizes() {
		b.Run(fmt.Sprint("maps=", maps), func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				bigJobRuns++
				id := fmt.Sprintf("big-%d-%d", maps, bigJobRuns)
				reg, sub := bigJobCluster(id, "fifo", maps)
				if _, err := ts.cluster.RegisterCluster(ctx, reg); err != nil {
					b.Fatal(err)
				}
				if _, err := ts.cluster.SubmitJob(ctx, sub); err != nil {
					b.Fatal(err)
				}
				now := 1.0
				b.StartTimer()
				if _, err := ts.cluster.Heartbeat(ctx, &optdv1.HeartbeatRequest{ClusterId: id, NodeId: "n", NowS: &now}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(maps), "µs/task")
		})
	}
}

// bigJobRuns numbers the benchmark's clusters (b.N restarts from 0).
var bigJobRuns int

func benchSizes() []int { return []int{2000, 32000, 200000} }
