package server

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/optd/optd/policy"
	optdv1 "github.com/optd/optd/proto/optd/v1"
	"github.com/optd/optd/search"
	"github.com/optd/optd/sim"
)

// searchEvents runs a Search and returns its progress events and result.
func searchEvents(t *testing.T, ctx context.Context, c optdv1.OptimizeServiceClient, req *optdv1.SearchRequest) ([]*optdv1.SearchProgress, *optdv1.SearchResult, error) {
	t.Helper()
	st, err := c.Search(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	var progress []*optdv1.SearchProgress
	var result *optdv1.SearchResult
	for {
		m, err := st.Recv()
		if err == io.EOF {
			return progress, result, nil
		}
		if err != nil {
			return progress, result, err
		}
		if p := m.GetProgress(); p != nil {
			progress = append(progress, p)
		}
		if r := m.GetResult(); r != nil {
			result = r
		}
	}
}

// checkSearchProgress: the search phase's evaluations count up to at most
// the budget with the best objective never rising, ending at the result's
// evaluations and best, then the validation's simulations count up to
// their total.
func checkSearchProgress(t *testing.T, what string, progress []*optdv1.SearchProgress, res *optdv1.SearchResult) {
	t.Helper()
	evals, budget, best, validating := int32(0), int32(0), math.Inf(1), false
	for _, p := range progress {
		switch p.GetPhase() {
		case search.PhaseSearch:
			if validating || p.GetEvaluations() < evals || p.GetEvaluations() > p.GetBudget() || p.Best != nil && p.GetBest() > best {
				t.Fatalf("%s: search progress %v after %d evaluations, best %v", what, p, evals, best)
			}
			evals, budget = p.GetEvaluations(), p.GetBudget()
			if p.Best != nil {
				best = p.GetBest()
			}
		case search.PhaseValidation:
			validating = true
			if p.GetSimulations() > p.GetSimulationsTotal() {
				t.Fatalf("%s: validation progress %v", what, p)
			}
		default:
			t.Fatalf("%s: phase %q", what, p.GetPhase())
		}
	}
	if res == nil || evals != min(res.GetResult().GetEvaluations(), budget) || best != res.GetResult().GetSearch().GetBest().GetMean() {
		t.Errorf("%s: progress ended at %d evaluations, best %v; result %v", what, evals, best, res.GetResult())
	}
}

// TestSearch: on a placement and a cluster scenario, the RPC's progress is
// consistent and its result is package search's run on the same problem
// (the second method, called in process).
func TestSearch(t *testing.T) {
	ts := startServer(t, "", Options{}, nil)
	ctx := ctxT(t)
	sc, _ := typedOf(t, "../cmd/search/testdata/tiny.json", &optdv1.PlacementScenario{})
	sc.Jobs = proto.Int32(200)
	family := "state-threshold" // a family without a fit: the test compares with a second run
	cases := []struct {
		name string
		req  *optdv1.SearchRequest
		prob func() search.Problem
	}{
		{"placement", &optdv1.SearchRequest{PlacementScenario: sc, Policy: family, Evaluations: 10, Replications: 2, Validation: 2,
			Bounds: proto.Bool(!testing.Short()), Seed: 3},
			func() search.Problem {
				text, _ := formatJSON(sc)
				s, err := sim.DecodeScenario(text, "")
				if err != nil {
					t.Fatal(err)
				}
				return &search.PlacementProblem{Scenario: s, Family: family, Refs: defaultPlacementReferences,
					Bounds: !testing.Short(), HindsightClasses: defaultSearchClasses}
			}},
		{"cluster", &optdv1.SearchRequest{Builtin: "haste-table2", Policy: "haste-a", Evaluations: 6, Replications: 2, Validation: -1, Method: search.MethodNelderMead},
			func() search.Problem {
				s, _ := sim.BuiltinCluster("haste-table2")
				p, err := search.PipelineParams(s, "haste-a")
				if err != nil {
					t.Fatal(err)
				}
				p.Objective = search.ObjectiveMakespan
				return p
			}},
	}
	for _, tc := range cases {
		progress, res, err := searchEvents(t, ctx, ts.optimize, tc.req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		checkSearchProgress(t, tc.name, progress, res)
		seed := tc.req.GetSeed()
		if seed == 0 {
			seed = 1
		}
		want, err := search.Run(ctx, tc.prob(), search.Options{Method: tc.req.GetMethod(), Evaluations: int(tc.req.GetEvaluations()),
			Replications: int(tc.req.GetReplications()), Validation: int(tc.req.GetValidation()), Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		want.SearchMS, want.TotalMS = 0, 0
		wantMsg := &optdv1.SearchRun{}
		if err := resultMessage(want, wantMsg); err != nil {
			t.Fatal(err)
		}
		wantJSON, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		checkResult(t, tc.name, wantMsg, string(wantJSON))
		got := res.GetResult()
		got.SearchMs, got.TotalMs = 0, 0
		if !proto.Equal(got, wantMsg) {
			t.Errorf("%s: result %v\nwant %v", tc.name, got, wantMsg)
		}
		if wantBest := policy.FormatPlacementSpec(tc.req.GetPolicy(), want.Params); res.GetBestPolicy() != wantBest || len(res.GetSpace()) != len(want.Params) {
			t.Errorf("%s: best policy %q, space %v; want %q", tc.name, res.GetBestPolicy(), res.GetSpace(), wantBest)
		}
	}
}

// TestSearchBounded: a deadline stops a search (DEADLINE_EXCEEDED), and bad
// requests are InvalidArgument naming the field (the work limit too, as for
// Bound: the request asks for more than the server ever serves).
func TestSearchBounded(t *testing.T) {
	ts := startServer(t, "", Options{Limits: Limits{MaxSimulatedJobs: 5000}}, nil)
	sc, _ := typedOf(t, "../cmd/search/testdata/tiny.json", &optdv1.PlacementScenario{})
	ctx, cancel := context.WithTimeout(ctxT(t), 300*time.Millisecond)
	defer cancel()
	_, _, err := searchEvents(t, ctx, ts.optimize, &optdv1.SearchRequest{Builtin: "haste-table2", Policy: "haste-a", Evaluations: maxSearchEvaluations})
	wantCode(t, err, codes.DeadlineExceeded, "")
	// The target's references are built under the call's context (a
	// fitted reference stops with it), and a build so stopped is the
	// context's error, not an invalid reference. In process: through a
	// client, the client's own deadline would answer whatever the server did.
	stopped, stop := context.WithCancel(ctxT(t))
	stop()
	_, err = NewOptimizeService(Limits{}, nil).searchTarget(stopped, &optdv1.SearchRequest{PlacementScenario: sc, Policy: "state-threshold", References: []string{"adp-penalty"}})
	if code := codeOf(stopped, err); code != codes.Canceled {
		t.Errorf("search target under a cancelled context: %v (%v), want Canceled", err, code)
	}

	family := "state-threshold" // a family without a fit: the test compares with a second run
	for _, c := range []struct {
		req  *optdv1.SearchRequest
		code codes.Code
		want string
	}{
		{&optdv1.SearchRequest{Policy: family}, codes.InvalidArgument, "give exactly one of placement_scenario"},
		{&optdv1.SearchRequest{PlacementScenario: sc, Builtin: "haste-table2", Policy: family}, codes.InvalidArgument, "2 scenarios"},
		{&optdv1.SearchRequest{PlacementScenario: sc}, codes.InvalidArgument, "policy"},
		{&optdv1.SearchRequest{PlacementScenario: sc, Policy: "greedy"}, codes.InvalidArgument, "policy = greedy"},
		{&optdv1.SearchRequest{PlacementScenario: sc, Policy: "haste-a"}, codes.InvalidArgument, "policy = haste-a"},
		{&optdv1.SearchRequest{PlacementScenario: sc, Policy: family, Objective: "makespan"}, codes.InvalidArgument, "objective = makespan"},
		{&optdv1.SearchRequest{PlacementScenario: sc, Policy: family, Params: "nope=1"}, codes.InvalidArgument, "params = nope=1"},
		{&optdv1.SearchRequest{PlacementScenario: sc, Policy: family, References: []string{"magic"}}, codes.InvalidArgument, "references = magic"},
		{&optdv1.SearchRequest{PlacementScenario: sc, Policy: family, Evaluations: maxSearchEvaluations + 1}, codes.InvalidArgument, "evaluations"},
		{&optdv1.SearchRequest{PlacementScenario: sc, Policy: family, Method: "anneal"}, codes.InvalidArgument, "method = anneal"},
		{&optdv1.SearchRequest{PlacementScenario: sc, Policy: family, Validation: -2}, codes.InvalidArgument, "validation = -2"},
		{&optdv1.SearchRequest{PlacementScenario: sc, Policy: family, TimeLimitMs: -1}, codes.InvalidArgument, "time_limit_ms = -1"},
		{&optdv1.SearchRequest{PlacementScenario: sc, Policy: family, Replications: 20}, codes.InvalidArgument, "limits.max_simulated_jobs"},
		{&optdv1.SearchRequest{PlacementScenario: &optdv1.PlacementScenario{}, Policy: family}, codes.InvalidArgument, "max_jobs_in_service"},
		{&optdv1.SearchRequest{Builtin: "haste-table2", Policy: "haste-a", Window: 3}, codes.InvalidArgument, "window"},
		{&optdv1.SearchRequest{Builtin: "haste-table2", Policy: "haste-a", Bounds: proto.Bool(false)}, codes.InvalidArgument, "bounds"},
		{&optdv1.SearchRequest{PlacementScenario: sc, Policy: family, Horizon: -1}, codes.InvalidArgument, "horizon = -1"},
		{&optdv1.SearchRequest{PlacementScenario: sc, Policy: family, HindsightClasses: proto.Int32(-2)}, codes.InvalidArgument, "hindsight_classes = -2"},
		{&optdv1.SearchRequest{Builtin: "haste-table2", Policy: "haste-a", Objective: objectiveMeanCost}, codes.InvalidArgument, "objective = mean-cost"},
		{&optdv1.SearchRequest{Builtin: "nope", Policy: "haste-a"}, codes.InvalidArgument, "builtin = nope"},
		{&optdv1.SearchRequest{ClusterScenario: &optdv1.ClusterScenario{}, Policy: "haste-a"}, codes.InvalidArgument, "cluster"},
	} {
		_, _, err := searchEvents(t, ctxT(t), ts.optimize, c.req)
		wantCode(t, err, c.code, c.want)
	}
}
