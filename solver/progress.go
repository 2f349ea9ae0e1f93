package solver

import (
	"math"
	"slices"
	"sync"
	"time"
)

// tracker holds what a solve has proven so far, for Options.Progress and
// the relative gap tolerance: the incumbent value, the best proven upper
// bound and the nodes explored by every phase. It reports a Progress at
// most every Options.ProgressInterval and whenever the incumbent improves.
type tracker struct {
	m        *model
	start    time.Time
	report   func(Progress)
	every    time.Duration
	last     time.Time
	phase    string
	nodes    int64 // nodes of finished phases
	live     int64 // nodes of the running phase
	inc      float64
	bound    float64
	gap      float64
	lastSeen float64    // the incumbent of the last report
	clk      *workClock // the exact solve's, read in its goroutine only (addNodes)

	// pub is what the solve has found so far, readable by another
	// goroutine (answerBy): the solving goroutine publishes every better
	// incumbent and bound into it.
	pub published
}

// published is what an answer given before the solve returns holds
// (answerBy), under mu; closed stops the progress reports once it has
// been given.
type published struct {
	mu    sync.Mutex
	order []int // search node j is input node order[j]
	answer
	closed bool
}

// answer is the incumbent (input node order), its value, the best proven
// bound, and the nodes, LP solves and work (Stats.WorkMS) of the finished
// phases.
type answer struct {
	x        [][]int
	val      float64
	bound    float64
	nodes    int64
	lpSolves int
	workMS   float64
}

// defaultProgressInterval is the interval of progress reports when
// Options.ProgressInterval is 0.
const defaultProgressInterval = time.Second

func newTracker(m *model, start time.Time, opts Options) *tracker {
	t := &tracker{m: m, start: start, report: opts.Progress, every: opts.ProgressInterval,
		bound: math.Inf(1), gap: opts.Gap, inc: math.Inf(-1), lastSeen: math.Inf(-1)}
	t.pub.val, t.pub.bound = math.Inf(-1), math.Inf(1)
	if t.every <= 0 {
		t.every = defaultProgressInterval
	}
	return t
}

// setPhase names what the solver does now (in progress reports).
func (t *tracker) setPhase(p string) {
	t.phase = p
	t.tick(true)
}

// incumbent records a feasible value.
func (t *tracker) incumbent(v float64) {
	if v > t.inc {
		t.inc = v
		t.tick(false)
	}
}

// proven records a proven upper bound.
func (t *tracker) proven(b float64) {
	if b = t.m.wholeBound(b); b < t.bound {
		t.bound = b
		t.pub.mu.Lock()
		t.pub.bound = b
		t.pub.mu.Unlock()
	}
}

// addNodes adds the nodes of a finished phase (and publishes the work so
// far).
func (t *tracker) addNodes(n int64) {
	t.nodes += n
	t.live = 0
	t.pub.mu.Lock()
	t.pub.nodes = t.nodes
	if t.clk != nil {
		t.pub.workMS = t.clk.ms()
	}
	t.pub.mu.Unlock()
}

// addLPSolves adds the LP solves of a finished phase, for an answer given
// at the time limit before the solve returns (answerBy).
func (t *tracker) addLPSolves(n int) {
	t.pub.mu.Lock()
	t.pub.lpSolves += n
	t.pub.mu.Unlock()
}

// publish records a feasible assignment x worth val (input node order;
// search node order when sorted) if it is better than the last one.
func (t *tracker) publish(x [][]int, val float64, sorted bool) {
	t.pub.mu.Lock()
	defer t.pub.mu.Unlock()
	if val <= t.pub.val || (sorted && t.pub.order == nil) {
		return
	}
	cp := make([][]int, len(x))
	for j, a := range x {
		o := j
		if sorted {
			o = t.pub.order[j]
		}
		cp[o] = slices.Clone(a)
	}
	t.pub.x, t.pub.val = cp, val
}

// take closes the tracker (no progress report after it) and returns what
// was published.
func (t *tracker) take() answer {
	t.pub.mu.Lock()
	defer t.pub.mu.Unlock()
	t.pub.closed = true
	return t.pub.answer
}

// tick reports progress when the interval has passed, the incumbent has
// improved or force is set.
func (t *tracker) tick(force bool) {
	if t.report == nil {
		return
	}
	now := time.Now()
	if !force && now.Sub(t.last) < t.every && !(t.inc > t.lastSeen && !t.last.IsZero()) {
		return
	}
	t.last, t.lastSeen = now, t.inc
	t.pub.mu.Lock() // no report once the answer is given (answerBy)
	defer t.pub.mu.Unlock()
	if !t.pub.closed {
		t.report(t.snapshot(now))
	}
}

func (t *tracker) snapshot(now time.Time) Progress {
	p := Progress{Elapsed: now.Sub(t.start), NodesExplored: t.nodes + t.live, Phase: t.phase,
		Incumbent: math.Max(0, t.inc), Bound: t.bound, Gap: math.Inf(1)}
	if !math.IsInf(t.bound, 1) {
		p.Bound = math.Max(t.bound, p.Incumbent)
		p.Gap = relGap(p.Bound, p.Incumbent)
	}
	return p
}

// relGap is (ub − inc)/ub, 0 when ub ≤ 0 or ub ≤ inc.
func relGap(ub, inc float64) float64 {
	if ub <= 0 || ub <= inc {
		return 0
	}
	return (ub - inc) / ub
}

// withinGap reports whether a subtree of bound b cannot improve the
// incumbent inc by more than the relative tolerance: b − inc ≤ gap·b.
func withinGap(gap, b, inc float64) bool {
	return gap > 0 && b-inc <= gap*b
}
