package rollout

import (
	"fmt"
	"math/rand/v2"

	"github.com/optd/optd/policy"
)

// The simulation of eq. (1)'s futures: a sampled future is a script of
// events (placement does not change the queue, so the script is the same
// for every candidate), replayed once per candidate on a copy of the
// state the request describes.

// state is the slots' occupancy: which are free, which each job in
// service holds.
type state struct {
	free fenwick // 1 at the rank of every free slot
	pool []int32 // the ranks the jobs in service hold, job after job
	jobs []span  // the jobs in service, in the script's order
}

// span is a job's slots: pool[off : off+r].
type span struct{ off, r int32 }

// event is one step of a sampled future: a job of data x on r reducers
// entering service and skipping the skip cheapest free slots, or, when
// r = 0, the departure of the job at position skip of the jobs in service
// (removed by moving the last one into its place). The base policies skip
// by the job, the queue and the number of free slots, which placement
// does not change, so the skip is the same for every candidate and is
// computed once, when the future is sampled.
type event struct {
	x       float64
	r, skip int32
}

// world is a replay's scratch state.
type world struct{ state }

// load sets p.start to the request's state: its free slots, the slots
// held by each job in service; p.rankOf to the rank of each free
// position, p.slotCost to the costs by rank. A model slot that is neither
// free nor held (the model knows more slots than the request shows) stays
// taken throughout.
//
// A request whose slots are not the model's (an index out of its range,
// a cost that differs: the heartbeat pipeline prices a node's slots by
// the load of its rack, and numbers them its own way) is simulated on its
// free slots alone, at the request's costs, the jobs in service holding
// none of them (p.ownSlots): their departures free nothing, and the
// futures stop when the free slots run out, for every candidate alike.
func (p *Rollout) load(req *policy.PlacementRequest) error {
	n := len(p.rank)
	p.ownSlots = !p.modelSlots(req)
	s := &p.start
	p.rankOf = p.rankOf[:0]
	s.pool, s.jobs = s.pool[:0], s.jobs[:0]
	if p.ownSlots {
		flags := s.free.reset(len(req.Free))
		p.ownCosts = p.ownCosts[:0]
		for k, f := range req.Free {
			flags[k] = 1
			p.rankOf = append(p.rankOf, int32(k))
			p.ownCosts = append(p.ownCosts, f.Cost)
		}
		s.free.build()
		p.slotCost = p.ownCosts
		for range req.Held {
			s.jobs = append(s.jobs, span{})
		}
		return nil
	}
	p.slotCost = p.costs
	flags := s.free.reset(n)
	for k, f := range req.Free {
		rk := p.rank[f.Index]
		if flags[rk] != 0 {
			return fmt.Errorf("%w: %s: free[%d]: slot %d listed twice", policy.ErrInvalidRequest, Name, k, f.Index)
		}
		flags[rk] = 1
		p.rankOf = append(p.rankOf, rk)
	}
	s.free.build()
	for _, held := range req.Held {
		off := len(s.pool)
		for _, v := range held {
			s.pool = append(s.pool, p.rank[v])
		}
		s.jobs = append(s.jobs, span{int32(off), int32(len(held))})
	}
	return nil
}

// modelSlots reports whether the request's slots are the model's: every
// index in range, every free slot at the model's cost.
func (p *Rollout) modelSlots(req *policy.PlacementRequest) bool {
	n := len(p.rank)
	for _, f := range req.Free {
		if f.Index < 0 || f.Index >= n || p.costs[p.rank[f.Index]] != f.Cost {
			return false
		}
	}
	for _, held := range req.Held {
		for _, v := range held {
			if v < 0 || v >= n {
				return false
			}
		}
	}
	return true
}

// queued is a job waiting in a sampled future.
type queued struct {
	x    float64
	r, n int32
}

// maxEventsPerPlacement caps a script's events at this many per
// placement (with a full waiting room lost arrivals place nothing): the
// script is cut there, for every candidate alike.
const maxEventsPerPlacement = 64

// sample draws p.samples futures of p.horizon placements each after the
// request's job has entered service.
func (p *Rollout) sample(rng *rand.Rand, req *policy.PlacementRequest) {
	m := p.model
	lam, mu := m.ArrivalRate, m.ServiceRate
	if len(p.scripts) != p.samples {
		p.scripts = make([][]event, p.samples)
	}
	var rs []int32 // R of each job in service, in the replay's order
	var queue []queued
	for i := range p.scripts {
		script := p.scripts[i][:0]
		rs = rs[:0]
		for _, h := range req.Held {
			if p.ownSlots {
				rs = append(rs, 0)
			} else {
				rs = append(rs, int32(len(h)))
			}
		}
		rs = append(rs, int32(req.R))
		free := int32(len(req.Free) - req.R)
		queue = queue[:0]
		for k := range max(req.Waiting, 0) {
			x, r := p.draw(rng)
			queue = append(queue, queued{x, int32(r), int32(m.MaxJobsInService + k)})
		}
		// enter places a job if its slots are free (always, on a
		// consistent state: the model has K·max R slots); false ends the
		// script.
		enter := func(j queued) bool {
			if j.r > free {
				return false
			}
			s := min(p.base(j.x, int(j.r), int(j.n), len(queue), int(free)), int(free-j.r))
			script = append(script, event{x: j.x, r: j.r, skip: int32(s)})
			rs = append(rs, j.r)
			free -= j.r
			return true
		}
		placed := 0
	events:
		for steps := 0; placed < p.horizon && steps < maxEventsPerPlacement*(p.horizon+1); steps++ {
			if ms := len(rs); ms > 0 && rng.Float64()*(lam+mu) >= lam {
				u := rng.IntN(ms)
				free += rs[u]
				rs[u] = rs[ms-1]
				rs = rs[:ms-1]
				script = append(script, event{skip: int32(u)})
				if len(queue) == 0 {
					continue
				}
				j := queue[0]
				queue = queue[1:]
				if !enter(j) {
					break events
				}
				placed++
				continue
			}
			x, r := p.draw(rng)
			j := queued{x, int32(r), int32(len(rs) + len(queue))}
			switch {
			case len(rs) < m.MaxJobsInService:
				if !enter(j) {
					break events
				}
				placed++
			case m.MaxWaiting >= 0 && len(queue) >= m.MaxWaiting:
				// lost
			default:
				queue = append(queue, j)
			}
		}
		p.scripts[i] = script
	}
}

// replay returns the base policy's cost of script's placements from start
// after the request's job has taken the slots of ranks cur.
func (w *world) replay(p *Rollout, start *state, cur []int32, script []event) float64 {
	s := &w.state
	s.free.copyFrom(&start.free)
	s.pool = append(s.pool[:0], start.pool...)
	s.jobs = append(s.jobs[:0], start.jobs...)
	s.jobs = append(s.jobs, span{int32(len(s.pool)), int32(len(cur))})
	for _, rk := range cur {
		s.free.add(rk, -1)
		s.pool = append(s.pool, rk)
	}
	cost := 0.0
	for _, e := range script {
		if e.r == 0 {
			last := len(s.jobs) - 1
			j := s.jobs[e.skip]
			for _, rk := range s.pool[j.off : j.off+j.r] {
				s.free.add(rk, 1)
			}
			s.jobs[e.skip] = s.jobs[last]
			s.jobs = s.jobs[:last]
			continue
		}
		r := int(e.r)
		k := int(e.skip)
		s.jobs = append(s.jobs, span{int32(len(s.pool)), e.r})
		sum := 0.0
		for range r {
			rk := s.free.kth(k)
			s.free.add(rk, -1)
			sum += p.slotCost[rk]
			s.pool = append(s.pool, rk)
		}
		cost += e.x / float64(r) * sum
	}
	return cost
}

// fenwick counts the free slots by rank (a binary indexed tree: prefix
// sums and the k-th free slot in O(log n)).
type fenwick struct {
	t    []int32 // 1-based
	high int     // the largest power of two ≤ n
}

// reset empties the tree for n ranks and returns the flags to fill
// (t[1:], 0 or 1 by rank) before build.
func (f *fenwick) reset(n int) []int32 {
	f.t = append(f.t[:0], make([]int32, n+1)...)
	f.high = 1
	for f.high*2 <= n {
		f.high *= 2
	}
	return f.t[1:]
}

// build turns the flags into the tree in O(n).
func (f *fenwick) build() {
	for i := 1; i < len(f.t); i++ {
		if j := i + i&-i; j < len(f.t) {
			f.t[j] += f.t[i]
		}
	}
}

func (f *fenwick) copyFrom(g *fenwick) {
	f.t = append(f.t[:0], g.t...)
	f.high = g.high
}

// add adds d at rank rk.
func (f *fenwick) add(rk int32, d int32) {
	for i := int(rk) + 1; i < len(f.t); i += i & -i {
		f.t[i] += d
	}
}

// kth returns the rank of the k-th (0-based) free slot; there must be
// more than k.
func (f *fenwick) kth(k int) int32 {
	pos, rem := 0, int32(k)
	for step := f.high; step > 0; step >>= 1 {
		if next := pos + step; next < len(f.t) && f.t[next] <= rem {
			pos = next
			rem -= f.t[next]
		}
	}
	return int32(pos)
}
