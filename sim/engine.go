package sim

import (
	"fmt"
	"math"
)

// Event is one scheduled occurrence. Kind and Arg are the model's: the engine
// only orders events by (Time, order of scheduling) and never looks inside.
type Event struct {
	// Time is the virtual time at which the event fires.
	Time float64
	// Kind and Arg identify what happens (for example "completion" and a job
	// index); their meaning belongs to the model.
	Kind int
	Arg  int
	// Handle is the handle Schedule returned for this event. It is no longer
	// valid once the event has fired.
	Handle Handle
}

// Handle refers to a scheduled event so that it can be cancelled or moved.
// The zero Handle refers to no event. A handle becomes stale when its event
// fires or is cancelled; operations on a stale handle do nothing.
type Handle struct {
	idx int32  // index into Engine.slots, plus 1 (0 = no event)
	gen uint32 // generation of the slot when the handle was issued
}

// IsZero reports whether h refers to no event.
func (h Handle) IsZero() bool { return h.idx == 0 }

// slot is the engine's record of one event: the event, its position in the
// heap (-1 when free) and its generation.
type slot struct {
	ev  Event
	seq uint64
	pos int32
	gen uint32
}

// Engine is a discrete-event engine: a virtual clock and a priority queue of
// pending events ordered by time, ties broken by scheduling order (first
// scheduled fires first), so that a run is a deterministic function of the
// model's inputs. Events are stored by value in a slab whose entries are
// recycled, and the queue is an indexed binary heap of slab indices, so
// Schedule, Cancel and Reschedule are O(log n) and a run in steady state
// allocates nothing.
//
// The engine holds no randomness and no model state; models (the placement
// queue and the cluster simulator of this package) drive it with Schedule
// and Step. An Engine is not safe for concurrent use.
type Engine struct {
	now       float64
	heap      []int32 // slab indices, a binary min-heap by (time, seq)
	slots     []slot
	free      []int32 // recycled slab indices
	seq       uint64
	processed uint64
}

// NewEngine returns an engine at time 0 with no pending event.
func NewEngine() *Engine { return &Engine{} }

// Reset empties the queue and sets the clock to 0, keeping the allocated
// storage. Every outstanding handle becomes stale.
func (e *Engine) Reset() {
	for i := range e.slots {
		if e.slots[i].pos >= 0 {
			e.slots[i].pos = -1
			e.slots[i].gen++
		}
	}
	e.free = e.free[:0]
	for i := len(e.slots) - 1; i >= 0; i-- {
		e.free = append(e.free, int32(i))
	}
	e.heap = e.heap[:0]
	e.now, e.seq, e.processed = 0, 0, 0
}

// Now returns the virtual time: the time of the last event returned by Step
// (0 before the first).
func (e *Engine) Now() float64 { return e.now }

// Pending returns the number of scheduled events.
func (e *Engine) Pending() int { return len(e.heap) }

// Processed returns the number of events Step has returned since the engine
// was created or reset.
func (e *Engine) Processed() uint64 { return e.processed }

// Schedule adds an event at time t ≥ Now() and returns its handle. Scheduling
// in the past or at a NaN time is a programming error and panics.
func (e *Engine) Schedule(t float64, kind, arg int) Handle {
	if !(t >= e.now) || math.IsInf(t, -1) {
		panic(fmt.Sprintf("sim: event scheduled at time %v before now %v", t, e.now))
	}
	var i int32
	if n := len(e.free); n > 0 {
		i = e.free[n-1]
		e.free = e.free[:n-1]
	} else {
		e.slots = append(e.slots, slot{pos: -1})
		i = int32(len(e.slots) - 1)
	}
	s := &e.slots[i]
	s.seq = e.seq
	e.seq++
	h := Handle{idx: i + 1, gen: s.gen}
	s.ev = Event{Time: t, Kind: kind, Arg: arg, Handle: h}
	s.pos = int32(len(e.heap))
	e.heap = append(e.heap, i)
	e.up(int(s.pos))
	return h
}

// lookup returns the slab index of a live handle, or -1.
func (e *Engine) lookup(h Handle) int32 {
	i := h.idx - 1
	if i < 0 || int(i) >= len(e.slots) {
		return -1
	}
	if s := &e.slots[i]; s.gen != h.gen || s.pos < 0 {
		return -1
	}
	return i
}

// Cancel removes the event h refers to and reports whether it was pending.
func (e *Engine) Cancel(h Handle) bool {
	i := e.lookup(h)
	if i < 0 {
		return false
	}
	e.remove(int(e.slots[i].pos))
	return true
}

// Reschedule moves the pending event h to time t ≥ Now() and reports whether
// it was pending. The event keeps its place among events of equal time as
// if it had been scheduled now.
func (e *Engine) Reschedule(h Handle, t float64) bool {
	i := e.lookup(h)
	if i < 0 {
		return false
	}
	if !(t >= e.now) || math.IsInf(t, -1) {
		panic(fmt.Sprintf("sim: event rescheduled at time %v before now %v", t, e.now))
	}
	s := &e.slots[i]
	s.ev.Time = t
	s.seq = e.seq
	e.seq++
	p := int(s.pos)
	e.up(p)
	e.down(int(e.slots[i].pos))
	return true
}

// Peek returns the time of the next event; ok is false when none is pending.
func (e *Engine) Peek() (t float64, ok bool) {
	if len(e.heap) == 0 {
		return 0, false
	}
	return e.slots[e.heap[0]].ev.Time, true
}

// Step removes the earliest pending event, advances the clock to its time
// and returns it; ok is false when no event is pending.
func (e *Engine) Step() (ev Event, ok bool) {
	if len(e.heap) == 0 {
		return Event{}, false
	}
	i := e.heap[0]
	ev = e.slots[i].ev
	e.remove(0)
	e.now = ev.Time
	e.processed++
	return ev, true
}

// remove deletes the heap entry at position p and frees its slab entry.
func (e *Engine) remove(p int) {
	i := e.heap[p]
	last := len(e.heap) - 1
	if p != last {
		e.swap(p, last)
	}
	e.heap = e.heap[:last]
	if p != last {
		e.up(p)
		e.down(int(e.slots[e.heap[p]].pos))
	}
	s := &e.slots[i]
	s.pos = -1
	s.gen++
	e.free = append(e.free, i)
}

func (e *Engine) less(a, b int) bool {
	sa, sb := &e.slots[e.heap[a]], &e.slots[e.heap[b]]
	if sa.ev.Time != sb.ev.Time {
		return sa.ev.Time < sb.ev.Time
	}
	return sa.seq < sb.seq
}

func (e *Engine) swap(a, b int) {
	e.heap[a], e.heap[b] = e.heap[b], e.heap[a]
	e.slots[e.heap[a]].pos = int32(a)
	e.slots[e.heap[b]].pos = int32(b)
}

func (e *Engine) up(p int) {
	for p > 0 {
		parent := (p - 1) / 2
		if !e.less(p, parent) {
			return
		}
		e.swap(p, parent)
		p = parent
	}
}

func (e *Engine) down(p int) {
	n := len(e.heap)
	for {
		l := 2*p + 1
		if l >= n {
			return
		}
		c := l
		if r := l + 1; r < n && e.less(r, l) {
			c = r
		}
		if !e.less(c, p) {
			return
		}
		e.swap(p, c)
		p = c
	}
}
