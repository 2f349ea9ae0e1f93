package mdp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"gonum.org/v1/gonum/floats/scalar"
	"gonum.org/v1/gonum/mat"
	glp "gonum.org/v1/gonum/optimize/convex/lp"
)

// boundTol is the relative slack allowed when a bound is compared with a
// cost it must not exceed (rounding in sums only: the bound is computed by
// weak duality).
const boundTol = 1e-9

// randomTrace draws n jobs with exponential gaps (rate lam) and durations
// (rate 1), R in 1..maxR and Y in [0, 10).
func randomTrace(rng *rand.Rand, n int, lam float64, maxR int) []TraceJob {
	jobs := make([]TraceJob, n)
	t := 0.0
	for i := range jobs {
		t += rng.ExpFloat64() / lam
		jobs[i] = TraceJob{Start: t, End: t + rng.ExpFloat64(), Y: 10 * rng.Float64(), R: 1 + rng.IntN(maxR)}
	}
	return jobs
}

// onlineCost places the jobs in order of arrival with choose (which returns
// positions in the list of free slot indices sorted cheapest first) and
// returns the total cost; ok is false when some job finds too few free slots.
func onlineCost(jobs []TraceJob, costs []float64, choose func(j TraceJob, free []int) []int) (float64, bool) {
	order := make([]int, len(jobs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return jobs[order[a]].Start < jobs[order[b]].Start })
	holder := make([]int, len(costs)) // job holding each slot, -1 free
	for i := range holder {
		holder[i] = -1
	}
	total := 0.0
	for _, i := range order {
		j := jobs[i]
		var free []int
		for v, h := range holder {
			if h >= 0 && jobs[h].End <= j.Start {
				holder[v] = -1
			}
			if holder[v] < 0 {
				free = append(free, v)
			}
		}
		if len(free) < j.R {
			return 0, false
		}
		sort.SliceStable(free, func(a, b int) bool { return costs[free[a]] < costs[free[b]] })
		for _, p := range choose(j, free) {
			holder[free[p]] = i
			total += j.Y * costs[free[p]]
		}
	}
	return total, true
}

func firstR(j TraceJob, free []int) []int {
	out := make([]int, j.R)
	for i := range out {
		out[i] = i
	}
	return out
}

func lastR(j TraceJob, free []int) []int {
	out := make([]int, j.R)
	for i := range out {
		out[i] = len(free) - j.R + i
	}
	return out
}

func randomR(rng *rand.Rand) func(j TraceJob, free []int) []int {
	return func(j TraceJob, free []int) []int { return rng.Perm(len(free))[:j.R] }
}

func TestHindsightBelowOnlinePolicies(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(11, 12))
	checked := 0
	for trial := range 60 {
		slots := 6 + rng.IntN(8)
		costs := make([]float64, slots)
		for i := range costs {
			costs[i] = float64(1 + rng.IntN(6)) // repeated costs: classes of several slots
		}
		jobs := randomTrace(rng, 5+rng.IntN(40), 0.3+1.5*rng.Float64(), 3)
		bound, err := HindsightBound(ctx, jobs, costs)
		if errors.Is(err, ErrInfeasibleTrace) {
			if _, ok := onlineCost(jobs, costs, firstR); ok {
				t.Fatalf("trial %d: bound says infeasible but greedy placed the trace", trial)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		policies := map[string]func(TraceJob, []int) []int{"greedy": firstR, "most-expensive": lastR, "random": randomR(rng)}
		for name, choose := range policies {
			c, ok := onlineCost(jobs, costs, choose)
			if !ok {
				t.Fatalf("trial %d: %s failed on a feasible trace", trial, name)
			}
			if bound > c*(1+boundTol)+boundTol {
				t.Errorf("trial %d: bound %.12g > %s cost %.12g", trial, bound, name, c)
			}
		}
		coarse, err := HindsightBoundCoarse(ctx, jobs, costs, 2)
		if err != nil {
			t.Fatal(err)
		}
		if coarse > bound*(1+boundTol)+boundTol {
			t.Errorf("trial %d: coarse bound %.12g above exact %.12g", trial, coarse, bound)
		}
		if full, err := HindsightBoundCoarse(ctx, jobs, costs, slots); err != nil || !scalar.EqualWithinAbsOrRel(full, bound, 1e-9, 1e-9) {
			t.Errorf("trial %d: coarse with one group per slot %.12g, exact %.12g (%v)", trial, full, bound, err)
		}
		checked++
	}
	if checked < 30 {
		t.Fatalf("only %d feasible traces checked", checked)
	}
}

// Without overlaps every job takes its cheapest slots: the bound is greedy's cost.
func TestHindsightNoOverlapIsGreedy(t *testing.T) {
	costs := []float64{3, 1, 2, 2, 9}
	jobs := []TraceJob{{0, 1, 2, 2}, {1, 2, 5, 3}, {2.5, 3, 1, 5}}
	bound, err := HindsightBound(context.Background(), jobs, costs)
	if err != nil {
		t.Fatal(err)
	}
	want := 2*(1+2) + 5*(1+2+2) + 1*(1+2+2+3+9)
	if !scalar.EqualWithinAbsOrRel(bound, float64(want), 1e-12, 1e-12) {
		t.Errorf("bound %.12g, want %d", bound, want)
	}
}

// bruteForceOffline returns the integer offline optimum: every job on an
// R-subset of the slots, jobs overlapping in time on disjoint subsets.
func bruteForceOffline(jobs []TraceJob, costs []float64) float64 {
	S := len(costs)
	var subsets [][]int // per R, the bitmasks of size R
	subsets = make([][]int, S+1)
	for mask := 0; mask < 1<<S; mask++ {
		n := 0
		for v := range S {
			if mask>>v&1 == 1 {
				n++
			}
		}
		subsets[n] = append(subsets[n], mask)
	}
	overlap := func(a, b TraceJob) bool { return a.Start < b.End && b.Start < a.End }
	best := math.Inf(1)
	chosen := make([]int, len(jobs))
	var rec func(i int, cost float64)
	rec = func(i int, cost float64) {
		if cost >= best {
			return
		}
		if i == len(jobs) {
			best = cost
			return
		}
		for _, mask := range subsets[jobs[i].R] {
			ok := true
			for k := range i {
				if overlap(jobs[k], jobs[i]) && chosen[k]&mask != 0 {
					ok = false
					break
				}
			}
			if !ok {
				continue
			}
			c := 0.0
			for v := range S {
				if mask>>v&1 == 1 {
					c += costs[v]
				}
			}
			chosen[i] = mask
			rec(i+1, cost+jobs[i].Y*c)
		}
	}
	rec(0, 0)
	return best
}

// slotLP solves the LP relaxation with one variable per (job, slot) and a
// constraint per (start instant, slot), with gonum's simplex.
func slotLP(t *testing.T, jobs []TraceJob, costs []float64) float64 {
	t.Helper()
	n, S := len(jobs), len(costs)
	nv := n * S
	c := make([]float64, nv)
	for i, j := range jobs {
		for v := range S {
			c[i*S+v] = j.Y * costs[v]
		}
	}
	a := mat.NewDense(n, nv, nil)
	b := make([]float64, n)
	for i, j := range jobs {
		for v := range S {
			a.Set(i, i*S+v, 1)
		}
		b[i] = float64(j.R)
	}
	// gonum's Convert takes x free: x ≥ 0 are the last nv rows of G.
	g := mat.NewDense(n*S+nv, nv, nil)
	h := make([]float64, n*S+nv)
	for k := range nv {
		g.Set(n*S+k, k, -1)
	}
	for k, tk := range jobs {
		for v := range S {
			row := k*S + v
			h[row] = 1
			for i, j := range jobs {
				if j.Start <= tk.Start && tk.Start < j.End {
					g.Set(row, i*S+v, 1)
				}
			}
		}
	}
	cs, as, bs := glp.Convert(c, g, h, a, b)
	opt, _, err := glp.Simplex(cs, as, bs, 1e-10, nil)
	if err != nil {
		t.Fatal(err)
	}
	return opt
}

func TestHindsightTinyTraces(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(13, 14))
	strict := 0
	for trial := range 40 {
		S := 3 + rng.IntN(3)
		costs := make([]float64, S)
		for i := range costs {
			costs[i] = float64(1 + rng.IntN(4))
		}
		jobs := randomTrace(rng, 2+rng.IntN(3), 1.5, 2)
		t.Run(fmt.Sprintf("trial=%d/jobs=%d/slots=%d", trial, len(jobs), S), func(t *testing.T) {
			bound, err := HindsightBound(ctx, jobs, costs)
			if errors.Is(err, ErrInfeasibleTrace) {
				if ip := bruteForceOffline(jobs, costs); !math.IsInf(ip, 1) {
					t.Fatalf("bound says infeasible, brute force found %g", ip)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			ip := bruteForceOffline(jobs, costs)
			if bound > ip*(1+boundTol)+boundTol {
				t.Errorf("bound %.12g > integer offline optimum %.12g", bound, ip)
			}
			if bound < ip*(1-1e-6) {
				strict++
			}
			if lp := slotLP(t, jobs, costs); !scalar.EqualWithinAbsOrRel(bound, lp, 1e-8, 1e-8) {
				t.Errorf("class LP %.12g, per-slot LP (gonum) %.12g", bound, lp)
			}
		})
	}
	t.Logf("the LP was strictly below the integer offline optimum on %d of 40 traces", strict)
}

func TestHindsightErrors(t *testing.T) {
	ctx := context.Background()
	costs := []float64{1, 2}
	cases := []struct {
		name  string
		jobs  []TraceJob
		costs []float64
		field string
	}{
		{"no slots", []TraceJob{{0, 1, 1, 1}}, nil, "slotCosts"},
		{"NaN cost", []TraceJob{{0, 1, 1, 1}}, []float64{math.NaN()}, "slotCosts[0]"},
		{"empty interval", []TraceJob{{1, 1, 1, 1}}, costs, "jobs[0].End"},
		{"negative Y", []TraceJob{{0, 1, -1, 1}}, costs, "jobs[0].Y"},
		{"R too large", []TraceJob{{0, 1, 1, 1}, {0, 1, 1, 3}}, costs, "jobs[1].R"},
		{"infinite start", []TraceJob{{math.Inf(-1), 1, 1, 1}}, costs, "jobs[0].Start"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := HindsightBound(ctx, tc.jobs, tc.costs)
			var me *ModelError
			if !errors.As(err, &me) || me.Field != tc.field {
				t.Fatalf("error %v, want a ModelError on %s", err, tc.field)
			}
		})
	}
	_, err := HindsightBound(ctx, []TraceJob{{0, 2, 1, 2}, {1, 3, 1, 1}}, costs)
	if !errors.Is(err, ErrInfeasibleTrace) {
		t.Errorf("overloaded trace: error %v", err)
	}
	if v, err := HindsightBound(ctx, nil, costs); err != nil || v != 0 {
		t.Errorf("empty trace: %v %v", v, err)
	}
}

// The batched LP (many busy periods per Clp call) gives the same bound as
// solving the periods one by one.
func TestHindsightBatchingAndOrder(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(15, 16))
	costs := []float64{1, 1, 2, 3, 3, 3, 5, 8, 8, 13, 13, 13, 21, 21, 34, 34, 34, 55, 55, 89}
	jobs := randomTrace(rng, 3000, 1.5, 3)
	bound, err := HindsightBound(ctx, jobs, costs)
	if err != nil {
		t.Fatal(err)
	}
	// Sum over busy periods, each bounded separately.
	sum := 0.0
	for lo := 0; lo < len(jobs); {
		hi, end := lo+1, jobs[lo].End
		for hi < len(jobs) && jobs[hi].Start < end {
			end = max(end, jobs[hi].End)
			hi++
		}
		v, err := HindsightBound(ctx, jobs[lo:hi], costs)
		if err != nil {
			t.Fatal(err)
		}
		sum += v
		lo = hi
	}
	if !scalar.EqualWithinAbsOrRel(bound, sum, 1e-9, 1e-9) {
		t.Errorf("batched %.12g, per period %.12g", bound, sum)
	}
	shuffled := slices.Clone(jobs)
	rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	if v, err := HindsightBound(ctx, shuffled, costs); err != nil || !scalar.EqualWithinAbsOrRel(v, bound, 1e-9, 1e-9) {
		t.Errorf("shuffled trace: %.12g vs %.12g (%v)", v, bound, err)
	}
	greedy, ok := onlineCost(jobs, costs, firstR)
	if !ok || bound > greedy {
		t.Errorf("bound %.12g, greedy %.12g (feasible %v)", bound, greedy, ok)
	}
	t.Logf("3000 jobs: bound %.6g, greedy %.6g (%.2f%% above)", bound, greedy, 100*(greedy/bound-1))
}

func TestEmptyClusterBound(t *testing.T) {
	w := smallModel(t).Workload // (X, R) = (1, 1) 0.3, (10, 1) 0.3, (8, 2) 0.4
	costs := []float64{7, 3, 1, 3}
	want := 0.3*1*1 + 0.3*10*1 + 0.4*(8.0/2)*(1+3)
	if got := EmptyClusterBound(w, costs); !scalar.EqualWithinAbsOrRel(got, want, exactTol, exactTol) {
		t.Errorf("EmptyClusterBound %.12g, want %.12g", got, want)
	}
	if got := EmptyClusterBound(w, []float64{1}); !math.IsInf(got, 1) {
		t.Errorf("R = 2 on one slot: %g, want +Inf", got)
	}
	// It is below the MDP optimum of the stable system.
	m := smallModel(t)
	sol := solve(t, m, SolveOptions{})
	if b := EmptyClusterBound(m.Workload, m.SlotCosts); b > sol.Optimal*(1+costTol) {
		t.Errorf("empty-cluster bound %.12g above the optimum %.12g", b, sol.Optimal)
	}
	// Continuous workload: E[Y | R = r] from the conditionals.
	u := uniformWorkload(t, 1, 100, 1, 2)
	wantU := 0.5*50.5*1 + 0.5*(50.5/2)*(1+3)
	if got := EmptyClusterBound(u, costs); !scalar.EqualWithinAbsOrRel(got, wantU, exactTol, exactTol) {
		t.Errorf("uniform workload: %.12g, want %.12g", got, wantU)
	}
}
