package server

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/optd/optd/ledger"
	optdv1 "github.com/optd/optd/proto/optd/v1"
	"github.com/optd/optd/store"
)

// benchCluster is a 100-node, 10-rack cluster (8 GB, 4 vcores a node) under
// spec with 10 jobs of 400 maps (inputs on 3 nodes) and 40 reduces each:
// the size the Heartbeat load target names.
func benchCluster(spec string) (*optdv1.RegisterClusterRequest, []*optdv1.SubmitJobRequest) {
	const nodes, jobs, maps, reduces = 100, 10, 400, 40
	zero := 0.05
	reg := &optdv1.RegisterClusterRequest{ClusterId: "hb",
		Heartbeat: &optdv1.HeartbeatPolicy{Spec: spec, Resources: []string{"memory_mb", "vcores"}, SlowStart: &zero}}
	for i := range nodes {
		reg.Nodes = append(reg.Nodes, &optdv1.Node{Id: fmt.Sprint("n", i), Rack: fmt.Sprint("r", i%10),
			Capacity: map[string]float64{"memory_mb": 8192, "vcores": 4}})
	}
	d := map[string]float64{"memory_mb": 2048, "vcores": 1}
	var subs []*optdv1.SubmitJobRequest
	for j := range jobs {
		now := float64(j)
		st := &optdv1.JobStage{Reduces: reduces}
		for m := range maps {
			st.Maps = append(st.Maps, &optdv1.MapInput{Nodes: []string{fmt.Sprint("n", (m*7+j)%nodes), fmt.Sprint("n", (m*13+j+1)%nodes), fmt.Sprint("n", (m*29+j+2)%nodes)}})
		}
		subs = append(subs, &optdv1.SubmitJobRequest{ClusterId: "hb", JobId: fmt.Sprint("j", j), SubmitS: &now, Maps: maps, Reduces: reduces,
			MapDemand: d, ReduceDemand: d, Stages: []*optdv1.JobStage{st}})
	}
	return reg, subs
}

// BenchmarkHeartbeatDecision measures the in-memory part of a heartbeat on
// the benchCluster (view of the ledger, pipeline, applying the actions), for
// a node that reports one completion and gets the freed capacity refilled:
// the busy steady state.
func BenchmarkHeartbeatDecision(b *testing.B) {
	for _, spec := range []string{"fifo", "fair", "drf+late", "haste-a"} {
		b.Run("policy="+spec, func(b *testing.B) {
			reg, subs := benchCluster(spec)
			c, err := clusterFromRequest(context.Background(), reg, DefaultLimits())
			if err != nil {
				b.Fatal(err)
			}
			cl, err := loadCluster(&store.State{Cluster: c}, DefaultLimits())
			if err != nil {
				b.Fatal(err)
			}
			next := 0
			submit := func() {
				s := proto.Clone(subs[next%len(subs)]).(*optdv1.SubmitJobRequest)
				s.JobId = fmt.Sprint("j", next)
				next++
				spec, err := jobSpec(s, c.Heartbeat, DefaultLimits())
				if err == nil {
					err = cl.sched.Ledger.Submit(spec)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			for range subs {
				submit()
			}
			running := map[string][]int{}
			now := 100.0
			beat := func(node string, finished []int) {
				d, err := cl.sched.Heartbeat(context.Background(), ledger.Beat{Node: node, NowS: now, Finished: finished})
				if err != nil {
					b.Fatal(err)
				}
				for _, a := range d.Applied {
					if a.Attempt > 0 && a.Source >= 0 && (a.Kind.String() == "start" || a.Kind.String() == "speculate") {
						running[node] = append(running[node], a.Attempt)
					}
				}
			}
			for _, n := range reg.Nodes {
				beat(n.Id, nil)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				now += 0.01
				node := reg.Nodes[i%len(reg.Nodes)].Id
				var fin []int
				if r := running[node]; len(r) > 0 {
					fin, running[node] = r[:1], r[1:]
				}
				beat(node, fin)
				if cl.sched.Ledger.Active() < len(subs) {
					// Keep the load steady: a finished job is replaced.
					b.StopTimer()
					submit()
					b.StartTimer()
				}
			}
			b.ReportMetric(float64(next-len(subs)), "jobs_done")
		})
	}
}

// BenchmarkHeartbeat measures Heartbeat end to end over a loopback gRPC
// connection on the benchCluster under FIFO: every call reports one of the
// node's attempts finished, so its capacity is refilled and the change is
// committed (fsync) before the answer. Reports p50 and p99.
func BenchmarkHeartbeat(b *testing.B) {
	ts := startServer(b, "", Options{}, nil)
	ctx := b.Context()
	reg, subs := benchCluster("fifo")
	if _, err := ts.cluster.RegisterCluster(ctx, reg); err != nil {
		b.Fatal(err)
	}
	for _, s := range subs {
		if _, err := ts.cluster.SubmitJob(ctx, s); err != nil {
			b.Fatal(err)
		}
	}
	running := map[string][]int64{}
	now := 100.0
	next := len(subs)
	beat := func(node string, finished []int64) time.Duration {
		start := time.Now()
		r, err := ts.cluster.Heartbeat(ctx, &optdv1.HeartbeatRequest{ClusterId: "hb", NodeId: node, NowS: &now, Finished: finished})
		d := time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		for _, id := range r.GetFinishedJobs() {
			// Keep the load steady: a finished job is replaced.
			b.StopTimer()
			s := proto.Clone(subs[next%len(subs)]).(*optdv1.SubmitJobRequest)
			s.JobId = fmt.Sprint("j", next)
			next++
			if _, err := ts.cluster.JobFinished(ctx, &optdv1.JobFinishedRequest{ClusterId: "hb", JobId: id}); err != nil {
				b.Fatal(err)
			}
			if _, err := ts.cluster.SubmitJob(ctx, s); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		for _, a := range r.GetActions() {
			if a.GetKind() == "start" {
				running[node] = append(running[node], a.GetAttemptId())
			}
		}
		return d
	}
	for _, n := range reg.Nodes {
		beat(n.Id, nil)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		now += 0.01
		node := reg.Nodes[i%len(reg.Nodes)].Id
		var fin []int64
		if r := running[node]; len(r) > 0 {
			fin, running[node] = r[:1], r[1:]
		}
		lat = append(lat, beat(node, fin))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1e3, "p50_ms")
	b.ReportMetric(float64(lat[(len(lat)*99)/100].Microseconds())/1e3, "p99_ms")
}
