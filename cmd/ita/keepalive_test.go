package ita

import (
	"sync"
	"testing"
	"time"

	"github.com/optd/optd/solver"
)

// While the solver reports nothing, the last report is repeated every
// interval with the time updated; a report is printed at once.
func TestKeepAliveRepeatsTheLastReport(t *testing.T) {
	var mu sync.Mutex
	var lines []solver.Progress
	k := newKeepAlive(func(p solver.Progress) { mu.Lock(); lines = append(lines, p); mu.Unlock() }, 10*time.Millisecond)
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(lines) }
	deadline := time.Now().Add(10 * time.Second) // a guard against a hang, not an assertion
	for count() < 3 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	k.report(solver.Progress{Phase: "lp", Incumbent: 7})
	n := count()
	for count() < n+2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	k.stop()
	mu.Lock()
	defer mu.Unlock()
	if lines[0].Phase != "starting" || lines[2].Elapsed <= lines[0].Elapsed {
		t.Errorf("before any report: %+v", lines[:3])
	}
	if lines[n-1].Phase != "lp" || lines[n].Phase != "lp" || lines[n].Incumbent != 7 || lines[n].Elapsed <= lines[n-1].Elapsed {
		t.Errorf("after a report: %+v", lines[n-1:])
	}
	final := len(lines)
	time.Sleep(30 * time.Millisecond)
	if len(lines) != final {
		t.Error("lines after stop")
	}
}
