package placement

import (
	"fmt"
	"math"
	"slices"

	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
)

var _ policy.Placement = (*StateThreshold)(nil)

// stateThresholdParams are the parameters of "state-threshold" (package
// rollout declares them again, renamed, for its base policy: see
// StateThresholdParams).
var stateThresholdParams = []policy.Param{
	{Name: "base", Min: 0, Max: 10, Default: 1,
		Doc: "a: future jobs expected to overlap a job's service when the system is empty"},
	{Name: "per_job", Min: 0, Max: 5, Default: 0.5,
		Doc: "b: extra overlapping jobs per job found in the system on arrival (N_i)"},
	{Name: "per_waiting", Min: 0, Max: 5, Default: 0,
		Doc: "c: extra overlapping jobs per job waiting when the job enters service"},
	{Name: "ratio", Min: 0.01, Max: 1, Default: 0.4, Log: true,
		Doc: "q: a future job (X', R') counts when q·Y' > y, i.e. when it is likely enough to overlap and big enough to be worth the slots"},
	{Name: "free_fraction", Min: 0, Max: 1, Default: 1,
		Doc: "δ: at most ⌊δ·(free − R)⌋ cheapest free slots are ever skipped"},
	{Name: "window", Min: 5, Max: 2000, Default: 200, Log: true, Integer: true,
		Doc: "ω: arrivals the law of (X, R) is estimated from (unused when the law is known)"},
}

// StateThreshold places a job on the cheapest-first free list after skipping
// the slots that jobs still to come during its service, and worth more than
// it on those slots, are expected to need. With y = X/R, N the jobs the job
// found in the system on arrival (N_i of Theorem 4) and w the jobs waiting
// when it enters service,
//
//	m = a + b·N + c·w                  (future jobs expected to overlap it)
//	D(y) = E[R'·1{q·Y' > y}]           (slots such a job (X', R') takes, counted
//	                                    when q·Y' > y)
//	s = min(round(m·D(y)), ⌊δ·(free − R)⌋)
//
// and the job takes positions s+1..s+R. The condition q·Y' > y is Theorem
// 4's exchange argument (Tan et al., INFOCOM 2013, §IV, eq. (13)): giving up
// a cheap slot costs the job y per unit of cost difference and saves a
// later job Y' only if it arrives while the job still holds the slot, with
// probability q (Theorem 4 estimates it as p = N̄/(2N̄+1) and takes
// R' = R, m = 1, so that s ∈ {0, R}). Equivalently, position j (1-based) is
// skipped iff y < q_j with thresholds q_j = q·D⁻¹((j − ½)/m): a threshold
// table as in Theorem 2 whose thresholds move with the state (jobs in
// system, queue, free slots) instead of a fixed horizon.
//
// D is exact (Σ_r P[R=r]·r·P[Y > y/q | R = r]) when policy.PlacementConfig.Workload
// is set, and otherwise the mean of r_j·1{q·y_j > y} over the last ω
// arrivals (each job is observed before it is placed, as Theorem 4's
// estimator does). Not safe for concurrent use.
type StateThreshold struct {
	a, b, c, q, delta float64
	law               *models.Workload
	window            int
	ys                []float64 // ring of the last ω arrivals' Y and R
	rs                []float64
	head              int
}

// NewStateThreshold returns the policy with the parameters of cfg.Params
// (see stateThresholdParams).
func NewStateThreshold(cfg policy.PlacementConfig) (policy.Placement, error) {
	v, err := policy.ResolveParams(NameStateThreshold, stateThresholdParams, cfg.Params)
	if err != nil {
		return nil, err
	}
	return &StateThreshold{
		a: v["base"], b: v["per_job"], c: v["per_waiting"], q: v["ratio"], delta: v["free_fraction"],
		law: cfg.Workload, window: int(v["window"]),
	}, nil
}

// Name implements policy.Plugin.
func (*StateThreshold) Name() string { return NameStateThreshold }

// observe records (y, r) in the window.
func (p *StateThreshold) observe(y float64, r int) {
	if len(p.ys) < p.window {
		p.ys, p.rs = append(p.ys, y), append(p.rs, float64(r))
		return
	}
	p.ys[p.head], p.rs[p.head] = y, float64(r)
	p.head = (p.head + 1) % p.window
}

// demand is D(y) = E[R'·1{q·Y' > y}].
func (p *StateThreshold) demand(y float64) float64 {
	y /= p.q
	if p.law != nil {
		d := 0.0
		for _, c := range p.law.Conditionals() {
			d += c.Prob * float64(c.R) * (1 - c.Y.CDF(y))
		}
		return d
	}
	d := 0.0
	for k, yk := range p.ys {
		if yk > y {
			d += p.rs[k]
		}
	}
	return d / float64(len(p.ys))
}

// Skip returns s = min(round(m·D(y)), ⌊δ·(free − R)⌋), the cheapest free
// slots a job of data x on r reducers skips when it found jobsInSystem jobs
// on arrival, waiting jobs wait and free slots are free, with m and D(y)
// (for the decision's reason). It observes nothing: with the law unknown,
// D comes from the window as it stands (package rollout simulates the
// policy with the law known).
func (p *StateThreshold) Skip(x float64, r, jobsInSystem, waiting, free int) (s int, m, d float64) {
	m = p.a + p.b*float64(jobsInSystem) + p.c*float64(waiting)
	d = p.demand(x / float64(r))
	return min(int(math.Round(m*d)), p.limit(free, r)), m, d
}

// limit is ⌊δ·(free − R)⌋, the most slots the policy ever skips.
func (p *StateThreshold) limit(free, r int) int { return int(math.Floor(p.delta * float64(free-r))) }

// Place skips s = min(round(m·D(y)), ⌊δ·(free − R)⌋) cheapest free slots.
func (p *StateThreshold) Place(req *policy.PlacementRequest) (policy.PlacementDecision, error) {
	if err := req.Check(); err != nil {
		return policy.PlacementDecision{}, err
	}
	y := req.X / float64(req.R)
	if p.law == nil {
		p.observe(y, req.R)
	}
	s, m, d := p.Skip(req.X, req.R, req.JobsInSystem, req.Waiting, len(req.Free))
	limit := p.limit(len(req.Free), req.R)
	return policy.PlacementDecision{
		Positions: Block(s, req.R),
		Threshold: math.NaN(),
		Reason: fmt.Sprintf("state-threshold: y = %.6g, m = %.4g overlapping jobs (N = %d, %d waiting), D(y) = %.4g slots of jobs with q·Y' > y each: skip %d of %d free (at most %d)",
			y, m, req.JobsInSystem, req.Waiting, d, s, len(req.Free), limit),
	}, nil
}

// StateThresholdParams returns the parameters of "state-threshold".
func StateThresholdParams() []policy.Param { return slices.Clone(stateThresholdParams) }
