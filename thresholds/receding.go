package thresholds

import (
	"fmt"
	"math"

	"github.com/optd/optd/internal/errkind"
)

// ErrEstimator: an invalid observation, window or snapshot.
var ErrEstimator = errkind.New(errkind.Invalid, "thresholds: invalid estimator input")

// DefaultWindow is the default size ω of the sliding window of Theorem 4's
// estimator.
const DefaultWindow = 100

// Observation is what Theorem 4's estimator records when job i arrives:
// (N_i, X_i, R_i).
type Observation struct {
	// JobsInSystem is N_i, the number of jobs present in the system when job
	// i arrives, not counting job i (so that E[N] = ρ/(1−ρ) for the M/M/1-like
	// map queue, the relation Theorem 4's p = N̄/(2N̄+1) relies on).
	JobsInSystem int `json:"jobs_in_system"`
	// Data is X_i, the job's total intermediate data (≥ 0).
	Data float64 `json:"data"`
	// Reduces is R_i ≥ 1, the job's number of ReduceTasks.
	Reduces int `json:"reduces"`
}

func (o Observation) validate() error {
	if o.JobsInSystem < 0 {
		return fmt.Errorf("%w: jobs_in_system = %d, must be ≥ 0", ErrEstimator, o.JobsInSystem)
	}
	if math.IsNaN(o.Data) || math.IsInf(o.Data, 0) || o.Data < 0 {
		return fmt.Errorf("%w: data = %v, must be finite and ≥ 0", ErrEstimator, o.Data)
	}
	if o.Reduces < 1 {
		return fmt.Errorf("%w: reduces = %d, must be ≥ 1", ErrEstimator, o.Reduces)
	}
	return nil
}

// EstimatorState is a snapshot of an Estimator (plain data, JSON-serializable).
// Restore it with RestoreEstimator.
type EstimatorState struct {
	// Window is ω ≥ 1.
	Window int `json:"window"`
	// Observations are the last min(Seen, ω) observations, oldest first.
	Observations []Observation `json:"observations"`
	// Seen is the number of observations ever recorded (≥ len(Observations)).
	Seen int64 `json:"seen"`
}

// Estimator is the sliding-window estimator of Section IV of Tan et al.: the
// list W = (w_1, …, w_ω) of the latest ω observations w_j = (n_j, x_j, r_j) and
//
//	N̄ = (1/|W|)·Σ_j n_j,   E[X/R] ≈ (1/|W|)·Σ_j x_j/r_j.
//
// Before the window is full the averages are over the observations so far,
// so after the first observation they equal N_1 and X_1/R_1, the paper's
// initial values. An Estimator is not safe for concurrent use.
type Estimator struct {
	window int
	ring   []Observation // len ≤ window; ring[head] is the oldest once full
	head   int
	seen   int64
	// Running sums, recomputed from the ring every ω observations so that
	// rounding does not accumulate.
	sumN, sumY float64
	sinceSum   int
}

// NewEstimator returns an empty estimator with window ω (0 means
// DefaultWindow; negative is an error).
func NewEstimator(window int) (*Estimator, error) {
	if window == 0 {
		window = DefaultWindow
	}
	if window < 0 {
		return nil, fmt.Errorf("%w: window = %d, must be ≥ 1 (0 for the default %d)", ErrEstimator, window, DefaultWindow)
	}
	return &Estimator{window: window}, nil
}

// Window returns ω.
func (e *Estimator) Window() int { return e.window }

// Seen returns the number of observations ever recorded.
func (e *Estimator) Seen() int64 { return e.seen }

// Observe records the observation of an arriving job, replacing the oldest
// one when the window is full.
func (e *Estimator) Observe(o Observation) error {
	if err := o.validate(); err != nil {
		return err
	}
	e.seen++
	if len(e.ring) < e.window {
		e.ring = append(e.ring, o)
		e.sumN += float64(o.JobsInSystem)
		e.sumY += o.Data / float64(o.Reduces)
	} else {
		old := e.ring[e.head]
		e.ring[e.head] = o
		e.head = (e.head + 1) % e.window
		e.sumN += float64(o.JobsInSystem) - float64(old.JobsInSystem)
		e.sumY += o.Data/float64(o.Reduces) - old.Data/float64(old.Reduces)
	}
	e.sinceSum++
	if e.sinceSum >= e.window || math.IsInf(e.sumY, 0) || math.IsNaN(e.sumY) {
		e.resum()
	}
	return nil
}

func (e *Estimator) resum() {
	e.sumN, e.sumY = 0, 0
	for _, o := range e.ring {
		e.sumN += float64(o.JobsInSystem)
		e.sumY += o.Data / float64(o.Reduces)
	}
	e.sinceSum = 0
}

// Observations returns the window's observations, oldest first (a copy).
func (e *Estimator) Observations() []Observation { return e.Newest(len(e.ring)) }

// Newest returns the window's newest n observations (all if it holds
// fewer), oldest first (a copy): what a caller that saw the window n
// observations ago must record, without copying the window.
func (e *Estimator) Newest(n int) []Observation {
	n = max(0, min(n, len(e.ring)))
	out := make([]Observation, n)
	// The newest is at head−1 (mod len); the k-th of the n at head−n+k.
	for k := range out {
		out[k] = e.ring[((e.head-n+k)%len(e.ring)+len(e.ring))%len(e.ring)]
	}
	return out
}

// Estimate is Theorem 4's threshold and the estimates it is made of.
type Estimate struct {
	// Samples is the number of observations in the window (0: no estimate).
	Samples int `json:"samples"`
	// MeanJobs is N̄.
	MeanJobs float64 `json:"mean_jobs"`
	// MeanY is the estimate of E[X/R].
	MeanY float64 `json:"mean_y"`
	// P = N̄/(2N̄+1), the estimated probability that job 1 is still in
	// service when the next job arrives (p = ρ/(1+ρ) with ρ = N̄/(1+N̄)).
	P float64 `json:"p"`
	// Threshold = P·MeanY.
	Threshold float64 `json:"threshold"`
}

// Estimate returns the current estimate; ok is false before the first
// observation.
func (e *Estimator) Estimate() (est Estimate, ok bool) {
	n := len(e.ring)
	if n == 0 {
		return Estimate{}, false
	}
	nbar := max(e.sumN/float64(n), 0)
	ybar := e.sumY / float64(n)
	if math.IsInf(ybar, 0) || math.IsNaN(ybar) {
		// Σ x/r overflowed (data near MaxFloat64): average term by term.
		ybar = 0
		for _, o := range e.ring {
			ybar += o.Data / float64(o.Reduces) / float64(n)
		}
	}
	ybar = max(ybar, 0)
	p := nbar / (2*nbar + 1)
	return Estimate{Samples: n, MeanJobs: nbar, MeanY: ybar, P: p, Threshold: p * ybar}, true
}

// Snapshot returns the estimator's state.
func (e *Estimator) Snapshot() EstimatorState {
	return EstimatorState{Window: e.window, Observations: e.Observations(), Seen: e.seen}
}

// RestoreEstimator rebuilds an estimator from a snapshot, validating it: the
// window must be ≥ 1, hold at most ω observations, each valid, and Seen must
// be at least their number. The running sums are recomputed.
func RestoreEstimator(s EstimatorState) (*Estimator, error) {
	if s.Window < 1 {
		return nil, fmt.Errorf("%w: snapshot window = %d, must be ≥ 1", ErrEstimator, s.Window)
	}
	if len(s.Observations) > s.Window {
		return nil, fmt.Errorf("%w: snapshot has %d observations for window %d", ErrEstimator, len(s.Observations), s.Window)
	}
	if s.Seen < int64(len(s.Observations)) {
		return nil, fmt.Errorf("%w: snapshot seen = %d < %d observations", ErrEstimator, s.Seen, len(s.Observations))
	}
	for i, o := range s.Observations {
		if err := o.validate(); err != nil {
			return nil, fmt.Errorf("snapshot observation %d: %w", i, err)
		}
	}
	e := &Estimator{window: s.Window, seen: s.Seen}
	e.ring = make([]Observation, len(s.Observations), max(len(s.Observations), min(s.Window, 1024)))
	copy(e.ring, s.Observations)
	e.resum()
	return e, nil
}

// RecedingRule names the branch of Theorem 4 a decision took.
type RecedingRule string

const (
	// RuleCheapest: y ≥ p·E[X/R], the job takes the r cheapest free slots.
	RuleCheapest RecedingRule = "cheapest"
	// RuleSkip: y < p·E[X/R], the job skips the r cheapest free slots and
	// takes the next r (positions r+1..2r).
	RuleSkip RecedingRule = "skip"
	// RuleFewSlots: fewer than 2r slots are free, the job takes the r
	// cheapest whatever y is (see DecideRecedingHorizon).
	RuleFewSlots RecedingRule = "few-free-slots"
)

// RecedingDecision is a placement by Theorem 4 and its reason.
type RecedingDecision struct {
	// Positions are 0-based indices into the cheapest-first free list.
	Positions []int `json:"positions"`
	// Y = x/r.
	Y float64 `json:"y"`
	// Rule is the branch taken; Estimate holds the threshold p·E[X/R] used,
	// p, N̄ and E[X/R].
	Rule     RecedingRule `json:"rule"`
	Estimate Estimate     `json:"estimate"`
}

// DecideRecedingHorizon is the placement of Theorem 4 for a job (x, r) that
// finds free slots sorted cheapest first: with y = x/r,
//
//	y ≥ p·E[X/R]:  positions 1..r        (RuleCheapest)
//	y < p·E[X/R]:  positions r+1..2r     (RuleSkip)
//
// This is the proof's reading of the theorem (eq. (13) and Hardy's lemma:
// the cost u/v·H(B) + p·E[X/R]·H(Bᶜ) + const is minimal for B = {1..v} iff
// u/v ≥ p·E[X/R]); the inequality in the printed statement is garbled. A
// tie y = p·E[X/R] takes the cheapest slots (both choices cost the same).
//
// Fewer than 2r free slots (r ≤ free < 2r): the job takes the r cheapest
// (RuleFewSlots). In the two-job model behind the theorem the look-ahead job
// has the same R = r, so while job 1 runs it cannot be placed on the fewer
// than r slots job 1 leaves, and once job 1 has left it has every slot:
// reserving cheap slots buys nothing, and greedy is optimal for the model.
// Fewer than r free slots is ErrNoFreeSlots. Without an estimate
// (Samples = 0) the threshold is 0 and every job takes the cheapest slots.
func DecideRecedingHorizon(est Estimate, free int, x float64, r int) (RecedingDecision, error) {
	if r < 1 || math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
		return RecedingDecision{}, fmt.Errorf("%w: x = %v, r = %d (need finite x ≥ 0 and r ≥ 1)", ErrJob, x, r)
	}
	if free < r {
		return RecedingDecision{}, fmt.Errorf("%w: %d free, job needs %d", ErrNoFreeSlots, free, r)
	}
	d := RecedingDecision{Y: x / float64(r), Estimate: est, Rule: RuleCheapest}
	start := 0
	switch {
	case free < 2*r:
		d.Rule = RuleFewSlots
	case d.Y < est.Threshold:
		d.Rule = RuleSkip
		start = r
	}
	d.Positions = make([]int, r)
	for k := range d.Positions {
		d.Positions[k] = start + k
	}
	return d, nil
}

// RecedingHorizon is Theorem 4's policy with its estimator: each arrival is
// first observed (so the first job uses N_1 and X_1/R_1, as the paper
// initialises the estimates) and then placed by DecideRecedingHorizon.
type RecedingHorizon struct {
	Estimator *Estimator
}

// NewRecedingHorizon returns the policy with a fresh estimator of window ω
// (0 means DefaultWindow).
func NewRecedingHorizon(window int) (*RecedingHorizon, error) {
	e, err := NewEstimator(window)
	if err != nil {
		return nil, err
	}
	return &RecedingHorizon{Estimator: e}, nil
}

// Decide records the arriving job's observation and places it on the free
// slots (free = number of free slots, sorted cheapest first by the caller).
// The observation is recorded even if the placement fails for lack of slots.
func (p *RecedingHorizon) Decide(o Observation, free int) (RecedingDecision, error) {
	if err := p.Estimator.Observe(o); err != nil {
		return RecedingDecision{}, err
	}
	est, _ := p.Estimator.Estimate()
	return DecideRecedingHorizon(est, free, o.Data, o.Reduces)
}
