package mdp

import (
	"context"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/optd/optd/sim"
)

// TestPenaltyFitStart: a fit started from θ fitted at a lower load
// (PenaltyFit.start) starts there (its θ differs from the cold fit's on the
// same training runs unless the start is θ = 0, when neither fit was
// rejected), its bound is not significantly above the exact optimum on
// generated MDP-solvable scenarios, and a start of another shape is
// refused with an error naming the field.
func TestPenaltyFitStart(t *testing.T) {
	ctx := context.Background()
	n := 3
	if testing.Short() {
		n = 2
	}
	for seed := range uint64(n) {
		s, desc := genPlacementScenario(t, 1000+seed, 1500, 4)
		lower := *s
		lower.ArrivalRate *= 0.8
		fit := PenaltyFit{Steps: 30, Jobs: 200, grouped: true}
		start, err := FitPenalty(ctx, &lower, fit)
		if err != nil {
			t.Fatal(err)
		}
		cold, err := FitPenalty(ctx, s, fit)
		if err != nil {
			t.Fatal(err)
		}
		warm := fit
		warm.start = start
		got, err := FitPenalty(ctx, s, warm)
		if err != nil {
			t.Fatal(err)
		}
		// (FitPenalty returns θ = 0 when its check runs reject the fit:
		// then the two fits' θ say nothing of the start.)
		if !isZero(got.theta) && !isZero(cold.theta) {
			if same := slices.Equal(got.theta, cold.theta); same != isZero(start.theta) {
				t.Errorf("%s: warm θ equal to the cold fit's: %v, start θ = 0: %v", desc, same, isZero(start.theta))
			}
		}
		mean, half, _, opt := penaltyRatio(t, s, warm)
		t.Logf("seed %d: optimum %.4f, penalized from a lower load's θ %.4f ± %.4f (%.1f%%)", 1000+seed, opt, mean, half, 100*mean/opt)
		if mean-3.3/1.96*half > opt*(1+1e-9) {
			t.Errorf("%s: warm-started penalized bound %.6g ± %.3g above the optimum %.6g", desc, mean, half, opt)
		}
		bad := *start
		bad.theta = bad.theta[:len(bad.theta)-1]
		warm.start = &bad
		var me *ModelError
		if _, err := FitPenalty(ctx, s, warm); !errors.As(err, &me) || me.Field != "PenaltyFit.start" {
			t.Errorf("%s: a start of another shape: error %v, want a ModelError on PenaltyFit.start", desc, err)
		}
	}
}

// isZero says whether every coefficient of theta is 0.
func isZero(theta []float64) bool {
	return !slices.ContainsFunc(theta, func(v float64) bool { return v != 0 })
}

// TestPenaltyFitRefusesOutOfRange: a fit's sizes outside the training
// runs' limits (sim.MaxJobs arrivals, sim.MaxReplications runs) are refused
// with an error naming the field and the value, overflow included, before
// any run.
func TestPenaltyFitRefusesOutOfRange(t *testing.T) {
	s, _ := genPlacementScenario(t, 1000, 1500, 2)
	for _, c := range []struct {
		field string
		fit   PenaltyFit
		value int
	}{
		{"WarmupJobs", PenaltyFit{Steps: 2, Jobs: 50, WarmupJobs: -3}, -3},
		{"WarmupJobs", PenaltyFit{Steps: 2, Jobs: 50, WarmupJobs: math.MaxInt}, math.MaxInt},
		{"WarmupJobs", PenaltyFit{Steps: 2, Jobs: 50, WarmupJobs: sim.MaxJobs - 49}, sim.MaxJobs - 49},
		{"Jobs", PenaltyFit{Steps: 2, Jobs: sim.MaxJobs + 1}, sim.MaxJobs + 1},
		{"Steps", PenaltyFit{Steps: math.MaxInt, Jobs: 50}, math.MaxInt},
	} {
		pen, err := FitPenalty(context.Background(), s, c.fit)
		if pen != nil || err == nil || !strings.Contains(err.Error(), "PenaltyFit."+c.field) || !strings.Contains(err.Error(), strconv.Itoa(c.value)) {
			t.Errorf("FitPenalty with %s %d: %v, %v; want only an error naming the field and the value", c.field, c.value, pen, err)
		}
	}
}
