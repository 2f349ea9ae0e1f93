package mdp

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
)

// HindsightBoundLevels bounds the hindsight LP of HindsightBound from below
// by splitting it at every cost level, each level an exact min-cost flow on
// the time line, in one sweep of successive shortest paths: about S
// shortest paths (S slots) of time O(n log n) each for n jobs, so linear in
// the jobs for a given cluster, with no iteration to converge.
//
// # The decomposition
//
// Sort the classes by cost, H_1 < … < H_C with n_c slots each, and let
// N_c = n_1 + … + n_c. For a point x of the LP let X_{i,c} = Σ_{c' ≤ c}
// x_{i,c'}, job i's reducers on the N_c cheapest slots. Writing
// H_{c'} = H_1 + Σ_{c < c'} (H_{c+1} − H_c) (Abel summation),
//
//	Σ_i Y_i·Σ_c H_c·x_{i,c} = H_1·Σ_i Y_i·R_i + Σ_{c<C} (H_{c+1} − H_c)·Σ_i Y_i·(R_i − X_{i,c}),
//
// and every X_{·,c} satisfies 0 ≤ X_{i,c} ≤ R_i and Σ_{i∈A(t)} X_{i,c} ≤ N_c
// at every instant t (the capacity rows of the classes up to c, summed).
// Each level c is then bounded on its own: with
//
//	F(k) = max Σ_i Y_i·X_i  s.t.  0 ≤ X_i ≤ R_i,  Σ_{i∈A(t)} X_i ≤ k for every t,
//
// the LP optimum is at least
//
//	L = H_1·Σ_i Y_i·R_i + Σ_{c<C} (H_{c+1} − H_c)·(Σ_i Y_i·R_i − F(N_c)),     (L1)
//
// a lower bound on every placement's cost (the coupling X_{i,c} ≤ X_{i,c+1}
// between levels is what is dropped: on random traces L is within a few
// tenths of a percent of the LP, often equal; the tests measure it).
//
// # F(k) as a flow
//
// F(k) is a min-cost flow of k units along the time line: nodes are the
// distinct starts and ends in time order, an idle arc of cost 0 and
// unbounded capacity from each node to the next, and for each job an arc
// Start_i → End_i of capacity R_i and cost −Y_i. A flow of k units from the
// first node to the last crosses every instant exactly k times, so the jobs'
// arcs crossing it carry at most k: the flows are the points of F(k)'s LP
// (its matrix, intervals of consecutive ones, is totally unimodular, and so
// is the flow's), and F(k) = −(cost of the min-cost flow of value k).
// Successive shortest paths (Dijkstra with potentials, the first potentials
// from the acyclic initial network) give the min-cost flow of every value
// in one sweep: the cost is convex and piecewise linear in the value, each
// path adding δ units at its cost per unit, so F at every N_c comes from the
// augmentations up to N_C−1 units.
func HindsightBoundLevels(ctx context.Context, jobs []TraceJob, slotCosts []float64) (float64, error) {
	if err := checkSlotCosts(slotCosts); err != nil {
		return 0, err
	}
	if err := checkJobs(jobs, len(slotCosts)); err != nil {
		return 0, err
	}
	if len(jobs) == 0 {
		return 0, nil
	}
	if err := checkPeakDemand(jobs, len(slotCosts)); err != nil {
		return 0, err
	}
	cls := newClasses(slotCosts)
	C := cls.num()
	levels := make([]int, C-1) // N_c for c < C
	n := 0
	for c := range C - 1 {
		n += cls.count[c]
		levels[c] = n
	}
	bound, _, err := levelBound(ctx, jobs, cls, false)
	return bound, err
}

// levelBound returns L of (L1) and, if duals, the multipliers of the job
// rows it suggests for the Lagrangian relaxation (HindsightBoundLagrangian's
// warm start):
//
//	u_i = Y_i·H_1 + Σ_{c<C} (H_{c+1} − H_c)·min(Y_i, π^c(Start_i) − π^c(End_i)),
//
// π^c the flow's potentials at value N_c. They are the dual of F(N_c)'s LP
// (prices w_t = π(t) − π(t') ≥ 0 of the instants, s_i = (Y_i − Σ_{t∈i} w_t)⁺
// of the bounds X_i ≤ R_i), which rewrite L as Σ_i R_i·u_i − Σ_c (H_{c+1} −
// H_c)·N_c·Σ_t w^c_t: u_i is the price job i's row gets in that form.
func levelBound(ctx context.Context, jobs []TraceJob, cls *classes, duals bool) (float64, []float64, error) {
	C := cls.num()
	levels := make([]int, C-1) // N_c for c < C
	weights := make([]float64, C-1)
	n := 0
	for c := range C - 1 {
		n += cls.count[c]
		levels[c] = n
		weights[c] = cls.cost[c+1] - cls.cost[c]
	}
	var u []float64
	if duals {
		u = make([]float64, len(jobs))
		for i, j := range jobs {
			u[i] = j.Y * cls.cost[0]
		}
	}
	f, err := levelFlows(ctx, jobs, levels, weights, u)
	if err != nil {
		return 0, nil, err
	}
	yr := 0.0
	for _, j := range jobs {
		yr += j.Y * float64(j.R)
	}
	bound := cls.cost[0] * yr
	for c := range C - 1 {
		bound += weights[c] * max(yr-f[c], 0)
	}
	return bound, u, nil
}

// checkPeakDemand returns ErrInfeasibleTrace if the jobs in service at
// some instant need more than slots reducers.
func checkPeakDemand(jobs []TraceJob, slots int) error {
	type ev struct {
		t float64
		d int
	}
	evs := make([]ev, 0, 2*len(jobs))
	for _, j := range jobs {
		evs = append(evs, ev{j.Start, j.R}, ev{j.End, -j.R})
	}
	// Ends before starts at equal times: [Start, End) intervals.
	slices.SortFunc(evs, func(a, b ev) int {
		if a.t != b.t {
			return cmp.Compare(a.t, b.t)
		}
		return cmp.Compare(a.d, b.d)
	})
	load := 0
	for _, e := range evs {
		if load += e.d; load > slots {
			return fmt.Errorf("%w: %d reducers in service at time %v, %d slots", ErrInfeasibleTrace, load, e.t, slots)
		}
	}
	return nil
}

// levelNet is the residual network of the time line's flow.
type levelNet struct {
	// Arcs of each node u: first[u]..first[u+1] in arcs, each with its
	// head, cost, residual capacity and the index of its reverse arc.
	first []int
	head  []int32
	rev   []int32
	cost  []float64
	cap   []float64
}

// levelFlows returns F(k) for every k of levels (ascending), by successive
// shortest paths on the time line of jobs; if u is not nil, it adds
// weights[c]·min(Y_i, π(Start_i) − π(End_i)) to u_i at each level c, π the
// potentials there (see levelBound).
func levelFlows(ctx context.Context, jobs []TraceJob, levels []int, weights, u []float64) ([]float64, error) {
	out := make([]float64, len(levels))
	if len(levels) == 0 {
		return out, nil
	}
	times := make([]float64, 0, 2*len(jobs))
	for _, j := range jobs {
		times = append(times, j.Start, j.End)
	}
	slices.Sort(times)
	times = slices.Compact(times)
	node := func(t float64) int {
		k, _ := slices.BinarySearch(times, t)
		return k
	}
	m := len(times)
	pot := make([]float64, m)
	// Arcs: idle u → u+1 (and its reverse), job Start → End (and its
	// reverse); built as an edge list, then grouped by tail.
	type edge struct {
		u, v      int
		cost, cap float64
	}
	edges := make([]edge, 0, 2*(m-1)+2*len(jobs))
	inf := math.Inf(1)
	for u := 0; u+1 < m; u++ {
		edges = append(edges, edge{u, u + 1, 0, inf}, edge{u + 1, u, 0, 0})
	}
	ends := make([]int32, 2*len(jobs)) // each job's start and end nodes
	for i, j := range jobs {
		a, b := node(j.Start), node(j.End)
		ends[2*i], ends[2*i+1] = int32(a), int32(b)
		edges = append(edges, edge{a, b, -j.Y, float64(j.R)}, edge{b, a, j.Y, 0})
	}
	price := func(c int) {
		if u == nil {
			return
		}
		for i, j := range jobs {
			u[i] += weights[c] * min(j.Y, max(pot[ends[2*i]]-pot[ends[2*i+1]], 0))
		}
	}
	net := &levelNet{first: make([]int, m+1)}
	for _, e := range edges {
		net.first[e.u+1]++
	}
	for u := range m {
		net.first[u+1] += net.first[u]
	}
	pos := slices.Clone(net.first[:m])
	E := len(edges)
	net.head, net.rev = make([]int32, E), make([]int32, E)
	net.cost, net.cap = make([]float64, E), make([]float64, E)
	at := make([]int, E) // edge k's arc index
	for k, e := range edges {
		a := pos[e.u]
		pos[e.u]++
		at[k] = a
		net.head[a], net.cost[a], net.cap[a] = int32(e.v), e.cost, e.cap
	}
	for k := 0; k < E; k += 2 { // edges come in (arc, reverse) pairs
		net.rev[at[k]], net.rev[at[k+1]] = int32(at[k+1]), int32(at[k])
	}
	// Potentials: shortest distances in the acyclic initial network (only
	// forward arcs have capacity), by time order.
	for u := 1; u < m; u++ {
		pot[u] = inf
	}
	for u := range m {
		for a := net.first[u]; a < net.first[u+1]; a++ {
			if v := int(net.head[a]); net.cap[a] > 0 && v > u {
				pot[v] = min(pot[v], pot[u]+net.cost[a])
			}
		}
	}
	dist := make([]float64, m)
	via := make([]int32, m) // arc into each node on the shortest path
	h := &minHeap[float64, int]{}
	flow, value := 0, 0.0 // units sent, F(flow)
	next := 0             // first level not yet reached
	for next < len(levels) {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("mdp: level bound: %w", err)
		}
		// Dijkstra on the reduced costs cost + pot[u] − pot[v] ≥ 0.
		for u := range dist {
			dist[u], via[u] = inf, -1
		}
		dist[0] = 0
		h.reset()
		h.push(0, 0)
		for h.len() > 0 {
			d, u := h.pop()
			if d > dist[u] {
				continue
			}
			for a := net.first[u]; a < net.first[u+1]; a++ {
				if net.cap[a] <= 0 {
					continue
				}
				v := int(net.head[a])
				nd := d + max(net.cost[a]+pot[u]-pot[v], 0)
				if nd < dist[v] {
					dist[v], via[v] = nd, int32(a)
					h.push(nd, v)
				}
			}
		}
		for u := range pot {
			pot[u] += dist[u]
		}
		// The path's capacity and cost per unit (summed along the path,
		// not from the potentials, which carry rounding).
		delta, unit := inf, 0.0
		for v := m - 1; v != 0; {
			a := via[v]
			delta = min(delta, net.cap[a])
			unit += net.cost[a]
			v = int(net.head[net.rev[a]])
		}
		if unit >= 0 {
			// No job gains any more (the paths only get dearer): F stays
			// at its value for the higher levels, idle units costing
			// nothing.
			for ; next < len(levels); next++ {
				out[next] = value
				price(next)
			}
			break
		}
		// F grows by −unit per unit up to the levels this path reaches.
		send := min(delta, float64(levels[len(levels)-1]-flow))
		for next < len(levels) && float64(levels[next]-flow) <= send {
			out[next] = value - unit*float64(levels[next]-flow)
			price(next)
			next++
		}
		for v := m - 1; v != 0; {
			a := via[v]
			net.cap[a] -= send
			net.cap[net.rev[a]] += send
			v = int(net.head[net.rev[a]])
		}
		flow += int(send)
		value -= unit * send
	}
	return out, nil
}
