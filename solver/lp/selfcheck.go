package lp

import (
	"context"
	"fmt"
	"math"
)

// SelfCheck solves a small LP whose optimum is known in closed form and
// checks the primal solution and the duals, so a server can refuse to report
// SERVING when the linked Clp library is missing or misbehaves:
//
//	max x + y  s.t.  x + 2y ≤ 4,  3x + y ≤ 6,  x, y ≥ 0
//
// has the unique optimum x = 8/5, y = 6/5 (objective 14/5) with row duals
// 2/5 and 1/5 (solve x + 2y = 4, 3x + y = 6; the duals solve Aᵀy = c).
func SelfCheck(ctx context.Context) error {
	var p Problem
	p.Sense = Maximize
	r0 := p.AddRow(math.Inf(-1), 4)
	r1 := p.AddRow(math.Inf(-1), 6)
	p.AddCol(1, 0, math.Inf(1), []int{r0, r1}, []float64{1, 3})
	p.AddCol(1, 0, math.Inf(1), []int{r0, r1}, []float64{2, 1})
	sol, err := Solve(ctx, &p, Options{})
	if err != nil {
		return fmt.Errorf("lp: self-check: %w", err)
	}
	const tol = 1e-9
	want := []struct {
		name      string
		got, want float64
	}{
		{"objective", sol.Objective, 14.0 / 5},
		{"x", sol.Primal[0], 8.0 / 5},
		{"y", sol.Primal[1], 6.0 / 5},
		{"dual of row 0", math.Abs(sol.RowDuals[0]), 2.0 / 5},
		{"dual of row 1", math.Abs(sol.RowDuals[1]), 1.0 / 5},
	}
	for _, w := range want {
		if math.Abs(w.got-w.want) > tol {
			return fmt.Errorf("lp: self-check: %s = %v, want %v (Clp %s)", w.name, w.got, w.want, Version())
		}
	}
	return nil
}
