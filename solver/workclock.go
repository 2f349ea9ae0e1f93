package solver

import (
	"context"
	"errors"
	"math"
	"slices"
	"time"

	"github.com/optd/optd/solver/lp"
)

// workClock measures the work of one exact solve as a deterministic
// count, and the phases' budgets (shares of the work left, the caps of the
// branch and price, the DP and the integer master, the LNS's idle rule)
// are spent on it rather than on a clock. Why not the wall clock: with
// shares of the wall-clock time left, a solve on a loaded machine gets
// less CPU in each phase and takes another path (on the robustness suite
// hetero-3r-6, hetero-3r-9, many-resources-7 and huge-small-1 swung
// between under 1 s and several seconds with the load). Why not the
// process's CPU time, the clock before this one: it follows the solve's
// own progress rather than the load's, but a phase's context was
// cancelled by a watcher goroutine at whatever point the phase had
// reached, and the garbage collector's CPU counted, so where a phase
// stopped, and the state the next one started from, varied from run to
// run even at the same seed (yarn-7 proven in 0.8-4.0 s, many-resources-5
// unproven in 2 of 6 runs, on an idle machine). Like CPLEX's ticks and
// Gurobi's work units, the work here counts operations: the phases add
// them (add) at their own check points, in the solve's goroutine, and a
// phase whose budget they exhaust has its context cancelled there and
// then, so it stops at its next look at the context, the same point in
// every run. Same instance and Options.Seed, same path, node counts and
// answer, whatever the load, wherever the wall-clock time limit (the
// solve's context, the hard stop) does not bind.
//
// The work is kept in calibrated nanoseconds (workCost: one constant per
// kind of operation), so that the budgets written as durations (bpCap,
// dpFirstCap, costDPRetryTime…) and the shares of the time limit's worth
// of work stay about what they were in CPU time on the suite. A kind's
// cost is an average: an instance whose operations are slower than the
// suite's spends more CPU on the same budget (a share of the time limit
// may then outlast the wall clock left, and the hard stop ends the later
// phases early: the trade the CPU-time clock also made under load).
//
// A clock belongs to one solve and is used from its goroutine only (the
// phases do not run concurrently); the context carries it to the phases
// (withWorkClock, workClockOf), so that every count search, LP solve and
// DP below a budget adds its work without threading the clock through.
type workClock struct {
	done   float64 // the work so far, calibrated nanoseconds
	counts [numWorkKinds]int64
	end    time.Duration // the work at which the time limit is spent; 0: no limit

	report  workReport    // a test's hook, or nil
	budgets []*workBudget // pending budgets
	next    float64       // the smallest end of a pending budget (+Inf: none)
}

// workBudget is one phase's budget: its context is cancelled when the
// work reaches end.
type workBudget struct {
	end    float64
	cancel context.CancelFunc
}

// errWorkLimit is the cause (context.Cause) of a solve's context ending at
// Options.WorkLimit, which stopReason tells from a phase's own budget and
// from the caller's cancellation.
var errWorkLimit = errors.New("the work limit is spent")

// workKind is a kind of operation the work clock counts.
type workKind int

const (
	workNode   workKind = iota // a node of a count search (decide, undo, bookkeeping)
	workLookup                 // one table view read by a search's bound, per count tried
	workLP                     // an LP solve: (simplex iterations + 1) × (rows + columns)
	workCell                   // one cell of one type's layer of the bound tables built
	workDP                     // one operation of the reduced-cost DP: a table view read while enumerating patterns, a transition, a bound read, a table cell
	numWorkKinds
)

// workCost is the nanoseconds of CPU one operation of each kind took on
// average over the robustness suite, on the machine the project is
// measured on (2 cores, amd64): every solve's counts and CPU time were
// recorded (OPTD_SUITE_WORK=1 with make ita-suite, seeds 0-9, 10 s limit)
// and the costs fitted by least squares of the relative error with
// non-negative coefficients, CPU ≈ Σ_k cost_k·count_k, over the 40-42
// solves of more than 20 ms that the time limit did not stop: 162, 7.2,
// 93, 8.9 and 9.0 ns (rounded below). A node's cost and its reads' trade
// off (a node reads every view): refitted on a run with these costs,
// 124, 7.9, 64, 9.4 and 8.9, with the same fit. Counted work over CPU
// time on that run, median over a family's solves of more than 20 ms:
// hetero-3r 1.02, yarn 1.32, large 0.97, many-resources 1.08, huge-small
// 0.95 (0.54-1.39 for single instances; yarn-7, stopped at 10 s, 1.19);
// 0.6-0.7 on live-cluster and tiny-types, whose solves of tens of
// milliseconds are mostly set-up the clock does not count (validation,
// sorting, the greedy) and end before a budget matters. The costs convert
// counts into the durations the budgets are written in; the path depends
// on their being fixed, not exact: on a machine twice as fast a 10 s
// limit buys the same work, proven in about half the wall clock.
var workCost = [numWorkKinds]float64{
	workNode:   160,
	workLookup: 7,
	workLP:     90,
	workCell:   9,
	workDP:     9,
}

// workReport, where a test puts one in the solve's context
// (withWorkReport), receives the solve's counts and work at its end
// (calibration of workCost). A context value, not a package variable: a
// solve abandoned at its time limit ends later, in its own goroutine, and
// reports to its own caller's hook, never to the next solve's.
type workReport func(counts [numWorkKinds]int64, work time.Duration)

// workReportKey is the context key of a test's workReport.
type workReportKey struct{}

// withWorkReport returns ctx asking the exact solve to report its work to fn.
func withWorkReport(ctx context.Context, fn workReport) context.Context {
	return context.WithValue(ctx, workReportKey{}, fn)
}

// newWorkClock starts a clock for a solve with the time limit limit (0:
// none): the limit's worth of work is limit in calibrated nanoseconds.
func newWorkClock(limit time.Duration) *workClock {
	return &workClock{end: max(limit, 0), next: math.Inf(1)}
}

// add counts n operations of kind k and cancels the budgets they exhaust
// (a nil clock counts nothing).
func (c *workClock) add(k workKind, n int64) {
	if c == nil || n <= 0 {
		return
	}
	c.counts[k] += n
	c.done += workCost[k] * float64(n)
	if c.done < c.next {
		return
	}
	c.next = math.Inf(1)
	kept := c.budgets[:0]
	for _, b := range c.budgets {
		if b.end <= c.done {
			b.cancel()
			continue
		}
		kept = append(kept, b)
		c.next = math.Min(c.next, b.end)
	}
	clear(c.budgets[len(kept):])
	c.budgets = kept
}

// now returns the work done so far (0 for a nil clock).
func (c *workClock) now() time.Duration {
	if c == nil {
		return 0
	}
	return time.Duration(c.done)
}

// limited reports whether the solve has a time limit.
func (c *workClock) limited() bool { return c != nil && c.end > 0 }

// share returns share of the work left before the time limit's worth of
// work, or limit without a time limit. The work left is not what the
// wall clock left can still give: on a slow or loaded machine a phase's
// share may outlast the wall-clock time left, and the hard stop then ends
// the phases after it early. That is the trade made for a path that does
// not depend on the machine; it costs only where the time limit binds.
//
// The work left is reckoned as at most planHorizon: under a longer limit
// the phases get what they get under the default one, and whatever the
// solve needs beyond that goes to the phases that prove (the branch and
// price's rounds, runBranchPrice; the count search, which takes what is
// left), not to every phase in proportion.
func (c *workClock) share(share float64, limit time.Duration) time.Duration {
	if !c.limited() {
		return limit
	}
	return time.Duration(float64(min(c.left(), planHorizon)) * share)
}

// shareOfAll returns share of all the work left before the time limit's
// worth of work, however long (0 without a time limit).
func (c *workClock) shareOfAll(share float64) time.Duration {
	if !c.limited() {
		return 0
	}
	return time.Duration(float64(c.left()) * share)
}

// left returns the work left before the time limit's worth of work.
func (c *workClock) left() time.Duration { return max(c.end-c.now(), 0) }

// planHorizon is the most work left that a phase's share is reckoned on:
// `optd ita`'s default time limit, under which the phases' shares were
// measured and tuned. Why: with a share of all the work left, a long limit
// made every phase that long, whether it was getting anywhere or not: a
// random instance of TestLongLimitsTakeOnePath (14 nodes, 9 types, 2
// resources, Options.Seed 3; with the deterministic dive's rounding of its
// last nodes, dive.go) took 152 s of work under a 10-minute limit, 16 s
// under a minute, 3.1 s under 10 s and 1.5 s without a limit: the branch
// and price's early round, given a quarter of the work left, kept its
// bound at 1175 above the optimum 1174, which the integer master and a DP
// step then proved in under a second. Now 3.3 s under any long limit.
// Limits up to planHorizon are unaffected (the suite's 10 s paths are the
// same). Under a 1-minute limit, on the ten instances of the suite's
// seeds 0-9 and fresh blocks that took 10-20 s of work to their proof
// there (three Options.Seed each): the geometric mean of the work 0.70
// of what it was, 27 of 30 proven either way (hetero-3r-5004 14-19 →
// 7.6-9.1 s, large-5003 12-15 → 5.2 s; many-resources-4007 at one seed
// 9.4 → 20 s).
const planHorizon = 10 * time.Second

// within returns ctx ending after d more of work (at once if d ≤ 0); a
// nil clock (tests of single phases) times it by the wall clock.
func (c *workClock) within(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return c.withinCause(ctx, d, nil)
}

// withinCause is within, the context ending with cause (nil:
// context.Canceled).
func (c *workClock) withinCause(ctx context.Context, d time.Duration, cause error) (context.Context, context.CancelFunc) {
	if c == nil {
		return context.WithTimeoutCause(ctx, d, cause)
	}
	ctx, cancelCause := context.WithCancelCause(ctx)
	cancel := func() { cancelCause(cause) }
	if d <= 0 {
		cancel()
		return ctx, cancel
	}
	b := &workBudget{end: c.done + float64(d), cancel: cancel}
	c.budgets = append(c.budgets, b)
	c.next = math.Min(c.next, b.end)
	return ctx, func() {
		if i := slices.Index(c.budgets, b); i >= 0 {
			c.budgets = slices.Delete(c.budgets, i, i+1)
		}
		cancel()
	}
}

// ms is the work so far in milliseconds (Stats.WorkMS).
func (c *workClock) ms() float64 { return c.done / 1e6 }

// stop ends the clock's solve (and reports its counts where a test asks).
func (c *workClock) stop() {
	if c.report != nil {
		c.report(c.counts, c.now())
	}
}

// workClockKey is the context key of the solve's work clock.
type workClockKey struct{}

// withWorkClock returns ctx carrying c to the phases.
func withWorkClock(ctx context.Context, c *workClock) context.Context {
	return context.WithValue(ctx, workClockKey{}, c)
}

// workClockOf returns the work clock ctx carries, or nil.
func workClockOf(ctx context.Context) *workClock {
	c, _ := ctx.Value(workClockKey{}).(*workClock)
	return c
}

// solveLP solves p (lp.Solve, default options) and adds its work to the
// work clock ctx carries.
func solveLP(ctx context.Context, p *lp.Problem) (*lp.Solution, error) {
	sol, err := lp.Solve(ctx, p, lp.Options{})
	addLPWork(ctx, p.NumRows(), p.NumCols(), sol)
	return sol, err
}

// addLPWork adds an LP solve of rows × cols that returned sol (nil: it
// failed or stopped, counted as no iteration) to the work clock ctx
// carries: (iterations + 1) × (rows + cols), a simplex iteration's
// pricing and ratio test being about linear in the size of these
// masters (few non-zeros per column).
func addLPWork(ctx context.Context, rows, cols int, sol *lp.Solution) {
	iters := 0
	if sol != nil {
		iters = sol.Iterations
	}
	workClockOf(ctx).add(workLP, int64(iters+1)*int64(rows+cols))
}

// addTableWork adds the building of t's layers, cells × layers of each
// view, to the work clock ctx carries.
func addTableWork(ctx context.Context, t *tables) {
	n := int64(0)
	for _, v := range t.views {
		n += int64(v.g.cells) * int64(len(v.layer)-1)
	}
	workClockOf(ctx).add(workCell, n)
}
