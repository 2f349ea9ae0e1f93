package search

import (
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize"

	_ "github.com/optd/optd/policy/builtin" // every policy a search may name
)

// Methods of Options.Method.
const (
	MethodCMAES      = "cmaes"
	MethodNelderMead = "nelder-mead"
)

// Defaults of Options.
const (
	DefaultEvaluations  = 200
	DefaultReplications = 10
	// DefaultStep is the initial step in the unit cube: CMA-ES's σ₀ and
	// the size of Nelder-Mead's initial simplex.
	DefaultStep = 0.25
	// ValidationBase is the first replication of the validation: the
	// validation replications ValidationBase, ValidationBase+1, … are
	// disjoint from the search's 0 … Replications−1 (and from any
	// scenario's own replications, fewer than 2^20), so they are fresh
	// seeds the search never saw.
	ValidationBase = 1 << 30
)

// Options configure Run. Zero values mean the documented defaults.
type Options struct {
	// Method is MethodCMAES (default: gonum's CmaEsChol) or
	// MethodNelderMead.
	Method string
	// Evaluations is the budget of objective evaluations (default 200).
	// Each is the mean of the metric over Replications replications; a
	// candidate already simulated (integer parameters round to the same
	// values) is answered from a cache and costs no simulation.
	Evaluations int
	// Time is the wall-clock budget of the search phase (0: none); the
	// search stops at the first evaluation past it and the validation
	// still runs.
	Time time.Duration
	// Replications is N, the replications 0 … N−1 every candidate is
	// simulated on (default 10).
	Replications int
	// Validation is the number of fresh replications (ValidationBase + k)
	// the best and the default are compared on after the search (0: as
	// many as Replications; negative: no validation).
	Validation int
	// Seed seeds the optimizer (CMA-ES's samples); the simulations depend
	// only on the replication numbers. The search is deterministic given
	// the problem, the options and the seed.
	Seed uint64
	// Workers run replications in parallel (default GOMAXPROCS).
	Workers int
	// Start is the starting point in parameter values (default: the
	// parameters' defaults).
	Start []float64
	// Step is the initial step in the unit cube (default DefaultStep).
	Step float64
	// Progress, if not nil, receives a Status after every simulation.
	Progress func(Status)
}

// Status is a progress report of Run: what the user asked for (the
// evaluations of the budget) rather than the simulations behind them.
type Status struct {
	// Phase is "search" while the optimizer runs, then "validation".
	Phase string
	// Evaluations is the optimizer's evaluations so far, of Budget.
	Evaluations, Budget int
	// Best is the best objective so far (+Inf before the first).
	Best float64
	// Simulations done of SimulationsTotal in the current phase: while
	// searching, the replications of every candidate simulated (the
	// optimizer may ask for a few more than Budget·replications, so the
	// total grows with it); in the validation, exactly the validation
	// replications of the best, the defaults, every reference and bound.
	Simulations, SimulationsTotal int
}

// Phases of a Status.
const (
	PhaseSearch     = "search"
	PhaseValidation = "validation"
)

func (o Options) withDefaults(sp Space) (Options, error) {
	if o.Method == "" {
		o.Method = MethodCMAES
	}
	if o.Evaluations == 0 {
		o.Evaluations = DefaultEvaluations
	}
	if o.Replications == 0 {
		o.Replications = DefaultReplications
	}
	if o.Validation == 0 {
		o.Validation = o.Replications
	}
	if o.Workers == 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	if o.Step == 0 {
		o.Step = DefaultStep
	}
	if o.Start == nil {
		o.Start = sp.Defaults()
	}
	switch {
	case o.Method != MethodCMAES && o.Method != MethodNelderMead:
		return o, fmt.Errorf("%w: method %q (known: %s, %s)", ErrInvalid, o.Method, MethodCMAES, MethodNelderMead)
	case o.Evaluations < 1:
		return o, fmt.Errorf("%w: evaluations = %d, must be ≥ 1", ErrInvalid, o.Evaluations)
	case o.Replications < 1 || o.Replications > ValidationBase:
		return o, fmt.Errorf("%w: replications = %d, must be in [1, %d]", ErrInvalid, o.Replications, ValidationBase)
	case o.Time < 0:
		return o, fmt.Errorf("%w: time budget %v, must be ≥ 0", ErrInvalid, o.Time)
	case o.Workers < 1:
		return o, fmt.Errorf("%w: workers = %d, must be ≥ 1", ErrInvalid, o.Workers)
	case !(o.Step > 0 && o.Step <= 1):
		return o, fmt.Errorf("%w: step = %v, must be in (0, 1]", ErrInvalid, o.Step)
	case len(o.Start) != len(sp):
		return o, fmt.Errorf("%w: start has %d values for %d parameters", ErrInvalid, len(o.Start), len(sp))
	}
	for k, p := range sp {
		if v := o.Start[k]; !(v >= p.Min && v <= p.Max) {
			return o, fmt.Errorf("%w: start %s = %v outside [%v, %v]", ErrInvalid, p.Name, v, p.Min, p.Max)
		}
	}
	return o, nil
}

// Candidate is one simulated parameter vector and its objective (the mean
// metric over the search replications).
type Candidate struct {
	Params    map[string]float64 `json:"params"`
	Objective float64            `json:"objective"`
}

// Phase holds the figures of one set of replications: the best candidate,
// the default parameters and, in the validation, the reference policies
// and lower bounds, each as a mean with a 95% interval, and the paired
// differences (best − other, replication by replication).
type Phase struct {
	// FirstReplication and Replications: replications FirstReplication …
	// FirstReplication+Replications−1.
	FirstReplication int      `json:"first_replication"`
	Replications     int      `json:"replications"`
	Best             Estimate `json:"best"`
	Default          Estimate `json:"default"`
	// BestMinusDefault is the paired difference best − default (negative:
	// the best is cheaper).
	BestMinusDefault Estimate            `json:"best_minus_default"`
	References       map[string]Estimate `json:"references,omitempty"`
	// BestMinusReference is the paired difference best − reference.
	BestMinusReference map[string]Estimate `json:"best_minus_reference,omitempty"`
	LowerBounds        map[string]Estimate `json:"lower_bounds,omitempty"`
	// BestLowerBound is the largest mean lower bound; Gap is
	// (best − bound)/bound, the most the best could still be improved by
	// any policy (null without a positive bound).
	BestLowerBound *float64 `json:"best_lower_bound,omitempty"`
	Gap            *float64 `json:"gap,omitempty"`
	// Raw are the per-replication figures, in replication order.
	Raw []RepFigures `json:"raw"`
}

// RepFigures are the metric of the best and default candidates, the
// references and the lower bounds on one replication.
type RepFigures struct {
	Replication int                `json:"replication"`
	Best        float64            `json:"best"`
	Default     float64            `json:"default"`
	References  map[string]float64 `json:"references,omitempty"`
	LowerBounds map[string]float64 `json:"lower_bounds,omitempty"`
}

// Result is the outcome of Run.
type Result struct {
	Method string `json:"method"`
	Seed   uint64 `json:"seed"`
	// Status is gonum's termination status (FunctionEvaluationLimit,
	// RuntimeLimit, MethodConverge, …).
	Status string `json:"status"`
	// Evaluations counts objective calls; Simulated the distinct
	// candidates simulated (the rest came from the cache).
	Evaluations int `json:"evaluations"`
	Simulated   int `json:"candidates_simulated"`
	// SearchMS is the wall time of the search phase, TotalMS with the
	// validation.
	SearchMS float64 `json:"search_ms"`
	TotalMS  float64 `json:"total_ms"`
	// Params are the best parameters found, Defaults the parameters'
	// defaults, Start where the search started.
	Params   map[string]float64 `json:"best_params"`
	Defaults map[string]float64 `json:"default_params"`
	Start    map[string]float64 `json:"start_params"`
	// Search holds the figures on the search replications (the objective
	// that was minimized; optimistic for the best: it was chosen on these
	// very seeds); Validation the same on fresh replications.
	Search     Phase  `json:"search"`
	Validation *Phase `json:"validation,omitempty"`
	// History lists every simulated candidate in order.
	History []Candidate `json:"history"`
}

// errStop ends the optimization when the context is done or the problem
// failed (the cause is kept in state.err).
type state struct {
	prob  Problem
	sp    Space
	opts  Options
	ctx   context.Context
	start time.Time

	mu       sync.Mutex
	cache    map[string][]float64 // per-replication metrics by candidate key
	history  []Candidate
	bestKey  string
	bestX    []float64
	bestF    float64
	calls    int
	phase    string
	done     int
	total    int
	err      error
	timedOut bool
}

func key(x []float64) string {
	var b strings.Builder
	for k, v := range x {
		if k > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
	}
	return b.String()
}

// Run searches the parameters of prob for the smallest mean metric over
// the replications 0 … N−1 with gonum's CMA-ES or Nelder-Mead working on the
// unit cube of the parameters (Space.ToParams; a point outside the cube is
// evaluated at its projection on the cube plus a penalty |f|·d², d its
// distance to the cube, so that the optimizer is pulled back inside), then
// evaluates the best and the default parameters on fresh replications.
//
// Every candidate is simulated on the same replications (common random
// numbers), so the objective is a deterministic function of the
// parameters and the comparison between candidates is paired. The
// replications of one candidate run in parallel on Options.Workers
// goroutines; the optimizer is sequential, so the search is deterministic.
// A cancelled ctx stops it with ctx's error.
func Run(ctx context.Context, prob Problem, opts Options) (*Result, error) {
	sp := prob.Space()
	if err := sp.Validate(); err != nil {
		return nil, err
	}
	opts, err := opts.withDefaults(sp)
	if err != nil {
		return nil, err
	}
	st := &state{prob: prob, sp: sp, opts: opts, ctx: ctx, start: time.Now(), cache: map[string][]float64{}, bestF: math.Inf(1), phase: PhaseSearch}
	st.total = opts.Evaluations * opts.Replications

	// The default is always simulated: the result compares with it.
	defaults := sp.Defaults()
	if _, err := st.candidate(defaults); err != nil {
		return nil, err
	}
	if _, err := st.candidate(opts.Start); err != nil {
		return nil, err
	}

	var method optimize.Method
	switch opts.Method {
	case MethodCMAES:
		// gonum samples the first generation from N(x₀, InitCholesky) and
		// only uses InitStepSize in the updates, so both carry σ₀.
		cov := mat.NewDiagDense(len(sp), nil)
		for k := range len(sp) {
			cov.SetDiag(k, opts.Step*opts.Step)
		}
		var chol mat.Cholesky
		if !chol.Factorize(cov) {
			return nil, fmt.Errorf("search: initial covariance not positive definite (step %v)", opts.Step)
		}
		method = &optimize.CmaEsChol{InitStepSize: opts.Step, InitCholesky: &chol, Src: rand.NewPCG(opts.Seed, 0xc3a5c85c97cb3127)}
	default:
		method = &optimize.NelderMead{SimplexSize: opts.Step}
	}
	problem := optimize.Problem{
		Func: st.objective,
		Status: func() (optimize.Status, error) {
			st.mu.Lock()
			defer st.mu.Unlock()
			switch {
			case st.err != nil:
				return optimize.Failure, st.err
			case st.timedOut:
				return optimize.RuntimeLimit, nil
			}
			return optimize.NotTerminated, nil
		},
	}
	settings := &optimize.Settings{
		FuncEvaluations: opts.Evaluations,
		Runtime:         opts.Time,
		Converger:       optimize.NeverTerminate{},
	}
	res, err := optimize.Minimize(problem, sp.FromParams(opts.Start), settings, method)
	if st.err != nil {
		return nil, st.err
	}
	if err != nil && res == nil {
		return nil, fmt.Errorf("search: %s: %w", opts.Method, err)
	}
	status := ""
	if res != nil {
		status = res.Status.String()
	}
	out := &Result{
		Method: opts.Method, Seed: opts.Seed, Status: status,
		Evaluations: st.calls, Simulated: len(st.history),
		SearchMS: float64(time.Since(st.start).Microseconds()) / 1000,
		Params:   sp.Map(st.bestX), Defaults: sp.Map(defaults), Start: sp.Map(opts.Start),
		History: st.history,
	}
	best, def := st.cache[st.bestKey], st.cache[key(defaults)]
	out.Search = Phase{FirstReplication: 0, Replications: opts.Replications}
	for k := range opts.Replications {
		out.Search.Raw = append(out.Search.Raw, RepFigures{Replication: k, Best: best[k], Default: def[k]})
	}
	out.Search.summarize()
	if opts.Validation > 0 {
		v, err := st.validate(st.bestX, defaults)
		if err != nil {
			return nil, err
		}
		out.Validation = v
	}
	out.TotalMS = float64(time.Since(st.start).Microseconds()) / 1000
	return out, nil
}

// objective is the function the optimizer minimizes (see Run).
func (st *state) objective(u []float64) float64 {
	st.mu.Lock()
	st.calls++
	if st.err == nil && st.opts.Time > 0 && time.Since(st.start) > st.opts.Time {
		st.timedOut = true
	}
	stop := st.err != nil || st.timedOut
	st.mu.Unlock()
	if stop {
		return math.Inf(1)
	}
	x := st.sp.ToParams(u)
	f, err := st.candidate(x)
	if err != nil {
		st.mu.Lock()
		if st.err == nil {
			st.err = err
		}
		st.mu.Unlock()
		return math.Inf(1)
	}
	d2 := 0.0
	for _, v := range u {
		c := min(max(v, 0), 1)
		d2 += (v - c) * (v - c)
	}
	return f + math.Abs(f)*d2
}

// candidate returns the mean metric of x over the search replications,
// simulating it unless cached, and keeps the best.
func (st *state) candidate(x []float64) (float64, error) {
	k := key(x)
	st.mu.Lock()
	vals, ok := st.cache[k]
	st.mu.Unlock()
	if ok {
		return mean(vals), nil
	}
	n := st.opts.Replications
	vals = make([]float64, n)
	err := st.parallel(n, func(i int) error {
		v, err := st.prob.Metric(st.ctx, x, i)
		if err == nil && math.IsNaN(v) {
			err = fmt.Errorf("search: the metric of %s on replication %d is NaN", key(x), i)
		}
		vals[i] = v
		return err
	})
	if err != nil {
		return 0, err
	}
	f := mean(vals)
	st.mu.Lock()
	defer st.mu.Unlock()
	st.cache[k] = vals
	st.history = append(st.history, Candidate{Params: st.sp.Map(x), Objective: f})
	if f < st.bestF {
		st.bestF, st.bestKey, st.bestX = f, k, slices.Clone(x)
	}
	return f, nil
}

// parallel runs fn(0 … n−1) on the workers, reporting progress, and
// returns the first error (by index) or ctx's.
func (st *state) parallel(n int, fn func(i int) error) error {
	errs := make([]error, n)
	next := 0
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range min(st.opts.Workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= n {
					return
				}
				if err := st.ctx.Err(); err != nil {
					errs[i] = err
					continue
				}
				errs[i] = fn(i)
				st.progress()
			}
		}()
	}
	wg.Wait()
	if err := st.ctx.Err(); err != nil {
		return fmt.Errorf("search: interrupted: %w", err)
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func (st *state) progress() {
	if st.opts.Progress == nil {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.done++
	st.opts.Progress(Status{
		Phase: st.phase, Evaluations: min(st.calls, st.opts.Evaluations), Budget: st.opts.Evaluations, Best: st.bestF,
		Simulations: st.done, SimulationsTotal: max(st.total, st.done),
	})
}

// validationTasks is the number of simulations (or bounds) per validation
// replication.
func validationTasks(prob Problem) int {
	n := 2
	if r, ok := prob.(Referenced); ok {
		n += len(r.References())
	}
	if _, ok := prob.(Bounded); ok {
		n++
	}
	return n
}

// validate simulates the best and default parameters, the references and
// the bounds on the fresh replications.
func (st *state) validate(best, def []float64) (*Phase, error) {
	V := st.opts.Validation
	st.mu.Lock()
	st.phase = PhaseValidation
	st.done, st.total = 0, V*validationTasks(st.prob)
	st.mu.Unlock()
	ref, _ := st.prob.(Referenced)
	var refs []string
	if ref != nil {
		refs = ref.References()
	}
	bnd, _ := st.prob.(Bounded)
	per := validationTasks(st.prob)
	raw := make([]RepFigures, V)
	for k := range raw {
		raw[k] = RepFigures{Replication: ValidationBase + k}
		if len(refs) > 0 {
			raw[k].References = make(map[string]float64, len(refs))
		}
	}
	var mu sync.Mutex
	err := st.parallel(V*per, func(i int) error {
		k, task := i/per, i%per
		rep := ValidationBase + k
		var v float64
		var err error
		switch {
		case task == 0:
			v, err = st.prob.Metric(st.ctx, best, rep)
		case task == 1:
			v, err = st.prob.Metric(st.ctx, def, rep)
		case task-2 < len(refs):
			v, err = ref.ReferenceMetric(st.ctx, refs[task-2], rep)
		default:
			lb, err := bnd.LowerBounds(st.ctx, rep)
			if err != nil {
				return fmt.Errorf("search: lower bounds on replication %d: %w", rep, err)
			}
			mu.Lock()
			raw[k].LowerBounds = lb
			mu.Unlock()
			return nil
		}
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		switch {
		case task == 0:
			raw[k].Best = v
		case task == 1:
			raw[k].Default = v
		default:
			raw[k].References[refs[task-2]] = v
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	p := &Phase{FirstReplication: ValidationBase, Replications: V, Raw: raw}
	if err := p.summarize(); err != nil {
		return nil, err
	}
	return p, nil
}

// summarize computes the estimates of a phase from its raw figures (in
// replication order), so that a phase read back from JSON summarizes to the
// same numbers.
func (p *Phase) summarize() error {
	n := len(p.Raw)
	if n == 0 {
		return fmt.Errorf("search: a phase without replications")
	}
	best, def := make([]float64, n), make([]float64, n)
	for k, r := range p.Raw {
		best[k], def[k] = r.Best, r.Default
	}
	p.Best, p.Default, p.BestMinusDefault = estimate(best), estimate(def), paired(best, def)
	p.References, p.BestMinusReference, p.LowerBounds = nil, nil, nil
	p.BestLowerBound, p.Gap = nil, nil
	col := func(get func(RepFigures) (float64, bool)) ([]float64, bool) {
		xs := make([]float64, n)
		for k, r := range p.Raw {
			v, ok := get(r)
			if !ok {
				return nil, false
			}
			xs[k] = v
		}
		return xs, true
	}
	for _, name := range slices.Sorted(maps.Keys(p.Raw[0].References)) {
		xs, ok := col(func(r RepFigures) (float64, bool) { v, ok := r.References[name]; return v, ok })
		if !ok {
			return fmt.Errorf("search: reference %q missing on some replication", name)
		}
		if p.References == nil {
			p.References, p.BestMinusReference = map[string]Estimate{}, map[string]Estimate{}
		}
		p.References[name], p.BestMinusReference[name] = estimate(xs), paired(best, xs)
	}
	bestBound := math.Inf(-1)
	for _, name := range slices.Sorted(maps.Keys(p.Raw[0].LowerBounds)) {
		xs, ok := col(func(r RepFigures) (float64, bool) { v, ok := r.LowerBounds[name]; return v, ok })
		if !ok {
			return fmt.Errorf("search: lower bound %q missing on some replication", name)
		}
		if p.LowerBounds == nil {
			p.LowerBounds = map[string]Estimate{}
		}
		e := estimate(xs)
		p.LowerBounds[name] = e
		bestBound = max(bestBound, e.Mean)
	}
	if bestBound > 0 {
		g := (p.Best.Mean - bestBound) / bestBound
		p.BestLowerBound, p.Gap = &bestBound, &g
	}
	return nil
}
