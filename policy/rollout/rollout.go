// Package rollout registers "rollout", the reduce-placement policy of
// one-step lookahead whose future is simulated under a base policy
// (Bertsekas, Tsitsiklis and Wu, "Rollout algorithms for combinatorial
// optimization", J. Heuristics 3(3), 1997; Bertsekas, "Dynamic Programming
// and Optimal Control", vol. I, §6.4).
//
// A job of data X on R reducers entering service in state x (the slots the
// jobs in service hold, the jobs waiting) is placed on the candidate c of
// least
//
//	Q̂(x, c) = Y·Σ_{v ∈ c} H(v) + (1/N)·Σ_{n=1..N} C_H(x ⊕ c, ω_n)       (1)
//
// where Y = X/R, x ⊕ c is the state after the placement, and C_H(x', ω) is
// the cost of the next H placements (the jobs waiting, then the arrivals)
// when the base policy places them on the sampled future ω: the order of
// the arrivals and departures, the departing jobs, the arrivals' (X, R).
// The candidates are blocks of R consecutive free slots on the
// cheapest-first list: the base policy's own choice, greedy's (the R
// cheapest) and the base's shifted by k·⌈R/2⌉ positions, k = ±1..±L.
//
// Why it is at least as good as its base, and when. With C_∞ the exact
// expected cost-to-go of the base policy π, the rollout policy π̄ takes
// argmin_c {g(x, c) + E C_∞(x ⊕ c)}, and the base's own choice is a
// candidate, so its one-step cost is at most π's; by the policy improvement
// argument (Bertsekas, Prop. 6.4.1, for the total cost; here a long run
// average over independent cycles) π̄ costs at most π. Eq. (1) replaces
// E C_∞ by a mean over N samples of the cost of H placements: truncation
// drops the states' difference after H placements (so the rollout
// undervalues leaving cheap slots free when the job itself holds its slots
// longer than H placements last), and sampling adds noise, so the guarantee
// holds only as N, H → ∞; the tests measure it on the MDP-solvable
// scenarios, where the rollout's exact cost is computable.
//
// The future is sampled from the model the policy is built with
// (policy.PlacementModel): Poisson arrivals of rate λ, map work
// exponential of rate μ served by K-limited processor sharing, so that
// whenever m ≥ 1 jobs are in service the next event is an arrival with
// probability λ/(λ+μ) and otherwise a departure of one of the m, each
// equally likely (memorylessness: the work a job has left does not depend
// on how long it has been served). Placement does not change the queue:
// the sequence of arrivals, departures and entries into service is the
// same whatever the slots, so one sampled future serves every candidate
// (common random numbers: the candidates' difference is estimated with
// far less noise than their costs). The jobs already waiting have (X, R)
// drawn from the law (the request does not carry them) and N = K + their
// place in the queue (a job waits only when K jobs are in service).
//
// The decision depends only on the request and the seed: its random
// numbers are seeded by both, so the policy keeps no state between
// decisions (a restarted server decides as before, and the MDP can
// evaluate it exactly).
//
// Except with a window of the jobs seen. The base can be rolling-horizon
// (base_policy 2: Theorem 2's stage-1 thresholds for rh_horizon + 1 jobs
// of the law of the last ω jobs, thresholds.Rolling), and the futures'
// (X, R) can be drawn from the last ω jobs seen instead of the model's law
// (future_law 1): for a replayed trace the model's law is the whole
// trace's, which a policy that decides as the trace goes could not know,
// and a trace's law drifts. Both keep the window (thresholds.Estimator,
// snapshotted by the server as rolling-horizon's is), so the decision
// depends on the jobs seen too; the futures still follow the model's
// arrival and service rates.
package rollout

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/optd/optd/policy"
	"github.com/optd/optd/policy/placement"
	"github.com/optd/optd/thresholds"
)

// Name is the policy's name.
const Name = "rollout"

// Base policies, by the value of base_policy.
const (
	BaseStateThreshold = 0
	BaseGreedy         = 1
	// BaseRollingHorizon is placement.NameRollingHorizon: the stage-1
	// thresholds of the Theorem-2 table for rh_horizon + 1 jobs drawn from
	// the last ω jobs seen, rebuilt as the window moves (thresholds.Rolling,
	// which the rollout keeps and feeds every request). In the sampled
	// futures the thresholds are frozen at the decision's: the policy
	// itself rebuilds its table every tenth of the window, but from a
	// window the futures' jobs change little (they are drawn from that
	// window, or from the model's law), so the rebuilt tables would be
	// about the same, at the cost of a table per rebuild per future.
	BaseRollingHorizon = 2
)

// baseNames are the base policies' names by base_policy.
var baseNames = [...]string{BaseStateThreshold: placement.NameStateThreshold, BaseGreedy: placement.NameGreedy,
	BaseRollingHorizon: placement.NameRollingHorizon}

// Laws the futures' jobs are drawn from, by the value of future_law.
const (
	// LawModel draws (X, R) from the model's law (policy.PlacementModel's
	// Workload; for a replayed trace, the whole trace's empirical law).
	LawModel = 0
	// LawSeen draws (X, R) uniformly from the last ω jobs the policy has
	// seen (the arriving one included): the past only, so that on a trace
	// whose law drifts the futures follow the drift and never look ahead.
	LawSeen = 1
)

// MaxWork bounds samples·horizon·candidates, the placements simulated per
// decision (the defaults simulate 16·30·6 = 2,880; at about 0.1-0.3 µs
// each, a decision at the bound takes about 0.1 s).
const MaxWork = 500_000

// BaseParamPrefix renames the base state-threshold's parameters: the
// rollout's "st_ratio" is its base's "ratio".
const BaseParamPrefix = "st_"

// params are the rollout's own parameters, then the base state-threshold's
// (renamed with BaseParamPrefix, without its window: the law is known).
var params = func() []policy.Param {
	ps := []policy.Param{
		{Name: "samples", Min: 1, Max: 256, Default: 16, Integer: true, Log: true, Fixed: true,
			Doc: "N: futures sampled per decision, the same for every candidate"},
		{Name: "horizon", Min: 1, Max: 2000, Default: 30, Integer: true, Log: true, Fixed: true,
			Doc: "H: placements simulated after the job's own under the base policy"},
		{Name: "base_policy", Min: 0, Max: float64(len(baseNames) - 1), Default: BaseStateThreshold, Integer: true, Fixed: true,
			Doc: "the base policy the future is simulated under: 0 state-threshold (with the st_ parameters, the law of (X, R) known), 1 greedy"},
		{Name: "levels", Min: 0, Max: 8, Default: 2, Integer: true,
			Doc: "L: candidates beside the base's choice s and greedy's: s + k·⌈R/2⌉ free positions, k = ±1..±L"},
		{Name: "confidence", Min: 0, Max: 4, Default: 1,
			Doc: "z: a candidate replaces the base's choice only if its mean saving over it, paired by sampled future, exceeds z standard errors"},
		{Name: "future_law", Min: 0, Max: 1, Default: LawModel, Integer: true, Fixed: true,
			Doc: "the law the futures' (X, R) are drawn from: 0 the model's, 1 the last ω jobs seen (the past only)"},
		{Name: "window", Min: 5, Max: 5000, Default: thresholds.DefaultWindow, Integer: true, Log: true, Fixed: true,
			Doc: "ω: the jobs seen that future_law 1 draws from and the rolling-horizon base estimates its law from"},
		{Name: "rh_horizon", Min: 1, Max: 50, Default: thresholds.DefaultHorizon, Integer: true, Log: true, Fixed: true,
			Doc: "base rolling-horizon's H: its table is for H + 1 jobs"},
	}
	for _, p := range placement.StateThresholdParams() {
		if p.Name == "window" {
			continue
		}
		p.Name, p.Doc, p.Fixed = BaseParamPrefix+p.Name, "base state-threshold's "+p.Doc, true
		ps = append(ps, p)
	}
	return ps
}()

func init() {
	policy.Must(policy.RegisterPlacement(Name, New, params...))
}

// skipper is a base policy: how many cheapest free slots a job skips
// before its block of R.
type skipper func(x float64, r, jobsInSystem, waiting, free int) int

// Rollout is the policy. Not safe for concurrent use (scratch buffers).
type Rollout struct {
	model            *policy.PlacementModel
	samples, horizon int
	levels           int
	confidence       float64
	base             skipper
	baseName         string
	seed             uint64
	// rolling is the rolling-horizon base (nil for the others), q its
	// thresholds at the decision; est the window of the jobs seen (nil
	// unless the base is rolling-horizon or future_law is LawSeen), seen
	// its content at the decision when the futures draw from it.
	rolling *thresholds.Rolling
	q       []float64
	est     *thresholds.Estimator
	seen    []thresholds.Observation
	// rank[v] is slot v's position in the model's cheapest-first order
	// (cost, then index); costs[k] the cost of the slot of rank k.
	rank  []int32
	costs []float64
	// scratch, reused across decisions
	start    state
	scripts  [][]event
	cands    []int
	sc       world
	freeRank []int32
	baseQ    []float64
	// the request's slots: rankOf[k] is the rank of free position k,
	// slotCost the costs by rank (the model's, or ownCosts when the
	// request's slots are not the model's: ownSlots, see load)
	rankOf   []int32
	slotCost []float64
	ownCosts []float64
	ownSlots bool
}

// New builds the policy from cfg.Params on cfg.Model (required).
func New(cfg policy.PlacementConfig) (policy.Placement, error) {
	v, err := policy.ResolveParams(Name, params, cfg.Params)
	if err != nil {
		return nil, err
	}
	if err := cfg.Model.Check(Name); err != nil {
		return nil, err
	}
	p := &Rollout{model: cfg.Model, samples: int(v["samples"]), horizon: int(v["horizon"]), levels: int(v["levels"]), confidence: v["confidence"],
		seed: cfg.Seed ^ cfg.Model.Seed*0x9e3779b97f4a7c15}
	if w := p.samples * p.horizon * (2*p.levels + 2); w > MaxWork {
		return nil, fmt.Errorf("%w: %s: samples·horizon·(2·levels + 2) = %d·%d·%d = %d simulated placements per decision, must be ≤ %d",
			policy.ErrInvalidConfig, Name, p.samples, p.horizon, 2*p.levels+2, w, MaxWork)
	}
	b := int(v["base_policy"])
	p.baseName = baseNames[b]
	if b == BaseRollingHorizon || int(v["future_law"]) == LawSeen {
		if p.est, err = thresholds.NewEstimator(int(v["window"])); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", policy.ErrInvalidConfig, Name, err)
		}
	}
	if int(v["future_law"]) == LawSeen {
		p.seen = []thresholds.Observation{}
	}
	switch b {
	case BaseGreedy:
		p.base = func(float64, int, int, int, int) int { return 0 }
	case BaseRollingHorizon:
		if p.rolling, err = thresholds.NewRolling(thresholds.RollingConfig{Horizon: int(v["rh_horizon"])}, p.est); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", policy.ErrInvalidConfig, Name, err)
		}
		p.base = func(x float64, r, _, _, _ int) int { return thresholdSkip(p.q, x/float64(r)) }
	default:
		st := map[string]float64{}
		for name, x := range v {
			if s, ok := strings.CutPrefix(name, BaseParamPrefix); ok {
				st[s] = x
			}
		}
		pl, err := placement.NewStateThreshold(policy.PlacementConfig{Params: st, Workload: cfg.Model.Workload})
		if err != nil {
			return nil, err
		}
		t := pl.(*placement.StateThreshold)
		p.base = func(x float64, r, n, w, free int) int {
			s, _, _ := t.Skip(x, r, n, w, free)
			return max(s, 0)
		}
	}
	n := len(cfg.Model.SlotCosts)
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(cfg.Model.SlotCosts[a], cfg.Model.SlotCosts[b]), cmp.Compare(a, b))
	})
	p.rank, p.costs = make([]int32, n), make([]float64, n)
	for k, v := range order {
		p.rank[v], p.costs[k] = int32(k), cfg.Model.SlotCosts[v]
	}
	if p.est != nil {
		return estimatedRollout{p}, nil
	}
	return p, nil
}

// estimatedRollout is a rollout that keeps a window of the jobs seen (the
// rolling-horizon base's, or the one future_law 1 draws from): the server
// snapshots and restores it as it does receding-horizon's and
// rolling-horizon's, so that a restarted server decides as before.
type estimatedRollout struct{ *Rollout }

// Estimator returns the window of the jobs seen.
func (p estimatedRollout) Estimator() *thresholds.Estimator { return p.est }

// thresholdSkip is Theorem 1's c = #{j : q_j > y} for non-increasing q
// (thresholds.Place without its checks and its block, which the rollout
// builds itself).
func thresholdSkip(q []float64, y float64) int {
	c, _ := slices.BinarySearchFunc(q, y, func(qj, y float64) int {
		if qj > y {
			return -1
		}
		return 1
	})
	return c
}

// Name implements policy.Plugin.
func (*Rollout) Name() string { return Name }

// Place implements policy.Placement: eq. (1) over the candidates.
func (p *Rollout) Place(req *policy.PlacementRequest) (policy.PlacementDecision, error) {
	if err := req.Check(); err != nil {
		return policy.PlacementDecision{}, err
	}
	if err := p.load(req); err != nil {
		return policy.PlacementDecision{}, err
	}
	free := len(req.Free)
	if err := p.observe(req); err != nil {
		return policy.PlacementDecision{}, err
	}
	sb := min(p.base(req.X, req.R, req.JobsInSystem, req.Waiting, free), free-req.R)
	p.candidates(sb, req.R, free)
	rng := rand.New(rand.NewPCG(p.seed, requestHash(req)))
	p.sample(rng, req)
	y := req.X / float64(req.R)
	// Q̂ of eq. (1) per candidate and sample; a candidate replaces the
	// base's choice only if its mean saving over the base, paired by
	// sample, exceeds z standard errors (z = confidence): with several
	// candidates scored on the same few futures, the least of their means
	// is biased low, and a switch on noise costs more than it saves.
	n := float64(len(p.scripts))
	best, bestQ, baseQ := 0, 0.0, 0.0
	p.baseQ = p.baseQ[:0]
	for ci, c := range p.cands {
		p.freeRank = p.freeRank[:0]
		now := 0.0
		for k, f := range req.Free[c : c+req.R] {
			p.freeRank = append(p.freeRank, p.rankOf[c+k])
			now += y * f.Cost
		}
		sum, sq := 0.0, 0.0
		for k, script := range p.scripts {
			q := now + p.sc.replay(p, &p.start, p.freeRank, script)
			if ci == 0 {
				p.baseQ = append(p.baseQ, q)
				sum += q
				continue
			}
			d := q - p.baseQ[k]
			sum += d
			sq += d * d
		}
		if ci == 0 {
			baseQ, bestQ = sum/n, sum/n
			continue
		}
		mean := sum / n
		se := 0.0
		if n > 1 {
			se = math.Sqrt(max(sq/n-mean*mean, 0) / (n - 1))
		}
		if q := baseQ + mean; mean+p.confidence*se < 0 && q < bestQ {
			best, bestQ = ci, q
		}
	}
	own := ""
	if p.ownSlots {
		own = " (the request's slots are not the model's: futures on its free slots alone)"
	}
	return policy.PlacementDecision{
		Positions: placement.Block(p.cands[best], req.R),
		Threshold: math.NaN(),
		Reason: fmt.Sprintf("rollout: skip %d of %d free (base %s skips %d): cost now + mean of the next %d placements over %d futures %.6g (base's %.6g), %d candidates%s",
			p.cands[best], free, p.baseName, sb, p.horizon, len(p.scripts), bestQ, baseQ, len(p.cands), own),
	}, nil
}

// observe records the job in the window of the jobs seen, if the policy
// keeps one: through the rolling-horizon base, which also refreshes its
// thresholds (p.q), or directly; p.seen is then the window the futures
// draw from.
func (p *Rollout) observe(req *policy.PlacementRequest) error {
	if p.est == nil {
		return nil
	}
	o := thresholds.Observation{JobsInSystem: req.JobsInSystem, Data: req.X, Reduces: req.R}
	if p.rolling != nil {
		ctx := req.Ctx
		if ctx == nil {
			ctx = context.Background()
		}
		if _, err := p.rolling.Decide(ctx, o, len(req.Free)); err != nil {
			return fmt.Errorf("%w: %s: %w", policy.ErrInvalidRequest, Name, err)
		}
		p.q = p.rolling.Thresholds()
	} else if err := p.est.Observe(o); err != nil {
		return fmt.Errorf("%w: %s: %w", policy.ErrInvalidRequest, Name, err)
	}
	if p.seen != nil {
		p.seen = p.est.Observations()
	}
	return nil
}

// draw returns a future job's (X, R): from the window of the jobs seen
// (future_law 1) or from the model's law.
func (p *Rollout) draw(rng *rand.Rand) (float64, int) {
	if len(p.seen) > 0 {
		o := p.seen[rng.IntN(len(p.seen))]
		return o.Data, o.Reduces
	}
	return p.model.Workload.Sample(rng)
}

// candidates lists the skips tried, the base's sb first: greedy's 0 and
// sb + k·⌈R/2⌉ for k = ±1..±L, within [0, free − R], without repeats.
func (p *Rollout) candidates(sb, r, free int) {
	p.cands = append(p.cands[:0], sb)
	add := func(s int) {
		if s >= 0 && s <= free-r && !slices.Contains(p.cands, s) {
			p.cands = append(p.cands, s)
		}
	}
	add(0)
	step := (r + 1) / 2
	for k := 1; k <= p.levels; k++ {
		add(sb - k*step)
		add(sb + k*step)
	}
}

// requestHash digests what a decision depends on, to seed its futures.
func requestHash(req *policy.PlacementRequest) uint64 {
	h := uint64(14695981039346656037)
	mix := func(v uint64) {
		h ^= v
		h *= 1099511628211
		h ^= h >> 29
	}
	mix(math.Float64bits(req.X))
	mix(uint64(req.R))
	mix(uint64(req.JobsInSystem))
	mix(uint64(req.Waiting))
	for _, f := range req.Free {
		mix(uint64(f.Index))
	}
	for _, held := range req.Held {
		mix(uint64(len(held)))
		for _, v := range held {
			mix(uint64(v))
		}
	}
	return h
}
