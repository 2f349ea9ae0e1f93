package thresholds

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/optd/optd/models"
)

// Defaults of RollingConfig.
const (
	// DefaultHorizon is H, the number of future jobs the rolling policy looks
	// ahead (the table is for K = H+1 jobs).
	DefaultHorizon = 10
	// DefaultRefreshFraction: the table is rebuilt once this fraction of the
	// window has been replaced by new observations.
	DefaultRefreshFraction = 0.1
	// DefaultMeanTolerance: the table is rebuilt when the window's mean of
	// Y = X/R moves by more than this fraction from the table's.
	DefaultMeanTolerance = 0.05
)

// RollingConfig configures the finite-horizon rolling policy. Zero values
// mean the documented defaults.
type RollingConfig struct {
	// Horizon H ≥ 1 (0: DefaultHorizon).
	Horizon int
	// RefreshFraction f ∈ (0, 1] (0: DefaultRefreshFraction; negative
	// disables the count criterion).
	RefreshFraction float64
	// MeanTolerance τ > 0 (0: DefaultMeanTolerance; negative disables the
	// mean criterion).
	MeanTolerance float64
	// Table configures BuildTable (memory limit, workers).
	Table Options
}

func (c RollingConfig) withDefaults() (RollingConfig, error) {
	if c.Horizon == 0 {
		c.Horizon = DefaultHorizon
	}
	if c.Horizon < 1 {
		return c, fmt.Errorf("%w: horizon = %d, must be ≥ 1", ErrEstimator, c.Horizon)
	}
	if c.RefreshFraction == 0 {
		c.RefreshFraction = DefaultRefreshFraction
	}
	if math.IsNaN(c.RefreshFraction) || c.RefreshFraction > 1 {
		return c, fmt.Errorf("%w: refresh fraction = %v, must be in (0, 1] (negative disables)", ErrEstimator, c.RefreshFraction)
	}
	if c.MeanTolerance == 0 {
		c.MeanTolerance = DefaultMeanTolerance
	}
	if math.IsNaN(c.MeanTolerance) || math.IsInf(c.MeanTolerance, 1) {
		return c, fmt.Errorf("%w: mean tolerance = %v", ErrEstimator, c.MeanTolerance)
	}
	return c, nil
}

// Rolling is the finite-horizon rolling policy: at each arrival it places
// the job with the stage-1 thresholds of the Theorem-2 table for K = H+1
// jobs whose (X, R) follow the empirical joint law of the estimator's window
// (each observation weight 1/|W|, equal (X, R) merged). With H = 1 it is the
// one-job look-ahead Theorem 4 approximates, without Theorem 4's assumptions
// R₂ = R₁ and "the first job is still running with probability p".
//
// The table is cached and rebuilt only when the estimate changes
// materially, i.e. when any of
//
//   - there is no table yet;
//   - at least ⌈f·ω⌉ observations have been recorded since it was built
//     (f = RefreshFraction, so a fraction f of the window has been replaced);
//   - |Ȳ − Ȳ_T| > τ·Ȳ_T, where Ȳ is the window's mean of X/R now and Ȳ_T
//     the one the table was built from (τ = MeanTolerance).
//
// With the defaults (ω = 100, f = 0.1, τ = 0.05) the table is rebuilt at
// least every 10 arrivals, sooner after a jump in the workload. Rolling is
// not safe for concurrent use.
type Rolling struct {
	cfg RollingConfig
	est *Estimator

	table      *Table
	tableSeen  int64   // est.Seen() when the table was built
	tableMeanY float64 // Ȳ_T
	tableN     int     // observations the table was built from
	builds     int
}

// RollingDecision is a placement by the rolling policy and its reason.
type RollingDecision struct {
	Placement
	// Horizon is H; TableMeanY is Ȳ_T, the mean of Y of the workload the
	// thresholds come from, and TableSamples its number of observations.
	Horizon      int
	TableMeanY   float64
	TableSamples int
	// Rebuilt reports that the table was (re)computed for this decision.
	Rebuilt bool
}

// NewRolling returns the rolling policy over estimator est (which it
// updates; est may be restored from a snapshot).
func NewRolling(cfg RollingConfig, est *Estimator) (*Rolling, error) {
	if est == nil {
		return nil, fmt.Errorf("%w: nil estimator", ErrEstimator)
	}
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Rolling{cfg: c, est: est}, nil
}

// Estimator returns the policy's estimator (for snapshots).
func (p *Rolling) Estimator() *Estimator { return p.est }

// Thresholds returns the stage-1 thresholds the last decision placed its
// job by (non-increasing; nil before the first decision). They stay valid
// until the next Decide, which may rebuild the table; package rollout
// simulates the policy with them frozen.
func (p *Rolling) Thresholds() []float64 {
	if p.table == nil {
		return nil
	}
	return p.table.Stages[0]
}

// Builds returns how many tables have been computed.
func (p *Rolling) Builds() int { return p.builds }

// Decide records the arriving job's observation, rebuilds the table if the
// estimate changed materially, and places the job on the free slots
// (free = number of free slots, sorted cheapest first by the caller) with
// Place and the table's stage-1 thresholds.
func (p *Rolling) Decide(ctx context.Context, o Observation, free int) (RollingDecision, error) {
	if err := p.est.Observe(o); err != nil {
		return RollingDecision{}, err
	}
	rebuilt := false
	if p.stale() {
		if err := p.rebuild(ctx); err != nil {
			return RollingDecision{}, err
		}
		rebuilt = true
	}
	pl, err := Place(p.table.Stages[0], free, o.Data, o.Reduces)
	if err != nil {
		return RollingDecision{}, err
	}
	return RollingDecision{
		Placement:    pl,
		Horizon:      p.cfg.Horizon,
		TableMeanY:   p.tableMeanY,
		TableSamples: p.tableN,
		Rebuilt:      rebuilt,
	}, nil
}

func (p *Rolling) stale() bool {
	if p.table == nil {
		return true
	}
	if f := p.cfg.RefreshFraction; f > 0 {
		need := int64(math.Ceil(f * float64(p.est.Window())))
		if p.est.Seen()-p.tableSeen >= max(need, 1) {
			return true
		}
	}
	if tau := p.cfg.MeanTolerance; tau > 0 {
		est, _ := p.est.Estimate()
		if math.Abs(est.MeanY-p.tableMeanY) > tau*p.tableMeanY {
			return true
		}
	}
	return false
}

func (p *Rolling) rebuild(ctx context.Context) error {
	obs := p.est.Observations()
	w, err := EmpiricalWorkload(obs)
	if err != nil {
		return err
	}
	t, err := BuildTable(ctx, w, p.cfg.Horizon+1, p.cfg.Table)
	if err != nil {
		return err
	}
	est, _ := p.est.Estimate()
	p.table, p.tableSeen, p.tableMeanY, p.tableN = t, p.est.Seen(), est.MeanY, len(obs)
	p.builds++
	return nil
}

// EmpiricalWorkload is the empirical joint law of (X, R) of the
// observations: each observation has weight 1/n, equal (X, R) pairs merged.
func EmpiricalWorkload(obs []Observation) (*models.Workload, error) {
	if len(obs) == 0 {
		return nil, fmt.Errorf("%w: no observations", ErrEstimator)
	}
	type key struct {
		x float64
		r int
	}
	counts := make(map[key]int, len(obs))
	for _, o := range obs {
		if err := o.validate(); err != nil {
			return nil, err
		}
		counts[key{o.Data, o.Reduces}]++
	}
	points := make([]models.JointPoint, 0, len(counts))
	n := float64(len(obs))
	for k, c := range counts {
		points = append(points, models.JointPoint{Data: k.x, Reduces: k.r, Prob: float64(c) / n})
	}
	// Deterministic order (map iteration is random).
	slices.SortFunc(points, func(a, b models.JointPoint) int {
		if c := cmp.Compare(a.Reduces, b.Reduces); c != 0 {
			return c
		}
		return cmp.Compare(a.Data, b.Data)
	})
	return models.NewJointWorkload(points)
}
