package search

import (
	"context"
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
	pipe, err := policy.NewPipeline("haste-a", policy.HeartbeatConfig{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := sim.RunCluster(ctx, sc, pipe, sim.ClusterOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got != r.MakespanS {
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
	pipe, _ := policy.NewPipeline(spec, policy.HeartbeatConfig{})
	if len(prob.Params) == 0 || len(prob.Params) != len(pipe.Params()) {
		t.Fatalf("space %v, pipeline params %v", prob.Params, pipe.Params())
	}
	ctx := context.Background()
	got, err := prob.Metric(ctx, prob.Params.Defaults(), 0)
	if err != nil {
		t.Fatal(err)
	}
	r, err := sim.RunCluster(ctx, sc, pipe, sim.ClusterOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got != r.MakespanS {
		t.Errorf("metric at the defaults %v, plain pipeline %v", got, r.MakespanS)
	}
	if _, err := PipelineParams(sc, "fifo"); err == nil {
		t.Error("a pipeline without parameters was accepted")
	}
}
