package sim

import (
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

func TestEngineOrder(t *testing.T) {
	e := NewEngine()
	// Equal times fire in scheduling order.
	e.Schedule(2, 0, 1)
	e.Schedule(1, 0, 2)
	e.Schedule(2, 0, 3)
	e.Schedule(1, 0, 4)
	var got []int
	for {
		ev, ok := e.Step()
		if !ok {
			break
		}
		got = append(got, ev.Arg)
		if ev.Time != e.Now() {
			t.Fatalf("Now() = %v after event at %v", e.Now(), ev.Time)
		}
	}
	if want := []int{2, 4, 1, 3}; !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
	if e.Processed() != 4 {
		t.Errorf("Processed() = %d, want 4", e.Processed())
	}
}

func TestEngineCancelReschedule(t *testing.T) {
	e := NewEngine()
	a := e.Schedule(1, 0, 1)
	b := e.Schedule(2, 0, 2)
	c := e.Schedule(3, 0, 3)
	if !e.Cancel(b) || e.Cancel(b) {
		t.Fatal("Cancel: want true then false")
	}
	if !e.Reschedule(c, 0.5) {
		t.Fatal("Reschedule of a pending event failed")
	}
	ev, _ := e.Step()
	if ev.Arg != 3 || ev.Time != 0.5 {
		t.Fatalf("first event %+v, want arg 3 at 0.5", ev)
	}
	if e.Reschedule(c, 1) || e.Cancel(c) {
		t.Error("a fired handle must be stale")
	}
	// The slab entry of b is reused; the old handle must stay stale.
	d := e.Schedule(4, 0, 4)
	if e.Cancel(b) {
		t.Error("stale handle cancelled a reused slot")
	}
	if e.Pending() != 2 {
		t.Errorf("Pending() = %d, want 2", e.Pending())
	}
	ev, _ = e.Step()
	if ev.Handle != a {
		t.Errorf("second event handle %v, want %v", ev.Handle, a)
	}
	ev, _ = e.Step()
	if ev.Handle != d {
		t.Errorf("third event handle %v, want %v", ev.Handle, d)
	}
	if _, ok := e.Step(); ok {
		t.Error("queue should be empty")
	}
	e.Reset()
	if e.Now() != 0 || e.Pending() != 0 || e.Processed() != 0 {
		t.Error("Reset did not reset")
	}
}

func TestEngineSchedulePastPanics(t *testing.T) {
	e := NewEngine()
	e.Schedule(1, 0, 0)
	e.Step()
	defer func() {
		if recover() == nil {
			t.Error("scheduling in the past did not panic")
		}
	}()
	e.Schedule(0.5, 0, 0)
}

// TestEngineRandomized checks the engine against sorting, with random
// cancels and reschedules.
func TestEngineRandomized(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 50 {
		e := NewEngine()
		type item struct {
			t   float64
			seq int
			h   Handle
		}
		live := map[int]*item{}
		seq := 0
		for range 200 {
			switch op := rng.IntN(4); {
			case op < 2 || len(live) == 0:
				tm := float64(rng.IntN(20))
				h := e.Schedule(tm, 0, seq)
				live[seq] = &item{t: tm, seq: seq, h: h}
				seq++
			case op == 2:
				for k, it := range live {
					if !e.Cancel(it.h) {
						t.Fatalf("trial %d: cancel of live event failed", trial)
					}
					delete(live, k)
					break
				}
			default:
				for k, it := range live {
					tm := float64(rng.IntN(20))
					if !e.Reschedule(it.h, tm) {
						t.Fatalf("trial %d: reschedule failed", trial)
					}
					// Rescheduling puts the event after equal-time ones.
					delete(live, k)
					it.t, it.seq = tm, seq
					live[seq] = it
					seq++
					break
				}
			}
		}
		var want []*item
		for _, it := range live {
			want = append(want, it)
		}
		sort.Slice(want, func(i, j int) bool {
			if want[i].t != want[j].t {
				return want[i].t < want[j].t
			}
			return want[i].seq < want[j].seq
		})
		for k, w := range want {
			ev, ok := e.Step()
			if !ok || ev.Handle != w.h || ev.Time != w.t {
				t.Fatalf("trial %d: event %d = %+v, want handle %v at %v", trial, k, ev, w.h, w.t)
			}
		}
		if e.Pending() != 0 {
			t.Fatalf("trial %d: %d events left", trial, e.Pending())
		}
	}
}
