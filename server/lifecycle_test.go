package server

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	optdv1 "github.com/optd/optd/proto/optd/v1"
	"github.com/optd/optd/store"
)

// limitModel predicts what the holding limits allow: clusters with their
// slots and their unfinished jobs' tasks.
type limitModel struct {
	lim      Limits
	clusters map[string]*modelCluster
}

type modelCluster struct {
	slots int
	jobs  map[string]int // job -> tasks
}

func (m *limitModel) totals() (clusters, slots, jobs, tasks int) {
	for _, c := range m.clusters {
		clusters++
		slots += c.slots
		jobs += len(c.jobs)
		for _, t := range c.jobs {
			tasks += t
		}
	}
	return
}

// registerRefusal is the limit a cluster of n slots would break ("" none).
func (m *limitModel) registerRefusal(slots int) string {
	c, s, _, _ := m.totals()
	switch {
	case slots > m.lim.MaxSlots:
		return "limits.max_slots"
	case c+1 > m.lim.MaxClusters:
		return "limits.max_clusters"
	case s+slots > m.lim.MaxTotalSlots:
		return "limits.max_total_slots"
	}
	return ""
}

func (m *limitModel) submitRefusal(id string, tasks int) string {
	c := m.clusters[id]
	ct := 0
	for _, t := range c.jobs {
		ct += t
	}
	_, _, j, t := m.totals()
	switch {
	case len(c.jobs)+1 > m.lim.MaxJobs:
		return "limits.max_jobs"
	case ct+tasks > m.lim.MaxClusterTasks:
		return "limits.max_cluster_tasks"
	case j+1 > m.lim.MaxTotalJobs:
		return "limits.max_total_jobs"
	case t+tasks > m.lim.MaxTotalTasks:
		return "limits.max_total_tasks"
	}
	return ""
}

// wantOutcome checks err against a predicted refusal: nil if none,
// ResourceExhausted naming the limit's key otherwise.
func wantOutcome(t *testing.T, what string, err error, refusal string) {
	t.Helper()
	if refusal == "" {
		if err != nil {
			t.Fatalf("%s: %v, want success", what, err)
		}
		return
	}
	st, _ := status.FromError(err)
	if st.Code() != codes.ResourceExhausted || !strings.Contains(st.Message(), refusal+" = ") {
		t.Fatalf("%s: %v, want ResourceExhausted naming %s", what, err, refusal)
	}
}

// TestLimitsHoldUnderRandomLifecycles drives random sequences of
// RegisterCluster, SubmitJob, JobFinished and DeleteCluster (and server
// restarts) against small limits, per cluster and in total, and checks
// every answer against the model's prediction and ListClusters against the
// model: the limits refuse exactly what would exceed them, deleting and
// finishing give the room back, and all of it survives restarts.
func TestLimitsHoldUnderRandomLifecycles(t *testing.T) {
	lim := Limits{MaxClusters: 4, MaxSlots: 6, MaxTotalSlots: 14, MaxJobs: 3, MaxTotalJobs: 7, MaxClusterTasks: 40, MaxTotalTasks: 90}
	seeds := 6
	if testing.Short() {
		seeds = 2
	}
	refused := map[string]int{}
	defer func() {
		t.Logf("refusals by limit: %v", refused)
		delete(refused, "")
		if len(refused) < 4 {
			t.Errorf("only %d kinds of refusal exercised: %v", len(refused), refused)
		}
	}()
	for seed := range uint64(seeds) {
		rng := rand.New(rand.NewPCG(seed, 19))
		dir := t.TempDir()
		ts := startServer(t, dir, Options{Limits: lim}, nil)
		ctx := ctxT(t)
		m := &limitModel{lim: lim.withDefaults(), clusters: map[string]*modelCluster{}}
		for step := range 120 {
			what := fmt.Sprintf("seed %d step %d", seed, step)
			ids := slices.Sorted(func(yield func(string) bool) {
				for id := range m.clusters {
					if !yield(id) {
						return
					}
				}
			})
			switch op := rng.IntN(10); {
			case op < 3 || len(ids) == 0:
				id, slots := fmt.Sprint("c", rng.IntN(8)), 1+rng.IntN(7)
				if _, ok := m.clusters[id]; ok {
					continue
				}
				req := &optdv1.RegisterClusterRequest{ClusterId: id, Nodes: []*optdv1.Node{{Id: "n", ReduceSlots: int32(slots), Capacity: map[string]float64{"vcores": 4}}},
					Heartbeat: &optdv1.HeartbeatPolicy{Spec: "fifo", Resources: []string{"vcores"}}}
				_, err := ts.cluster.RegisterCluster(ctx, req)
				refusal := m.registerRefusal(slots)
				wantOutcome(t, what+" register "+id, err, refusal)
				refused[refusal]++
				if refusal == "" {
					m.clusters[id] = &modelCluster{slots: slots, jobs: map[string]int{}}
				}
			case op < 7:
				id := ids[rng.IntN(len(ids))]
				job, maps := fmt.Sprint("j", rng.IntN(6)), rng.IntN(25)
				if _, ok := m.clusters[id].jobs[job]; ok {
					continue
				}
				_, err := ts.cluster.SubmitJob(ctx, &optdv1.SubmitJobRequest{ClusterId: id, JobId: job, Maps: int32(maps), Reduces: 1, SubmitS: at(0)})
				refusal := m.submitRefusal(id, maps+1)
				wantOutcome(t, what+" submit "+id+"/"+job, err, refusal)
				refused[refusal]++
				if refusal == "" {
					m.clusters[id].jobs[job] = maps + 1
				}
			case op < 9:
				id := ids[rng.IntN(len(ids))]
				job := fmt.Sprint("j", rng.IntN(6))
				r, err := ts.cluster.JobFinished(ctx, &optdv1.JobFinishedRequest{ClusterId: id, JobId: job})
				_, had := m.clusters[id].jobs[job]
				if err != nil || r.GetFound() != had {
					t.Fatalf("%s: JobFinished %s/%s = %v, %v; want found %v", what, id, job, r, err, had)
				}
				delete(m.clusters[id].jobs, job)
			default:
				id := ids[rng.IntN(len(ids))]
				for range 2 { // the second is a retry
					r, err := ts.cluster.DeleteCluster(ctx, &optdv1.DeleteClusterRequest{ClusterId: id})
					_, had := m.clusters[id]
					if err != nil || r.GetExisted() != had {
						t.Fatalf("%s: DeleteCluster %s = %v, %v; want existed %v", what, id, r, err, had)
					}
					delete(m.clusters, id)
				}
			}
			if step%40 == 39 {
				ts.stop()
				ts = startServer(t, dir, Options{Limits: lim}, nil)
			}
			checkListed(t, what, ts, m)
		}
	}
}

// checkListed compares ListClusters, page by page, with the model.
func checkListed(t *testing.T, what string, ts *testServer, m *limitModel) {
	t.Helper()
	var got []*optdv1.ClusterSummary
	token := ""
	for {
		r, err := ts.cluster.ListClusters(ctxT(t), &optdv1.ListClustersRequest{PageSize: 2, PageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r.GetClusters()...)
		if token = r.GetNextPageToken(); token == "" {
			break
		}
	}
	if len(got) != len(m.clusters) {
		t.Fatalf("%s: ListClusters = %v, model has %d clusters", what, got, len(m.clusters))
	}
	for k, c := range got {
		mc := m.clusters[c.GetClusterId()]
		tasks := 0
		for _, n := range mc.jobs {
			tasks += n
		}
		if mc == nil || (k > 0 && got[k-1].GetClusterId() >= c.GetClusterId()) || int(c.GetSlots()) != mc.slots ||
			int(c.GetUnfinishedJobs()) != len(mc.jobs) || int(c.GetTasks()) != tasks || c.GetNodes() != 1 {
			t.Fatalf("%s: ListClusters[%d] = %v, model %+v", what, k, c, mc)
		}
	}
}

// TestRetriesAreSafe: every state-changing call, sent again after it was
// applied (the client saw a timeout), answers as the first time and
// changes nothing more; a retry that differs is refused.
func TestRetriesAreSafe(t *testing.T) {
	ts := startServer(t, "", Options{}, nil)
	ctx := ctxT(t)
	reg := hbCluster("h", "fifo")
	for range 2 {
		if _, err := ts.cluster.RegisterCluster(ctx, reg); err != nil {
			t.Fatal(err)
		}
	}
	for k := range 2 {
		r, err := ts.cluster.SubmitJob(ctx, hbJob("h", "j1"))
		if err != nil || r.GetRetried() != (k == 1) {
			t.Fatalf("SubmitJob #%d = %v, %v", k, r, err)
		}
	}
	before := clusterState(t, ts, "h")
	first, err := ts.cluster.Heartbeat(ctx, &optdv1.HeartbeatRequest{ClusterId: "h", NodeId: "a", NowS: at(1), Seq: 7})
	if err != nil || len(first.GetActions()) == 0 {
		t.Fatalf("Heartbeat = %v, %v; want starts", first, err)
	}
	applied := clusterState(t, ts, "h")
	if proto.Equal(before, applied) {
		t.Fatal("the heartbeat changed nothing")
	}
	again, err := ts.cluster.Heartbeat(ctx, &optdv1.HeartbeatRequest{ClusterId: "h", NodeId: "a", NowS: at(1), Seq: 7})
	if err != nil || !again.GetRetried() {
		t.Fatalf("retried Heartbeat = %v, %v", again, err)
	}
	again.Retried = false
	if !proto.Equal(first, again) {
		t.Errorf("retried Heartbeat = %v, want %v", again, first)
	}
	if after := clusterState(t, ts, "h"); !proto.Equal(applied, after) {
		t.Errorf("the retried heartbeat changed the state:\n%v\n%v", applied, after)
	}
	if _, err := ts.cluster.Heartbeat(ctx, &optdv1.HeartbeatRequest{ClusterId: "h", NodeId: "a", NowS: at(2), Seq: 8}); err != nil {
		t.Fatal(err)
	}
	_, err = ts.cluster.Heartbeat(ctx, &optdv1.HeartbeatRequest{ClusterId: "h", NodeId: "a", NowS: at(3), Seq: 7})
	wantCode(t, err, codes.FailedPrecondition, "seq = 7")
	for k := range 2 {
		r, err := ts.cluster.JobFinished(ctx, &optdv1.JobFinishedRequest{ClusterId: "h", JobId: "j1"})
		if err != nil || r.GetFound() != (k == 0) {
			t.Fatalf("JobFinished #%d = %v, %v", k, r, err)
		}
	}
}

func clusterState(t *testing.T, ts *testServer, id string) *optdv1.ClusterState {
	t.Helper()
	st, err := ts.cluster.GetClusterState(ctxT(t), &optdv1.GetClusterStateRequest{ClusterId: id})
	if err != nil {
		t.Fatal(err)
	}
	return st.GetState()
}

// TestExpiredCallChangesNothing: a call whose deadline passes while it
// waits for the cluster's lock, or that arrives already expired, changes
// nothing and says DeadlineExceeded.
func TestExpiredCallChangesNothing(t *testing.T) {
	st, err := store.Open(t.TempDir(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cs, err := NewClusterService(st, Limits{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	if _, err := cs.RegisterCluster(ctx, costsCluster("c", "", 1, 2)); err != nil {
		t.Fatal(err)
	}
	e := cs.clusters["c"]
	e.lock <- struct{}{} // another call holds the cluster
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	_, err = cs.SubmitJob(short, &optdv1.SubmitJobRequest{ClusterId: "c", JobId: "late", Reduces: 1})
	<-e.lock
	if codeOf(short, err) != codes.DeadlineExceeded {
		t.Fatalf("SubmitJob waiting past its deadline = %v, want DeadlineExceeded", err)
	}
	expired, cancel2 := context.WithDeadline(ctx, time.Now().Add(-time.Second))
	defer cancel2()
	_, err = cs.SubmitJob(expired, &optdv1.SubmitJobRequest{ClusterId: "c", JobId: "expired", Reduces: 1})
	if codeOf(expired, err) != codes.DeadlineExceeded {
		t.Fatalf("SubmitJob already expired = %v, want DeadlineExceeded", err)
	}
	s, err := cs.GetClusterState(ctx, &optdv1.GetClusterStateRequest{ClusterId: "c"})
	if err != nil || len(s.GetState().GetJobs()) != 0 {
		t.Fatalf("state = %v, %v; want no job", s, err)
	}
}

// TestHugeJobHeartbeat is the stall: one 4-vcore node and one job
// of 200,000 maps without demands (20,000 under -short). The heartbeat
// answers with limits.max_starts_per_heartbeat starts, and the cluster
// answers the next call (its lock is free). The time is measured by
// BenchmarkHeartbeatBigJob, not asserted.
func TestHugeJobHeartbeat(t *testing.T) {
	maps := 200_000
	if testing.Short() {
		maps = 20_000
	}
	ts := startServer(t, "", Options{}, nil)
	ctx := ctxT(t)
	reg, sub := bigJobCluster("big", "fifo", maps)
	if _, err := ts.cluster.RegisterCluster(ctx, reg); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.cluster.SubmitJob(ctx, sub); err != nil {
		t.Fatal(err)
	}
	for k, want := range []int{DefaultLimits().MaxStartsPerHeartbeat, DefaultLimits().MaxStartsPerHeartbeat} {
		r, err := ts.cluster.Heartbeat(ctx, &optdv1.HeartbeatRequest{ClusterId: "big", NodeId: "n", NowS: at(float64(1 + k))})
		if err != nil || len(r.GetActions()) != want {
			t.Fatalf("heartbeat %d: %d actions, %v; want %d starts", k, len(r.GetActions()), err, want)
		}
	}
	s := clusterState(t, ts, "big")
	if int(s.GetRunningAttempts()) != 2*DefaultLimits().MaxStartsPerHeartbeat {
		t.Errorf("running attempts = %d", s.GetRunningAttempts())
	}
}
