package mdp

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/optd/optd/policy"
	"github.com/optd/optd/sim"
)

// fig9Analogs are MDP-solvable analogs of the Fig. 9 setting beyond the
// paper at ρ = 0.9 (slots of linearly spread costs, independent X uniform
// and R uniform, Y = X/R of a wide spread, Poisson arrivals at 0.9 of the
// service rate, K-limited processor sharing), scaled to a few slots and K.
func fig9Analogs(t testing.TB, jobs, reps int) (scens []*sim.Scenario, names []string) {
	t.Helper()
	for k, a := range []struct {
		costs   string
		K, wait int
		xs, rs  string
	}{
		{"[1, 2, 3, 4, 5, 6, 7, 8]", 4, 3, "[15, 50, 85]", "[1, 2]"},
		{"[1, 2, 3, 4, 5, 6, 7, 8]", 3, 4, "[15, 50, 85]", "[1, 2]"},
		{"[1, 2, 3, 4, 5, 6]", 3, 3, "[10, 30, 50, 70, 90]", "[1, 2]"},
		{"[1, 2, 3, 4, 5, 6, 7, 8]", 2, 4, "[15, 50, 85]", "[1, 2, 3]"},
		{"[1, 3, 5, 7, 9, 11, 13, 15]", 4, 3, "[10, 50, 90]", "[1, 2]"},
		// Y = X/R ties across R (10 and 20 of R = 1 and 2): the groups by
		// Y alone mix jobs of different R, as at scale.
		{"[1, 2, 3, 4, 5, 6, 7, 8]", 4, 3, "[10, 20, 40, 80]", "[1, 2]"},
	} {
		nx := strings.Count(a.xs, ",") + 1
		nr := strings.Count(a.rs, ",") + 1
		px := strings.TrimSuffix(strings.Repeat(fmt.Sprintf("%g, ", 1/float64(nx)), nx), ", ")
		pr := strings.TrimSuffix(strings.Repeat(fmt.Sprintf("%g, ", 1/float64(nr)), nr), ", ")
		js := fmt.Sprintf(`{"slots": {"costs": %s}, "max_jobs_in_service": %d, "arrival_rate": 0.9,
			"service_rate": 1, "max_waiting": %d, "workload": {"data": {"kind": "discrete", "values": %s, "probs": [%s]},
			"reduces": {"kind": "discrete", "values": %s, "probs": [%s]}}, "jobs": %d, "warmup_jobs": 100,
			"replications": %d, "seed": %d}`, a.costs, a.K, a.wait, a.xs, px, a.rs, pr, jobs, reps, 500+k)
		s, err := sim.DecodeScenario([]byte(js), "")
		if err != nil {
			t.Fatalf("analog %d: %v\n%s", k, err, js)
		}
		scens = append(scens, s)
		names = append(names, fmt.Sprintf("analog %d: costs %s K %d wait %d X %s R %s", k, a.costs, a.K, a.wait, a.xs, a.rs))
	}
	return scens, names
}

// TestFig9Analogs prints, on the Fig. 9 analogs, the exact optimum beside
// the exact costs of greedy and state-threshold (its defaults), the
// value-penalty bound (it needs the chain), the hindsight LP and the
// penalized LP with the at-scale features (classes grouped on the rank
// grid, compact features), θ fitted on the coarse cluster or on the exact
// costs (fitExact), each with FitPenalty's step and ten times it, and with
// the per-class ones, each a ratio to the optimum (a markdown table;
// OPTD_PENALTY_ANALOG=1, OPTD_PENALTY_STEPS fit steps, default 300;
// OPTD_PENALTY_ANALOG_FITS, column names separated by semicolons, keeps
// those alone; OPTD_PENALTY_ANALOGS=n the first n analogs; `make
// penalty-analog`). It answers whether the penalized LP's gap at scale is
// its feature class's: where the MDP is solved, the at-scale LP sits below
// the per-class one, and both well below the value-penalty bound.
func TestFig9Analogs(t *testing.T) {
	if os.Getenv("OPTD_PENALTY_ANALOG") == "" {
		t.Skip("set OPTD_PENALTY_ANALOG=1")
	}
	ctx := context.Background()
	steps := envInt("OPTD_PENALTY_STEPS", 300)
	scens, names := fig9Analogs(t, 3000, 6)
	fits := []struct {
		name string
		fit  PenaltyFit
	}{
		{"at-scale LP, coarse fit", PenaltyFit{Steps: steps, grouped: true}},
		{"at-scale LP, coarse fit, step x10", PenaltyFit{Steps: steps, grouped: true, variant: penaltyVariant{stepScale: 10}}},
		{"per-class LP", PenaltyFit{Steps: steps}},
		{"at-scale LP, exact fit", PenaltyFit{Steps: steps, grouped: true, variant: penaltyVariant{exactFit: true}}},
		{"at-scale LP, exact fit, step x10", PenaltyFit{Steps: steps, grouped: true, variant: penaltyVariant{exactFit: true, stepScale: 10}}},
	}
	if v := os.Getenv("OPTD_PENALTY_ANALOG_FITS"); v != "" {
		keep := fits[:0]
		for _, f := range fits {
			if slices.Contains(strings.Split(v, ";"), f.name) {
				keep = append(keep, f)
			}
		}
		if len(keep) == 0 {
			t.Fatalf("OPTD_PENALTY_ANALOG_FITS %q names none of the fits", v)
		}
		fits = keep
	}
	if n := envInt("OPTD_PENALTY_ANALOGS", 0); n > 0 && n < len(scens) {
		scens = scens[:n]
	}
	fmt.Print("| analog | states | optimum | greedy | state-threshold | value penalty | hindsight LP")
	for _, f := range fits {
		fmt.Print(" | " + f.name)
	}
	fmt.Print(" |\n|---|---|---|---|---|---|---")
	fmt.Println(strings.Repeat("|---", len(fits)) + "|")
	for k, s := range scens {
		sol := solveScenario(t, s)
		m, err := ModelOf(s)
		if err != nil {
			t.Fatal(err)
		}
		vb, err := ValueBound(ctx, m, ValueBoundOptions{Seed: s.Seed})
		if err != nil {
			t.Fatal(err)
		}
		st, err := policy.NewPlacement("state-threshold", policy.PlacementConfig{})
		if err != nil {
			t.Fatal(err)
		}
		stCost, err := EvaluatePolicy(ctx, m, st, SolveOptions{})
		if err != nil {
			t.Fatal(err)
		}
		opt := sol.Optimal
		pct := func(v float64) string { return fmt.Sprintf("%.3f (%.1f%%)", v, 100*v/opt) }
		row := fmt.Sprintf("| %s | %d | %.3f | %s | %s | %s ± %.3f", names[k], sol.States, opt,
			pct(sol.PolicyCosts["greedy"]), pct(stCost), pct(vb.Mean), vb.HalfWidth)
		// What the table would be worthless without: the policies cost at
		// least the optimum, and every bound is not significantly above it
		// (its 95% interval reaches below it).
		for name, c := range map[string]float64{"greedy": sol.PolicyCosts["greedy"], "state-threshold": stCost} {
			if c < opt*(1-1e-9) {
				t.Errorf("%s: %s costs %.6g, below the optimum %.6g", names[k], name, c, opt)
			}
		}
		aboveOptimum := func(name string, mean, half float64) {
			if mean-half > opt*(1+1e-9) {
				t.Errorf("%s: %s %.6g ± %.3g, significantly above the optimum %.6g", names[k], name, mean, half, opt)
			}
		}
		aboveOptimum("value penalty", vb.Mean, vb.HalfWidth)
		for j, f := range fits {
			mean, half, hind, _ := penaltyRatio(t, s, f.fit)
			if j == 0 {
				row += " | " + pct(hind)
				aboveOptimum("hindsight LP", hind, half)
			}
			row += fmt.Sprintf(" | %s ± %.3f", pct(mean), half)
			aboveOptimum(f.name, mean, half)
		}
		fmt.Println(row + " |")
	}
}
