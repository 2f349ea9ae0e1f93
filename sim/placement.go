package sim

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/optd/optd/internal/errkind"
	"github.com/optd/optd/policy"
)

// Errors of the placement model.
var (
	// ErrInvalidModel: a Model or RunOptions field is out of range.
	ErrInvalidModel = errkind.New(errkind.Invalid, "sim: invalid placement model")
	// ErrBadDecision: a policy returned a decision that is not exactly R
	// distinct, ascending positions of the free list.
	ErrBadDecision = errkind.New(errkind.Internal, "sim: invalid placement decision")
	// ErrBadJob: the job source produced an invalid job (time going
	// backwards, negative work or data, R out of range).
	ErrBadJob = errkind.New(errkind.Invalid, "sim: invalid job")
)

// JobSpec is one job of the input stream of the placement model: when it
// arrives, its map work B (time to process its map phase alone on the whole
// cluster) and its (X, R).
type JobSpec struct {
	Arrival float64
	Work    float64
	X       float64
	R       int
}

// Source yields the jobs of one run in arrival order (non-decreasing
// Arrival); ok is false after the last job.
type Source interface {
	Next() (job JobSpec, ok bool)
}

// Model is the reduce-placement queue of docs/formats.md#placement-scenario ("stable system",
// Tan et al., INFOCOM 2013, §II and §III-B): jobs arrive, their map phases
// are served by K-limited processor sharing (Definition 1: the min(n, K) jobs
// in service each get 1/min(n, K) of one unit of capacity, the others wait
// FIFO), and a job takes R free reduce slots, chosen by the placement policy,
// at the instant it enters service and frees them when its map phase ends.
// It costs Y·Σ_{slots} H(slot), Y = X/R (eq. (8)). The cluster must have at
// least K·max R slots (§II), so a job entering service always finds R free
// slots.
type Model struct {
	// SlotCosts are the fetch costs H of the reduce slots; slot i of a
	// decision (policy.Slot.Index) is SlotCosts[i].
	SlotCosts []float64
	// K is max_jobs_in_service (≥ 1).
	K int
	// MaxWaiting is the finite waiting room: an arrival that finds this
	// many jobs waiting is lost. Negative means unlimited.
	MaxWaiting int
}

// RunOptions configures one run.
type RunOptions struct {
	// Warmup is the number of first arrivals excluded from the figures.
	Warmup int
	// Record keeps a JobRecord of every arrival in Result.Records.
	Record bool
}

// JobRecord is what happened to one arrival.
type JobRecord struct {
	// Arrival, Start and End are the arrival time, the time it entered
	// service (and was placed) and the time its map phase ended and it freed
	// its slots: it held its slots during [Start, End). Start and End are
	// NaN for a lost job.
	Arrival, Start, End float64
	X                   float64
	R                   int
	// Cost = Y·Σ H over its slots (0 for a lost job).
	Cost float64
	// JobsInSystem is N_i, the number of jobs it found on arrival.
	JobsInSystem int
	Lost         bool
	// Counted reports that the job is in the figures (entered service and
	// is not among the Warmup first arrivals).
	Counted bool
}

// Y returns X/R.
func (r JobRecord) Y() float64 { return r.X / float64(r.R) }

// Result is the outcome of one run.
type Result struct {
	// Arrived, Entered, Lost count arrivals, jobs that entered service and
	// jobs lost to a full waiting room; Counted the jobs in the figures.
	Arrived, Entered, Lost, Counted int
	// TotalCost is the placement cost of the counted jobs and MeanCost
	// their mean: the figure of merit of docs/formats.md#placement-scenario.
	TotalCost, MeanCost float64
	// EmptyClusterMean is the mean over the counted jobs of Y·(sum of the R
	// cheapest slot costs): what each would cost alone in an empty cluster,
	// a lower bound on MeanCost under every policy, path by path.
	EmptyClusterMean float64
	// MeanSojourn is the mean time from arrival to the end of the map phase
	// of the counted jobs; MeanInSystem the time-average number of jobs in
	// the system over the run.
	MeanSojourn, MeanInSystem float64
	// Events is the number of events processed; EndTime the time of the last.
	Events  uint64
	EndTime float64
	// Records holds every arrival, in arrival order, when RunOptions.Record.
	Records []JobRecord
}

// Event kinds of the placement model.
const (
	evArrival = iota
	evCompletion
)

// svcJob is a job in the system (waiting or in service).
type svcJob struct {
	id      int // arrival index
	arrival float64
	work    float64
	x       float64
	r       int
	n       int     // jobs in system at arrival
	tag     float64 // virtual finish time V_entry + work (in service only)
	slots   []int   // slots held (in service only)
}

// runner is the state of one run.
type runner struct {
	m     *Model
	eng   *Engine
	pol   policy.Placement
	opts  RunOptions
	order []int     // slot indices sorted by (cost, index)
	rank  []int     // rank[slot] = position of slot in order
	free  []bool    // free[rank]
	pre   []float64 // pre[k] = sum of the k cheapest costs
	nFree int

	// K-limited processor sharing: every job in service has received the
	// same service V since the last time the system was empty; V grows at
	// rate 1/m with m = len(inService).
	v, vTime   float64
	inService  []*svcJob
	waiting    []*svcJob // FIFO ring
	wHead, wN  int
	spare      []*svcJob
	completion Handle

	// the request handed to the policy, reused
	req     policy.PlacementRequest
	heldBuf [][]int

	src     Source
	next    JobSpec
	hasNext bool
	lastArr float64
	arrived int

	res        Result
	sumSojourn float64
	areaN      float64 // ∫ n(t) dt
	lastAreaT  float64
	emptySum   float64
}

// Validate checks the model.
func (m *Model) Validate() error {
	if len(m.SlotCosts) == 0 {
		return fmt.Errorf("%w: no slots", ErrInvalidModel)
	}
	for i, c := range m.SlotCosts {
		if math.IsNaN(c) || math.IsInf(c, 0) || c < 0 {
			return fmt.Errorf("%w: slot %d cost = %v, must be finite and ≥ 0", ErrInvalidModel, i, c)
		}
	}
	if m.K < 1 {
		return fmt.Errorf("%w: K = %d, must be ≥ 1", ErrInvalidModel, m.K)
	}
	return nil
}

// Run simulates the model on the jobs of src, placing each job with p when
// it enters service, until every job has left. It is deterministic: the same
// source and policy state give the same result.
//
// Processor sharing is exact for any work distribution: every job in service
// has received the same amount of service V since the system was last empty
// (they are served at equal rates), so a job entering with work B finishes
// when V reaches its tag V_entry + B. V advances by Δt/m between events (m
// jobs in service), and the next completion is the smallest tag, at time
// now + (tag − V)·m; it is recomputed at every arrival and departure.
func (m *Model) Run(ctx context.Context, src Source, p policy.Placement, opts RunOptions) (*Result, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	if opts.Warmup < 0 {
		return nil, fmt.Errorf("%w: warmup = %d, must be ≥ 0", ErrInvalidModel, opts.Warmup)
	}
	r := newRunner(m, src, p, opts)
	if err := r.run(ctx); err != nil {
		return nil, err
	}
	return &r.res, nil
}

func newRunner(m *Model, src Source, p policy.Placement, opts RunOptions) *runner {
	n := len(m.SlotCosts)
	r := &runner{m: m, eng: NewEngine(), pol: p, opts: opts, src: src}
	r.order = make([]int, n)
	for i := range r.order {
		r.order[i] = i
	}
	slices.SortStableFunc(r.order, func(a, b int) int {
		if c := cmp.Compare(m.SlotCosts[a], m.SlotCosts[b]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	r.rank = make([]int, n)
	r.pre = make([]float64, n+1)
	for k, s := range r.order {
		r.rank[s] = k
		r.pre[k+1] = r.pre[k] + m.SlotCosts[s]
	}
	r.free = make([]bool, n)
	for k := range r.free {
		r.free[k] = true
	}
	r.nFree = n
	r.req.Free = make([]policy.Slot, 0, n)
	r.inService = make([]*svcJob, 0, m.K)
	r.heldBuf = make([][]int, 0, m.K)
	r.waiting = make([]*svcJob, 16)
	return r
}

func (r *runner) run(ctx context.Context) error {
	if err := r.pull(); err != nil {
		return err
	}
	if r.hasNext {
		r.eng.Schedule(r.next.Arrival, evArrival, 0)
	}
	for {
		if r.eng.Processed()&4095 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		ev, ok := r.eng.Step()
		if !ok {
			break
		}
		r.area(ev.Time)
		switch ev.Kind {
		case evArrival:
			if err := r.arrive(); err != nil {
				return err
			}
		case evCompletion:
			r.completion = Handle{}
			if err := r.depart(); err != nil {
				return err
			}
		}
	}
	res := &r.res
	res.Events = r.eng.Processed()
	res.EndTime = r.eng.Now()
	if res.Counted > 0 {
		c := float64(res.Counted)
		res.MeanCost = res.TotalCost / c
		res.EmptyClusterMean = r.emptySum / c
		res.MeanSojourn = r.sumSojourn / c
	}
	if res.EndTime > 0 {
		res.MeanInSystem = r.areaN / res.EndTime
	}
	return nil
}

// pull reads the next job of the source.
func (r *runner) pull() error {
	j, ok := r.src.Next()
	r.hasNext = ok
	if !ok {
		return nil
	}
	switch {
	case math.IsNaN(j.Arrival) || math.IsInf(j.Arrival, 0) || j.Arrival < r.lastArr:
		return fmt.Errorf("%w: job %d arrival = %v (previous %v)", ErrBadJob, r.arrived, j.Arrival, r.lastArr)
	case math.IsNaN(j.Work) || math.IsInf(j.Work, 0) || j.Work < 0:
		return fmt.Errorf("%w: job %d work = %v", ErrBadJob, r.arrived, j.Work)
	case math.IsNaN(j.X) || math.IsInf(j.X, 0) || j.X < 0:
		return fmt.Errorf("%w: job %d data = %v", ErrBadJob, r.arrived, j.X)
	case j.R < 1 || j.R*r.m.K > len(r.m.SlotCosts):
		return fmt.Errorf("%w: job %d reduces = %d (need 1 ≤ R and K·R ≤ %d slots)", ErrBadJob, r.arrived, j.R, len(r.m.SlotCosts))
	}
	r.lastArr = j.Arrival
	r.next = j
	return nil
}

// area accumulates ∫ n(t) dt up to t.
func (r *runner) area(t float64) {
	r.areaN += float64(len(r.inService)+r.wN) * (t - r.lastAreaT)
	r.lastAreaT = t
}

// advance brings V to the current time.
func (r *runner) advance() {
	now := r.eng.Now()
	if m := len(r.inService); m > 0 {
		r.v += (now - r.vTime) / float64(m)
	}
	r.vTime = now
}

func (r *runner) newJob() *svcJob {
	if n := len(r.spare); n > 0 {
		j := r.spare[n-1]
		r.spare = r.spare[:n-1]
		return j
	}
	return &svcJob{}
}

func (r *runner) arrive() error {
	spec := r.next
	id := r.arrived
	r.arrived++
	r.res.Arrived++
	n := len(r.inService) + r.wN
	rec := JobRecord{Arrival: spec.Arrival, Start: math.NaN(), End: math.NaN(), X: spec.X, R: spec.R, JobsInSystem: n}
	if r.opts.Record {
		r.res.Records = append(r.res.Records, rec)
	}
	// Schedule the next arrival before handling this one (the order of
	// equal-time events is the order of scheduling).
	if err := r.pull(); err != nil {
		return err
	}
	if r.hasNext {
		r.eng.Schedule(r.next.Arrival, evArrival, 0)
	}
	if len(r.inService) >= r.m.K && r.m.MaxWaiting >= 0 && r.wN >= r.m.MaxWaiting {
		r.res.Lost++
		if r.opts.Record {
			r.res.Records[id].Lost = true
		}
		return nil
	}
	j := r.newJob()
	*j = svcJob{id: id, arrival: spec.Arrival, work: spec.Work, x: spec.X, r: spec.R, n: n, slots: j.slots[:0]}
	if len(r.inService) < r.m.K {
		return r.enter(j)
	}
	r.push(j)
	return nil
}

func (r *runner) push(j *svcJob) {
	if r.wN == len(r.waiting) {
		grown := make([]*svcJob, 2*len(r.waiting))
		for k := range r.wN {
			grown[k] = r.waiting[(r.wHead+k)%len(r.waiting)]
		}
		r.waiting, r.wHead = grown, 0
	}
	r.waiting[(r.wHead+r.wN)%len(r.waiting)] = j
	r.wN++
}

func (r *runner) pop() *svcJob {
	j := r.waiting[r.wHead]
	r.waiting[r.wHead] = nil
	r.wHead = (r.wHead + 1) % len(r.waiting)
	r.wN--
	return j
}

// enter places job j and starts its map phase.
func (r *runner) enter(j *svcJob) error {
	r.advance()
	now := r.eng.Now()
	req := &r.req
	req.Free = req.Free[:0]
	for k, f := range r.free {
		if f {
			s := r.order[k]
			req.Free = append(req.Free, policy.Slot{Index: s, Cost: r.m.SlotCosts[s]})
		}
	}
	req.X, req.R, req.JobsInSystem, req.Waiting = j.x, j.r, j.n, r.wN
	r.heldBuf = r.heldBuf[:0]
	for _, o := range r.inService {
		r.heldBuf = append(r.heldBuf, o.slots)
	}
	req.Held = r.heldBuf
	if len(req.Free) < j.r {
		return fmt.Errorf("%w: job %d needs %d slots, %d free", ErrBadJob, j.id, j.r, len(req.Free))
	}
	d, err := r.pol.Place(req)
	if err != nil {
		return fmt.Errorf("sim: policy %q, job %d: %w", r.pol.Name(), j.id, err)
	}
	if err := checkDecision(d.Positions, j.r, len(req.Free)); err != nil {
		return fmt.Errorf("policy %q, job %d: %w", r.pol.Name(), j.id, err)
	}
	sumH := 0.0
	for _, p := range d.Positions {
		s := req.Free[p].Index
		sumH += req.Free[p].Cost
		r.free[r.rank[s]] = false
		j.slots = append(j.slots, s)
	}
	r.nFree -= j.r
	y := j.x / float64(j.r)
	cost := y * sumH
	r.res.Entered++
	counted := j.id >= r.opts.Warmup
	if counted {
		r.res.Counted++
		r.res.TotalCost += cost
		r.emptySum += y * r.pre[j.r]
	}
	if r.opts.Record {
		rec := &r.res.Records[j.id]
		rec.Start, rec.Cost, rec.Counted = now, cost, counted
	}
	j.tag = r.v + j.work
	r.inService = append(r.inService, j)
	r.reschedule()
	return nil
}

func checkDecision(pos []int, r, nFree int) error {
	if len(pos) != r {
		return fmt.Errorf("%w: %d positions for R = %d", ErrBadDecision, len(pos), r)
	}
	for k, p := range pos {
		if p < 0 || p >= nFree {
			return fmt.Errorf("%w: position %d out of range [0, %d)", ErrBadDecision, p, nFree)
		}
		if k > 0 && p <= pos[k-1] {
			return fmt.Errorf("%w: positions %v not strictly ascending", ErrBadDecision, pos)
		}
	}
	return nil
}

// reschedule moves the completion event to the smallest tag's time.
func (r *runner) reschedule() {
	m := len(r.inService)
	if m == 0 {
		if !r.completion.IsZero() {
			r.eng.Cancel(r.completion)
			r.completion = Handle{}
		}
		return
	}
	best := r.inService[0].tag
	for _, o := range r.inService[1:] {
		best = min(best, o.tag)
	}
	t := r.eng.Now() + max(best-r.v, 0)*float64(m)
	if r.completion.IsZero() || !r.eng.Reschedule(r.completion, t) {
		r.completion = r.eng.Schedule(t, evCompletion, 0)
	}
}

// depart ends the map phase of the job with the smallest tag.
func (r *runner) depart() error {
	r.advance()
	now := r.eng.Now()
	k := 0
	for i, o := range r.inService {
		if o.tag < r.inService[k].tag || (o.tag == r.inService[k].tag && o.id < r.inService[k].id) {
			k = i
		}
	}
	j := r.inService[k]
	last := len(r.inService) - 1
	r.inService[k] = r.inService[last]
	r.inService[last] = nil
	r.inService = r.inService[:last]
	for _, s := range j.slots {
		r.free[r.rank[s]] = true
	}
	r.nFree += j.r
	if j.id >= r.opts.Warmup {
		r.sumSojourn += now - j.arrival
	}
	if r.opts.Record {
		r.res.Records[j.id].End = now
	}
	r.spare = append(r.spare, j)
	if len(r.inService) == 0 {
		// Renormalize so that V does not grow over a long run.
		r.v = 0
	}
	if r.wN > 0 {
		return r.enter(r.pop())
	}
	r.reschedule()
	return nil
}
