package placement

import (
	"context"
	"fmt"

	"github.com/optd/optd/policy"
	"github.com/optd/optd/thresholds"
)

var (
	_ policy.Placement = (*RecedingHorizon)(nil)
	_ policy.Placement = (*RollingHorizon)(nil)
)

// RecedingHorizon is Theorem 4 of Tan et al. (INFOCOM 2013, §IV) with its
// sliding-window estimator: on each placement it records the job's
// observation (N_i, X_i, R_i) and places the job on the R cheapest free
// slots if y = X/R ≥ p·E[X/R], p = N̄/(2N̄+1), and on positions R+1..2R
// otherwise (thresholds.DecideRecedingHorizon, which also documents the
// fewer-than-2R-free case). Not safe for concurrent use.
type RecedingHorizon struct {
	rh *thresholds.RecedingHorizon
}

// NewRecedingHorizon returns the policy with a fresh estimator of window
// cfg.Window.
func NewRecedingHorizon(cfg policy.PlacementConfig) (policy.Placement, error) {
	v, err := policy.ResolveParams(NameRecedingHorizon, []policy.Param{windowParam}, cfg.Params)
	if err != nil {
		return nil, err
	}
	rh, err := thresholds.NewRecedingHorizon(overrideInt(cfg.Window, cfg.Params, "window", v))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", policy.ErrInvalidConfig, err)
	}
	return &RecedingHorizon{rh: rh}, nil
}

// Name implements policy.Plugin.
func (*RecedingHorizon) Name() string { return NameRecedingHorizon }

// Estimator returns the policy's estimator (for snapshots).
func (p *RecedingHorizon) Estimator() *thresholds.Estimator { return p.rh.Estimator }

// Place observes the job and decides by Theorem 4.
func (p *RecedingHorizon) Place(req *policy.PlacementRequest) (policy.PlacementDecision, error) {
	if err := req.Check(); err != nil {
		return policy.PlacementDecision{}, err
	}
	d, err := p.rh.Decide(observation(req), len(req.Free))
	if err != nil {
		return policy.PlacementDecision{}, err
	}
	e := d.Estimate
	return policy.PlacementDecision{
		Positions: d.Positions,
		Threshold: e.Threshold,
		Reason: fmt.Sprintf("receding-horizon: y = %.6g vs p·E[X/R] = %.6g (p = %.4g, N̄ = %.4g, E[X/R] = %.6g over %d jobs): %s",
			d.Y, e.Threshold, e.P, e.MeanJobs, e.MeanY, e.Samples, d.Rule),
	}, nil
}

func observation(req *policy.PlacementRequest) thresholds.Observation {
	return thresholds.Observation{JobsInSystem: req.JobsInSystem, Data: req.X, Reduces: req.R}
}

// RollingHorizon is the finite-horizon rolling threshold policy
// (thresholds.Rolling): each job is placed by the stage-1 thresholds of the
// Theorem-2 table for H+1 sequential jobs drawn from the estimator window's
// empirical law of (X, R), i.e. as if H more jobs would arrive before any
// running job leaves. Not safe for concurrent use.
//
// The window must hold the law's tail. On a heavy-tailed trace (SWIM
// FB-2010: the largest 0.1% of the jobs make about a third of the cost
// on an empty cluster) the default ω = 100 rarely holds one of the largest
// jobs, so its thresholds keep nothing cheap for them, and a quarter to
// a half of the policy's excess over the empty cluster (by replication)
// is those few jobs finding the cheapest slots taken. A window of thousands of jobs (the past, not the
// trace's future) with a shorter horizon keeps a few cheap slots for
// them; `optd search --policy rolling-horizon` on
// search/testdata/swim-fb2010.json finds such parameters, and `make
// traces-rolling` compares them with the defaults paired by replication.
type RollingHorizon struct {
	r *thresholds.Rolling
}

// NewRollingHorizon returns the rolling policy with horizon cfg.Horizon and
// a fresh estimator of window cfg.Window.
func NewRollingHorizon(cfg policy.PlacementConfig) (policy.Placement, error) {
	v, err := policy.ResolveParams(NameRollingHorizon, []policy.Param{windowParam, horizonParam}, cfg.Params)
	if err != nil {
		return nil, err
	}
	est, err := thresholds.NewEstimator(overrideInt(cfg.Window, cfg.Params, "window", v))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", policy.ErrInvalidConfig, err)
	}
	rc := cfg.Rolling
	if h := overrideInt(cfg.Horizon, cfg.Params, "horizon", v); h != 0 {
		rc.Horizon = h
	}
	r, err := thresholds.NewRolling(rc, est)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", policy.ErrInvalidConfig, err)
	}
	return &RollingHorizon{r: r}, nil
}

// Name implements policy.Plugin.
func (*RollingHorizon) Name() string { return NameRollingHorizon }

// Estimator returns the policy's estimator (for snapshots).
func (p *RollingHorizon) Estimator() *thresholds.Estimator { return p.r.Estimator() }

// Place observes the job, refreshes the table if the estimate moved, and
// places the job on the block the stage-1 thresholds choose.
func (p *RollingHorizon) Place(req *policy.PlacementRequest) (policy.PlacementDecision, error) {
	if err := req.Check(); err != nil {
		return policy.PlacementDecision{}, err
	}
	ctx := req.Ctx
	if ctx == nil {
		ctx = context.Background()
	}
	d, err := p.r.Decide(ctx, observation(req), len(req.Free))
	if err != nil {
		return policy.PlacementDecision{}, err
	}
	reason := fmt.Sprintf("rolling-horizon (H = %d, table from %d jobs, mean Y %.6g): y = %.6g, skip %d cheapest (%.6g > y ≥ %.6g)",
		d.Horizon, d.TableSamples, d.TableMeanY, d.Y, d.Start, d.Above, d.Below)
	if d.Clamped {
		reason += ", clamped to the last free slots"
	}
	return policy.PlacementDecision{Positions: d.Positions, Threshold: d.Below, Reason: reason}, nil
}

// The knobs of receding-horizon and rolling-horizon as search parameters.
var (
	windowParam = policy.Param{Name: "window", Min: 5, Max: 5000, Default: thresholds.DefaultWindow, Log: true, Integer: true,
		Doc: "ω, the number of latest arrivals the estimator averages over"}
	horizonParam = policy.Param{Name: "horizon", Min: 1, Max: 50, Default: thresholds.DefaultHorizon, Log: true, Integer: true,
		Doc: "H, the number of future jobs the rolling table looks ahead"}
)

// overrideInt is field, unless the parameter name was given in params
// (then its resolved value).
func overrideInt(field int, params map[string]float64, name string, resolved map[string]float64) int {
	if _, ok := params[name]; ok {
		return int(resolved[name])
	}
	return field
}
