package search

import (
	"context"
	"strings"
	"testing"

	"github.com/optd/optd/policy"
	"github.com/optd/optd/sim"
)

// TestHasteABeta: the problem's metric at the defaults is the makespan of
// HaSTE-A with the paper's β simulated directly (a second path), and a short
// CMA-ES search returns β in range with its comparison to the paper's β on
// the same and on fresh seeds.
func TestHasteABeta(t *testing.T) {
	sc, err := sim.BuiltinCluster("haste-table4")
	if err != nil {
		t.Fatal(err)
	}
	prob := HasteABeta(sc)
	ctx := context.Background()
	got, err := prob.Metric(ctx, []float64{0.2, 0.2, 0.6}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r := simulateDirect(t, sc, "haste-a", policy.HeartbeatConfig{}, nil, 1); got != r.MakespanS {
		t.Errorf("metric at the paper's β = %v, direct simulation %v", got, r.MakespanS)
	}
	res, err := Run(ctx, prob, Options{Evaluations: 6, Replications: 2, Validation: 2, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range prob.Params {
		if v := res.Params[p.Name]; v < p.Min || v > p.Max {
			t.Errorf("%s = %v outside [%v, %v]", p.Name, v, p.Min, p.Max)
		}
	}
	if res.Validation == nil || res.Validation.Replications != 2 || res.Search.Default.Mean <= 0 {
		t.Errorf("result %+v", res)
	}
	prob.Objective = "throughput"
	if _, err := prob.Metric(ctx, []float64{0.2, 0.2, 0.6}, 0); err == nil {
		t.Error("unknown objective accepted")
	}
}

// TestPipelineParams: the space is the pipeline's declared parameters, the
// metric at the defaults equals the plain pipeline's simulation, and a
// pipeline without parameters is refused.
func TestPipelineParams(t *testing.T) {
	sc, err := sim.BuiltinCluster("stealing-stragglers-2")
	if err != nil {
		t.Fatal(err)
	}
	spec := "fair+sepb"
	prob, err := PipelineParams(sc, spec)
	if err != nil {
		t.Fatal(err)
	}
	pipe, _ := policy.NewPipeline(spec, policy.HeartbeatConfig{Seed: 1})
	if len(prob.Params) == 0 || len(prob.Params) != len(pipe.Params()) {
		t.Fatalf("space %v, pipeline params %v", prob.Params, pipe.Params())
	}
	ctx := context.Background()
	got, err := prob.Metric(ctx, prob.Params.Defaults(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if r := simulateDirect(t, sc, spec, policy.HeartbeatConfig{}, nil, 1); got != r.MakespanS {
		t.Errorf("metric at the defaults %v, plain pipeline %v", got, r.MakespanS)
	}
	if _, err := PipelineParams(sc, "fifo"); err == nil {
		t.Error("a pipeline without parameters was accepted")
	}
}

// TestPipelineParamsHasteA: a haste-a pipeline with add-ons searches β and
// the add-ons' parameters together; the metric at a point equals the
// pipeline built with that β and those parameters directly (a second
// path), the references run on the same replication as `optd simulate
// --seed rep+1`, and Check names what is wrong.
func TestPipelineParamsHasteA(t *testing.T) {
	sc, err := sim.BuiltinCluster("stealing-stragglers-2")
	if err != nil {
		t.Fatal(err)
	}
	prob, err := PipelineParams(sc, "haste-a+sepb")
	if err != nil {
		t.Fatal(err)
	}
	names := prob.Params.Names()
	if len(names) < 4 || names[0] != "haste-a.beta_fitness" || names[3] != "sepb.min_run_s" {
		t.Fatalf("space %v", names)
	}
	x := prob.Params.Defaults()
	x[0], x[3] = 0.9, 5
	ctx := context.Background()
	got, err := prob.Metric(ctx, x, 1)
	if err != nil {
		t.Fatal(err)
	}
	r := simulateDirect(t, sc, "haste-a+sepb", policy.HeartbeatConfig{Beta: [3]float64{0.9, 0.2, 0.6}}, map[string]float64{"sepb.min_run_s": 5}, 2)
	if got != r.MakespanS {
		t.Errorf("metric %v, direct simulation %v", got, r.MakespanS)
	}

	prob.Refs, prob.Objective = []string{"fair"}, ObjectiveMeanResponse
	if err := prob.Check(); err != nil {
		t.Fatal(err)
	}
	ref, err := prob.ReferenceMetric(ctx, "fair", 1)
	if err != nil {
		t.Fatal(err)
	}
	if r := simulateDirect(t, sc, "fair", policy.HeartbeatConfig{}, nil, 2); ref != r.MeanResponseS {
		t.Errorf("reference fair %v, direct simulation %v", ref, r.MeanResponseS)
	}
	for _, tc := range []struct {
		edit func(p *ClusterProblem)
		want string
	}{
		{func(p *ClusterProblem) { p.Objective = "throughput" }, `objective "throughput"`},
		{func(p *ClusterProblem) { p.Refs = []string{"fair+nope"} }, `reference "fair+nope"`},
		{func(p *ClusterProblem) { p.Scenario = nil }, "no scenario"},
	} {
		bad := *prob
		tc.edit(&bad)
		if err := bad.Check(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Check: %v, want %q", err, tc.want)
		}
	}
}

// simulateDirect runs the pipeline spec built with cfg and the parameters
// set, as `optd simulate --seed seed` does (the policy and the simulation
// both seeded with seed): the second path the problems' metrics are checked
// against.
func simulateDirect(t *testing.T, sc *sim.ClusterScenario, spec string, cfg policy.HeartbeatConfig, set map[string]float64, seed uint64) *sim.ClusterResult {
	t.Helper()
	cfg.Seed = seed
	pipe, err := policy.NewPipeline(spec, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range set {
		if err := pipe.SetParam(k, v); err != nil {
			t.Fatal(err)
		}
	}
	r, err := sim.RunCluster(context.Background(), sc, pipe, sim.ClusterOptions{Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	return r
}
