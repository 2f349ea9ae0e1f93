package mdp

import "slices"

// The exact evaluation (evaluateByReduction) eliminates states one by one
// in an order that keeps every transition, and all the fill the
// elimination creates, within a band around the diagonal: it costs about
// S·lower·upper multiply-adds and S·(lower + upper + 1) stored
// probabilities. A chain within both limits below is solved exactly;
// beyond them relative value iteration evaluates it. The work limit is
// about what the dense LU solve of 1000 states that it replaced cost; the
// memory limit is a quarter of a GiB. A narrow chain (a queue's
// birth-death-like one) is within them at any length up to the memory
// limit; placement chains, whose states are all a few transitions apart
// (their band is a third of their states or more), up to about 1500
// states (the overloaded K = 4 model of 1030 states has a band of 288
// back and 287 ahead; BenchmarkEvaluate: 2-5 times faster than the dense
// LU on the chains where both apply).
const (
	exactWorkLimit   = 4e8     // multiply-adds
	exactMemoryLimit = 1 << 25 // stored probabilities (8 bytes each)
)

// bandOrder is an order of the states of an MDP in which every transition
// s → s' of every action joins positions at most lower apart (s' before s)
// or upper apart (s' after s): the reverse Cuthill-McKee order of the
// transition graph taken as undirected (George and Liu, "Computer Solution
// of Large Sparse Positive Definite Systems", 1981, §4.3), which numbers
// the states breadth first from a peripheral one, so that the neighbours
// of a state lie in the levels next to its own. Every policy's chain keeps
// within the band of the MDP's order, so one order serves every
// evaluation of a policy iteration.
type bandOrder struct {
	order        []int32 // order[i] is the state at position i
	pos          []int32 // pos[s] is the position of state s
	lower, upper int
}

// newBandOrder orders the states of m. It reads every transition a few
// times, about the cost of a few sweeps of relative value iteration.
func newBandOrder(m *MDP) *bandOrder {
	adj, start := undirectedGraph(m)
	S := m.NumStates()
	degree := func(s int32) int { return int(start[s+1] - start[s]) }
	o := &bandOrder{order: make([]int32, 0, S), pos: make([]int32, S)}
	for s := range o.pos {
		o.pos[s] = -1
	}
	mark := make([]int32, S) // scratch for the breadth-first searches
	for root := range int32(S) {
		if o.pos[root] >= 0 {
			continue
		}
		first := len(o.order)
		r := peripheral(adj, start, root, mark)
		o.pos[r] = int32(len(o.order))
		o.order = append(o.order, r)
		for head := first; head < len(o.order); head++ {
			s := o.order[head]
			next := len(o.order)
			for _, t := range adj[start[s]:start[s+1]] {
				if o.pos[t] < 0 {
					o.pos[t] = int32(len(o.order))
					o.order = append(o.order, t)
				}
			}
			added := o.order[next:]
			slices.SortStableFunc(added, func(a, b int32) int { return degree(a) - degree(b) })
			for i, t := range added {
				o.pos[t] = int32(next + i)
			}
		}
	}
	slices.Reverse(o.order)
	for i, s := range o.order {
		o.pos[s] = int32(i)
	}
	for s := range S {
		a0, a1 := m.ActionRange(s)
		for a := a0; a < a1; a++ {
			next, _ := m.Transitions(a)
			for _, t := range next {
				d := int(o.pos[t]) - int(o.pos[s])
				if d > 0 {
					o.upper = max(o.upper, d)
				} else {
					o.lower = max(o.lower, -d)
				}
			}
		}
	}
	return o
}

// exact reports whether the chains of this order are within the limits of
// the exact evaluation.
func (o *bandOrder) exact() bool {
	S := float64(len(o.order))
	return S*float64(o.lower)*float64(o.upper) <= exactWorkLimit &&
		S*float64(o.lower+o.upper+1) <= exactMemoryLimit
}

// undirectedGraph returns the transition graph of m (every action's
// successors) with each edge in both directions and no duplicates, in the
// compressed form: the neighbours of s are adj[start[s]:start[s+1]]. Each
// state's successors are deduplicated as they are read, so the storage is
// twice the distinct edges, not the transitions (a million-state MDP's
// actions repeat their successors many times over).
func undirectedGraph(m *MDP) (adj, start []int32) {
	S := m.NumStates()
	// The distinct successors of each state, other than itself.
	succStart := make([]int32, S+1)
	var succ []int32
	mark := make([]int32, S)
	for s := range S {
		a0, a1 := m.ActionRange(s)
		for a := a0; a < a1; a++ {
			next, _ := m.Transitions(a)
			for _, t := range next {
				if int(t) != s && mark[t] != int32(s)+1 {
					mark[t] = int32(s) + 1
					succ = append(succ, t)
				}
			}
		}
		succStart[s+1] = int32(len(succ))
	}
	// Both directions, then each list sorted and deduplicated (an edge
	// read both ways appears twice).
	deg := make([]int32, S+1)
	for s := range S {
		for _, t := range succ[succStart[s]:succStart[s+1]] {
			deg[s+1]++
			deg[t+1]++
		}
	}
	for s := range S {
		deg[s+1] += deg[s]
	}
	fill := slices.Clone(deg[:S])
	adj = make([]int32, deg[S])
	for s := range S {
		for _, t := range succ[succStart[s]:succStart[s+1]] {
			adj[fill[s]], adj[fill[t]] = t, int32(s)
			fill[s]++
			fill[t]++
		}
	}
	start = make([]int32, S+1)
	w := int32(0)
	for s := range S {
		list := adj[deg[s]:deg[s+1]]
		slices.Sort(list)
		list = slices.Compact(list)
		start[s] = w
		w += int32(copy(adj[w:], list))
	}
	start[S] = w
	return adj[:w], start
}

// peripheral returns a state of root's component at (nearly) the largest
// distance from the others: George and Liu's pseudo-peripheral node
// finder, a breadth-first search repeated from a least-degree state of the
// last level while the number of levels grows. mark is scratch of one
// entry per state, zero on entry and left with negative stamps.
func peripheral(adj, start []int32, root int32, mark []int32) int32 {
	stamp := int32(0)
	depth := func(r int32) (last []int32, height int) {
		stamp--
		queue := []int32{r}
		mark[r] = stamp
		for len(queue) > 0 {
			last = append(last[:0], queue...)
			height++
			var next []int32
			for _, s := range queue {
				for _, t := range adj[start[s]:start[s+1]] {
					if mark[t] != stamp {
						mark[t] = stamp
						next = append(next, t)
					}
				}
			}
			queue = next
		}
		return last, height
	}
	r := root
	last, height := depth(r)
	for {
		cand := last[0]
		for _, s := range last[1:] {
			if start[s+1]-start[s] < start[cand+1]-start[cand] {
				cand = s
			}
		}
		l, h := depth(cand)
		if h <= height {
			return r
		}
		r, last, height = cand, l, h
	}
}
