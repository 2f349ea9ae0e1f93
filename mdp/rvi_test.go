package mdp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/optd/optd/sim"
)

// TestRVIStopsAtItsRoundingFloor: on overloaded placement models (λ/μ up
// to 95, a chain one of whose modes mixes very slowly), relative value
// iteration's span falls to a rounding floor above the default tolerance
// and stays there; it stops there instead of sweeping to MaxIterations
// and failing, with a gain that agrees with the exact one (policy
// iteration's, or the LP's beyond DenseLimit states) within the GainError
// it reports, and that error small: 0 where policy iteration finished a
// small chain, at most stallAccept of the gain on a larger one.
func TestRVIStopsAtItsRoundingFloor(t *testing.T) {
	for _, c := range []struct {
		lam float64
		k   int
	}{{20, 3}, {50, 3}, {95.2, 3}, {20, 4}, {95.2, 4}} {
		lam := c.lam
		js := fmt.Sprintf(`{"slots": {"costs": [2, 3, 4, 5, 2, 3, 4, 5, 2, 3, 4]}, "max_jobs_in_service": %d,
			"arrival_rate": %g, "service_rate": 1, "max_waiting": 2,
			"workload": {"joint": [{"data": 40, "reduces": 2, "prob": 1}]}, "jobs": 1000, "replications": 1, "seed": 1}`, c.k, lam)
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
		// A bound well below what the floor's default took (10⁷ sweeps).
		rvi, err := RelativeValueIteration(context.Background(), up.m, Options{MaxIterations: 200_000})
		if err != nil {
			t.Fatalf("λ = %g, K = %d: %v", lam, c.k, err)
		}
		// The exact gain: policy iteration's, or beyond its size the LP's
		// (Clp, to about 1e-9 of the gain), and the exact gain of the
		// policy returned, which lies in [lo, hi] as g* does (it is greedy
		// for the bias that gave the bounds).
		exact, err := PolicyIteration(context.Background(), up.m)
		slack := 1e-12
		if errors.Is(err, ErrTooLarge) {
			exact, err = SolveLP(context.Background(), up.m)
			slack = 1e-8
		}
		if err != nil {
			t.Fatal(err)
		}
		own, err := evaluateDense(chainOf(up.m, Policy{Action: rvi.Policy}))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("λ = %g, K = %d: %d states, gain %.15g ± %.3g after %d sweeps; exact %.15g; its policy's %.15g",
			lam, c.k, up.m.NumStates(), rvi.Gain, rvi.GainError, rvi.Iterations, exact.Gain, own.Gain)
		if d := math.Abs(rvi.Gain - exact.Gain); d > rvi.GainError+slack*exact.Gain {
			t.Errorf("λ = %g, K = %d: gain %.15g is %.3g from the exact %.15g, beyond its GainError %.3g", lam, c.k, rvi.Gain, d, exact.Gain, rvi.GainError)
		}
		if d := math.Abs(rvi.Gain - own.Gain); d > rvi.GainError+1e-12*own.Gain {
			t.Errorf("λ = %g, K = %d: its policy's exact gain %.15g is %.3g from its gain %.15g, beyond its GainError %.3g", lam, c.k, own.Gain, d, rvi.Gain, rvi.GainError)
		}
		if rvi.GainError > stallAccept*exact.Gain {
			t.Errorf("λ = %g, K = %d: GainError %.3g above %g of the gain", lam, c.k, rvi.GainError, stallAccept)
		}
	}
}
