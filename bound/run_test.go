package bound

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/optd/optd/mdp"
	"github.com/optd/optd/sim"
)

const tinyScenario = `{
  "slots": {"costs": [1, 2, 4, 8, 16, 32]},
  "max_jobs_in_service": 3, "arrival_rate": 0.7, "service_rate": 1, "max_waiting": 2,
  "workload": {"joint": [{"data": 1, "reduces": 1, "prob": 0.5},
                         {"data": 10, "reduces": 2, "prob": 0.5}]},
  "jobs": 1500, "warmup_jobs": 100, "replications": 3, "seed": 11
}`

func tiny(t *testing.T) *sim.Scenario {
	t.Helper()
	s, err := sim.DecodeScenario([]byte(tinyScenario), "")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func request(policies ...string) Request {
	return Request{Settings: Settings{Policies: policies, Bounds: DefaultBounds,
		Bins: DefaultBins, MaxStates: DefaultMaxStates}}
}

// TestRunBoundsBelowPolicies: on the same replications, every pathwise
// lower bound (hindsight LP, empty cluster) is at most every policy's
// realized mean cost, and the exact optimum is at most every policy's exact
// cost. (The optimum bounds expectations, not a finite sample, so it is
// compared with the MDP's exact policy evaluations, not with the simulation:
// with common random numbers every policy's sample mean sits on the same
// side of its expectation.)
func TestRunBoundsBelowPolicies(t *testing.T) {
	var simulated []int
	prog := Progress{Simulated: func(done, total int) { simulated = append(simulated, done, total) }}
	out, err := Run(context.Background(), DefaultBackend(), tiny(t),
		request("random", "greedy", "receding-horizon", PolicyMDPOptimal), prog)
	if err != nil {
		t.Fatal(err)
	}
	if out.Optimal == nil {
		t.Fatalf("the tiny MDP was not solved: %+v", out.MDP)
	}
	if want := []int{4, 12, 8, 12, 12, 12}; !reflect.DeepEqual(simulated, want) {
		t.Errorf("progress %v, want %v", simulated, want)
	}
	for _, name := range []string{BoundHindsight, BoundEmptyCluster} {
		lb, ok := out.LowerBounds[name]
		if !ok {
			t.Fatalf("no %s bound in %+v", name, out.LowerBounds)
		}
		for p, f := range out.Policies {
			if lb > f.MeanCost {
				t.Errorf("bound %s = %v above %s's cost %v", name, lb, p, f.MeanCost)
			}
		}
	}
	if len(out.MDP.PolicyCosts) == 0 {
		t.Fatal("no exact policy evaluations")
	}
	for p, c := range out.MDP.PolicyCosts {
		if *out.Optimal > c+1e-9 {
			t.Errorf("optimum %v above %s's exact cost %v", *out.Optimal, p, c)
		}
	}
}

// TestShardsMergeToUnsharded: the merge of every shard equals the
// unsharded run, number for number.
func TestShardsMergeToUnsharded(t *testing.T) {
	ctx := context.Background()
	req := request("greedy", "receding-horizon")
	req.Bounds = []string{BoundEmptyCluster, BoundHindsight}
	whole, err := Run(ctx, DefaultBackend(), tiny(t), req, Progress{})
	if err != nil {
		t.Fatal(err)
	}
	var shards []*Shard
	for i := range 2 {
		r := req
		r.ShardIndex, r.ShardCount = 1-i, 2 // out of order on purpose
		o, err := Run(ctx, DefaultBackend(), tiny(t), r, Progress{})
		if err != nil {
			t.Fatal(err)
		}
		shards = append(shards, o.Shard)
	}
	merged, err := Merge(shards)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(merged, whole) {
		t.Errorf("merged %+v\nwhole %+v", merged, whole)
	}
	if _, err := Merge(shards[:1]); err == nil || !strings.Contains(err.Error(), "got 1 shards") {
		t.Errorf("merging one of two shards: %v", err)
	}
}

func TestRequestErrors(t *testing.T) {
	for _, c := range []struct {
		mutate func(*Request)
		want   string
	}{
		{func(r *Request) { r.Policies = nil }, "at least one policy"},
		{func(r *Request) { r.Policies = []string{"best"} }, `unknown policy "best"`},
		{func(r *Request) { r.Policies = []string{"greedy", "greedy"} }, `"greedy" given twice`},
		{func(r *Request) { r.Bounds = []string{"magic"} }, `unknown bound "magic"`},
		{func(r *Request) { r.Bins = 0 }, "bins = 0"},
		{func(r *Request) { r.MaxStates = -1 }, "max-states = -1"},
		{func(r *Request) { r.Window = -1 }, "window = -1"},
		{func(r *Request) { r.PenaltySteps = -2 }, "penalty-steps = -2"},
		{func(r *Request) { r.PenaltySteps = math.MaxInt }, fmt.Sprintf("penalty-steps = %d: must be at most %d", math.MaxInt, mdp.MaxPenaltySteps)},
		{func(r *Request) { r.LagrangeSteps = -3 }, "lagrange-steps = -3"},
		{func(r *Request) { r.Bounds = []string{BoundPenalized} }, "hindsight-penalized: this build has no LP solver"},
		{func(r *Request) { r.Bounds = []string{BoundValuePenalty} }, "value-penalty: this build has no MDP solver"},
		{func(r *Request) { r.Policies = []string{PolicyPenalty + ":classes=100"} }, "parameter classes = 100, must be in [2, 24]"},
		{func(r *Request) { r.ShardIndex, r.ShardCount = 2, 2 }, "shard 2/2"},
	} {
		r := request("greedy")
		c.mutate(&r)
		_, err := Run(context.Background(), nil, tiny(t), r, Progress{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", r, err, c.want)
		}
	}
	// More shards than replications: an empty shard is an error, not an
	// empty result.
	r := request("greedy")
	r.ShardIndex, r.ShardCount = 0, 4
	if _, err := Run(context.Background(), nil, tiny(t), r, Progress{}); err == nil || !strings.Contains(err.Error(), "no replication") {
		t.Errorf("empty shard: %v", err)
	}
}

// TestRunPenalizedAndLagrangian: the new bounds and the penalty's policy
// through Run: the Lagrangian bound is at most the hindsight LP on every
// replication (it bounds that LP), the penalized bound is at most the exact
// optimum within its sampling error, the penalty's policy costs at least
// the optimum within its own, and the output names the best bound, the
// certified gaps and every bound's ratio to the optimum.
func TestRunPenalizedAndLagrangian(t *testing.T) {
	adpSpec := PolicyPenalty + ":fit_steps=40"
	req := request("greedy", adpSpec)
	req.Bounds = []string{BoundHindsight, BoundLagrangian, BoundPenalized, BoundsMDP}
	req.PenaltySteps, req.ShardCount = 40, 1
	out, err := Run(context.Background(), DefaultBackend(), tiny(t), req, Progress{})
	if err != nil {
		t.Fatal(err)
	}
	if out.Optimal == nil {
		t.Fatalf("the tiny MDP was not solved: %+v", out.MDP)
	}
	opt := *out.Optimal
	for _, r := range out.Shard.Reps {
		if lg, h := r.LowerBounds[BoundLagrangian], r.LowerBounds[BoundHindsight]; !(lg <= h*(1+1e-9)) {
			t.Errorf("replication %d: Lagrangian %v above the hindsight LP %v", r.Replication, lg, h)
		}
	}
	xs := make([]float64, len(out.Shard.Reps))
	for k, r := range out.Shard.Reps {
		xs[k] = r.LowerBounds[BoundPenalized]
	}
	mean, half := sim.MeanCI95(xs)
	if mean-half > opt {
		t.Errorf("penalized bound %v ± %v above the optimum %v", mean, half, opt)
	}
	// The simulated means of short replications sit below the long-run
	// costs (greedy's did by 0.5 here), so the policy is judged paired with
	// greedy on the same jobs: its simulated saving over greedy cannot
	// exceed the largest saving there is, greedy's exact long-run cost
	// minus the optimum, beyond the paired interval.
	greedyExact, ok := out.MDP.PolicyCosts["greedy"]
	if !ok {
		t.Fatalf("greedy not evaluated on the MDP: %+v", out.MDP.PolicyCosts)
	}
	saving := make([]float64, len(out.Shard.Reps))
	for k, r := range out.Shard.Reps {
		saving[k] = r.MeanCost["greedy"] - r.MeanCost[adpSpec]
	}
	if m, h := sim.MeanCI95(saving); m-h > greedyExact-opt {
		t.Errorf("%s saves %v ± %v over greedy in simulation, more than greedy's exact %v minus the optimum %v allows", adpSpec, m, h, greedyExact, opt)
	}
	if out.BestBound != BoundMDPOptimal || out.CertifiedGaps[adpSpec] == nil {
		t.Errorf("best bound %q, certified gaps %v", out.BestBound, out.CertifiedGaps)
	}
	for _, name := range []string{BoundHindsight, BoundLagrangian, BoundPenalized, BoundMDPOptimal} {
		if r, ok := out.BoundRatios[name]; !ok || !(r > 0) || math.Abs(r-out.LowerBounds[name]/opt) > 1e-12 {
			t.Errorf("bound ratio of %s: %v (bound %v, optimum %v)", name, r, out.LowerBounds[name], opt)
		}
	}
}

// TestValuePenaltyBound: the value-penalty bound is computed beside the
// MDP, below the optimum (within its noise) and above the hindsight LP on
// the tiny scenario, counts for the certified gaps, and a scenario without
// a discrete workload is refused with the reason.
func TestValuePenaltyBound(t *testing.T) {
	r := request("greedy")
	r.Bounds = []string{BoundHindsight, BoundValuePenalty, BoundsMDP}
	out, err := Run(context.Background(), DefaultBackend(), tiny(t), r, Progress{})
	if err != nil {
		t.Fatal(err)
	}
	v, ok := out.LowerBounds[BoundValuePenalty]
	if !ok || out.Optimal == nil {
		t.Fatalf("lower bounds %v, optimum %v", out.LowerBounds, out.Optimal)
	}
	opt, hind := *out.Optimal, out.LowerBounds[BoundHindsight]
	t.Logf("optimum %.4f, value-penalty %.4f, hindsight LP %.4f", opt, v, hind)
	// 1%: the bound holds in expectation; its 95% half-width on this
	// scenario is about 0.1% of it.
	if v > opt*1.01 || v <= hind {
		t.Errorf("value-penalty %.6g: want at most the optimum %.6g and above the hindsight LP %.6g", v, opt, hind)
	}
	if ratio := out.BoundRatios[BoundValuePenalty]; math.Abs(ratio-v/opt) > 1e-12 {
		t.Errorf("bound ratio %v, want %v", ratio, v/opt)
	}
	if g := out.CertifiedGaps["greedy"]; g == nil || math.Abs(*g-(out.Policies["greedy"].MeanCost/v-1)) > 1e-12 {
		t.Errorf("certified gap %v, want greedy's gap to the value-penalty bound", g)
	}
	js := strings.Replace(tinyScenario, `{"joint": [{"data": 1, "reduces": 1, "prob": 0.5},
                         {"data": 10, "reduces": 2, "prob": 0.5}]}`,
		`{"data": {"kind": "uniform", "min": 1, "max": 10}, "reduces": {"kind": "discrete", "values": [1, 2], "probs": [0.5, 0.5]}}`, 1)
	s, err := sim.DecodeScenario([]byte(js), "")
	if err != nil || js == tinyScenario {
		t.Fatalf("continuous scenario: %v", err)
	}
	if _, err := Run(context.Background(), DefaultBackend(), s, r, Progress{}); err == nil || !strings.Contains(err.Error(), "value-penalty: it needs the chain of the model itself: a discrete workload") {
		t.Errorf("continuous workload: error %v", err)
	}
}
