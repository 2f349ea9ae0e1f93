package server

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/optd/optd/policy"
	"github.com/optd/optd/policy/placement"
	optdv1 "github.com/optd/optd/proto/optd/v1"
	"github.com/optd/optd/store"
)

// BenchmarkPlaceReduces measures PlaceReduces end to end over a loopback
// gRPC connection (decision, durable commit: the store's log synced,
// answer) on a cluster of `slots` slots with 8 jobs holding slots, and
// reports the p50 and p99 latency of the call. Each iteration also submits and finishes a
// job (not timed) so the occupancy stays constant.
func BenchmarkPlaceReduces(b *testing.B) {
	for _, slots := range []int{1000, 10000} {
		for _, pol := range []string{placement.NameGreedy, placement.NameRecedingHorizon} {
			b.Run(fmt.Sprintf("slots=%d/policy=%s", slots, pol), func(b *testing.B) { benchPlace(b, slots, pol) })
		}
	}
}

func benchPlace(b *testing.B, slots int, pol string) {
	ts := startServer(b, "", Options{}, nil)
	ctx := b.Context()
	costs := make([]float64, slots)
	for i := range costs {
		costs[i] = float64(i%97) + 1
	}
	req := costsCluster("bench", pol, costs...)
	// One node, many slots: keeps the registration under the request limit.
	req.Nodes = req.Nodes[:1]
	for _, s := range req.Slots {
		s.NodeId = req.Nodes[0].Id
	}
	if _, err := ts.cluster.RegisterCluster(ctx, req); err != nil {
		b.Fatal(err)
	}
	const held, r = 8, 10
	submitPlace := func(id string) (time.Duration, error) {
		if _, err := ts.cluster.SubmitJob(ctx, &optdv1.SubmitJobRequest{ClusterId: "bench", JobId: id, Reduces: r}); err != nil {
			return 0, err
		}
		start := time.Now()
		_, err := ts.cluster.PlaceReduces(ctx, &optdv1.PlaceReducesRequest{ClusterId: "bench", JobId: id, DataMb: float64(len(id) * 7 % 50)})
		return time.Since(start), err
	}
	for i := range held {
		if _, err := submitPlace(fmt.Sprint("h", i)); err != nil {
			b.Fatal(err)
		}
	}
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		id := fmt.Sprint("j", i)
		d, err := submitPlace(id)
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, d)
		if _, err := ts.cluster.JobFinished(ctx, &optdv1.JobFinishedRequest{ClusterId: "bench", JobId: id}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1e3, "p50_ms")
	b.ReportMetric(float64(lat[(len(lat)*99)/100].Microseconds())/1e3, "p99_ms")
}

// BenchmarkPlacementDecision measures the in-memory part of PlaceReduces
// (free list from the occupancy, policy decision), without gRPC and the
// commit.
func BenchmarkPlacementDecision(b *testing.B) {
	for _, slots := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("slots=%d", slots), func(b *testing.B) {
			costs := make([]float64, slots)
			for i := range costs {
				costs[i] = float64(i%97) + 1
			}
			c, err := clusterFromRequest(context.Background(), costsCluster("b", placement.NameRecedingHorizon, costs...), DefaultLimits())
			if err != nil {
				b.Fatal(err)
			}
			cl, err := loadCluster(&store.State{Cluster: c}, DefaultLimits())
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for i := range b.N {
				free := cl.freeSlots()
				if _, err := cl.policy.Place(&policy.PlacementRequest{Free: free, X: float64(i % 50), R: 10}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
