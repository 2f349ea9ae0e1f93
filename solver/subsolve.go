package solver

import (
	"context"
	"time"
)

// subSolveKey marks the context of a sub-solve (solveSub).
type subSolveKey struct{}

// inSubSolve reports whether ctx is a sub-solve's: there the dives keep
// the branch and bound for their tails, so that sub-solves do not nest.
func inSubSolve(ctx context.Context) bool { return ctx.Value(subSolveKey{}) != nil }

// solveSub solves the sub-problem of the nodes caps with the supply
// supply (of m's task types) by the exact method's phases, for at most
// work of counted work, and returns the best assignment it found (caps
// order) and its LP solves. Its phases take their shares of work, not of
// the solve's time limit: the sub-solve runs on a clock of its own, which
// counts its work on the solve's clock too (the solve's budgets and work
// limit see it), and within the solve's context (its time limit).
func solveSub(ctx context.Context, m *model, caps [][]int64, supply []int, work time.Duration) ([][]int, int) {
	clk := newWorkClock(work)
	clk.parent = workClockOf(ctx)
	ctx = context.WithValue(withWorkClock(ctx, clk), subSolveKey{}, true)
	ctx, cancel := clk.within(ctx, work)
	defer cancel()
	sub := m.withSupply(supply)
	track := newTracker(sub, time.Now(), Options{})
	track.clk = clk
	x, _, stats := exactPhases(ctx, sub, caps, Options{}, clk, track)
	return x, stats.LPSolves
}
