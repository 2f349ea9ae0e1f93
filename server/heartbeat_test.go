package server

import (
	"context"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/optd/optd/ledger"
	optdv1 "github.com/optd/optd/proto/optd/v1"
	"github.com/optd/optd/store"
)

// hbCluster is a two-rack cluster of three nodes with memory and vcores
// under the heartbeat policy spec, and no reduce slots for PlaceReduces.
func hbCluster(id, spec string) *optdv1.RegisterClusterRequest {
	capacity := map[string]float64{"memory_mb": 8192, "vcores": 4}
	zero := 0.0
	return &optdv1.RegisterClusterRequest{ClusterId: id,
		Nodes:     []*optdv1.Node{{Id: "a", Rack: "r1", Capacity: capacity}, {Id: "b", Rack: "r1", Capacity: capacity}, {Id: "c", Rack: "r2", Capacity: capacity}},
		Heartbeat: &optdv1.HeartbeatPolicy{Spec: spec, Resources: []string{"memory_mb", "vcores"}, SlowStart: &zero}}
}

// hbJob is a job of two maps (inputs on a and c) and one reduce, 2 GB and
// one vcore a task.
func hbJob(cluster, id string) *optdv1.SubmitJobRequest {
	d := map[string]float64{"memory_mb": 2048, "vcores": 1}
	now := 0.0
	return &optdv1.SubmitJobRequest{ClusterId: cluster, JobId: id, SubmitS: &now, Maps: 2, Reduces: 1, MapDemand: d, ReduceDemand: d,
		Stages: []*optdv1.JobStage{{Maps: []*optdv1.MapInput{{Nodes: []string{"a"}}, {Nodes: []string{"c"}}}, Reduces: 1}}}
}

func at(s float64) *float64 { return &s }

// TestHeartbeatFlow runs one job through heartbeats: FIFO starts both maps
// node-local and the reduce, completions finish the job, and the state
// survives a restart of the server at every step.
func TestHeartbeatFlow(t *testing.T) {
	dir := t.TempDir()
	ts := startServer(t, dir, Options{}, nil)
	ctx := ctxT(t)
	if _, err := ts.cluster.RegisterCluster(ctx, hbCluster("h", "fifo")); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.cluster.SubmitJob(ctx, hbJob("h", "j1")); err != nil {
		t.Fatal(err)
	}
	r, err := ts.cluster.Heartbeat(ctx, &optdv1.HeartbeatRequest{ClusterId: "h", NodeId: "a", NowS: at(1)})
	if err != nil {
		t.Fatal(err)
	}
	// Slow start 0: the reduce may start with the maps; node a's map
	// starts node-local.
	var kinds []string
	for _, a := range r.GetActions() {
		kinds = append(kinds, a.GetKind()+"/"+a.GetTaskType()+"/"+a.GetLocality())
		if a.GetAttemptId() <= 0 || a.GetResources()["memory_mb"] != 2048 || a.GetReason() == "" {
			t.Errorf("action %v: want an attempt id, the demand and a reason", a)
		}
	}
	if got := strings.Join(kinds, " "); !strings.Contains(got, "start/map/node_local") {
		t.Fatalf("node a's actions = %s, want the node-local map among them", got)
	}
	state := func() *optdv1.ClusterState {
		s, err := ts.cluster.GetClusterState(ctx, &optdv1.GetClusterStateRequest{ClusterId: "h"})
		if err != nil {
			t.Fatal(err)
		}
		return s.GetState()
	}
	restart := func() {
		before := state()
		ts.stop()
		ts = startServer(t, dir, Options{}, nil)
		if after := state(); !proto.Equal(before, after) {
			t.Fatalf("after a restart:\n%v\nbefore:\n%v", after, before)
		}
	}
	if s := state(); s.GetRunningAttempts() != int32(len(r.GetActions())) || s.GetActiveJobs() != 1 {
		t.Fatalf("state = %v", s)
	}
	restart()
	var attempts []int64
	for _, a := range r.GetActions() {
		attempts = append(attempts, a.GetAttemptId())
	}
	// Node c takes what a left, if anything.
	r2, err := ts.cluster.Heartbeat(ctx, &optdv1.HeartbeatRequest{ClusterId: "h", NodeId: "c", NowS: at(2)})
	if err != nil {
		t.Fatal(err)
	}
	if len(attempts)+len(r2.GetActions()) != 3 {
		t.Fatalf("a started %d and c %d attempts, want the job's 3 tasks", len(attempts), len(r2.GetActions()))
	}
	onC := len(r2.GetActions())
	for _, a := range r2.GetActions() {
		attempts = append(attempts, a.GetAttemptId())
	}
	restart()
	// Finish everything: c's attempts out of band, a's in its heartbeat.
	split := len(attempts) - onC
	if _, err := ts.cluster.Heartbeat(ctx, &optdv1.HeartbeatRequest{ClusterId: "h", NodeId: "c", NowS: at(5), Finished: attempts[split:], ReportOnly: true}); err != nil {
		t.Fatal(err)
	}
	r3, err := ts.cluster.Heartbeat(ctx, &optdv1.HeartbeatRequest{ClusterId: "h", NodeId: "a", NowS: at(9), Finished: attempts[:split]})
	if err != nil {
		t.Fatal(err)
	}
	if len(r3.GetActions()) != 0 || len(r3.GetFinishedJobs()) != 1 || r3.GetFinishedJobs()[0] != "j1" {
		t.Fatalf("last heartbeat = %v, want j1 finished and nothing to do", r3)
	}
	if s := state(); s.GetRunningAttempts() != 0 || s.GetActiveJobs() != 0 {
		t.Fatalf("state = %v", s)
	}
	restart()
	if _, err := ts.cluster.JobFinished(ctx, &optdv1.JobFinishedRequest{ClusterId: "h", JobId: "j1"}); err != nil {
		t.Fatal(err)
	}
	// The idle cluster's log was compacted to one snapshot; attempt ids
	// keep counting.
	st, err := ts.store.Load(ctx, "h")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Log) != 1 {
		t.Fatalf("idle cluster's log has %d events, want its snapshot only", len(st.Log))
	}
	if _, err := ts.cluster.SubmitJob(ctx, hbJob("h", "j2")); err != nil {
		t.Fatal(err)
	}
	r4, err := ts.cluster.Heartbeat(ctx, &optdv1.HeartbeatRequest{ClusterId: "h", NodeId: "a", NowS: at(10)})
	if err != nil || len(r4.GetActions()) == 0 || r4.GetActions()[0].GetAttemptId() != slices.Max(attempts)+1 {
		t.Fatalf("after compaction: %v, %v; want attempt ids from %d on", r4, err, slices.Max(attempts)+1)
	}
}

// firstHeartbeat registers heartbeat cluster "h" under spec, submits job
// "j1" and returns node a's first heartbeat at t = 1 (which starts work).
func firstHeartbeat(t *testing.T, ts *testServer, spec string) *optdv1.HeartbeatResponse {
	t.Helper()
	ctx := ctxT(t)
	if _, err := ts.cluster.RegisterCluster(ctx, hbCluster("h", spec)); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.cluster.SubmitJob(ctx, hbJob("h", "j1")); err != nil {
		t.Fatal(err)
	}
	r, err := ts.cluster.Heartbeat(ctx, &optdv1.HeartbeatRequest{ClusterId: "h", NodeId: "a", NowS: at(1)})
	if err != nil || len(r.GetActions()) == 0 {
		t.Fatalf("first heartbeat = %v, %v", r, err)
	}
	return r
}

// TestHeartbeatBadInputs: each bad call gets its code and a message naming
// what is wrong, and changes nothing.
func TestHeartbeatBadInputs(t *testing.T) {
	ts := startServer(t, "", Options{}, nil)
	ctx := ctxT(t)
	r := firstHeartbeat(t, ts, "fifo+late")
	var id int64
	for _, a := range r.GetActions() {
		if a.GetTaskType() == "map" {
			id = a.GetAttemptId()
		}
	}
	if id == 0 {
		t.Fatalf("no map started on a: %v", r)
	}
	before, err := ts.cluster.GetClusterState(ctx, &optdv1.GetClusterStateRequest{ClusterId: "h"})
	if err != nil {
		t.Fatal(err)
	}
	beat := func(mod func(*optdv1.HeartbeatRequest)) func() error {
		return func() error {
			req := &optdv1.HeartbeatRequest{ClusterId: "h", NodeId: "a", NowS: at(2)}
			mod(req)
			_, err := ts.cluster.Heartbeat(ctx, req)
			return err
		}
	}
	register := func(mod func(*optdv1.RegisterClusterRequest)) func() error {
		return func() error {
			req := hbCluster("h2", "fifo")
			mod(req)
			_, err := ts.cluster.RegisterCluster(ctx, req)
			return err
		}
	}
	submit := func(mod func(*optdv1.SubmitJobRequest)) func() error {
		return func() error {
			req := hbJob("h", "j9")
			mod(req)
			_, err := ts.cluster.SubmitJob(ctx, req)
			return err
		}
	}
	cases := []struct {
		name string
		call func() error
		code codes.Code
		msg  string
	}{
		{"unknown node", beat(func(r *optdv1.HeartbeatRequest) { r.NodeId = "z" }), codes.NotFound, `node "z"`},
		{"unknown attempt", beat(func(r *optdv1.HeartbeatRequest) { r.Finished = []int64{id, 99} }), codes.NotFound, "finished[1]: attempt 99"},
		{"attempt of another node", beat(func(r *optdv1.HeartbeatRequest) { r.NodeId = "b"; r.Failed = []int64{id} }), codes.NotFound, `not running on node "b"`},
		{"finished and failed", beat(func(r *optdv1.HeartbeatRequest) { r.Finished, r.Failed = []int64{id}, []int64{id} }), codes.InvalidArgument, "also in finished"},
		{"bad phase", beat(func(r *optdv1.HeartbeatRequest) {
			r.Running = []*optdv1.AttemptStatus{{AttemptId: id, Phase: "copy", Progress: 0.5}}
		}), codes.InvalidArgument, `running[0].phase = copy`},
		{"phase of the other type", beat(func(r *optdv1.HeartbeatRequest) {
			r.Running = []*optdv1.AttemptStatus{{AttemptId: id, Phase: "sort", Progress: 0.5}}
		}), codes.InvalidArgument, "not a phase"},
		{"progress > 1", beat(func(r *optdv1.HeartbeatRequest) {
			r.Running = []*optdv1.AttemptStatus{{AttemptId: id, Phase: "map", Progress: 1.5}}
		}), codes.InvalidArgument, "progress = 1.5"},
		{"fetch rate of a map", beat(func(r *optdv1.HeartbeatRequest) {
			r.Running = []*optdv1.AttemptStatus{{AttemptId: id, Phase: "map", Progress: 0.5, FetchMbps: 10}}
		}), codes.InvalidArgument, "running[0]: fetch_mbps = 10"},
		{"negative fetch rate", beat(func(r *optdv1.HeartbeatRequest) {
			r.Running = []*optdv1.AttemptStatus{{AttemptId: id, Phase: "map", Progress: 0.5, FetchMbps: -1}}
		}), codes.InvalidArgument, "fetch_mbps = -1"},
		{"finished before started", beat(func(r *optdv1.HeartbeatRequest) { r.NowS = at(0.5); r.Finished = []int64{id} }), codes.InvalidArgument, "before"},
		{"unknown cluster", beat(func(r *optdv1.HeartbeatRequest) { r.ClusterId = "nope" }), codes.NotFound, `cluster "nope"`},
		{"unknown heartbeat policy", register(func(r *optdv1.RegisterClusterRequest) { r.Heartbeat.Spec = "fifo+magic" }), codes.InvalidArgument, "heartbeat.spec"},
		{"capacity outside resources", register(func(r *optdv1.RegisterClusterRequest) { r.Nodes[1].Capacity = map[string]float64{"gpus": 1} }), codes.InvalidArgument, "nodes[1].capacity = gpus"},
		{"fractional capacity", register(func(r *optdv1.RegisterClusterRequest) { r.Nodes[0].Capacity = map[string]float64{"vcores": 1.5} }), codes.InvalidArgument, `nodes[0].capacity["vcores"] = 1.5`},
		{"slow start > 1", register(func(r *optdv1.RegisterClusterRequest) { r.Heartbeat.SlowStart = at(2) }), codes.InvalidArgument, "heartbeat.slow_start = 2"},
		{"negative map slots", register(func(r *optdv1.RegisterClusterRequest) { r.Nodes[2].MapSlots = -1 }), codes.InvalidArgument, "nodes[2].map_slots = -1"},
		{"duplicate job", submit(func(r *optdv1.SubmitJobRequest) { r.JobId = "j1"; r.Queue = "other" }), codes.AlreadyExists, `job "j1"`},
		{"unknown demand resource", submit(func(r *optdv1.SubmitJobRequest) { r.MapDemand = map[string]float64{"gpus": 1} }), codes.InvalidArgument, "map_demand = gpus"},
		{"replica on unknown node", submit(func(r *optdv1.SubmitJobRequest) { r.Stages[0].Maps[1].Nodes = []string{"zz"} }), codes.InvalidArgument, `unknown node "zz"`},
		{"too many tasks", submit(func(r *optdv1.SubmitJobRequest) { r.Stages = nil; r.Maps = 1 << 30 }), codes.InvalidArgument, "limits.max_tasks"},
		{"negative stage reduces", submit(func(r *optdv1.SubmitJobRequest) { r.Stages[0].Reduces = -2 }), codes.InvalidArgument, "stages[0].reduces = -2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wantCode(t, tc.call(), tc.code, tc.msg)
			after, err := ts.cluster.GetClusterState(ctx, &optdv1.GetClusterStateRequest{ClusterId: "h"})
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(before, after) {
				t.Errorf("state changed:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
	if ids, _ := ts.store.List(); len(ids) != 1 {
		t.Errorf("stored clusters = %v, want [h]", ids)
	}
	// The refused heartbeats left the attempt running: it still finishes.
	if _, err := ts.cluster.Heartbeat(ctx, &optdv1.HeartbeatRequest{ClusterId: "h", NodeId: "a", NowS: at(3), Finished: []int64{id}}); err != nil {
		t.Fatal(err)
	}
}

// FuzzHeartbeat feeds arbitrary heartbeats to a cluster with running
// attempts: a refused one is a validation or not-found error and changes
// nothing (the ledger's view is the same), an accepted one keeps every
// running attempt within its node's capacity.
func FuzzHeartbeat(f *testing.F) {
	for _, r := range []*optdv1.HeartbeatRequest{
		{NodeId: "a", NowS: at(2), Running: []*optdv1.AttemptStatus{{AttemptId: 1, Phase: "map", Progress: 0.3}}},
		{NodeId: "a", NowS: at(2), Finished: []int64{1}, Failed: []int64{2}},
		{NodeId: "b", Running: []*optdv1.AttemptStatus{{AttemptId: 2, Phase: "shuffle", Progress: 2}}},
		{NodeId: "a", ReportOnly: true, Finished: []int64{2, 2}},
		{NodeId: "a", NowS: at(3), Finished: []int64{1}, OutputMb: map[int64]float64{1: 64}},
		{NodeId: "a", NowS: at(3), Finished: []int64{1}, OutputMb: map[int64]float64{2: 64, 1: -3}},
		{NodeId: "b", Running: []*optdv1.AttemptStatus{{AttemptId: 2, Phase: "shuffle", Progress: 0.5, FetchMbps: 12.5}}},
		{NodeId: "b", Running: []*optdv1.AttemptStatus{{AttemptId: 2, Phase: "shuffle", Progress: 0.5, FetchMbps: -1}}},
	} {
		data, _ := proto.Marshal(r)
		f.Add(data)
	}
	setup := func(t *testing.T) *cluster {
		c, err := clusterFromRequest(context.Background(), hbCluster("f", "fair+late"), DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		cl, err := loadCluster(&store.State{Cluster: c}, DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		spec, err := jobSpec(hbJob("f", "j"), c.Heartbeat, DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		if err := cl.sched.Ledger.Submit(spec); err != nil {
			t.Fatal(err)
		}
		if _, err := cl.sched.Heartbeat(context.Background(), ledger.Beat{Node: "a", NowS: 1}); err != nil {
			t.Fatal(err)
		}
		return cl
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var req optdv1.HeartbeatRequest
		if proto.Unmarshal(data, &req) != nil {
			return
		}
		cl := setup(t)
		before, _ := stateJSON(cl)
		b, err := beat(&req)
		if err == nil {
			_, err = cl.sched.Heartbeat(context.Background(), b)
		}
		if err != nil {
			if c := codeOf(context.Background(), err); c != codes.InvalidArgument && c != codes.NotFound {
				t.Fatalf("error %v has code %v", err, c)
			}
			if after, _ := stateJSON(cl); after != before {
				t.Fatalf("refused heartbeat %v changed the ledger", &req)
			}
			return
		}
		for _, n := range cl.sched.Ledger.View(0).Nodes {
			for _, v := range n.Free {
				if v < 0 {
					t.Fatalf("node %s over capacity after %v", n.ID, &req)
				}
			}
		}
	})
}

// stateJSON summarizes the ledger's view (nodes with their attempts'
// phases, then the jobs), for comparisons.
func stateJSON(c *cluster) (string, error) {
	v := c.sched.Ledger.View(0)
	var b strings.Builder
	for _, n := range v.Nodes {
		b.WriteString(n.ID)
		for _, a := range n.Running {
			b.WriteString(" " + a.Phase.String())
		}
	}
	for _, j := range v.Jobs {
		b.WriteString(j.ID)
	}
	return b.String(), nil
}

// TestHeartbeatExplains: a heartbeat whose only candidates delay scheduling
// skips starts nothing and, asked to explain, says so (stage, job, task,
// reason); not asked, it sends no vetoes; either way the vetoes are
// counted in optd_heartbeat_vetoes_total.
func TestHeartbeatExplains(t *testing.T) {
	m := NewMetrics()
	ts := startServer(t, "", Options{Metrics: m}, nil)
	ctx := ctxT(t)
	if _, err := ts.cluster.RegisterCluster(ctx, hbCluster("e", "fifo+delay-scheduling")); err != nil {
		t.Fatal(err)
	}
	job := hbJob("e", "j1")
	job.Reduces, job.Stages[0].Reduces = 0, 0 // maps only: every candidate has input
	if _, err := ts.cluster.SubmitJob(ctx, job); err != nil {
		t.Fatal(err)
	}
	// Node b holds neither map's input (a and c do): both candidates are
	// rack-local or off-rack, and the job has not waited.
	r, err := ts.cluster.Heartbeat(ctx, &optdv1.HeartbeatRequest{ClusterId: "e", NodeId: "b", NowS: at(1), Explain: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.GetActions()) != 0 || len(r.GetVetoes()) != 1 {
		t.Fatalf("actions %v, vetoes %v: want no start and one veto", r.GetActions(), r.GetVetoes())
	}
	v := r.GetVetoes()[0]
	if v.GetStage() != "delay-scheduling" || v.GetKind() != "start" || v.GetJobId() != "j1" || v.GetTaskType() != "map" || !strings.Contains(v.GetReason(), "skip j1") {
		t.Fatalf("veto %v", v)
	}
	r, err = ts.cluster.Heartbeat(ctx, &optdv1.HeartbeatRequest{ClusterId: "e", NodeId: "b", NowS: at(2)})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.GetVetoes()) != 0 || len(r.GetActions()) != 0 {
		t.Fatalf("without explain: vetoes %v, actions %v", r.GetVetoes(), r.GetActions())
	}
	if got := counter(t, m, "optd_heartbeat_vetoes_total", "stage", "delay-scheduling"); got != 2 {
		t.Fatalf("optd_heartbeat_vetoes_total{stage=delay-scheduling} = %v, want 2", got)
	}
	// After W1 = 5 s of waiting the rack-local map starts.
	r, err = ts.cluster.Heartbeat(ctx, &optdv1.HeartbeatRequest{ClusterId: "e", NodeId: "b", NowS: at(7), Explain: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.GetActions()) != 1 || r.GetActions()[0].GetLocality() != "rack_local" {
		t.Fatalf("after the wait: actions %v, vetoes %v", r.GetActions(), r.GetVetoes())
	}
}

// counter reads a counter of m with the given label.
func counter(t *testing.T, m *Metrics, name, label, value string) float64 {
	t.Helper()
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, c := range f.GetMetric() {
			for _, l := range c.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return c.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// TestHeartbeatPlacesReduces: a cluster registered with a placement policy
// as well starts a job's reducer only on the node its policy chose from the
// finished maps' reported output (greedy: where the output is), refuses it
// elsewhere with the stage's veto, keeps the plan across a restart, and
// refuses a bad output_mb naming it.
func TestHeartbeatPlacesReduces(t *testing.T) {
	dir := t.TempDir()
	ts := startServer(t, dir, Options{}, nil)
	ctx := ctxT(t)
	req := hbCluster("p", "fifo")
	half := 0.5
	req.Heartbeat.SlowStart = &half
	req.Policy = &optdv1.PlacementPolicy{Name: "greedy"}
	if _, err := ts.cluster.RegisterCluster(ctx, req); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.cluster.SubmitJob(ctx, hbJob("p", "j")); err != nil {
		t.Fatal(err)
	}
	// Node c runs the map whose input it holds; it finishes with 100 MB.
	r, err := ts.cluster.Heartbeat(ctx, &optdv1.HeartbeatRequest{ClusterId: "p", NodeId: "c", NowS: at(1)})
	if err != nil || len(r.GetActions()) == 0 {
		t.Fatalf("node c: %v, %v", r, err)
	}
	m := r.GetActions()[0].GetAttemptId()
	_, err = ts.cluster.Heartbeat(ctx, &optdv1.HeartbeatRequest{ClusterId: "p", NodeId: "c", NowS: at(2), Finished: []int64{m}, OutputMb: map[int64]float64{m: -1}, ReportOnly: true})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "output_mb") {
		t.Fatalf("a negative output: %v, want InvalidArgument naming output_mb", err)
	}
	if _, err := ts.cluster.Heartbeat(ctx, &optdv1.HeartbeatRequest{ClusterId: "p", NodeId: "c", NowS: at(2), Finished: []int64{m}, OutputMb: map[int64]float64{m: 100}, ReportOnly: true}); err != nil {
		t.Fatal(err)
	}
	// Node a may start its map but not the reduce, planned on c.
	r, err = ts.cluster.Heartbeat(ctx, &optdv1.HeartbeatRequest{ClusterId: "p", NodeId: "a", NowS: at(3), Explain: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range r.GetActions() {
		if a.GetTaskType() == "reduce" {
			t.Fatalf("node a started the reduce: %v", a)
		}
	}
	if len(r.GetVetoes()) != 1 || r.GetVetoes()[0].GetStage() != "reduce-placement" || !strings.Contains(r.GetVetoes()[0].GetReason(), "go to c×1") {
		t.Fatalf("node a's vetoes = %v, want the reduce refused for node c", r.GetVetoes())
	}
	ts.stop()
	ts = startServer(t, dir, Options{}, nil)
	r, err = ts.cluster.Heartbeat(ctx, &optdv1.HeartbeatRequest{ClusterId: "p", NodeId: "c", NowS: at(4)})
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for _, a := range r.GetActions() {
		if a.GetTaskType() == "reduce" {
			reasons = append(reasons, a.GetReason())
		}
	}
	if len(reasons) != 1 || !strings.Contains(reasons[0], "2/1·100 = 200 MB") || !strings.Contains(reasons[0], "c is chosen") {
		t.Fatalf("after a restart node c's reduce starts = %q, want one placed with X from the 100 MB reported", reasons)
	}
}
