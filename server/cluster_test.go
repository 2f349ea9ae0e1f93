package server

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/optd/optd/policy"
	"github.com/optd/optd/policy/placement"
	optdv1 "github.com/optd/optd/proto/optd/v1"
	"github.com/optd/optd/store"
)

func TestClusterLifecycle(t *testing.T) {
	ts := startServer(t, "", Options{}, nil)
	ctx := ctxT(t)
	costs := []float64{5, 1, 4, 2, 3, 9}
	if _, err := ts.cluster.RegisterCluster(ctx, costsCluster("c1", placement.NameGreedy, costs...)); err != nil {
		t.Fatal(err)
	}
	for i, id := range []string{"j1", "j2"} {
		r, err := ts.cluster.SubmitJob(ctx, &optdv1.SubmitJobRequest{ClusterId: "c1", JobId: id, Maps: 10, Reduces: 2})
		if err != nil {
			t.Fatal(err)
		}
		if r.GetJobsInSystem() != int32(i) {
			t.Errorf("%s: jobs_in_system = %d, want %d", id, r.GetJobsInSystem(), i)
		}
	}
	// Greedy takes the R cheapest free slots: check against a sort.
	p1, err := ts.cluster.PlaceReduces(ctx, &optdv1.PlaceReducesRequest{ClusterId: "c1", JobId: "j1", DataMb: 10})
	if err != nil {
		t.Fatal(err)
	}
	if got := slotCosts(p1); !slices.Equal(got, []float64{1, 2}) {
		t.Errorf("j1 slots cost %v, want the two cheapest [1 2]", got)
	}
	if p1.GetPolicy() != placement.NameGreedy || p1.GetReason() == "" || p1.GetFetchCost() != 5*(1+2) {
		t.Errorf("j1 decision = %v", p1)
	}
	p2, err := ts.cluster.PlaceReduces(ctx, &optdv1.PlaceReducesRequest{ClusterId: "c1", JobId: "j2", DataMb: 4, Reduces: 3})
	if err != nil {
		t.Fatal(err)
	}
	if got := slotCosts(p2); !slices.Equal(got, []float64{3, 4, 5}) {
		t.Errorf("j2 slots cost %v, want the next three [3 4 5]", got)
	}
	st, err := ts.cluster.GetClusterState(ctx, &optdv1.GetClusterStateRequest{ClusterId: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	if s := st.GetState(); s.GetFreeSlots() != 1 || len(s.GetJobs()) != 2 || !s.GetJobs()[1].GetPlaced() || s.GetJobs()[1].GetReduces() != 3 {
		t.Errorf("state = %v", s)
	}
	// Placing again for other data is refused and changes nothing; the
	// same request again (a retry) answers the slots the job holds.
	_, err = ts.cluster.PlaceReduces(ctx, &optdv1.PlaceReducesRequest{ClusterId: "c1", JobId: "j2", DataMb: 5})
	wantCode(t, err, codes.FailedPrecondition, "already holds")
	again, err := ts.cluster.PlaceReduces(ctx, &optdv1.PlaceReducesRequest{ClusterId: "c1", JobId: "j2", DataMb: 4, Reduces: 3})
	if err != nil || !again.GetRetried() || !slices.Equal(slotCosts(again), slotCosts(p2)) || again.GetFetchCost() != p2.GetFetchCost() {
		t.Errorf("retried PlaceReduces = %v, %v; want the slots of %v", again, err, p2)
	}
	f, err := ts.cluster.JobFinished(ctx, &optdv1.JobFinishedRequest{ClusterId: "c1", JobId: "j1"})
	if err != nil || f.GetFreedSlots() != 2 {
		t.Fatalf("JobFinished = %v, %v; want 2 freed", f, err)
	}
	st, _ = ts.cluster.GetClusterState(ctx, &optdv1.GetClusterStateRequest{ClusterId: "c1"})
	if s := st.GetState(); s.GetFreeSlots() != 3 || len(s.GetJobs()) != 1 || s.GetFinishedJobs() != 1 {
		t.Errorf("after JobFinished: state = %v", s)
	}
	// Not enough free slots: FailedPrecondition naming the counts.
	ts.cluster.SubmitJob(ctx, &optdv1.SubmitJobRequest{ClusterId: "c1", JobId: "big", Reduces: 5})
	_, err = ts.cluster.PlaceReduces(ctx, &optdv1.PlaceReducesRequest{ClusterId: "c1", JobId: "big", DataMb: 1})
	wantCode(t, err, codes.FailedPrecondition, "needs 5 reduce slots, 3 are free")
}

// TestRecedingHorizonEstimator: the cluster's Theorem-4 estimator sees every
// placed job and its threshold is p·E[X/R] with p = N̄/(2N̄+1).
func TestRecedingHorizonEstimator(t *testing.T) {
	ts := startServer(t, "", Options{}, nil)
	ctx := ctxT(t)
	req := costsCluster("rh", "", 1, 2, 3, 4, 5, 6, 7, 8)
	if _, err := ts.cluster.RegisterCluster(ctx, req); err != nil {
		t.Fatal(err)
	}
	// j1 arrives alone (N=0), j2 sees one job (N=1).
	for _, j := range []struct {
		id string
		x  float64
	}{{"j1", 8}, {"j2", 2}} {
		if _, err := ts.cluster.SubmitJob(ctx, &optdv1.SubmitJobRequest{ClusterId: "rh", JobId: j.id, Reduces: 2}); err != nil {
			t.Fatal(err)
		}
		p, err := ts.cluster.PlaceReduces(ctx, &optdv1.PlaceReducesRequest{ClusterId: "rh", JobId: j.id, DataMb: j.x})
		if err != nil {
			t.Fatal(err)
		}
		if p.GetPolicy() != placement.NameRecedingHorizon || p.Threshold == nil {
			t.Errorf("%s: %v", j.id, p)
		}
	}
	st, _ := ts.cluster.GetClusterState(ctx, &optdv1.GetClusterStateRequest{ClusterId: "rh"})
	e := st.GetState().GetEstimator()
	nbar, ybar := 0.5, (4.0+1.0)/2
	p := nbar / (2*nbar + 1)
	if e.GetSamples() != 2 || e.GetSeen() != 2 || e.GetMeanJobs() != nbar || e.GetMeanY() != ybar || e.GetThreshold() != p*ybar {
		t.Errorf("estimator = %v, want N̄ = %v, E[X/R] = %v, threshold %v", e, nbar, ybar, p*ybar)
	}
}

func slotCosts(p *optdv1.PlaceReducesResponse) []float64 {
	var c []float64
	for _, s := range p.GetSlots() {
		c = append(c, s.GetFetchCost())
	}
	slices.Sort(c)
	return c
}

func wantCode(t *testing.T, err error, code codes.Code, msg string) {
	t.Helper()
	st, _ := status.FromError(err)
	if st.Code() != code || !strings.Contains(st.Message(), msg) {
		t.Errorf("err = %v, want %v containing %q", err, code, msg)
	}
}

// TestBadInputs: each bad request gets its code and leaves the state as it
// was (compared with GetClusterState before and after).
func TestBadInputs(t *testing.T) {
	ts := startServer(t, "", Options{Token: "s3cret", Limits: Limits{MaxRequestBytes: 2048, MaxSlots: 50, MaxNodes: 50, MaxJobs: 3}}, nil)
	ctx := metadata.AppendToOutgoingContext(ctxT(t), "authorization", "Bearer s3cret")
	if _, err := ts.cluster.RegisterCluster(ctx, costsCluster("c", placement.NameGreedy, 1, 2, 3)); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.cluster.SubmitJob(ctx, &optdv1.SubmitJobRequest{ClusterId: "c", JobId: "j", Reduces: 1}); err != nil {
		t.Fatal(err)
	}
	before, err := ts.cluster.GetClusterState(ctx, &optdv1.GetClusterStateRequest{ClusterId: "c"})
	if err != nil {
		t.Fatal(err)
	}
	big := costsCluster("big", "", make([]float64, 10)...)
	for _, n := range big.Nodes {
		n.Rack = strings.Repeat("r", 250)
	}
	tooMany := costsCluster("many", "", make([]float64, 51)...)
	tooMany.Slots = tooMany.Slots[:1]
	wrongCtx := metadata.AppendToOutgoingContext(ctxT(t), "authorization", "Bearer nope")
	cases := []struct {
		name string
		call func() error
		code codes.Code
		msg  string
	}{
		{"unknown cluster", func() error {
			_, err := ts.cluster.SubmitJob(ctx, &optdv1.SubmitJobRequest{ClusterId: "nope", JobId: "x", Reduces: 1})
			return err
		}, codes.NotFound, `cluster "nope"`},
		{"unknown job", func() error {
			_, err := ts.cluster.PlaceReduces(ctx, &optdv1.PlaceReducesRequest{ClusterId: "c", JobId: "x"})
			return err
		}, codes.NotFound, `job "x"`},
		{"finish unknown job (a retry: found false)", func() error {
			r, err := ts.cluster.JobFinished(ctx, &optdv1.JobFinishedRequest{ClusterId: "c", JobId: "x"})
			if err == nil && r.GetFound() {
				return fmt.Errorf("found = true")
			}
			return err
		}, codes.OK, ""},
		{"duplicate cluster", func() error {
			_, err := ts.cluster.RegisterCluster(ctx, costsCluster("c", "", 1))
			return err
		}, codes.AlreadyExists, `cluster "c"`},
		{"register retried", func() error {
			r, err := ts.cluster.RegisterCluster(ctx, costsCluster("c", placement.NameGreedy, 1, 2, 3))
			if err == nil && !r.GetRetried() {
				return fmt.Errorf("retried = false")
			}
			return err
		}, codes.OK, ""},
		{"duplicate job", func() error {
			_, err := ts.cluster.SubmitJob(ctx, &optdv1.SubmitJobRequest{ClusterId: "c", JobId: "j", Reduces: 2})
			return err
		}, codes.AlreadyExists, `job "j"`},
		{"submit retried", func() error {
			r, err := ts.cluster.SubmitJob(ctx, &optdv1.SubmitJobRequest{ClusterId: "c", JobId: "j", Reduces: 1})
			if err == nil && (!r.GetRetried() || r.GetJobsInSystem() != 0) {
				return fmt.Errorf("answer %v, want the first one retried", r)
			}
			return err
		}, codes.OK, ""},
		{"duplicate node", func() error {
			r := costsCluster("d", "", 1, 2)
			r.Nodes[1].Id = r.Nodes[0].Id
			_, err := ts.cluster.RegisterCluster(ctx, r)
			return err
		}, codes.InvalidArgument, "nodes[1].id"},
		{"negative maps", func() error {
			_, err := ts.cluster.SubmitJob(ctx, &optdv1.SubmitJobRequest{ClusterId: "c", JobId: "k", Maps: -1, Reduces: 1})
			return err
		}, codes.InvalidArgument, "maps = -1"},
		{"negative data", func() error {
			_, err := ts.cluster.PlaceReduces(ctx, &optdv1.PlaceReducesRequest{ClusterId: "c", JobId: "j", DataMb: -3})
			return err
		}, codes.InvalidArgument, "data_mb = -3"},
		{"negative fetch cost", func() error {
			_, err := ts.cluster.RegisterCluster(ctx, costsCluster("neg", "", 1, -2))
			return err
		}, codes.InvalidArgument, "slots[1].fetch_cost = -2"},
		{"more reduces than slots", func() error {
			_, err := ts.cluster.SubmitJob(ctx, &optdv1.SubmitJobRequest{ClusterId: "c", JobId: "k", Reduces: 4})
			return err
		}, codes.InvalidArgument, "reduces = 4"},
		{"unknown policy", func() error {
			_, err := ts.cluster.RegisterCluster(ctx, costsCluster("p", "magic", 1))
			return err
		}, codes.InvalidArgument, "magic"},
		{"oversize request", func() error {
			_, err := ts.cluster.RegisterCluster(ctx, big)
			return err
		}, codes.InvalidArgument, "limits.max_request_bytes = 2048"},
		{"too many nodes", func() error {
			_, err := ts.cluster.RegisterCluster(ctx, tooMany)
			return err
		}, codes.ResourceExhausted, "limits.max_nodes = 50"},
		{"empty id", func() error {
			_, err := ts.cluster.GetClusterState(ctx, &optdv1.GetClusterStateRequest{})
			return err
		}, codes.InvalidArgument, "cluster_id"},
		{"wrong token", func() error {
			_, err := ts.cluster.SubmitJob(wrongCtx, &optdv1.SubmitJobRequest{ClusterId: "c", JobId: "k", Reduces: 1})
			return err
		}, codes.Unauthenticated, "invalid bearer token"},
		{"no token", func() error {
			_, err := ts.cluster.GetClusterState(t.Context(), &optdv1.GetClusterStateRequest{ClusterId: "c"})
			return err
		}, codes.Unauthenticated, "missing authorization"},
		{"heartbeat without a heartbeat policy", func() error {
			_, err := ts.cluster.Heartbeat(ctx, &optdv1.HeartbeatRequest{ClusterId: "c", NodeId: "n0"})
			return err
		}, codes.FailedPrecondition, "without a heartbeat policy"},
		{"heartbeat without node", func() error {
			_, err := ts.cluster.Heartbeat(ctx, &optdv1.HeartbeatRequest{ClusterId: "c"})
			return err
		}, codes.InvalidArgument, "node_id"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wantCode(t, tc.call(), tc.code, tc.msg)
			after, err := ts.cluster.GetClusterState(ctx, &optdv1.GetClusterStateRequest{ClusterId: "c"})
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(before, after) {
				t.Errorf("state changed:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
	// Only "c" exists: nothing above registered a cluster.
	ids, _ := ts.store.List()
	if !slices.Equal(ids, []string{"c"}) {
		t.Errorf("stored clusters = %v, want [c]", ids)
	}
	// The job limit: ResourceExhausted naming it.
	for _, id := range []string{"k1", "k2"} {
		if _, err := ts.cluster.SubmitJob(ctx, &optdv1.SubmitJobRequest{ClusterId: "c", JobId: id, Reduces: 1}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = ts.cluster.SubmitJob(ctx, &optdv1.SubmitJobRequest{ClusterId: "c", JobId: "k3", Reduces: 1})
	wantCode(t, err, codes.ResourceExhausted, "limits.max_jobs")
}

// TestEstimatorSurvivesRestart: a receding-horizon cluster whose window
// (ω = 3) wrapped several times answers after a restart exactly as the same
// cluster on a server that kept running (the second method): the store's
// ring of observations reproduces the window, its order and Seen.
func TestEstimatorSurvivesRestart(t *testing.T) {
	ctx := ctxT(t)
	dir := t.TempDir()
	restarted, steady := startServer(t, dir, Options{}, nil), startServer(t, "", Options{}, nil)
	req := costsCluster("rh", placement.NameRecedingHorizon, 1, 2, 3, 4, 5, 6, 7, 8)
	req.Policy.Window = 3
	for _, ts := range []*testServer{restarted, steady} {
		if _, err := ts.cluster.RegisterCluster(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	step := func(ts *testServer, k int) (*optdv1.PlaceReducesResponse, *optdv1.EstimatorState) {
		id := fmt.Sprint("j", k)
		if _, err := ts.cluster.SubmitJob(ctx, &optdv1.SubmitJobRequest{ClusterId: "rh", JobId: id, Reduces: 1 + int32(k%2)}); err != nil {
			t.Fatal(err)
		}
		p, err := ts.cluster.PlaceReduces(ctx, &optdv1.PlaceReducesRequest{ClusterId: "rh", JobId: id, DataMb: float64(k*k%11) + 0.5})
		if err != nil {
			t.Fatal(err)
		}
		if k%3 != 0 {
			if _, err := ts.cluster.JobFinished(ctx, &optdv1.JobFinishedRequest{ClusterId: "rh", JobId: id}); err != nil {
				t.Fatal(err)
			}
		}
		st, err := ts.cluster.GetClusterState(ctx, &optdv1.GetClusterStateRequest{ClusterId: "rh"})
		if err != nil {
			t.Fatal(err)
		}
		return p, st.GetState().GetEstimator()
	}
	for k := range 12 {
		if k == 5 || k == 9 {
			restarted.stop()
			restarted = startServer(t, dir, Options{}, nil)
		}
		p1, e1 := step(restarted, k)
		p2, e2 := step(steady, k)
		if !proto.Equal(p1, p2) || !proto.Equal(e1, e2) {
			t.Fatalf("job %d: after restarts %v, %v\nsteady server %v, %v", k, p1, e1, p2, e2)
		}
		if e1.GetSeen() != int64(k+1) {
			t.Fatalf("job %d: seen %d, want %d", k, e1.GetSeen(), k+1)
		}
	}
}

// TestFittedPolicySurvivesRestart: a cluster whose placement policy is
// built on its queueing model (adp-bid-price, fitted, and rollout, which
// simulates it, also with a window of the jobs seen; with parameters) decides after restarts exactly as a
// server that never stopped, and its state gives the policy's parameters
// and model back as registered.
func TestFittedPolicySurvivesRestart(t *testing.T) {
	for _, c := range []struct {
		name   string
		params map[string]float64
	}{
		{"adp-bid-price", map[string]float64{"fit_steps": 6, "fit_jobs": 200, "value_scale": 1.5}},
		{"rollout", map[string]float64{"samples": 4, "horizon": 6, "confidence": 0}},
		// on rolling-horizon, futures from the jobs seen: the window the
		// server snapshots (5 jobs: it moves between the restarts)
		{"rollout", map[string]float64{"samples": 4, "horizon": 6, "confidence": 0, "base_policy": 2, "future_law": 1, "window": 5, "rh_horizon": 2}},
	} {
		t.Run(c.name, func(t *testing.T) { modelPolicySurvivesRestart(t, c.name, c.params) })
	}
}

func modelPolicySurvivesRestart(t *testing.T, name string, params map[string]float64) {
	ctx := ctxT(t)
	dir := t.TempDir()
	restarted, steady := startServer(t, dir, Options{}, nil), startServer(t, "", Options{}, nil)
	req := costsCluster("adp", name, 1, 1, 2, 3, 5, 8, 13, 21)
	waiting := int32(2)
	req.Policy.Params = params
	req.Policy.Model = &optdv1.PlacementModel{ArrivalRate: 0.6, ServiceRate: 1, MaxJobsInService: 3, MaxWaiting: &waiting, Seed: 4,
		WorkloadJson: `{"data": {"kind": "discrete", "values": [5, 40], "probs": [0.7, 0.3]},
		                "reduces": {"kind": "discrete", "values": [1, 2], "probs": [0.5, 0.5]}}`}
	for _, ts := range []*testServer{restarted, steady} {
		if _, err := ts.cluster.RegisterCluster(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	st, err := restarted.cluster.GetClusterState(ctx, &optdv1.GetClusterStateRequest{ClusterId: "adp"})
	if err != nil {
		t.Fatal(err)
	}
	got := st.GetState().GetPolicy()
	if got.GetName() != name || !maps.Equal(got.GetParams(), params) || got.GetModel().GetMaxWaiting() != 2 ||
		got.GetModel().GetArrivalRate() != 0.6 || !strings.Contains(got.GetModel().GetWorkloadJson(), `"values":[5,40]`) {
		t.Errorf("stored policy %v", got)
	}
	for k := range 12 {
		if k == 4 || k == 9 {
			restarted.stop()
			restarted = startServer(t, dir, Options{}, nil)
		}
		var answers []*optdv1.PlaceReducesResponse
		for _, ts := range []*testServer{restarted, steady} {
			id := fmt.Sprint("j", k)
			if _, err := ts.cluster.SubmitJob(ctx, &optdv1.SubmitJobRequest{ClusterId: "adp", JobId: id, Reduces: 1 + int32(k%2)}); err != nil {
				t.Fatal(err)
			}
			p, err := ts.cluster.PlaceReduces(ctx, &optdv1.PlaceReducesRequest{ClusterId: "adp", JobId: id, DataMb: []float64{5, 40}[k%3/2]})
			if err != nil {
				t.Fatal(err)
			}
			if k%3 != 0 {
				if _, err := ts.cluster.JobFinished(ctx, &optdv1.JobFinishedRequest{ClusterId: "adp", JobId: id}); err != nil {
					t.Fatal(err)
				}
			}
			answers = append(answers, p)
		}
		if !proto.Equal(answers[0], answers[1]) {
			t.Fatalf("job %d: after restarts %v\nsteady server %v", k, answers[0], answers[1])
		}
	}
}

// typedWorkload is TestFittedPolicyBadModel's workload as a message.
func typedWorkload() *optdv1.Workload {
	return &optdv1.Workload{
		Data:    &optdv1.Law{Kind: proto.String("uniform"), Min: proto.Float64(1), Max: proto.Float64(10)},
		Reduces: &optdv1.Law{Kind: proto.String("uniform-int"), Min: proto.Float64(1), Max: proto.Float64(2)},
	}
}

// TestFittedPolicyBadModel: a fitted policy without a model, or with a bad
// one, is refused at registration with the field's path.
func TestFittedPolicyBadModel(t *testing.T) {
	ctx := ctxT(t)
	ts := startServer(t, "", Options{}, nil)
	good := func() *optdv1.PlacementModel {
		return &optdv1.PlacementModel{ArrivalRate: 0.5, ServiceRate: 1, MaxJobsInService: 2,
			WorkloadJson: `{"data": {"kind": "uniform", "min": 1, "max": 10}, "reduces": {"kind": "uniform-int", "min": 1, "max": 2}}`}
	}
	for _, c := range []struct {
		mutate func(p *optdv1.PlacementPolicy)
		want   string
	}{
		{func(p *optdv1.PlacementPolicy) { p.Model = nil }, "needs the cluster's queueing model"},
		{func(p *optdv1.PlacementPolicy) { p.Model.ArrivalRate = -1 }, "policy.model.arrival_rate"},
		{func(p *optdv1.PlacementPolicy) { p.Model.ArrivalRate = 2 }, "the queue is unstable"},
		{func(p *optdv1.PlacementPolicy) { p.Model.MaxJobsInService = 0 }, "policy.model.max_jobs_in_service"},
		{func(p *optdv1.PlacementPolicy) { p.Model.WorkloadJson = "" }, "policy.model.workload = absent"},
		{func(p *optdv1.PlacementPolicy) { p.Model.Workload = typedWorkload() }, "give policy.model.workload or policy.model.workload_json, not both"},
		{func(p *optdv1.PlacementPolicy) {
			p.Model.WorkloadJson, p.Model.Workload = "", typedWorkload()
			p.Model.Workload.Data.Max = proto.Float64(-1)
		}, "policy.model.workload.data.max = -1"},
		{func(p *optdv1.PlacementPolicy) { p.Model.WorkloadJson = `{"file": "w.json"}` }, "policy.model.workload_json"},
		{func(p *optdv1.PlacementPolicy) { p.Model.WorkloadJson = `{"data": 1}` }, "policy.model.workload_json"},
		{func(p *optdv1.PlacementPolicy) { p.Params = map[string]float64{"classes": 500} }, "classes = 500"},
		{func(p *optdv1.PlacementPolicy) { p.Params = map[string]float64{"base": math.Inf(1)} }, `policy.params["base"]`},
		{func(p *optdv1.PlacementPolicy) { p.Model.SlotCosts = []float64{1, 2, math.NaN()} }, "policy.model.slot_costs[2] = NaN: must be finite and ≥ 0"},
		{func(p *optdv1.PlacementPolicy) { p.Model.SlotCosts = []float64{-1} }, "policy.model.slot_costs[0] = -1"},
		{func(p *optdv1.PlacementPolicy) { p.Model.SlotCosts = []float64{1, 2} }, "model.slot_costs = 2 slots: need at least max_jobs_in_service·max_reduces = 2·2 = 4 slots"},
	} {
		req := costsCluster("bad", "adp-bid-price", 1, 2, 3, 4, 5)
		req.Policy.Model = good()
		c.mutate(req.Policy)
		_, err := ts.cluster.RegisterCluster(ctx, req)
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), c.want) {
			t.Errorf("policy %v: error %v, want InvalidArgument with %q", req.Policy, err, c.want)
		}
		// A library's sentinel names its package for Go callers only.
		if msg := status.Convert(err).Message(); strings.Contains(msg, "models: ") {
			t.Errorf("policy %v: message %q names a Go package", req.Policy, msg)
		}
	}
}

// TestRegisterBuildIsBounded: registering a policy that solves before its
// first decision (mdp-optimal on a model far beyond what the bounds allow,
// within every limit of its own) stops when the caller's deadline passes,
// with the deadline's error, or at limits.max_solve_time, naming the limit
// (ResourceExhausted); no cluster is registered either way. Without the
// bounds the solve ran on until max_states refused the model, seconds
// later, and the handler answered INVALID_ARGUMENT to a client long gone.
func TestRegisterBuildIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("starts large solves; skipped with -short")
	}
	costs := make([]float64, 40)
	for i := range costs {
		costs[i] = float64(i + 1)
	}
	req := costsCluster("huge", "mdp-optimal", costs...)
	waiting := int32(4)
	req.Policy.Params = map[string]float64{"max_states": 1e6, "max_memory_mb": 16384}
	req.Policy.Model = &optdv1.PlacementModel{ArrivalRate: 0.6, ServiceRate: 1, MaxJobsInService: 8, MaxWaiting: &waiting,
		WorkloadJson: `{"data": {"kind": "uniform", "min": 1, "max": 10}, "reduces": {"kind": "uniform-int", "min": 1, "max": 4}}`}
	const bound = 100 * time.Millisecond
	for _, c := range []struct {
		name     string
		limits   Limits
		deadline time.Duration
		check    func(error) bool
	}{
		{"deadline", Limits{}, bound, func(err error) bool { return errors.Is(err, context.DeadlineExceeded) }},
		{"max_solve_time", Limits{MaxSolveTime: bound}, 0, func(err error) bool {
			return errors.Is(err, ErrExhausted) && strings.Contains(err.Error(), "limits.max_solve_time = 100ms")
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, err := store.Open(t.TempDir(), time.Second)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			cs, err := NewClusterService(st, c.limits, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := ctxT(t), context.CancelFunc(func() {})
			if c.deadline > 0 {
				ctx, cancel = context.WithTimeout(ctx, c.deadline)
			}
			defer cancel()
			if _, err := cs.RegisterCluster(ctx, req); !c.check(err) {
				t.Fatalf("RegisterCluster past its bound: %v", err)
			}
			_, err = cs.GetClusterState(ctxT(t), &optdv1.GetClusterStateRequest{ClusterId: "huge"})
			if !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("state of the cluster whose registration stopped: %v, want not found", err)
			}
		})
	}
}

// refusingPlacement is a placement policy whose every decision fails, as a
// policy may on a request it cannot serve.
type refusingPlacement struct{}

const refusingName = "test-refusing"

func (refusingPlacement) Name() string { return refusingName }
func (refusingPlacement) Place(*policy.PlacementRequest) (policy.PlacementDecision, error) {
	return policy.PlacementDecision{}, fmt.Errorf("%w: test-refusing: no decision for this request", policy.ErrInvalidRequest)
}

func init() {
	policy.Must(policy.RegisterPlacement(refusingName, func(policy.PlacementConfig) (policy.Placement, error) { return refusingPlacement{}, nil }))
}

// TestPlaceErrorIsThePolicys: a policy's own failure within the time limit is
// answered as that failure, never as limits.max_solve_time exceeded (the
// limit's context is cancelled before the check; only its deadline counts).
func TestPlaceErrorIsThePolicys(t *testing.T) {
	ts := startServer(t, "", Options{}, nil)
	ctx := ctxT(t)
	if _, err := ts.cluster.RegisterCluster(ctx, costsCluster("c1", refusingName, 1, 2, 3)); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.cluster.SubmitJob(ctx, &optdv1.SubmitJobRequest{ClusterId: "c1", JobId: "j1", Maps: 1, Reduces: 1}); err != nil {
		t.Fatal(err)
	}
	_, err := ts.cluster.PlaceReduces(ctx, &optdv1.PlaceReducesRequest{ClusterId: "c1", JobId: "j1", DataMb: 1})
	if err == nil || status.Code(err) == codes.ResourceExhausted || strings.Contains(err.Error(), "max_solve_time") || !strings.Contains(err.Error(), "no decision for this request") {
		t.Fatalf("PlaceReduces under a refusing policy: %v, want the policy's error", err)
	}
}
