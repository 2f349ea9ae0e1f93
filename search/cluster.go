package search

import (
	"context"
	"fmt"
	"strings"

	"github.com/optd/optd/policy"
	"github.com/optd/optd/policy/assign"
	"github.com/optd/optd/sim"
)

var (
	_ Problem    = (*ClusterProblem)(nil)
	_ Referenced = (*ClusterProblem)(nil)
	_ Bounded    = (*ClusterProblem)(nil)
)

// BoundCluster names sim.ClusterLowerBound among a ClusterProblem's lower
// bounds.
const BoundCluster = "cluster-lower-bound"

// LowerBounds implements Bounded: sim.ClusterLowerBound on replication
// rep's task works (the run's own seed), its makespan or mean response
// bound as the objective asks. The bound holds for every policy compared:
// it is weakened as sim.BoundOptionsFor says for the searched pipeline and
// for every reference (a pipeline that grants more than a request, or
// changes slots, may beat the recorded works), and whether a pipeline does
// so does not depend on its parameters.
func (p *ClusterProblem) LowerBounds(_ context.Context, rep int) (map[string]float64, error) {
	seed := uint64(rep) + 1
	var opt sim.ClusterBoundOptions
	for _, spec := range append([]string{p.Spec}, p.Refs...) {
		pipe, err := policy.NewPipeline(spec, policy.HeartbeatConfig{})
		if err != nil {
			return nil, err
		}
		o := sim.BoundOptionsFor(pipe, seed)
		opt.Seed, opt.Sharing, opt.SlotChanges = seed, opt.Sharing || o.Sharing, opt.SlotChanges || o.SlotChanges
	}
	b, err := sim.ClusterLowerBound(p.Scenario, opt)
	if err != nil {
		return nil, err
	}
	if p.Objective == ObjectiveMeanResponse {
		return map[string]float64{BoundCluster: b.MeanResponseS}, nil
	}
	return map[string]float64{BoundCluster: b.MakespanS}, nil
}

// Objectives of a ClusterProblem.
const (
	ObjectiveMakespan     = "makespan"
	ObjectiveMeanResponse = "mean-response"
)

// ClusterObjectives lists the objectives of a ClusterProblem, the default
// first.
func ClusterObjectives() []string { return []string{ObjectiveMakespan, ObjectiveMeanResponse} }

// ClusterProblem searches a heartbeat policy's parameters on a cluster
// scenario (sim.RunCluster): the metric of replication rep is the simulated
// makespan or mean job response time with ClusterOptions.Seed = rep + 1 and
// the policy's own seed HeartbeatConfig.Seed = rep + 1 (the run of
// `optd simulate --seed rep+1`), so every candidate sees the same block
// replicas, task works and skew (common random numbers).
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
	// Refs are reference pipeline specs ("haste", "fair+sepb") run with
	// their defaults on the same replications.
	Refs []string
}

// HaSTE-A's weights β = (β1, β2, β3) of Eq. 6 as parameters of the stage
// haste-a, named like Pipeline.Params' STAGE.PARAM.
var hasteABeta = [3]string{"haste-a.beta_fitness", "haste-a.beta_urgency", "haste-a.beta_alignment"}

// HasteABeta is the search of HaSTE-A's weights β = (β1, β2, β3) of Eq. 6
// (fitness, urgency, alignment) on a scenario, from the paper's
// {0.2, 0.2, 0.6} (§5.2.3): PipelineParams(sc, "haste-a").
func HasteABeta(sc *sim.ClusterScenario) *ClusterProblem {
	p, err := PipelineParams(sc, "haste-a")
	if err != nil {
		panic("search: " + err.Error()) // cannot happen: package policy registers haste-a
	}
	return p
}

// PipelineParams is the search of every parameter of the pipeline spec:
// HaSTE-A's β of Eq. 6 when the assignment policy is haste-a (each in
// [0.01, 1] from the paper's {0.2, 0.2, 0.6}, §5.2.3; only the ratios of
// the β matter to the ranking, and all zero would mean "the paper's
// default" to the policy), then the tunable parameters of the slot,
// speculation and sharing stages (Pipeline.Params, named STAGE.PARAM, from
// the papers' defaults within their declared ranges). A pipeline without
// parameters is an error.
func PipelineParams(sc *sim.ClusterScenario, spec string) (*ClusterProblem, error) {
	pipe, err := policy.NewPipeline(spec, policy.HeartbeatConfig{})
	if err != nil {
		return nil, err
	}
	var sp Space
	withBeta := assignmentOf(spec) == "haste-a"
	if withBeta {
		for k, name := range hasteABeta {
			sp = append(sp, policy.Param{Name: name, Min: 0.01, Max: 1, Default: assign.DefaultBeta[k]})
		}
	}
	staged := len(sp)
	sp = append(sp, pipe.Params()...)
	if err := sp.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", spec, err)
	}
	p := &ClusterProblem{Scenario: sc, Spec: spec, Params: sp}
	if withBeta {
		p.Config = func(x []float64) policy.HeartbeatConfig {
			return policy.HeartbeatConfig{Beta: [3]float64{x[0], x[1], x[2]}}
		}
	}
	if staged < len(sp) {
		p.Set = func(pipe *policy.Pipeline, x []float64) error {
			for k := staged; k < len(sp); k++ {
				if err := pipe.SetParam(sp[k].Name, x[k]); err != nil {
					return err
				}
			}
			return nil
		}
	}
	return p, nil
}

// assignmentOf is the assignment policy of a spec "assignment[+addon...]".
func assignmentOf(spec string) string {
	a, _, _ := strings.Cut(spec, "+")
	return strings.TrimSpace(a)
}

// Space implements Problem.
func (p *ClusterProblem) Space() Space { return p.Params }

// Check validates the problem before a search: the scenario, the space, the
// objective, the pipeline at the defaults and every reference.
func (p *ClusterProblem) Check() error {
	if p.Scenario == nil {
		return fmt.Errorf("%w: no scenario", ErrInvalid)
	}
	if err := p.Params.Validate(); err != nil {
		return err
	}
	if err := p.checkObjective(); err != nil {
		return err
	}
	if _, err := p.pipeline(p.Params.Defaults(), 0); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	for _, r := range p.Refs {
		if _, err := policy.NewPipeline(r, policy.HeartbeatConfig{}); err != nil {
			return fmt.Errorf("%w: reference %q: %w", ErrInvalid, r, err)
		}
	}
	return nil
}

func (p *ClusterProblem) checkObjective() error {
	switch p.Objective {
	case "", ObjectiveMakespan, ObjectiveMeanResponse:
		return nil
	}
	return fmt.Errorf("%w: objective %q (want %s)", ErrInvalid, p.Objective, strings.Join(ClusterObjectives(), " or "))
}

// pipeline builds the candidate x's pipeline for replication rep.
func (p *ClusterProblem) pipeline(x []float64, rep int) (*policy.Pipeline, error) {
	var cfg policy.HeartbeatConfig
	if p.Config != nil {
		cfg = p.Config(x)
	}
	cfg.Seed = uint64(rep) + 1
	pipe, err := policy.NewPipeline(p.Spec, cfg)
	if err != nil {
		return nil, err
	}
	if p.Set != nil {
		if err := p.Set(pipe, x); err != nil {
			return nil, err
		}
	}
	return pipe, nil
}

// run simulates replication rep under pipe and returns the objective.
func (p *ClusterProblem) run(ctx context.Context, pipe *policy.Pipeline, rep int) (float64, error) {
	if err := p.checkObjective(); err != nil {
		return 0, err
	}
	r, err := sim.RunCluster(ctx, p.Scenario, pipe, sim.ClusterOptions{Seed: uint64(rep) + 1})
	if err != nil {
		return 0, err
	}
	if p.Objective == ObjectiveMeanResponse {
		return r.MeanResponseS, nil
	}
	return r.MakespanS, nil
}

// Metric implements Problem.
func (p *ClusterProblem) Metric(ctx context.Context, x []float64, rep int) (float64, error) {
	pipe, err := p.pipeline(x, rep)
	if err != nil {
		return 0, err
	}
	return p.run(ctx, pipe, rep)
}

// References implements Referenced.
func (p *ClusterProblem) References() []string { return p.Refs }

// ReferenceMetric implements Referenced: the reference pipeline with its
// defaults on replication rep.
func (p *ClusterProblem) ReferenceMetric(ctx context.Context, spec string, rep int) (float64, error) {
	pipe, err := policy.NewPipeline(spec, policy.HeartbeatConfig{Seed: uint64(rep) + 1})
	if err != nil {
		return 0, err
	}
	return p.run(ctx, pipe, rep)
}
