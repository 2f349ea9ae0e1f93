package solver

import (
	"context"
	"runtime"
	"sync"
	"time"
)

// workClock measures the work of one exact solve, and the phases' budgets
// (shares of the work left, the caps of the branch and price, the DP and
// the integer master) are spent on it rather than on the wall clock. Why:
// with shares of the WALL-CLOCK time left, a solve on a loaded machine gets
// less CPU in each phase and takes another path (on the robustness suite
// hetero-3r-6, hetero-3r-9, many-resources-7 and huge-small-1 swung
// between under 1 s and several seconds with the load), so the answer
// depended on what else ran. The work is the CPU time of the process
// (getrusage), which advances only while it runs. It is not a
// deterministic count (CPLEX's ticks, Gurobi's work units count
// operations): a phase stops at a check that comes a little earlier or
// later, the garbage collector's CPU counts, and so does any other work of
// the process (a server's concurrent solves spend each other's budgets, as
// the wall clock did); but on a loaded machine the path follows the
// solve's own progress, not the load's. The thread's CPU time (the solve
// locked to its thread) would exclude the rest of the process, but every
// hand-off between the locked goroutine and another (the LP's watcher, at
// every LP solve) then waits for the thread to wake: measured on the
// suite, up to 5x more wall clock than CPU on small instances of a loaded
// machine. The wall-clock time limit stays the hard stop (the solve's
// context), honoured as before. Where the process's CPU time cannot be
// read (not Unix), the clock is the wall clock, which every budget used
// before.
type workClock struct {
	read func() time.Duration // the work done since the clock started
	cpu  bool                 // read is the process's CPU time (else the wall clock)
	end  time.Duration        // the work at which the time limit is spent; 0: no limit

	mu      sync.Mutex
	budgets map[*workBudget]struct{} // pending budgets (cpu only)
	wake    chan struct{}            // a new budget for the watcher
	quit    chan struct{}            // closed by stop
	running bool                     // the watcher has started
}

// workBudget is one phase's budget: its context is cancelled when the
// work reaches end.
type workBudget struct {
	end    time.Duration
	cancel context.CancelFunc
}

// newWorkClock starts a clock for a solve, until stop, with the time
// limit's work spent at the wall-clock deadline (none if it is zero).
func newWorkClock(deadline time.Time) *workClock {
	c := &workClock{budgets: map[*workBudget]struct{}{}, wake: make(chan struct{}, 1), quit: make(chan struct{})}
	if read, ok := processCPUClock(); ok {
		c.read, c.cpu = read, true
	} else {
		start := time.Now()
		c.read = func() time.Duration { return time.Since(start) }
	}
	if !deadline.IsZero() {
		c.end = max(time.Until(deadline), time.Nanosecond)
	}
	return c
}

// now returns the work done so far (the wall clock for a nil clock).
func (c *workClock) now() time.Duration {
	if c == nil {
		return time.Since(processStart)
	}
	return c.read()
}

// processStart is the origin of a nil clock's readings.
var processStart = time.Now()

// limited reports whether the solve has a time limit.
func (c *workClock) limited() bool { return c != nil && c.end > 0 }

// share returns share of the work left before the time limit, or limit
// without one. The work left is the time limit's worth of CPU time less
// the work done, not what the wall clock left can still give: on a loaded
// machine (less than one CPU for the solve) a phase's share may outlast
// the wall-clock time left, and the hard stop then ends the phases after
// it early. That is the trade made for a path that does not depend on the
// load; it costs only where the time limit binds under load (yarn-7
// unproven once with 5.7 s of CPU in its 10 s).
func (c *workClock) share(share float64, limit time.Duration) time.Duration {
	if !c.limited() {
		return limit
	}
	return time.Duration(float64(max(c.end-c.now(), 0)) * share)
}

// within returns ctx ending after d more of work (at once if d ≤ 0).
func (c *workClock) within(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if c == nil || !c.cpu {
		return context.WithTimeout(ctx, d)
	}
	ctx, cancel := context.WithCancel(ctx)
	if d <= 0 {
		cancel()
		return ctx, cancel
	}
	b := &workBudget{end: c.now() + d, cancel: cancel}
	c.mu.Lock()
	c.budgets[b] = struct{}{}
	if !c.running {
		c.running = true
		go c.watch()
	}
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return ctx, func() {
		c.mu.Lock()
		delete(c.budgets, b)
		c.mu.Unlock()
		cancel()
	}
}

// minWorkSleep is the shortest the watcher sleeps between two readings.
const minWorkSleep = 200 * time.Microsecond

// watch cancels the budgets whose work is spent, until stop. The
// process's CPU time advances about GOMAXPROCS times as fast as the wall
// clock at most (a heuristic: cgo calls such as the LP solver's run on
// threads outside GOMAXPROCS, so a budget may overshoot a little), so the
// watcher sleeps (wall clock) for the work left to the nearest budget over
// GOMAXPROCS and reads the clock again: a few readings per budget, more on
// a loaded machine.
func (c *workClock) watch() {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		now := c.read()
		next := time.Duration(-1)
		c.mu.Lock()
		for b := range c.budgets {
			if b.end <= now {
				b.cancel()
				delete(c.budgets, b)
			} else if next < 0 || b.end-now < next {
				next = b.end - now
			}
		}
		c.mu.Unlock()
		if next < 0 {
			next = time.Hour // nothing pending: wait for a budget
		}
		timer.Reset(max(next/time.Duration(runtime.GOMAXPROCS(0)), minWorkSleep))
		select {
		case <-c.quit:
			return
		case <-c.wake: // Reset discards a pending expiry (Go ≥ 1.23 timers)
		case <-timer.C:
		}
	}
}

// stop ends the watcher.
func (c *workClock) stop() {
	close(c.quit)
}
