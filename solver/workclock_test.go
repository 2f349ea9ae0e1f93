package solver

import (
	"context"
	"testing"
	"time"
)

// TestWorkClockBudgetsSpendWork checks a budget's context against the
// counted work: it holds while less than its work is added, however long
// the wall clock runs, and ends in the call to add that reaches it (not
// later, not from another goroutine); a budget of zero work ends at once,
// a cancelled one leaves nothing pending, and shares are of the time
// limit's worth of work left, reckoned as at most planHorizon
// (shareOfAll: of all of it).
func TestWorkClockBudgetsSpendWork(t *testing.T) {
	clk := newWorkClock(time.Minute)
	defer clk.stop()
	if !clk.limited() || clk.share(0.5, 0) != planHorizon/2 || clk.shareOfAll(0.5) != 30*time.Second {
		t.Fatalf("half of a minute's work left: %v, of the planned work %v", clk.shareOfAll(0.5), clk.share(0.5, 0))
	}
	if short := newWorkClock(planHorizon / 2); short.share(0.5, 0) != planHorizon/4 {
		t.Fatalf("half of %v's work left: %v", planHorizon/2, short.share(0.5, 0))
	}
	nodes := int64(20*time.Millisecond) / int64(workCost[workNode]) // 20 ms of work
	budget := time.Duration(float64(nodes) * workCost[workNode])
	ctx, cancel := clk.within(context.Background(), budget)
	defer cancel()
	time.Sleep(10 * time.Millisecond) // wall clock without work: the budget holds
	clk.add(workNode, nodes-1)
	if ctx.Err() != nil {
		t.Fatalf("a budget of %v ended after %v of work", budget, clk.now())
	}
	clk.add(workNode, 1)
	if ctx.Err() == nil {
		t.Fatalf("a budget of %v still open after %v of work", budget, clk.now())
	}
	if len(clk.budgets) != 0 {
		t.Fatalf("%d budgets pending after the only one ended", len(clk.budgets))
	}
	if got := clk.shareOfAll(1); got != time.Minute-clk.now() {
		t.Fatalf("work left %v after %v of a minute", got, clk.now())
	}
	zero, cancelZero := clk.within(context.Background(), 0)
	defer cancelZero()
	if zero.Err() == nil {
		t.Fatal("a budget of no work is open")
	}
	_, cancelOpen := clk.within(context.Background(), time.Hour)
	cancelOpen()
	if len(clk.budgets) != 0 {
		t.Fatalf("%d budgets pending after they ended", len(clk.budgets))
	}
	var none *workClock
	none.add(workNode, 1)
	if none.limited() || none.share(0.5, time.Second) != time.Second || none.shareOfAll(0.5) != 0 || none.now() != 0 {
		t.Fatal("a nil clock has a limit or counts")
	}
	if workClockOf(withWorkClock(context.Background(), clk)) != clk || workClockOf(context.Background()) != nil {
		t.Fatal("the context does not carry the clock")
	}
}
