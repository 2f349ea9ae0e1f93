package placement

import (
	"fmt"
	"math"

	"github.com/optd/optd/policy"
	"github.com/optd/optd/thresholds"
)

var _ policy.Placement = (*RecedingKnobs)(nil)

// recedingKnobsParams are the parameters of "receding-horizon-knobs".
var recedingKnobsParams = []policy.Param{
	windowParam,
	{Name: "scale", Min: 0.05, Max: 20, Default: 1, Log: true,
		Doc: "κ: the threshold is κ·p·E[X/R] instead of Theorem 4's p·E[X/R]"},
	{Name: "skip", Min: 0, Max: 10, Default: 1,
		Doc: "σ: a job below the threshold skips round(σ·R) cheapest free slots instead of R"},
}

// RecedingKnobs is Theorem 4's receding-horizon policy with its knobs
// exposed: the estimator window ω, a scale κ on the threshold and the
// number of slots skipped. With y = X/R and the estimate p·E[X/R] of
// thresholds.Estimator,
//
//	y ≥ κ·p·E[X/R] or free < R + round(σ·R):  positions 1..R
//	otherwise:                                 positions round(σ·R)+1 .. round(σ·R)+R
//
// With κ = 1 and σ = 1 (the defaults) it is exactly "receding-horizon"
// (thresholds.DecideRecedingHorizon, including its few-free-slots rule).
// Not safe for concurrent use.
type RecedingKnobs struct {
	est          *thresholds.Estimator
	scale, sigma float64
}

// NewRecedingKnobs returns the policy with the parameters of cfg.Params
// (window defaults to cfg.Window when the parameter is absent).
func NewRecedingKnobs(cfg policy.PlacementConfig) (policy.Placement, error) {
	v, err := policy.ResolveParams(NameRecedingKnobs, recedingKnobsParams, cfg.Params)
	if err != nil {
		return nil, err
	}
	w := cfg.Window
	if _, ok := cfg.Params["window"]; ok || w == 0 {
		w = int(v["window"])
	}
	est, err := thresholds.NewEstimator(w)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", policy.ErrInvalidConfig, err)
	}
	return &RecedingKnobs{est: est, scale: v["scale"], sigma: v["skip"]}, nil
}

// Name implements policy.Plugin.
func (*RecedingKnobs) Name() string { return NameRecedingKnobs }

// Place observes the job, then compares y with κ·p·E[X/R].
func (p *RecedingKnobs) Place(req *policy.PlacementRequest) (policy.PlacementDecision, error) {
	if err := req.Check(); err != nil {
		return policy.PlacementDecision{}, err
	}
	if err := p.est.Observe(observation(req)); err != nil {
		return policy.PlacementDecision{}, fmt.Errorf("%w: %w", policy.ErrInvalidRequest, err)
	}
	e, _ := p.est.Estimate()
	y := req.X / float64(req.R)
	th := p.scale * e.Threshold
	skip := int(math.Round(p.sigma * float64(req.R)))
	start, rule := 0, "cheapest"
	switch {
	case len(req.Free) < req.R+skip:
		rule = "few free slots"
	case y < th:
		start, rule = skip, fmt.Sprintf("skip %d", skip)
	}
	return policy.PlacementDecision{
		Positions: Block(start, req.R),
		Threshold: th,
		Reason: fmt.Sprintf("receding-horizon-knobs: y = %.6g vs κ·p·E[X/R] = %.4g·%.4g·%.6g = %.6g: %s",
			y, p.scale, e.P, e.MeanY, th, rule),
	}, nil
}
