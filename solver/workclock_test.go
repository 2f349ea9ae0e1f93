package solver

import (
	"context"
	"testing"
	"time"
)

// TestWorkClockBudgetsSpendWork checks a budget's context against the
// work done: on Unix (the process's CPU clock) a budget does not end while
// the process sleeps (unless the rest of the process works meanwhile),
// and it ends once the process has worked for it; the wall-clock fallback
// ends it by the wall clock. A budget of zero work ends at once, and a
// cancelled budget leaves the watcher nothing.
func TestWorkClockBudgetsSpendWork(t *testing.T) {
	clk := newWorkClock(time.Now().Add(time.Minute))
	defer clk.stop()
	if !clk.limited() || clk.share(0.5, 0) <= 0 || clk.share(0.5, 0) > 30*time.Second {
		t.Fatalf("half of a minute's work left: %v", clk.share(0.5, 0))
	}
	const budget = 20 * time.Millisecond
	ctx, cancel := clk.within(context.Background(), budget)
	defer cancel()
	if clk.cpu {
		before := clk.now()
		time.Sleep(3 * budget) // no work done: the budget holds
		if ctx.Err() != nil {
			// The clock is the whole process's: the GC or another test's
			// solve winding down may have worked meanwhile.
			if other := clk.now() - before; other < budget/2 {
				t.Fatalf("a budget of %v ended after %v of work, asleep (%v of it during the sleep)", budget, clk.now(), other)
			} else {
				t.Logf("the rest of the process worked %v during the sleep: the budget's holding not checked", other)
			}
		}
	}
	w0, x := clk.now(), 1.0
	for ctx.Err() == nil && clk.now()-w0 < 100*budget {
		for range 10000 {
			x = x*1.0000001 + 1e-9
		}
	}
	if ctx.Err() == nil {
		t.Fatalf("a budget of %v still open after %v of work (%v)", budget, clk.now()-w0, x)
	}
	if clk.cpu && clk.now() < budget {
		t.Fatalf("a budget of %v ended after %v of work", budget, clk.now())
	}
	zero, cancelZero := clk.within(context.Background(), 0)
	defer cancelZero()
	if zero.Err() == nil {
		t.Fatal("a budget of no work is open")
	}
	_, cancelOpen := clk.within(context.Background(), time.Hour)
	cancelOpen()
	clk.mu.Lock()
	defer clk.mu.Unlock()
	if len(clk.budgets) != 0 {
		t.Fatalf("%d budgets pending after they ended", len(clk.budgets))
	}
	var none *workClock
	if none.limited() || none.share(0.5, time.Second) != time.Second {
		t.Fatal("a nil clock has a limit")
	}
}
