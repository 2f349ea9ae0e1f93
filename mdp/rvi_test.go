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
func overloadedPlacement(t *testing.T, lam float64, k int) *MDP {
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
// "not converged"). The sweeps detect it (asserted): on a chain of at most
// DenseLimit states they stall and policy iteration finishes, so the
// answer is the exact gain with the Bellman half-span of its bias as its
// error; on a larger chain (K = 4, 1030 states) they stop at the flat
// floor with Odoni's bounds around the exact gain (policy iteration beyond
// DenseLimit, the reference) and a span at most stallAccept of it.
func TestRVIStopsAtItsRoundingFloor(t *testing.T) {
	ctx := context.Background()
	opts, err := Options{MaxIterations: 200_000}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		lam float64
		k   int
	}{{20, 3}, {50, 3}, {95.2, 3}, {95.2, 4}} {
		m := overloadedPlacement(t, c.lam, c.k)
		small := m.NumStates() <= DenseLimit
		exact, err := policyIteration(ctx, m, 2*DenseLimit)
		if err != nil {
			t.Fatal(err)
		}
		_, lo, hi, it, stalled, err := relativeValueIteration(ctx, m, opts, small)
		if err != nil {
			t.Fatalf("λ = %g, K = %d: %v", c.lam, c.k, err)
		}
		t.Logf("λ = %g, K = %d: %d states, sweeps stop after %d at [%.15g, %.15g] (stalled %v); exact %.15g",
			c.lam, c.k, m.NumStates(), it, lo, hi, stalled, exact.Gain)
		if !stalled {
			t.Errorf("λ = %g, K = %d: the sweeps converged to the tolerance: not the slow chain this test is about", c.lam, c.k)
		}
		if eps := 1e-12 * exact.Gain; exact.Gain < lo-eps || exact.Gain > hi+eps {
			t.Errorf("λ = %g, K = %d: the exact gain %.15g is outside the sweeps' bounds [%.15g, %.15g]", c.lam, c.k, exact.Gain, lo, hi)
		}
		sol, err := RelativeValueIteration(ctx, m, opts)
		if err != nil {
			t.Fatal(err)
		}
		if d := math.Abs(sol.Gain - exact.Gain); d > sol.GainError+1e-12*exact.Gain {
			t.Errorf("λ = %g, K = %d: gain %.15g is %.3g from the exact %.15g, beyond its GainError %.3g", c.lam, c.k, sol.Gain, d, exact.Gain, sol.GainError)
		}
		limit := stallAccept
		if small {
			limit = 1e-11 // policy iteration's: the Bellman half-span of an exact solution
		}
		if sol.GainError > limit*exact.Gain {
			t.Errorf("λ = %g, K = %d: GainError %.3g above %g of the gain", c.lam, c.k, sol.GainError, limit)
		}
	}
}
