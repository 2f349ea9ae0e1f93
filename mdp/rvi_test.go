package mdp

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/optd/optd/sim"
)

// overloadedPlacement is the MDP of a placement model whose chain has a
// very slowly mixing mode: 11 slots, K jobs in service of R = 2, a
// waiting room of 2, arrivals λ times the service rate.
func overloadedPlacement(t testing.TB, lam float64, k int) *MDP {
	t.Helper()
	js := fmt.Sprintf(`{"slots": {"costs": [2, 3, 4, 5, 2, 3, 4, 5, 2, 3, 4]}, "max_jobs_in_service": %d,
		"arrival_rate": %g, "service_rate": 1, "max_waiting": 2,
		"workload": {"joint": [{"data": 40, "reduces": 2, "prob": 1}]}, "jobs": 1000, "replications": 1, "seed": 1}`, k, lam)
	s, err := sim.DecodeScenario([]byte(js), "")
	if err != nil {
		t.Fatal(err)
	}
	pm, err := ModelOf(s)
	if err != nil {
		t.Fatal(err)
	}
	cls, err := pm.validate()
	if err != nil {
		t.Fatal(err)
	}
	up, err := buildPlacement(context.Background(), pm, cls, discretize(pm.Workload, DefaultBins).upper, DefaultMaxStates)
	if err != nil {
		t.Fatal(err)
	}
	return up.m
}

// TestRVIStopsAtItsRoundingFloor: on overloaded placement models (λ/μ 20
// to 95) relative value iteration's span shrinks very slowly or stops at
// a rounding floor above the default tolerance (before, 10⁷ sweeps and
// "not converged"). The sweeps detect it (asserted): on a chain within the
// exact evaluation's limits they stall and policy iteration finishes, so
// the answer is the exact gain with the Bellman half-span of its bias as
// its error (at λ/μ = 20, K = 4, 1030 states, the sweeps alone took 2.6·10⁶
// sweeps and half a minute); where they could not hand over (finishable
// nil, as on a chain beyond those limits) they stop at the flat floor with Odoni's
// bounds around the exact gain (exactOptimum's) and a span at most
// stallAccept of it.
func TestRVIStopsAtItsRoundingFloor(t *testing.T) {
	ctx := context.Background()
	opts, err := Options{MaxIterations: 200_000}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		lam  float64
		k    int
		flat bool // the sweeps alone reach a flat floor (at λ/μ = 20 they crawl on)
	}{{20, 3, false}, {50, 3, false}, {95.2, 3, true}, {95.2, 4, true}, {20, 4, false}} {
		m := overloadedPlacement(t, c.lam, c.k)
		exact := exactOptimum(t, m)
		eps := 1e-12 * exact.Gain
		for _, handOver := range []bool{true, false} {
			if !handOver && !c.flat {
				continue
			}
			var finishable func() bool
			if handOver {
				finishable = func() bool { return true }
			}
			_, lo, hi, it, stalled, err := relativeValueIteration(ctx, m, opts, finishable)
			if err != nil {
				t.Fatalf("λ = %g, K = %d: %v", c.lam, c.k, err)
			}
			t.Logf("λ = %g, K = %d, hand-over %v: %d states, sweeps stop after %d at [%.15g, %.15g] (stalled %v); exact %.15g",
				c.lam, c.k, handOver, m.NumStates(), it, lo, hi, stalled, exact.Gain)
			if !stalled {
				t.Errorf("λ = %g, K = %d, hand-over %v: the sweeps converged to the tolerance: not the slow chain this test is about", c.lam, c.k, handOver)
			}
			if exact.Gain < lo-eps || exact.Gain > hi+eps {
				t.Errorf("λ = %g, K = %d: the exact gain %.15g is outside the sweeps' bounds [%.15g, %.15g]", c.lam, c.k, exact.Gain, lo, hi)
			}
			if !handOver && hi-lo > 2*stallAccept*hi {
				t.Errorf("λ = %g, K = %d: stopped at a span %.3g above %g of the gain", c.lam, c.k, hi-lo, stallAccept)
			}
		}
		sol, err := RelativeValueIteration(ctx, m, opts)
		if err != nil {
			t.Fatal(err)
		}
		if d := math.Abs(sol.Gain - exact.Gain); d > sol.GainError+eps {
			t.Errorf("λ = %g, K = %d: gain %.15g is %.3g from the exact %.15g, beyond its GainError %.3g", c.lam, c.k, sol.Gain, d, exact.Gain, sol.GainError)
		}
		// Policy iteration's: the Bellman half-span of an exact solution.
		if sol.GainError > 1e-11*exact.Gain {
			t.Errorf("λ = %g, K = %d: GainError %.3g above 1e-11 of the gain: policy iteration did not finish", c.lam, c.k, sol.GainError)
		}
	}
}
