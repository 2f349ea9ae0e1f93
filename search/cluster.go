package search

import (
	"context"
	"fmt"

	"github.com/optd/optd/policy"
	"github.com/optd/optd/sim"
)

// Objectives of a ClusterProblem.
const (
	ObjectiveMakespan     = "makespan"
	ObjectiveMeanResponse = "mean-response"
)

// ClusterProblem searches a heartbeat policy's parameters on a cluster
// scenario (sim.RunCluster): the metric of replication rep is the simulated
// makespan or mean job response time with ClusterOptions.Seed = rep + 1,
// so every candidate sees the same block replicas, task works and skew
// (common random numbers).
type ClusterProblem struct {
	Scenario *sim.ClusterScenario
	// Spec is the pipeline (e.g. "haste-a").
	Spec string
	// Params are the searched parameters; Config maps their values to the
	// pipeline's configuration (nil: the zero configuration), and Set, if
	// not nil, applies them to the built pipeline (Pipeline.SetParam).
	Params Space
	Config func(x []float64) policy.HeartbeatConfig
	Set    func(pipe *policy.Pipeline, x []float64) error
	// Objective is ObjectiveMakespan (default) or ObjectiveMeanResponse.
	Objective string
}

// HasteABeta is the search of HaSTE-A's weights β = (β1, β2, β3) of Eq. 6
// (fitness, urgency, alignment) on a scenario, from the paper's
// {0.2, 0.2, 0.6} (§5.2.3). Only the ratios of the β matter to the ranking;
// each ranges over [0.01, 1] (all zero would mean "the paper's default" to
// the policy).
func HasteABeta(sc *sim.ClusterScenario) *ClusterProblem {
	sp := make(Space, 3)
	for k, name := range []string{"beta-fitness", "beta-urgency", "beta-alignment"} {
		sp[k] = Param{Name: name, Min: 0.01, Max: 1, Default: policy.DefaultBeta[k]}
	}
	return &ClusterProblem{Scenario: sc, Spec: "haste-a", Params: sp,
		Config: func(x []float64) policy.HeartbeatConfig {
			return policy.HeartbeatConfig{Beta: [3]float64{x[0], x[1], x[2]}}
		}}
}

// PipelineParams is the search of every tunable parameter of the pipeline
// spec (the slot, speculation and sharing stages' Pipeline.Params, named
// STAGE.PARAM, from the papers' defaults within their declared ranges).
func PipelineParams(sc *sim.ClusterScenario, spec string) (*ClusterProblem, error) {
	pipe, err := policy.NewPipeline(spec, policy.HeartbeatConfig{})
	if err != nil {
		return nil, err
	}
	var sp Space
	for _, q := range pipe.Params() {
		sp = append(sp, Param{Name: q.Name, Min: q.Min, Max: q.Max, Default: q.Default, Integer: q.Integer})
	}
	if err := sp.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", spec, err)
	}
	return &ClusterProblem{Scenario: sc, Spec: spec, Params: sp,
		Set: func(pipe *policy.Pipeline, x []float64) error {
			for k, q := range sp {
				if err := pipe.SetParam(q.Name, x[k]); err != nil {
					return err
				}
			}
			return nil
		}}, nil
}

// Space implements Problem.
func (p *ClusterProblem) Space() Space { return p.Params }

// Metric implements Problem.
func (p *ClusterProblem) Metric(ctx context.Context, x []float64, rep int) (float64, error) {
	var cfg policy.HeartbeatConfig
	if p.Config != nil {
		cfg = p.Config(x)
	}
	pipe, err := policy.NewPipeline(p.Spec, cfg)
	if err != nil {
		return 0, err
	}
	if p.Set != nil {
		if err := p.Set(pipe, x); err != nil {
			return 0, err
		}
	}
	r, err := sim.RunCluster(ctx, p.Scenario, pipe, sim.ClusterOptions{Seed: uint64(rep) + 1})
	if err != nil {
		return 0, err
	}
	switch p.Objective {
	case "", ObjectiveMakespan:
		return r.MakespanS, nil
	case ObjectiveMeanResponse:
		return r.MeanResponseS, nil
	}
	return 0, fmt.Errorf("%w: objective %q (want %s or %s)", ErrInvalid, p.Objective, ObjectiveMakespan, ObjectiveMeanResponse)
}
