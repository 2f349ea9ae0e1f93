package mdp

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/optd/optd/policy"
	"github.com/optd/optd/sim"
)

// TestLagrangianBelowExactLP: on random traces (repeated and distinct
// costs, light to heavy overlap), every Lagrangian value is at most the
// exact hindsight LP (solved by Clp) and at least the trace's empty-cluster
// bound (its first step), and the greedy upper end is at least the LP.
func TestLagrangianBelowExactLP(t *testing.T) {
	ctx := context.Background()
	worst := 1.0
	n := eachRandomTrace(t, 5, 2, func(trial int, _ *rand.Rand, jobs []TraceJob, costs []float64, exact float64) {
		var steps []float64
		res, err := HindsightBoundLagrangian(ctx, jobs, costs, LagrangeOptions{Iterations: 400, Progress: func(_ int, b float64) { steps = append(steps, b) }})
		if err != nil {
			t.Fatal(err)
		}
		empty := traceEmptyCluster(jobs, costs)
		if steps[0] < empty*(1-1e-9)-1e-9 {
			t.Errorf("trial %d: first step %.9g below the empty-cluster bound %.9g", trial, steps[0], empty)
		}
		if res.Bound > exact*(1+1e-9)+1e-9 {
			t.Errorf("trial %d: Lagrangian %.12g above the exact LP %.12g", trial, res.Bound, exact)
		}
		if res.Upper < exact*(1-1e-9)-1e-9 {
			t.Errorf("trial %d: greedy placement %.12g below the LP %.12g", trial, res.Upper, exact)
		}
		if exact > 0 {
			worst = min(worst, res.Bound/exact)
		}
	})
	t.Logf("worst Lagrangian/LP ratio over %d traces: %.4f", n, worst)
}

// TestLagrangianScale prints the level bound's and the Lagrangian bound's
// time, steps and memory on the Fig. 9 setting (K = 100, 1000 distinct
// slot costs) at rho = 0.9 (OPTD_LAGRANGE_RHO for another) for 10k, 50k and
// 200k jobs (long: OPTD_LAGRANGE_SCALE=1; `make lagrange-scale`), with the
// exact LP where it finishes (up to 5k jobs) and the ratios to it along the steps.
func TestLagrangianScale(t *testing.T) {
	if os.Getenv("OPTD_LAGRANGE_SCALE") == "" {
		t.Skip("set OPTD_LAGRANGE_SCALE=1")
	}
	ctx := context.Background()
	s, err := sim.LoadScenario("../search/testdata/fig9-rho0.9.json")
	if err != nil {
		t.Fatal(err)
	}
	// OPTD_LAGRANGE_RHO=0.95: another load (μ = 1, so ρ = λ).
	if rho, err := strconv.ParseFloat(os.Getenv("OPTD_LAGRANGE_RHO"), 64); err == nil && rho > 0 {
		s.ArrivalRate = rho * s.ServiceRate
	}
	fmt.Printf("rho = %g\n", s.ArrivalRate/s.ServiceRate)
	for _, n := range lagrangeScaleSizes() {
		s.Jobs, s.WarmupJobs = n, 0
		r, err := s.RunReplication(ctx, 0, []sim.NamedFactory{{Name: "c", New: func(uint64) (policy.Placement, error) { return cheapestFree{}, nil }}}, true)
		if err != nil {
			t.Fatal(err)
		}
		var jobs []TraceJob
		for _, j := range r.Records {
			if j.Counted && j.End > j.Start {
				jobs = append(jobs, TraceJob{Start: j.Start, End: j.End, Y: j.Y(), R: j.R})
			}
		}
		runtime.GC()
		var before, peak runtime.MemStats
		runtime.ReadMemStats(&before)
		sample := func() {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > peak.HeapAlloc {
				peak = m
			}
		}
		start := time.Now()
		at := map[int]float64{}
		steps := 1000
		if v, err := strconv.Atoi(os.Getenv("OPTD_LAGRANGE_STEPS")); err == nil && v > 0 {
			steps = v
		}
		res, err := HindsightBoundLagrangian(ctx, jobs, s.SlotCosts, LagrangeOptions{Iterations: steps, TimeLimit: 60 * time.Second,
			Progress: func(step int, b float64) {
				if step%25 == 0 {
					sample()
				}
				at[step] = b
			}})
		if err != nil {
			t.Fatal(err)
		}
		el := time.Since(start)
		N := float64(len(jobs))
		line := fmt.Sprintf("jobs %d: %d steps in %v (%.1f ms/step), bound/job %.3f (after 1 step %.3f, 50: %.3f, 100: %.3f), greedy/job %.3f, heap %.1f MiB above the trace",
			len(jobs), res.Steps, el.Round(time.Millisecond), float64(el.Milliseconds())/float64(res.Steps), res.Bound/N, at[1]/N, at[50]/N, at[100]/N, res.Upper/N,
			float64(peak.HeapAlloc-min(peak.HeapAlloc, before.HeapAlloc))/(1<<20))
		runtime.GC()
		runtime.ReadMemStats(&before)
		peak = before
		st := time.Now()
		levels, err := HindsightBoundLevels(ctx, jobs, s.SlotCosts)
		if err != nil {
			t.Fatal(err)
		}
		lt := time.Since(st)
		sample()
		line += fmt.Sprintf("; level bound %.3f/job in %v, heap %.1f MiB above the trace (level/Lagrangian %.4f)", levels/N, lt.Round(time.Millisecond),
			float64(peak.HeapAlloc-min(peak.HeapAlloc, before.HeapAlloc))/(1<<20), levels/res.Bound)
		if n <= 5000 {
			st := time.Now()
			exact, err := HindsightBound(ctx, jobs, s.SlotCosts)
			if err != nil {
				t.Fatal(err)
			}
			line += fmt.Sprintf("; exact LP %.3f/job in %v (level/LP %.5f; Lagrangian/LP after 1 step %.5f, 10: %.5f, 100: %.5f, %d: %.5f)",
				exact/N, time.Since(st).Round(time.Millisecond), levels/exact, at[1]/exact, at[10]/exact, at[100]/exact, res.Steps, res.Bound/exact)
		}
		fmt.Println(line)
	}
}

// lagrangeScaleSizes are the trace sizes of TestLagrangianScale
// (OPTD_LAGRANGE_SIZES=2000,10000 to choose).
func lagrangeScaleSizes() []int {
	v := os.Getenv("OPTD_LAGRANGE_SIZES")
	if v == "" {
		return []int{2000, 10000, 50000, 200000}
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(f)
		if err == nil && n > 0 {
			out = append(out, n)
		}
	}
	return out
}

// TestLagrangianPenalizedBelowExactLP: with a random penalty constant on
// random groups of classes (z_{i,c} = s_{i,grp(c)}, of either sign and up
// to the slot costs' scale), every Lagrangian value is at most the
// penalized hindsight LP solved by Clp with the same costs made dense (the
// second method), and the greedy placement priced on the penalized costs
// is at least it.
func TestLagrangianPenalizedBelowExactLP(t *testing.T) {
	ctx := context.Background()
	worst := 1.0
	n := eachRandomTrace(t, 11, 2, func(trial int, rng *rand.Rand, jobs []TraceJob, costs []float64, _ float64) {
		cls := newClasses(costs)
		G := 1 + rng.IntN(4)
		adj := &groupAdj{grp: make([]int, cls.num()), G: G, s: make([]float64, len(jobs)*G)}
		for c := range adj.grp {
			adj.grp[c] = rng.IntN(G)
		}
		for k := range adj.s {
			adj.s[k] = (rng.Float64() - 0.5) * slices.Max(costs)
		}
		dense := make([]float64, len(jobs)*cls.num())
		for i := range jobs {
			for c := range cls.num() {
				dense[i*cls.num()+c] = adj.at(i, c)
			}
		}
		exact, err := hindsight(ctx, jobs, cls, dense)
		if err != nil {
			t.Fatal(err)
		}
		var steps []float64
		res, err := lagrangian(ctx, jobs, costs, adj, LagrangeOptions{Iterations: 400, Progress: func(_ int, b float64) { steps = append(steps, b) }})
		if err != nil {
			t.Fatal(err)
		}
		tol := 1e-9 * (1 + math.Abs(exact))
		for k, v := range steps {
			if v > exact+tol {
				t.Fatalf("trial %d: step %d: Lagrangian %.12g above the penalized LP %.12g", trial, k+1, v, exact)
			}
		}
		if res.Upper < exact-tol {
			t.Errorf("trial %d: greedy placement %.12g below the penalized LP %.12g", trial, res.Upper, exact)
		}
		if exact > 0 && res.Bound > 0 {
			worst = min(worst, res.Bound/exact)
		}
	})
	t.Logf("worst penalized Lagrangian/LP ratio over %d traces: %.4f", n, worst)
}
