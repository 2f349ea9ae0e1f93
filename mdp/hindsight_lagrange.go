package mdp

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"sync"
	"time"
)

// LagrangeOptions bound the work of HindsightBoundLagrangian.
type LagrangeOptions struct {
	// Iterations caps the subgradient steps (0: DefaultLagrangeIterations).
	Iterations int
	// TimeLimit, if > 0, stops the steps after that long; the best bound so
	// far is returned (every step's value is a bound). The level bound the
	// steps start from is computed whole even if it takes longer (it is
	// the better part of the bound: about 6 s for 50,000 jobs on 1000
	// slots, when a cold start reaches 15% less in 20 s).
	TimeLimit time.Duration
	// Progress, if not nil, is called after every step with the step and
	// the best bound so far.
	Progress func(step int, best float64)
	// Cold starts the steps from the empty-cluster multipliers instead of
	// the level bound's (HindsightBoundLevels), which is then not computed
	// (for comparisons).
	Cold bool
}

// lagrangeWarmFactor is the Polyak target's first factor after a warm
// start: the target is the best bound plus this share of half the distance
// to the greedy placement's cost.
const lagrangeWarmFactor = 0.1

// lagrangeDeflection is γ of the deflected subgradient direction.
const lagrangeDeflection = 1.5

// DefaultLagrangeIterations is LagrangeOptions.Iterations' default.
const DefaultLagrangeIterations = 300

// LagrangeResult is HindsightBoundLagrangian's answer.
type LagrangeResult struct {
	// Bound is the best Lagrangian value found: a lower bound on the
	// hindsight LP's optimum, hence on every placement's cost.
	Bound float64
	// Upper is the cost of placing the trace greedily (every job on the
	// cheapest free slots), a feasible placement: Bound ≤ LP ≤ Upper.
	Upper float64
	// Steps is the number of subgradient steps taken.
	Steps int
	// Levels is HindsightBoundLevels' bound, the steps' start (NaN when
	// Cold); Bound is at least Levels.
	Levels float64
}

// HindsightBoundLagrangian bounds the hindsight LP of HindsightBound from
// below by Lagrangian relaxation, in time linear in the jobs per step and
// with every step a valid bound (anytime).
//
// The LP is the aggregate of the per-slot LP: with x_{i,s} ∈ [0, 1] the
// share of slot s given to job i,
//
//	minimize Σ_i Σ_s Y_i·H_s·x_{i,s}  s.t.  Σ_s x_{i,s} = R_i,
//	                                       Σ_{i∈A(t)} x_{i,s} ≤ 1 for every slot s and instant t;
//
// summing x over the slots of a class gives a point of the class LP, and
// x_{i,s} = x_{i,c}/n_c gives one back, so both have the same optimum.
// Relaxing the job rows with multipliers u_i leaves, for every slot, a
// packing of intervals:
//
//	L(u) = Σ_i R_i·u_i − Σ_c n_c·W_c(u),   W_c(u) = max Σ_{i∈I} (u_i − Y_i·H_c)
//
// over sets I of pairwise disjoint intervals [Start_i, End_i) (the packing
// LP of an interval graph is integral, its constraint matrix having
// consecutive ones), computed by the weighted-interval-scheduling
// recursion over the jobs sorted by End (the jobs with u_i ≤ Y_i·H_c never
// gain), O(jobs) per class with the predecessors found once, the classes
// shared among GOMAXPROCS workers. L(u) ≤ LP optimum for every u (weak duality), so each
// step is a bound; u climbs the concave L by subgradient steps
// g_i = R_i − Σ_c n_c·1{i ∈ I_c} with Polyak's step
// (Upper − L)/‖g‖² times a factor halved when the bound stalls.
//
// The steps start from the multipliers of the level bound
// (HindsightBoundLevels, computed first in one sweep of shortest paths and
// within a fraction of a percent of the LP), so the first step is already
// about there and the bound is at least the level bound; with Cold, from
// u_i = Y_i·H_(R_i) (the R_i-th cheapest cost: L is then the empty-cluster
// bound of the trace). On the Fig. 9 setting at ρ = 0.9 the warm start
// reaches in 100 steps what the cold one did not in 1000 (make
// lagrange-scale).
func HindsightBoundLagrangian(ctx context.Context, jobs []TraceJob, slotCosts []float64, opts LagrangeOptions) (LagrangeResult, error) {
	return lagrangian(ctx, jobs, slotCosts, nil, opts)
}

// groupAdj adds z_{i,c} = s[i·G + grp[c]] to the cost of each reducer of
// job i on class c: a penalty constant over groups of classes (the
// penalized bound at scale, Penalty.boundLagrangian).
type groupAdj struct {
	grp []int // group of each class
	G   int
	s   []float64 // len(jobs)·G
	// byEnd[g·n + k] is s of the k-th job by End (lagrangeWork's order),
	// group by group: each packing reads its group's row in order (at
	// 200,000 jobs the rows of s read in End order missed the cache at
	// every job, 16 s a step instead of about 1).
	byEnd []float64
	// packs, if not nil (len(jobs)·G), receives the packings' slots per
	// job and group, x_{i,b} = Σ_{c: grp(c) = b} n_c·1{i ∈ I_c},
	// averaged over the steps from packFrom on (the last step's if the
	// steps end before): a supergradient in z of the Lagrangian averaged
	// over those steps, the exact fit's direction (fitExact; see its doc:
	// an approximation of the LP's, where one step's packing may give a
	// job none or twice its reducers).
	packs    []float64
	packFrom int
}

// at is z_{i,c}.
func (a *groupAdj) at(i, c int) float64 {
	if a == nil {
		return 0
	}
	return a.s[i*a.G+a.grp[c]]
}

// lagrangian is HindsightBoundLagrangian for the LP whose reducer costs
// are Y_i·H_c + z_{i,c} (adj; nil: z = 0). Relaxing the job rows works
// alike for any costs: the packing of class c weighs job i by
// u_i − Y_i·H_c − z_{i,c}. With adj the level bound is not a bound of the
// penalized LP, so its multipliers are only the start: each moved by
// z_{i,c*} at the class c* whose cost their ratio u_i/Y_i reaches (the
// class job i pays at the margin), and the bound is the best step.
func lagrangian(ctx context.Context, jobs []TraceJob, slotCosts []float64, adj *groupAdj, opts LagrangeOptions) (LagrangeResult, error) {
	if err := checkSlotCosts(slotCosts); err != nil {
		return LagrangeResult{}, err
	}
	if err := checkJobs(jobs, len(slotCosts)); err != nil {
		return LagrangeResult{}, err
	}
	if opts.Iterations == 0 {
		opts.Iterations = DefaultLagrangeIterations
	}
	if opts.Iterations < 0 {
		return LagrangeResult{}, modelErr("LagrangeOptions.Iterations", opts.Iterations, "must be ≥ 0")
	}
	cls := newClasses(slotCosts)
	n := len(jobs)
	if n == 0 {
		return LagrangeResult{}, nil
	}
	var extra func(i int, cost float64) float64
	if adj != nil {
		extra = func(i int, cost float64) float64 { return adj.at(i, cls.of[cost]) }
	}
	upper, err := greedyTraceCost(jobs, slotCosts, extra)
	if err != nil {
		return LagrangeResult{}, err
	}
	// Jobs in order of End; prev is reused per class.
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(jobs[a].End, jobs[b].End) })
	start := time.Now()
	res := LagrangeResult{Upper: upper, Levels: math.NaN()}
	best, factor, stall := math.Inf(-1), 1.0, 0
	var u []float64
	if opts.Cold {
		sorted := slices.Clone(slotCosts)
		slices.Sort(sorted)
		u = make([]float64, n)
		for i, j := range jobs {
			u[i] = j.Y * sorted[j.R-1]
		}
	} else {
		if err := checkPeakDemand(jobs, len(slotCosts)); err != nil {
			return LagrangeResult{}, err
		}
		res.Levels, u, err = levelBound(ctx, jobs, cls, true)
		if err != nil {
			return LagrangeResult{}, err
		}
		best = res.Levels
		if adj != nil {
			for i, j := range jobs {
				c := 0
				if j.Y > 0 {
					c = max(sort.SearchFloat64s(cls.cost, u[i]/j.Y)-1, 0)
				}
				u[i] += adj.at(i, c)
			}
			best, res.Levels = math.Inf(-1), math.NaN()
		}
		// The level bound is within a fraction of a percent of the LP,
		// so the target starts near it (0.1: the worst of 40 random
		// traces at 1.0000 of the LP after 400 steps; 0.03 to 0.3 alike
		// on 2000 jobs of the Fig. 9 setting).
		factor = lagrangeWarmFactor
	}
	g, d := make([]float64, n), make([]float64, n)
	lag := newLagrangeWork(jobs, order)
	if adj != nil {
		adj.byEnd = make([]float64, adj.G*n)
		for k, i := range order {
			for g := range adj.G {
				adj.byEnd[g*n+k] = adj.s[i*adj.G+g]
			}
		}
	}
	collect := adj != nil && adj.packs != nil
	parts := newLagrangeParts(runtime.GOMAXPROCS(0), n, adj)
	averaged := 0
	// Polyak's step aims at a target above the best bound: the greedy
	// placement's cost is far above the LP on congested traces, so the
	// target is the best bound plus a share of the distance that shrinks
	// as the steps stall.
	target := func(best float64) float64 { return best + factor*0.5*(upper-best) }
	for step := range opts.Iterations {
		if err := ctx.Err(); err != nil {
			return res, fmt.Errorf("mdp: Lagrangian hindsight bound: %w", err)
		}
		if opts.TimeLimit > 0 && step > 0 && time.Since(start) > opts.TimeLimit {
			break
		}
		val := 0.0
		for i, j := range jobs {
			val += float64(j.R) * u[i]
			g[i] = float64(j.R)
		}
		val -= lag.packAll(u, cls, adj, g, parts)
		res.Steps = step + 1
		if collect {
			averagePacks(adj, parts, step >= adj.packFrom, &averaged)
		}
		if val > best {
			best, stall = val, 0
		} else if stall++; stall >= 10 {
			factor, stall = factor/2, 0
		}
		if opts.Progress != nil {
			opts.Progress(step+1, best)
		}
		norm, dot, dnorm := 0.0, 0.0, 0.0
		for i, x := range g {
			norm += x * x
			dot += x * d[i]
			dnorm += d[i] * d[i]
		}
		if norm == 0 || upper-best <= 1e-12*math.Abs(upper) {
			break // u is optimal: every job row holds
		}
		// Deflected direction (Camerini, Fratta and Maffioli): when g turns
		// back against the previous direction, add part of it, which damps
		// the zigzag of plain subgradient steps.
		beta := 0.0
		if dot < 0 && dnorm > 0 {
			beta = -lagrangeDeflection * dot / dnorm
		}
		dn := 0.0
		for i := range d {
			d[i] = g[i] + beta*d[i]
			dn += d[i] * d[i]
		}
		t := max(target(best)-val, 1e-9*math.Abs(upper)) / dn
		for i := range u {
			u[i] += t * d[i]
		}
	}
	if collect && averaged == 0 {
		// The steps ended before packFrom: the last step's packing.
		averagePacks(adj, parts, true, &averaged)
	}
	res.Bound = min(best, upper)
	return res, nil
}

// averagePacks folds the workers' packings of the last step (each
// packAll clears them first) into adj.packs' running mean when use, the
// steps averaged so far counted in *averaged.
func averagePacks(adj *groupAdj, parts lagrangeParts, use bool, averaged *int) {
	if !use {
		return
	}
	*averaged++
	a := float64(*averaged)
	for i := range adj.packs {
		x := 0.0
		for k := range parts {
			x += parts[k].x[i]
		}
		adj.packs[i] += (x - adj.packs[i]) / a
	}
}

// lagrangeWork holds the jobs in order of End and, for each, how many of
// them end by its start (its predecessors in the packing recursion).
type lagrangeWork struct {
	jobs  []TraceJob
	order []int // jobs by End
	pred  []int // pred[k]: jobs of order ending by the start of order[k]
}

func newLagrangeWork(jobs []TraceJob, order []int) *lagrangeWork {
	w := &lagrangeWork{jobs: jobs, order: order, pred: make([]int, len(order))}
	ends := make([]float64, len(order))
	for k, i := range order {
		ends[k] = jobs[i].End
	}
	for k, i := range order {
		// First end > Start: ends ≤ Start are compatible ([Start, End)).
		w.pred[k] = searchTime(ends, jobs[i].Start, true)
	}
	return w
}

// pack returns W = max Σ (u_i − Y_i·h) over disjoint intervals and
// subtracts mult from g_i of every job packed; value (len(jobs)+1) is
// scratch. The recursion over jobs by End: value[k+1] = max(value[k],
// weight + value[pred[k]]), only jobs of positive weight taking part.
func (w *lagrangeWork) pack(u []float64, c int, h, mult float64, adj *groupAdj, g, value, x []float64) float64 {
	value[0] = 0
	var z []float64 // the penalties of c's group, by End
	if adj != nil {
		n := len(w.order)
		z = adj.byEnd[adj.grp[c]*n : (adj.grp[c]+1)*n]
	}
	for k, i := range w.order {
		v := value[k]
		wt := u[i] - w.jobs[i].Y*h
		if z != nil {
			wt -= z[k]
		}
		if wt > 0 {
			v = max(v, wt+value[w.pred[k]])
		}
		value[k+1] = v
	}
	// Backtrack the packing for the subgradient.
	for k := len(w.order); k > 0; {
		if value[k] == value[k-1] {
			k--
			continue
		}
		g[w.order[k-1]] -= mult
		if x != nil {
			x[w.order[k-1]*adj.G+adj.grp[c]] += mult
		}
		k = w.pred[k-1]
	}
	return value[len(w.order)]
}

// lagrangeParts is one worker's scratch: its packing values, its share
// of the subgradient and, when adj collects them (groupAdj.packs), of the
// packings' slots per job and group.
type lagrangeParts []struct {
	value, g, x []float64
}

func newLagrangeParts(workers, n int, adj *groupAdj) lagrangeParts {
	p := make(lagrangeParts, max(workers, 1))
	for k := range p {
		p[k].value = make([]float64, n+1)
		p[k].g = make([]float64, n)
		if adj != nil && adj.packs != nil {
			p[k].x = make([]float64, n*adj.G)
		}
	}
	return p
}

// packAll returns Σ_c n_c·W_c(u) and subtracts n_c·1{i ∈ I_c} from g,
// the classes split among the workers (each class's packing depends on u
// alone).
func (w *lagrangeWork) packAll(u []float64, cls *classes, adj *groupAdj, g []float64, parts lagrangeParts) float64 {
	// Classes at or above the largest (u_i − z_{i,c})/Y_i, per group of
	// classes, give no job a positive weight: their packings are empty.
	G := 1
	if adj != nil {
		G = adj.G
	}
	top := make([]float64, G)
	for k := range top {
		top[k] = math.Inf(-1)
	}
	for i, j := range w.jobs {
		for k := range top {
			ui := u[i]
			if adj != nil {
				ui -= adj.s[i*G+k]
			}
			switch {
			case j.Y > 0:
				top[k] = max(top[k], ui/j.Y)
			case ui > 0:
				top[k] = math.Inf(1)
			}
		}
	}
	topOf := func(c int) float64 {
		if adj == nil {
			return top[0]
		}
		return top[adj.grp[c]]
	}
	// Each class's n_c·W_c is summed in class order after the workers
	// finish, so that the value (and through the step rule every later
	// step, the fitted θ included) does not depend on the number of
	// workers, i.e. on GOMAXPROCS (the subgradient's terms are counts,
	// exact in any order).
	wc := make([]float64, cls.num())
	var wg sync.WaitGroup
	for k := range parts {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			part := &parts[p]
			clear(part.g)
			clear(part.x)
			for c := p; c < cls.num(); c += len(parts) {
				if cls.cost[c] >= topOf(c) {
					if adj == nil {
						break // the classes are in order of cost
					}
					continue
				}
				nc := float64(cls.count[c])
				wc[c] = nc * w.pack(u, c, cls.cost[c], nc, adj, part.g, part.value, part.x)
			}
		}(k)
	}
	wg.Wait()
	total := 0.0
	for _, v := range wc {
		total += v
	}
	for k := range parts {
		for i, x := range parts[k].g {
			g[i] += x
		}
	}
	return total
}

// greedyTraceCost places the trace's jobs in order of Start on the
// cheapest free slots and returns the total cost, or ErrInfeasibleTrace;
// extra, if not nil, adds extra(i, H) to each reducer of job i on a slot of
// cost H (a penalty: the same placement, priced on the penalized costs).
func greedyTraceCost(jobs []TraceJob, slotCosts []float64, extra func(i int, cost float64) float64) (float64, error) {
	type ev struct {
		t     float64
		start bool
		i     int
	}
	evs := make([]ev, 0, 2*len(jobs))
	for i, j := range jobs {
		evs = append(evs, ev{j.Start, true, i}, ev{j.End, false, i})
	}
	// Ends before starts at equal times: [Start, End) intervals.
	slices.SortFunc(evs, func(a, b ev) int {
		if c := cmp.Compare(a.t, b.t); c != 0 {
			return c
		}
		if a.start != b.start {
			if a.start {
				return 1
			}
			return -1
		}
		return cmp.Compare(a.i, b.i)
	})
	idx := make([]int, len(slotCosts))
	for s := range idx {
		idx[s] = s
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(slotCosts[a], slotCosts[b]) })
	// free is a min-heap of slot ranks (rank = position by cost).
	free := &minHeap[int, struct{}]{}
	for r := range idx {
		free.push(r, struct{}{})
	}
	held := make([][]int, len(jobs))
	total := 0.0
	for _, e := range evs {
		j := jobs[e.i]
		if !e.start {
			for _, r := range held[e.i] {
				free.push(r, struct{}{})
			}
			held[e.i] = nil
			continue
		}
		if free.len() < j.R {
			return 0, fmt.Errorf("%w: %d reducers to place at time %v, %d slots free", ErrInfeasibleTrace, j.R, j.Start, free.len())
		}
		for range j.R {
			r, _ := free.pop()
			held[e.i] = append(held[e.i], r)
			total += j.Y * slotCosts[idx[r]]
			if extra != nil {
				total += extra(e.i, slotCosts[idx[r]])
			}
		}
	}
	return total, nil
}
