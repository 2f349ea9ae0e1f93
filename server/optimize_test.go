package server

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/optd/optd/bound"
	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
	"github.com/optd/optd/policy/placement"
	optdv1 "github.com/optd/optd/proto/optd/v1"
	"github.com/optd/optd/sim"
	"github.com/optd/optd/solver"
	"github.com/optd/optd/thresholds"
)

func TestOptimizeService(t *testing.T) {
	ts := startServer(t, "", Options{}, nil)
	ctx := ctxT(t)
	wl, err := os.ReadFile("../examples/workload.json")
	if err != nil {
		t.Fatal(err)
	}

	t.Run("ComputeThresholds", func(t *testing.T) {
		costs := make([]float64, 12)
		for i := range costs {
			costs[i] = float64(i + 1)
		}
		r, err := ts.optimize.ComputeThresholds(ctx, &optdv1.ComputeThresholdsRequest{WorkloadJson: string(wl), Jobs: 3, SlotCosts: costs})
		if err != nil {
			t.Fatal(err)
		}
		w, _ := models.DecodeWorkload(wl, "")
		tab, err := thresholds.BuildTable(ctx, w, 3, thresholds.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.GetStages()) != len(tab.Stages) || !slices.Equal(r.GetCostCoefficients(), tab.CostCoefficients) {
			t.Fatalf("response %v differs from the package's table", r)
		}
		for i, q := range tab.Stages {
			if !slices.Equal(r.GetStages()[i].GetThresholds(), q) {
				t.Errorf("stage %d: %v, want %v", i+1, r.GetStages()[i].GetThresholds(), q)
			}
		}
		want, _ := tab.ExpectedCost(costs)
		if r.ExpectedOptimalCost == nil || *r.ExpectedOptimalCost != want {
			t.Errorf("expected cost %v, want %v", r.ExpectedOptimalCost, want)
		}
		_, err = ts.optimize.ComputeThresholds(ctx, &optdv1.ComputeThresholdsRequest{WorkloadJson: string(wl), Jobs: 0})
		wantCode(t, err, codes.InvalidArgument, "jobs = 0")
		_, err = ts.optimize.ComputeThresholds(ctx, &optdv1.ComputeThresholdsRequest{
			WorkloadJson: `{"data": {"kind": "empirical", "file": "/etc/passwd"}, "reduces": {"kind": "uniform-int", "min": 1, "max": 2}}`, Jobs: 1})
		wantCode(t, err, codes.InvalidArgument, "file references are not accepted")
		_, err = ts.optimize.ComputeThresholds(ctx, &optdv1.ComputeThresholdsRequest{WorkloadJson: `{"data": 1}`, Jobs: 1})
		wantCode(t, err, codes.InvalidArgument, "")
	})

	t.Run("SolveInitialAssignment", func(t *testing.T) {
		name := solver.BuiltinNames()[0]
		r, err := ts.optimize.SolveInitialAssignment(ctx, &optdv1.SolveInitialAssignmentRequest{Builtin: name, Method: "per-node"})
		if err != nil {
			t.Fatal(err)
		}
		in, _ := solver.BuiltinInstance(name)
		want, err := solver.Solve(ctx, in, solver.MethodPerNode, solver.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var got solver.Result
		if err := json.Unmarshal([]byte(r.GetResultJson()), &got); err != nil {
			t.Fatal(err)
		}
		if r.GetObjective() != want.Objective || got.Objective != want.Objective {
			t.Errorf("objective %v (json %v), want %v", r.GetObjective(), got.Objective, want.Objective)
		}
		if r.GetUpperBound() != got.UpperBound || r.GetGap() != got.Gap || r.GetUpperBound() < r.GetObjective() {
			t.Errorf("upper_bound %v gap %v, json %v %v", r.GetUpperBound(), r.GetGap(), got.UpperBound, got.Gap)
		}
		// the exact method with a relative gap: within it of its proven bound
		fam, _ := solver.FamilyInstance("hetero-3r", 1)
		data, _ := json.Marshal(fam)
		r, err = ts.optimize.SolveInitialAssignment(ctx, &optdv1.SolveInitialAssignmentRequest{InstanceJson: string(data), Gap: 0.01})
		if err != nil {
			t.Fatal(err)
		}
		if r.GetUpperBound()-r.GetObjective() > 0.01*r.GetUpperBound() || (!r.GetOptimal() && r.GetStopped() != "gap") {
			t.Errorf("gap 0.01: objective %v bound %v optimal %v stopped %q", r.GetObjective(), r.GetUpperBound(), r.GetOptimal(), r.GetStopped())
		}
		// a work limit that stops it partway: the same answer as the
		// library's with the same limit and seed, in every call
		fam, _ = solver.FamilyInstance("hetero-3r", 3)
		data, _ = json.Marshal(fam)
		lib, err := solver.Solve(ctx, fam, solver.MethodExact, solver.Options{WorkLimit: 20 * time.Millisecond, Seed: 5, TimeLimit: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			r, err = ts.optimize.SolveInitialAssignment(ctx, &optdv1.SolveInitialAssignmentRequest{InstanceJson: string(data), WorkLimitMs: 20, Seed: 5})
			if err != nil {
				t.Fatal(err)
			}
			st := r.GetResult().GetStats()
			if r.GetStopped() != "work_limit" || r.GetObjective() != lib.Objective || r.GetUpperBound() != lib.UpperBound ||
				st.GetWorkMs() != lib.Stats.WorkMS || st.GetNodesExplored() != lib.Stats.NodesExplored {
				t.Errorf("work limit 20 ms: stopped %q objective %v bound %v work %v nodes %v, the library's %q %v %v %v %v", r.GetStopped(), r.GetObjective(),
					r.GetUpperBound(), st.GetWorkMs(), st.GetNodesExplored(), lib.Stats.Stopped, lib.Objective, lib.UpperBound, lib.Stats.WorkMS, lib.Stats.NodesExplored)
			}
		}
		for _, w := range []int64{-1, maxWorkLimitMS + 1} {
			_, err = ts.optimize.SolveInitialAssignment(ctx, &optdv1.SolveInitialAssignmentRequest{Builtin: name, WorkLimitMs: w})
			wantCode(t, err, codes.InvalidArgument, fmt.Sprintf("work_limit_ms = %d", w))
		}
		_, err = ts.optimize.SolveInitialAssignment(ctx, &optdv1.SolveInitialAssignmentRequest{Builtin: name, Gap: 1.5})
		wantCode(t, err, codes.InvalidArgument, "gap")
		_, err = ts.optimize.SolveInitialAssignment(ctx, &optdv1.SolveInitialAssignmentRequest{Builtin: name, Method: "magic"})
		wantCode(t, err, codes.InvalidArgument, "magic")
		_, err = ts.optimize.SolveInitialAssignment(ctx, &optdv1.SolveInitialAssignmentRequest{Builtin: "nope"})
		wantCode(t, err, codes.InvalidArgument, "nope")
	})

	t.Run("Simulate", func(t *testing.T) {
		sc, err := os.ReadFile("../cmd/bound/testdata/tiny.json")
		if err != nil {
			t.Fatal(err)
		}
		names := []string{placement.NameGreedy, placement.NameRecedingHorizon}
		r, err := ts.optimize.Simulate(ctx, &optdv1.SimulateRequest{ScenarioJson: string(sc), Policies: names})
		if err != nil {
			t.Fatal(err)
		}
		// Second method: the same replications run directly.
		s, _ := sim.DecodeScenario(sc, "")
		var nf []sim.NamedFactory
		for _, n := range names {
			nf = append(nf, sim.NamedFactory{Name: n, New: func(seed uint64) (policy.Placement, error) {
				return policy.NewPlacement(n, policy.PlacementConfig{Seed: seed})
			}})
		}
		for rep := range s.Replications {
			rr, err := s.RunReplication(ctx, rep, nf, false)
			if err != nil {
				t.Fatal(err)
			}
			for k, n := range names {
				if got := r.GetPolicies()[k].GetReplicationCosts()[rep]; got != rr.Results[n].MeanCost {
					t.Errorf("%s rep %d: %v, want %v", n, rep, got, rr.Results[n].MeanCost)
				}
			}
		}
		_, err = ts.optimize.Simulate(ctx, &optdv1.SimulateRequest{ScenarioJson: string(sc), Policies: []string{"greedy", "greedy"}})
		wantCode(t, err, codes.InvalidArgument, "listed twice")
	})

	t.Run("Bound", func(t *testing.T) {
		// tiny.json, shortened: the test runs the computation twice.
		var m map[string]any
		data, err := os.ReadFile("../cmd/bound/testdata/tiny.json")
		if err == nil {
			err = json.Unmarshal(data, &m)
		}
		if err != nil {
			t.Fatal(err)
		}
		m["jobs"], m["warmup_jobs"], m["replications"] = 400, 50, 2
		sc, _ := json.Marshal(m)
		policies := []string{placement.NameGreedy, bound.PolicyMDPOptimal}
		stream, err := ts.optimize.Bound(ctx, &optdv1.BoundRequest{ScenarioJson: string(sc), Policies: policies})
		if err != nil {
			t.Fatal(err)
		}
		var progress []int32
		var result string
		for {
			m, err := stream.Recv()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if p := m.GetProgress(); p != nil {
				progress = append(progress, p.GetDone(), p.GetTotal())
			}
			result += m.GetResultJson()
		}
		if len(progress) == 0 || progress[len(progress)-2] != progress[len(progress)-1] {
			t.Errorf("progress %v does not reach its total", progress)
		}
		// Second method: package bound called directly on the same input.
		s, _ := sim.DecodeScenario(sc, "")
		req := bound.Request{Settings: bound.Settings{Policies: policies, Bounds: bound.DefaultBounds,
			Bins: bound.DefaultBins, MaxStates: bound.DefaultMaxStates}}
		want, err := bound.Run(ctx, bound.DefaultBackend(), s, req, bound.Progress{})
		if err != nil {
			t.Fatal(err)
		}
		wantJSON, _ := json.Marshal(want)
		if result != string(wantJSON) {
			t.Errorf("result %s\nwant %s", result, wantJSON)
		}
		for _, c := range []struct {
			req  *optdv1.BoundRequest
			want string
		}{
			{&optdv1.BoundRequest{}, "give a scenario"},
			{&optdv1.BoundRequest{ScenarioJson: string(sc), Policies: []string{"best"}}, `unknown policy "best"`},
			{&optdv1.BoundRequest{ScenarioJson: string(sc), Bounds: []string{"magic"}}, `unknown bound "magic"`},
			{&optdv1.BoundRequest{ScenarioJson: string(sc), MaxStates: 2_000_000}, "max_states"},
			{&optdv1.BoundRequest{ScenarioJson: string(sc), Bins: -1}, "bins = -1"},
		} {
			stream, err := ts.optimize.Bound(ctx, c.req)
			if err == nil {
				_, err = stream.Recv()
			}
			wantCode(t, err, codes.InvalidArgument, c.want)
		}
	})
}
