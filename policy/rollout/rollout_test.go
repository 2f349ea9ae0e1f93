package rollout_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/optd/optd/mdp"
	"github.com/optd/optd/mdp/mdptest"
	"github.com/optd/optd/policy"
	"github.com/optd/optd/policy/placement"
	"github.com/optd/optd/policy/policytest"
	"github.com/optd/optd/policy/rollout"
	"github.com/optd/optd/sim"
	"github.com/optd/optd/thresholds"
)

// solvable are the repository's MDP-solvable scenarios.
var solvable = mdptest.Solvable("../..")

var load = mdptest.Scenario

// TestRolloutOnSolvableScenarios evaluates the rollout exactly on the MDP
// of the solvable scenarios (the policy keeps no state, so the MDP's policy
// evaluation gives its long-run cost): never below the optimum (a check of
// the evaluation and of the decisions) and, the rollout's point, below its
// base policy's cost. Exact rollout never costs more than its base; the
// sampled, truncated one could, and does not on these (the test logs each
// ratio). Under -race it checks two scenarios and the state-threshold base;
// OPTD_ROLLOUT_ALL=1 (`make rollout-check`) all three and greedy too.
func TestRolloutOnSolvableScenarios(t *testing.T) {
	ctx := context.Background()
	all := os.Getenv("OPTD_ROLLOUT_ALL") != ""
	for _, path := range solvable {
		if path == solvable[1] && !all {
			continue // the largest MDP: light under -race, `make rollout-check` runs it
		}
		s := load(t, path)
		m, sol := mdptest.Solve(t, s)
		bases := []struct {
			base float64
			peer string
		}{{rollout.BaseStateThreshold, placement.NameStateThreshold}, {rollout.BaseGreedy, placement.NameGreedy}}
		if !all {
			bases = bases[:1]
		}
		for _, c := range bases {
			params := map[string]float64{"base_policy": c.base, "samples": 32}
			pol, err := policy.NewPlacement(rollout.Name, policy.PlacementConfig{Params: params, Model: s.PlacementModel()})
			if err != nil {
				t.Fatal(err)
			}
			cost, err := mdp.EvaluatePolicy(ctx, m, pol, mdp.SolveOptions{})
			if err != nil {
				t.Fatal(err)
			}
			peer, err := policy.NewPlacement(c.peer, policy.PlacementConfig{Workload: s.Workload})
			if err != nil {
				t.Fatal(err)
			}
			base, err := mdp.EvaluatePolicy(ctx, m, peer, mdp.SolveOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: rollout on %s %.5g = optimum × %.4f, base × %.4f (base = optimum × %.4f)", path, c.peer, cost, cost/sol.Optimal, cost/base, base/sol.Optimal)
			if cost < sol.Optimal*(1-1e-9) {
				t.Errorf("%s: rollout on %s costs %.9g, below the optimum %.9g", path, c.peer, cost, sol.Optimal)
			}
			if cost > base*(1+1e-9) {
				t.Errorf("%s: rollout on %s costs %.6g, more than its base's %.6g", path, c.peer, cost, base)
			}
		}
	}
}

// decisions returns a fresh policy's decisions on reqs, checking each is
// R distinct ascending positions of the free list.
func decisions(t *testing.T, s *sim.Scenario, seed uint64, params map[string]float64, reqs []*policy.PlacementRequest) []string {
	t.Helper()
	pol, err := policy.NewPlacement(rollout.Name, policy.PlacementConfig{Seed: seed, Params: params, Model: s.PlacementModel()})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, req := range reqs {
		d, err := pol.Place(req)
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Positions) != req.R || !slices.IsSorted(d.Positions) || d.Positions[0] < 0 || d.Positions[req.R-1] >= len(req.Free) {
			t.Fatalf("decision %v for R = %d on %d free slots", d.Positions, req.R, len(req.Free))
		}
		out = append(out, fmt.Sprint(d.Positions))
	}
	return out
}

// TestDeterministic: the decision depends only on the request and the
// seed: a second policy (as after a restart) decides the same on the same
// requests, in another order too (no state carried between decisions);
// another seed samples other futures.
func TestDeterministic(t *testing.T) {
	for _, path := range solvable {
		s := load(t, path)
		reqs := policytest.PlacementRequests(s.SlotCosts, s.K, s.Workload.MaxReduces(), 60, 1)
		params := map[string]float64{"samples": 4, "confidence": 0}
		a := decisions(t, s, 1, params, reqs)
		if b := decisions(t, s, 1, params, reqs); !slices.Equal(a, b) {
			t.Errorf("%s: two policies of one seed decide differently", path)
		}
		rev := slices.Clone(reqs)
		slices.Reverse(rev)
		b := decisions(t, s, 1, params, rev)
		slices.Reverse(b)
		if !slices.Equal(a, b) {
			t.Errorf("%s: the decisions depend on the order of the requests", path)
		}
		if c := decisions(t, s, 2, params, reqs); slices.Equal(a, c) {
			t.Logf("%s: seeds 1 and 2 decide the same on every request (possible with few candidates)", path)
		}
	}
}

// TestBadConfiguration: every refused configuration names the field, its
// value and the limit, with no Go type name or package prefix.
func TestBadConfiguration(t *testing.T) {
	s := load(t, solvable[0])
	good := s.PlacementModel()
	for _, c := range []struct {
		model  *policy.PlacementModel
		params map[string]float64
		want   string
	}{
		{nil, nil, "rollout needs the cluster's queueing model"},
		{&policy.PlacementModel{ArrivalRate: -1}, nil, "model.arrival_rate = -1: must be finite and > 0"},
		{good, map[string]float64{"samples": 0}, "parameter samples = 0, must be in [1, 256]"},
		{good, map[string]float64{"horizon": 2.5}, "parameter horizon = 2.5, must be an integer"},
		{good, map[string]float64{"base_policy": 3}, "parameter base_policy = 3, must be in [0, 2]"},
		{good, map[string]float64{"st_ratio": 0}, "parameter st_ratio = 0, must be in [0.01, 1]"},
		{good, map[string]float64{"st_window": 10}, `rollout has no parameter "st_window"`},
		{good, map[string]float64{"window": 4}, "parameter window = 4, must be in [5, 5000]"},
		{good, map[string]float64{"future_law": 2}, "parameter future_law = 2, must be in [0, 1]"},
		{good, map[string]float64{"rh_horizon": 0}, "parameter rh_horizon = 0, must be in [1, 50]"},
		{good, map[string]float64{"samples": 256, "horizon": 2000}, "samples·horizon·(2·levels + 2) = 256·2000·6 = 3072000 simulated placements per decision, must be ≤ 500000"},
	} {
		_, err := policy.NewPlacement(rollout.Name, policy.PlacementConfig{Model: c.model, Params: c.params})
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, policy.ErrInvalidConfig) {
			t.Errorf("%v: error %v, want %q", c.params, err, c.want)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "*policy.") || strings.Contains(msg, "rollout.") || strings.Contains(msg, "float64") {
			t.Errorf("error %q names Go types or packages", msg)
		}
	}
}

// TestBadRequest: a request that does not fit the model is refused, with
// the slot named; one whose slots are not the model's is decided on its
// own free slots, and says so.
func TestBadRequest(t *testing.T) {
	s := load(t, solvable[0])
	pol, err := policy.NewPlacement(rollout.Name, policy.PlacementConfig{Model: s.PlacementModel()})
	if err != nil {
		t.Fatal(err)
	}
	n := len(s.SlotCosts)
	for _, c := range []struct {
		req  *policy.PlacementRequest
		want string
	}{
		{&policy.PlacementRequest{X: 1, R: 1, Free: []policy.Slot{{Index: 0, Cost: s.SlotCosts[0]}, {Index: 0, Cost: s.SlotCosts[0]}}}, "free[1]: slot 0 listed twice"},
		{&policy.PlacementRequest{X: 1, R: 2, Free: []policy.Slot{{Index: 0, Cost: s.SlotCosts[0]}}}, "1 free slots, job needs R = 2"},
	} {
		_, err := pol.Place(c.req)
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, policy.ErrInvalidRequest) {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
	for _, req := range []*policy.PlacementRequest{
		{X: 1, R: 1, Free: []policy.Slot{{Index: n, Cost: 1}, {Index: n + 1, Cost: 2}}, Held: [][]int{{n + 2}}},
		{X: 1, R: 1, Free: []policy.Slot{{Index: 0, Cost: s.SlotCosts[0] + 1}, {Index: 1, Cost: s.SlotCosts[1] + 1}}, Held: [][]int{{-1}}},
	} {
		d, err := pol.Place(req)
		if err != nil || len(d.Positions) != 1 || !strings.Contains(d.Reason, "not the model's") {
			t.Errorf("%+v: decision %+v, error %v; want one position and the reason to say the slots are not the model's", req, d, err)
		}
	}
}

// TestRollingHorizonBase: with base_policy 2 the base's choice the
// rollout reports is rolling-horizon's own decision on the same stream of
// requests (same window and horizon), whatever the law of the futures;
// the policy then keeps a window of the jobs seen, exposed for the
// server's snapshots, and so does the state-threshold base with
// future_law 1; with the model's law and no rolling base it keeps none.
func TestRollingHorizonBase(t *testing.T) {
	type estimated interface{ Estimator() *thresholds.Estimator }
	for _, path := range solvable {
		s := load(t, path)
		reqs := policytest.PlacementRequests(s.SlotCosts, s.K, s.Workload.MaxReduces(), 80, 3)
		for _, law := range []float64{rollout.LawModel, rollout.LawSeen} {
			params := map[string]float64{"base_policy": rollout.BaseRollingHorizon, "samples": 4, "window": 20, "rh_horizon": 3, "future_law": law}
			pol, err := policy.NewPlacement(rollout.Name, policy.PlacementConfig{Seed: 1, Params: params, Model: s.PlacementModel()})
			if err != nil {
				t.Fatal(err)
			}
			rh, err := policy.NewPlacement(placement.NameRollingHorizon, policy.PlacementConfig{Params: map[string]float64{"window": 20, "horizon": 3}})
			if err != nil {
				t.Fatal(err)
			}
			for k, req := range reqs {
				d, err := pol.Place(req)
				if err != nil {
					t.Fatal(err)
				}
				want, err := rh.Place(req)
				if err != nil {
					t.Fatal(err)
				}
				if tag := fmt.Sprintf("(base %s skips %d)", placement.NameRollingHorizon, want.Positions[0]); !strings.Contains(d.Reason, tag) {
					t.Fatalf("%s, law %v, request %d: reason %q, want %q", path, law, k, d.Reason, tag)
				}
			}
			e, ok := pol.(estimated)
			if !ok {
				t.Fatalf("%s: the rollout on rolling-horizon exposes no estimator", path)
			}
			if got := e.Estimator().Seen(); got != int64(len(reqs)) {
				t.Errorf("%s: estimator saw %d jobs, want %d", path, got, len(reqs))
			}
		}
		for _, c := range []struct {
			law  float64
			want bool
		}{{rollout.LawModel, false}, {rollout.LawSeen, true}} {
			pol, err := policy.NewPlacement(rollout.Name, policy.PlacementConfig{Params: map[string]float64{"future_law": c.law}, Model: s.PlacementModel()})
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := pol.(estimated); ok != c.want {
				t.Errorf("%s: state-threshold base, future_law %v: keeps a window %v, want %v", path, c.law, ok, c.want)
			}
		}
	}
}
