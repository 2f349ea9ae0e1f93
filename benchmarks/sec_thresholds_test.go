package benchmarks

import (
	"context"
	"testing"

	"gonum.org/v1/gonum/floats/scalar"
)

// TestCounterexample checks the section's figures against the example
// worked by hand: E[Y] = 0.6·9.5 + 0.4·4.75 = 7.6, the conditional second
// threshold P[R=2]·E[Y|R=2] = 0.4·4.75 = 1.9, the printed P[R≥2]·E[Y] =
// 0.4·7.6 = 3.04; job 1 = (6, 2) takes slots (1, 2) at cost
// 3·(1+2) + 1·7.6 + 10·1.9 = 35.6 instead of (2, 10) at
// 3·(2+10) + 1·7.6 + 1·1.9 = 45.5, i.e. 27.8% more.
func TestCounterexample(t *testing.T) {
	ce, err := evalCounterexample(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	const tol = 1e-12
	eq := func(name string, got, want float64) {
		t.Helper()
		if !scalar.EqualWithinAbsOrRel(got, want, tol, tol) {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	eq("conditional q_1", ce.good.Stages[0][0], 7.6)
	eq("conditional q_2", ce.good.Stages[0][1], 1.9)
	eq("printed q_2", ce.bad.Stages[0][1], 3.04)
	var row ceRow
	for _, r := range ce.rows {
		if r.x == 6 && r.r == 2 {
			row = r
		}
		eq("exhaustive vs conditional", r.exhaustive, r.goodCost)
	}
	eq("conditional cost of (6, 2)", row.goodCost, 3*(1+2)+7.6+10*1.9)
	eq("printed cost of (6, 2)", row.badCost, 3*(2+10)+7.6+1.9)
	if got := row.relError; got < 0.2780 || got > 0.2781 {
		t.Errorf("excess = %v, want 27.8%%", got)
	}
	eq("optimum vs exhaustive", ce.optimal, ce.exhaustive)
	if ce.paper <= ce.optimal {
		t.Errorf("printed thresholds cost %v ≤ optimum %v", ce.paper, ce.optimal)
	}
}

func TestSubsets(t *testing.T) {
	if got := len(subsets(5, 2)); got != 10 {
		t.Errorf("C(5, 2) = %d subsets, want 10", got)
	}
	if got := subsets(3, 3); len(got) != 1 || len(got[0]) != 3 {
		t.Errorf("subsets(3, 3) = %v", got)
	}
}
