package mdp

import (
	"context"
	"math/rand/v2"
	"testing"
)

// TestLevelBoundBelowExactLP: on random traces (repeated and distinct
// costs, light to heavy overlap, R up to 3), the level bound is at most
// the exact hindsight LP (Clp) and at least the empty-cluster bound of the
// trace, and each level's F(k) from the flow equals the LP of that level
// alone (Clp on the two-class cluster of k slots of cost 0 and the rest of
// cost 1, whose optimum is Σ Y·R − F(k) when the costly class is never
// short), a second method for the flow.
func TestLevelBoundBelowExactLP(t *testing.T) {
	ctx := context.Background()
	worst := 1.0
	n := eachRandomTrace(t, 11, 3, func(trial int, rng *rand.Rand, jobs []TraceJob, costs []float64, exact float64) {
		got, err := HindsightBoundLevels(ctx, jobs, costs)
		if err != nil {
			t.Fatal(err)
		}
		empty := traceEmptyCluster(jobs, costs)
		if got > exact*(1+1e-9)+1e-9 {
			t.Errorf("trial %d: level bound %.12g above the exact LP %.12g", trial, got, exact)
		}
		if got < empty*(1-1e-9)-1e-9 {
			t.Errorf("trial %d: level bound %.12g below the empty-cluster bound %.12g", trial, got, empty)
		}
		if exact > 0 {
			worst = min(worst, got/exact)
		}
		// Each level against Clp: k cheap slots of cost 0 and enough
		// slots of cost 1 that only the cheap ones are scarce.
		slots := len(costs)
		levels := []int{1 + rng.IntN(slots-1), slots - 1}
		f, err := levelFlows(ctx, jobs, levels, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		yr := 0.0
		for _, j := range jobs {
			yr += j.Y * float64(j.R)
		}
		for k, lv := range levels {
			bin := make([]float64, lv+4*slots)
			for s := lv; s < len(bin); s++ {
				bin[s] = 1
			}
			lp, err := HindsightBound(ctx, jobs, bin)
			if err != nil {
				t.Fatal(err)
			}
			if d := yr - f[k] - lp; d*d > 1e-12*(1+lp*lp) {
				t.Errorf("trial %d, level %d: flow gives Σ Y·R − F = %.12g, Clp %.12g", trial, lv, yr-f[k], lp)
			}
		}
	})
	t.Logf("worst level bound / exact LP over %d traces: %.5f", n, worst)
}

// TestLevelBoundEdges: one job alone costs its R cheapest slots; a single
// class is Σ Y·R·H; an infeasible trace and bad costs are errors.
func TestLevelBoundEdges(t *testing.T) {
	ctx := context.Background()
	costs := []float64{5, 1, 3, 3}
	got, err := HindsightBoundLevels(ctx, []TraceJob{{Start: 0, End: 1, Y: 2, R: 3}}, costs)
	if err != nil || got != 2*(1+3+3) {
		t.Errorf("one job: %v, %v; want %v", got, err, 2*(1+3+3))
	}
	jobs := []TraceJob{{Start: 0, End: 2, Y: 1, R: 2}, {Start: 1, End: 3, Y: 4, R: 2}}
	got, err = HindsightBoundLevels(ctx, jobs, []float64{2, 2, 2, 2})
	if err != nil || got != 2*(2+8) {
		t.Errorf("one class: %v, %v; want %v", got, err, 2*(2+8))
	}
	if _, err := HindsightBoundLevels(ctx, jobs, []float64{1, 2, 3}); err == nil {
		t.Error("4 reducers at once on 3 slots: no error")
	}
	if _, err := HindsightBoundLevels(ctx, jobs, []float64{1, -2, 3, 4}); err == nil {
		t.Error("negative slot cost: no error")
	}
	if got, err := HindsightBoundLevels(ctx, nil, costs); err != nil || got != 0 {
		t.Errorf("no jobs: %v, %v", got, err)
	}
}

// randomCosts draws slot costs: integers 1..ties (classes of several
// slots) when ties > 0, else distinct reals in [1, 21).
func randomCosts(rng *rand.Rand, slots, ties int) []float64 {
	costs := make([]float64, slots)
	for i := range costs {
		if ties > 0 {
			costs[i] = float64(1 + rng.IntN(ties))
		} else {
			costs[i] = 1 + 20*rng.Float64()
		}
	}
	return costs
}

// traceEmptyCluster is Σ_i Y_i·(the R_i cheapest costs): every job alone.
func traceEmptyCluster(jobs []TraceJob, costs []float64) float64 {
	cls := newClasses(costs)
	empty := 0.0
	for _, j := range jobs {
		empty += j.Y * cls.cheapest(cls.count, j.R)
	}
	return empty
}

// eachRandomTrace calls fn on 40 random traces (seeded by seed: 6–17
// slots, half with repeated integer costs and half with distinct ones,
// 10–160 jobs of up to maxR reducers, light to heavy overlap) whose exact
// hindsight LP (Clp) exists, with that LP; it fails the test if fewer than
// 20 are feasible and returns how many were.
func eachRandomTrace(t *testing.T, seed uint64, maxR int, fn func(trial int, rng *rand.Rand, jobs []TraceJob, costs []float64, exact float64)) int {
	t.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, seed+1))
	checked := 0
	for trial := range 40 {
		costs := randomCosts(rng, 6+rng.IntN(12), 5*(1-trial%2))
		jobs := randomTrace(rng, 10+rng.IntN(150), 0.2+rng.Float64(), maxR)
		exact, err := HindsightBound(ctx, jobs, costs)
		if err != nil {
			continue // infeasible trace
		}
		fn(trial, rng, jobs, costs, exact)
		checked++
	}
	if checked < 20 {
		t.Fatalf("only %d feasible traces", checked)
	}
	return checked
}
