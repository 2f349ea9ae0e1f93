package lp

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

var inf = math.Inf(1)

// handLP is an LP with its optimum computed by hand.
type handLP struct {
	name    string
	p       *Problem
	wantErr error
	obj     float64
	x       []float64 // nil: not unique or not checked
	y       []float64 // nil: not unique or not checked
	d       []float64
}

func handLPs() []handLP {
	var cases []handLP

	// max 3x + 2y s.t. x + y ≤ 4, x + 3y ≤ 6, 0 ≤ x ≤ 3.5, y ≥ 0.
	// Optimum x = 3.5 (at its upper bound), y = 0.5, objective 11.5; row 1 is
	// active with y₁ = 2 (from d_y = 2 − y₁ = 0), row 2 slack; d_x = 3 − 2 = 1 ≥ 0 at
	// the upper bound of a maximization. Duality: 2·4 + 1·3.5 = 11.5.
	{
		p := &Problem{Sense: Maximize}
		r1, r2 := p.AddRow(-inf, 4), p.AddRow(-inf, 6)
		p.AddCol(3, 0, 3.5, []int{r1, r2}, []float64{1, 1})
		p.AddCol(2, 0, inf, []int{r1, r2}, []float64{1, 3})
		cases = append(cases, handLP{name: "max/bounded column", p: p, obj: 11.5,
			x: []float64{3.5, 0.5}, y: []float64{2, 0}, d: []float64{1, 0}})
	}
	// min x + 2y + 3z s.t. x + y + z = 6, 1 ≤ y − z ≤ 2, 0 ≤ x ≤ 2, y, z ≥ 0.
	// Cheapest is x = 2 (its upper bound), then y + z = 4 with z as small as the
	// ranged row allows: y − z = 2, so y = 3, z = 1, objective 2 + 6 + 3 = 11.
	// Basic y, z: 2 − y₁ − y₂ = 0 and 3 − y₁ + y₂ = 0 give y₁ = 2.5, y₂ = −0.5 (≤ 0
	// at the ranged row's upper bound); d_x = 1 − 2.5 = −1.5 (≤ 0 at x's upper bound).
	// Duality: 2.5·6 − 0.5·2 − 1.5·2 = 11.
	{
		p := &Problem{Sense: Minimize}
		eq, rg := p.AddRow(6, 6), p.AddRow(1, 2)
		p.AddCol(1, 0, 2, []int{eq}, []float64{1})
		p.AddCol(2, 0, inf, []int{eq, rg}, []float64{1, 1})
		p.AddCol(3, 0, inf, []int{eq, rg}, []float64{1, -1})
		cases = append(cases, handLP{name: "min/equality and ranged rows", p: p, obj: 11,
			x: []float64{2, 3, 1}, y: []float64{2.5, -0.5}, d: []float64{-1.5, 0, 0}})
	}
	// min x s.t. x − y ≥ −3, x + y ≥ 1, x and y free: x ≥ max(y − 3, 1 − y), least
	// at y = 2, x = −1. Both rows at their lower bounds: y₁ + y₂ = 1, −y₁ + y₂ = 0,
	// so y = (0.5, 0.5). Duality: 0.5·(−3) + 0.5·1 = −1.
	{
		p := &Problem{Sense: Minimize}
		r1, r2 := p.AddRow(-3, inf), p.AddRow(1, inf)
		p.AddCol(1, -inf, inf, []int{r1, r2}, []float64{1, 1})
		p.AddCol(0, -inf, inf, []int{r1, r2}, []float64{-1, 1})
		cases = append(cases, handLP{name: "min/free variables", p: p, obj: -1,
			x: []float64{-1, 2}, y: []float64{0.5, 0.5}, d: []float64{0, 0}})
	}
	// max x + y s.t. x + 2y ≤ 8, x fixed at 2, 0 ≤ y ≤ 10: y = 3, objective 5.
	// d_y = 1 − 2y₁ = 0 gives y₁ = 0.5; d_x = 1 − 0.5 = 0.5 (a fixed column's reduced
	// cost may have either sign). Duality: 0.5·8 + 0.5·2 = 5.
	{
		p := &Problem{Sense: Maximize}
		r := p.AddRow(-inf, 8)
		p.AddCol(1, 2, 2, []int{r}, []float64{1})
		p.AddCol(1, 0, 10, []int{r}, []float64{2})
		cases = append(cases, handLP{name: "max/fixed variable", p: p, obj: 5,
			x: []float64{2, 3}, y: []float64{0.5}, d: []float64{0.5, 0}})
	}
	// max −2x − y s.t. x + y ≥ 3 (so min 2x + y): x = 0, y = 3, objective −3.
	// Maximization, row at its lower bound: y₁ ≤ 0; d_y = −1 − y₁ = 0 gives y₁ = −1,
	// d_x = −2 + 1 = −1 ≤ 0 at x's lower bound. Duality: −1·3 = −3.
	{
		p := &Problem{Sense: Maximize}
		r := p.AddRow(3, inf)
		p.AddCol(-2, 0, inf, []int{r}, []float64{1})
		p.AddCol(-1, 0, inf, []int{r}, []float64{1})
		cases = append(cases, handLP{name: "max/row at lower bound", p: p, obj: -3,
			x: []float64{0, 3}, y: []float64{-1}, d: []float64{-1, 0}})
	}
	// min 2x − 3y with x ∈ [1, 4], y ∈ [−2, 5] and no rows: x = 1, y = 5, objective −13, d = c.
	{
		p := &Problem{}
		p.AddCol(2, 1, 4, nil, nil)
		p.AddCol(-3, -2, 5, nil, nil)
		cases = append(cases, handLP{name: "min/no rows", p: p, obj: -13,
			x: []float64{1, 5}, y: []float64{}, d: []float64{2, -3}})
	}
	// Rows but no columns: A x = 0, feasible when every row admits 0.
	{
		p := &Problem{Sense: Maximize}
		p.AddRow(-1, 1)
		p.AddRow(0, 0)
		cases = append(cases, handLP{name: "max/no columns", p: p, obj: 0,
			x: []float64{}, y: []float64{0, 0}, d: []float64{}})
	}
	cases = append(cases, handLP{name: "min/empty", p: &Problem{}, obj: 0, x: []float64{}, y: []float64{}, d: []float64{}})

	// x + y ≤ 1 and x + y ≥ 2 with x, y ≥ 0.
	{
		p := &Problem{}
		r1, r2 := p.AddRow(-inf, 1), p.AddRow(2, inf)
		p.AddCol(1, 0, inf, []int{r1, r2}, []float64{1, 1})
		p.AddCol(1, 0, inf, []int{r1, r2}, []float64{1, 1})
		cases = append(cases, handLP{name: "min/infeasible rows", p: p, wantErr: ErrInfeasible})
	}
	// Row x ≥ 2 against the column bound x ≤ 1.
	{
		p := &Problem{Sense: Maximize}
		r := p.AddRow(2, inf)
		p.AddCol(1, 0, 1, []int{r}, []float64{1})
		cases = append(cases, handLP{name: "max/infeasible against column bound", p: p, wantErr: ErrInfeasible})
	}
	// A row 1 ≤ 0·x that no column can satisfy.
	{
		p := &Problem{}
		p.AddRow(1, 2)
		cases = append(cases, handLP{name: "min/infeasible without columns", p: p, wantErr: ErrInfeasible})
	}
	// max x + y s.t. x − y ≤ 1, x, y ≥ 0: y (and x = y + 1) grow without bound.
	{
		p := &Problem{Sense: Maximize}
		r := p.AddRow(-inf, 1)
		p.AddCol(1, 0, inf, []int{r}, []float64{1})
		p.AddCol(1, 0, inf, []int{r}, []float64{-1})
		cases = append(cases, handLP{name: "max/unbounded", p: p, wantErr: ErrUnbounded})
	}
	// min x with x free and no rows.
	{
		p := &Problem{}
		p.AddCol(1, -inf, inf, nil, nil)
		cases = append(cases, handLP{name: "min/unbounded free column", p: p, wantErr: ErrUnbounded})
	}
	// min −x₁ s.t. x₁ ≥ 0 (row) and x₂ ≤ −1 with x₂ ≥ 0: primal infeasible and dual
	// infeasible at once; the answer must be "infeasible", not "unbounded".
	{
		p := &Problem{}
		r1, r2 := p.AddRow(0, inf), p.AddRow(-inf, -1)
		p.AddCol(-1, 0, inf, []int{r1}, []float64{1})
		p.AddCol(0, 0, inf, []int{r2}, []float64{1})
		cases = append(cases, handLP{name: "min/primal and dual infeasible", p: p, wantErr: ErrInfeasible})
	}
	return cases
}

func TestHandComputedLPs(t *testing.T) {
	for _, tc := range handLPs() {
		for _, alg := range []Algorithm{Auto, Primal, Dual} {
			t.Run(tc.name+"/"+alg.String(), func(t *testing.T) {
				sol, err := Solve(context.Background(), tc.p, Options{Algorithm: alg})
				if tc.wantErr != nil {
					if !errors.Is(err, tc.wantErr) || sol != nil {
						t.Fatalf("Solve = %v, %v; want nil, %v", sol, err, tc.wantErr)
					}
					return
				}
				if err != nil {
					t.Fatalf("Solve: %v", err)
				}
				if !near(sol.Objective, tc.obj) {
					t.Errorf("objective %v, want %v", sol.Objective, tc.obj)
				}
				checkVec(t, "x", sol.Primal, tc.x)
				checkVec(t, "y", sol.RowDuals, tc.y)
				checkVec(t, "d", sol.ReducedCosts, tc.d)
				checkKKT(t, tc.p, sol)
			})
		}
	}
}

// TestHandComputedLPsAgainstGonum is the second method for the hand-computed cases
// that gonum's standard form can express.
func TestHandComputedLPsAgainstGonum(t *testing.T) {
	checked := 0
	for _, tc := range handLPs() {
		t.Run(tc.name, func(t *testing.T) {
			o := oracleSolve(tc.p)
			if errors.Is(o.err, errOracleUnusable) {
				t.Skip("not expressible for gonum's simplex")
			}
			checked++
			if !errors.Is(o.err, tc.wantErr) || (o.err == nil && !near(o.objective, tc.obj)) {
				t.Errorf("gonum: %v, %v; hand: %v, %v", o.objective, o.err, tc.obj, tc.wantErr)
			}
		})
	}
	if checked < 8 {
		t.Errorf("gonum checked only %d hand-computed cases", checked)
	}
}

func checkVec(t *testing.T, name string, got, want []float64) {
	t.Helper()
	if want == nil {
		return
	}
	if len(got) != len(want) {
		t.Fatalf("%s has length %d, want %d", name, len(got), len(want))
	}
	for k := range want {
		if !near(got[k], want[k]) {
			t.Errorf("%s[%d] = %v, want %v", name, k, got[k], want[k])
		}
	}
}

// TestAgainstGonum compares Clp with gonum's simplex on random small LPs, both
// feasible-by-construction and random ones (many infeasible or unbounded).
func TestAgainstGonum(t *testing.T) {
	const total = 1500
	r := rand.New(rand.NewPCG(7, 11))
	var compared, optimal, infeasible, unbounded int
	for k := range total {
		m, n := 1+r.IntN(5), 1+r.IntN(5)
		p := randomLP(r, m, n, k%2 == 0)
		o := oracleSolve(p)
		if errors.Is(o.err, errOracleUnusable) {
			continue
		}
		compared++
		for _, alg := range []Algorithm{Dual, Primal} {
			sol, err := Solve(context.Background(), p, Options{Algorithm: alg})
			if !errors.Is(err, o.err) && !(err == nil && o.err == nil) {
				t.Fatalf("LP %d (%v): Clp %v, gonum %v\n%+v", k, alg, err, o.err, p)
			}
			if err == nil {
				if !near(sol.Objective, o.objective) {
					t.Fatalf("LP %d (%v): Clp objective %v, gonum %v\n%+v", k, alg, sol.Objective, o.objective, p)
				}
				checkKKT(t, p, sol)
			}
		}
		switch {
		case o.err == nil:
			optimal++
		case errors.Is(o.err, ErrInfeasible):
			infeasible++
		default:
			unbounded++
		}
	}
	t.Logf("compared %d of %d: %d optimal, %d infeasible, %d unbounded", compared, total, optimal, infeasible, unbounded)
	if compared < 1000 || optimal < 300 || infeasible < 100 || unbounded < 100 {
		t.Errorf("too few comparisons: %d (optimal %d, infeasible %d, unbounded %d)", compared, optimal, infeasible, unbounded)
	}
}

// TestStrongDualityRandom checks optimality conditions (primal and dual feasibility,
// complementary slackness, c·x = dual objective) on larger random LPs with every
// kind of bound, for both senses and both algorithms.
func TestStrongDualityRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	solved := 0
	for k := range 300 {
		p := randomLP(r, 2+r.IntN(20), 2+r.IntN(20), true)
		for _, alg := range []Algorithm{Dual, Primal} {
			sol, err := Solve(context.Background(), p, Options{Algorithm: alg})
			if errors.Is(err, ErrUnbounded) {
				continue
			}
			if err != nil {
				t.Fatalf("LP %d (%v): %v", k, alg, err)
			}
			checkKKT(t, p, sol)
			checkModerate(t, sol)
			solved++
		}
	}
	if solved < 200 {
		t.Errorf("only %d optimal solves", solved)
	}
}

// TestChunkingDoesNotChangeResults caps Clp calls at a few iterations (so the solve
// restarts from the current basis several times) and compares with one call.
func TestChunkingDoesNotChangeResults(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 17))
	restarted := 0
	for k := range 200 {
		p := randomLP(r, 3+r.IntN(15), 3+r.IntN(15), k%3 != 0)
		for _, alg := range []Algorithm{Dual, Primal} {
			whole, errWhole := Solve(context.Background(), p, Options{Algorithm: alg})
			for _, chunk := range []int{1, 2, 5} {
				got, err := Solve(context.Background(), p, Options{Algorithm: alg, chunkIterations: chunk})
				if !errors.Is(err, errWhole) && !(err == nil && errWhole == nil) {
					t.Fatalf("LP %d %v chunk %d: %v, one call: %v", k, alg, chunk, err, errWhole)
				}
				if err != nil {
					continue
				}
				if !near(got.Objective, whole.Objective) {
					t.Fatalf("LP %d %v chunk %d: objective %v, one call %v", k, alg, chunk, got.Objective, whole.Objective)
				}
				checkKKT(t, p, got)
				if got.Iterations > chunk {
					restarted++
				}
			}
		}
	}
	if restarted < 100 {
		t.Errorf("only %d solves needed more than one chunk", restarted)
	}
}

func TestValidate(t *testing.T) {
	valid := func() *Problem {
		p := &Problem{}
		r0, r1 := p.AddRow(0, 4), p.AddRow(-inf, 2)
		p.AddCol(1, 0, 1, []int{r0, r1}, []float64{1, 2})
		p.AddCol(-1, -inf, inf, []int{r1}, []float64{3})
		return p
	}
	if err := valid().Validate(); err != nil {
		t.Fatalf("valid problem: %v", err)
	}
	if err := (&Problem{}).Validate(); err != nil {
		t.Fatalf("empty problem: %v", err)
	}
	cases := []struct {
		name  string
		edit  func(p *Problem)
		field string
		index int
	}{
		{"sense", func(p *Problem) { p.Sense = 2 }, "Sense", -1},
		{"row upper length", func(p *Problem) { p.RowUpper = p.RowUpper[:1] }, "RowUpper", -1},
		{"col lower length", func(p *Problem) { p.ColLower = append(p.ColLower, 0) }, "ColLower", -1},
		{"col upper length", func(p *Problem) { p.ColUpper = nil }, "ColUpper", -1},
		{"obj NaN", func(p *Problem) { p.Obj[1] = math.NaN() }, "Obj", 1},
		{"obj Inf", func(p *Problem) { p.Obj[0] = inf }, "Obj", 0},
		{"col lower NaN", func(p *Problem) { p.ColLower[1] = math.NaN() }, "ColLower", 1},
		{"col lower +Inf", func(p *Problem) { p.ColLower[0], p.ColUpper[0] = inf, inf }, "ColLower", 0},
		{"col upper -Inf", func(p *Problem) { p.ColUpper[1] = -inf }, "ColUpper", 1},
		{"col lo > hi", func(p *Problem) { p.ColLower[0] = 2 }, "ColUpper", 0},
		{"col huge finite", func(p *Problem) { p.ColUpper[0] = 1e25 }, "ColUpper", 0},
		{"row lo > hi", func(p *Problem) { p.RowLower[1] = 3 }, "RowUpper", 1},
		{"row NaN", func(p *Problem) { p.RowUpper[0] = math.NaN() }, "RowUpper", 0},
		{"row huge finite", func(p *Problem) { p.RowLower[0] = -1e20 }, "RowLower", 0},
		{"value length", func(p *Problem) { p.Value = p.Value[:2] }, "Value", -1},
		{"colstart length", func(p *Problem) { p.ColStart = p.ColStart[:2] }, "ColStart", -1},
		{"colstart first", func(p *Problem) { p.ColStart[0] = 1 }, "ColStart", 0},
		{"colstart last", func(p *Problem) { p.ColStart[2] = 2 }, "ColStart", 2},
		{"colstart decreasing", func(p *Problem) { p.ColStart[1] = -1 }, "ColStart", 1},
		{"row index high", func(p *Problem) { p.RowIndex[2] = 2 }, "RowIndex", 2},
		{"row index negative", func(p *Problem) { p.RowIndex[0] = -1 }, "RowIndex", 0},
		{"row index repeated", func(p *Problem) { p.RowIndex[1] = 0 }, "RowIndex", 1},
		{"value NaN", func(p *Problem) { p.Value[2] = math.NaN() }, "Value", 2},
		{"value Inf", func(p *Problem) { p.Value[0] = -inf }, "Value", 0},
		{"nonzeros without columns", func(p *Problem) { *p = Problem{RowIndex: []int{0}, Value: []float64{1}} }, "RowIndex", -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := valid()
			tc.edit(p)
			err := p.Validate()
			var ie *InputError
			if !errors.As(err, &ie) || !errors.Is(err, ErrInvalidInput) {
				t.Fatalf("Validate = %v, want an *InputError", err)
			}
			if ie.Field != tc.field || ie.Index != tc.index {
				t.Errorf("error names %s[%d], want %s[%d]: %v", ie.Field, ie.Index, tc.field, tc.index, err)
			}
			if !strings.Contains(err.Error(), tc.field) {
				t.Errorf("message %q does not name %s", err, tc.field)
			}
			if sol, err := Solve(context.Background(), p, Options{}); sol != nil || !errors.Is(err, ErrInvalidInput) {
				t.Errorf("Solve = %v, %v; want an *InputError", sol, err)
			}
		})
	}
}

func TestInvalidOptions(t *testing.T) {
	p := &Problem{}
	for _, tc := range []struct {
		opts  Options
		field string
	}{
		{Options{TimeLimit: -1}, "Options.TimeLimit"},
		{Options{Algorithm: 3}, "Options.Algorithm"},
		{Options{Algorithm: -1}, "Options.Algorithm"},
	} {
		_, err := Solve(context.Background(), p, tc.opts)
		var ie *InputError
		if !errors.As(err, &ie) || ie.Field != tc.field {
			t.Errorf("Solve(%+v) = %v, want an *InputError naming %s", tc.opts, err, tc.field)
		}
	}
}

func TestAddColPanicsOnLengthMismatch(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("AddCol with len(rows) != len(vals) did not panic")
		}
	}()
	(&Problem{}).AddCol(1, 0, 1, []int{0}, nil)
}

func TestVersion(t *testing.T) {
	v := Version()
	if !strings.HasPrefix(v, "1.") || strings.Count(v, ".") != 2 {
		t.Errorf("Version() = %q, want major.minor.release", v)
	}
}

func TestStringers(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{Minimize.String(), "minimize"}, {Maximize.String(), "maximize"}, {Sense(5).String(), "Sense(5)"},
		{Auto.String(), "auto"}, {Primal.String(), "primal"}, {Dual.String(), "dual"}, {Algorithm(9).String(), "Algorithm(9)"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

// artificialMagnitude is the magnitude from which a value is taken to be one of
// the dual simplex's artificial bounds (Clp's dual bound is 1e10).
const artificialMagnitude = 1e9

// checkModerate fails if a variable or row activity is at the dual simplex's
// artificial bound magnitude, which the package must clean up.
func checkModerate(t *testing.T, sol *Solution) {
	t.Helper()
	for j, v := range sol.Primal {
		if math.Abs(v) >= artificialMagnitude {
			t.Fatalf("x[%d] = %v sits at an artificial bound", j, v)
		}
	}
	for i, v := range sol.RowActivity {
		if math.Abs(v) >= artificialMagnitude {
			t.Fatalf("row activity %d = %v sits at an artificial bound", i, v)
		}
	}
}

// TestUnboundedOptimalFace solves the average-cost LP of a small MDP, whose free
// relative values h can all be shifted by a constant without changing feasibility or
// cost, so the optimal face is a line. States 0, 1, 2 on a cycle; in state s, "stay"
// costs (2, 1, 4)[s] and "next" (to s+1 mod 3) costs (3, 5, 0)[s]:
//
//	max g  s.t.  g + h_s − h_s' ≤ cost(s, a)  for each state s and action a to s'.
//
// The optimal average cost is g = 1, by enumerating the stationary policies (a
// second method): staying in state 1 forever costs 1 per step, the full cycle costs
// (3+5+0)/3 = 8/3 and staying elsewhere costs 2 or 4; state 1 is reachable from every
// state. Every algorithm must return g = 1 with moderate h.
func TestUnboundedOptimalFace(t *testing.T) {
	stay := []float64{2, 1, 4}
	next := []float64{3, 5, 0}
	p := &Problem{Sense: Maximize}
	var rowsG []int
	rowsH := make([][]int, 3)
	valsH := make([][]float64, 3)
	for s := range 3 {
		r := p.AddRow(-inf, stay[s]) // g + h_s − h_s = g ≤ stay[s]
		rowsG = append(rowsG, r)
		r = p.AddRow(-inf, next[s]) // g + h_s − h_{s+1} ≤ next[s]
		rowsG = append(rowsG, r)
		rowsH[s] = append(rowsH[s], r)
		valsH[s] = append(valsH[s], 1)
		rowsH[(s+1)%3] = append(rowsH[(s+1)%3], r)
		valsH[(s+1)%3] = append(valsH[(s+1)%3], -1)
	}
	ones := make([]float64, len(rowsG))
	for k := range ones {
		ones[k] = 1
	}
	p.AddCol(1, -inf, inf, rowsG, ones)
	for s := range 3 {
		p.AddCol(0, -inf, inf, rowsH[s], valsH[s])
	}
	best := math.Inf(1) // enumeration: each policy's average cost from state 0
	for policy := range 8 {
		s, seen, costs := 0, map[int]int{}, []float64{}
		for step := 0; ; step++ {
			if first, ok := seen[s]; ok {
				sum := 0.0
				for _, c := range costs[first:] {
					sum += c
				}
				best = math.Min(best, sum/float64(step-first))
				break
			}
			seen[s] = step
			if policy>>s&1 == 0 {
				costs = append(costs, stay[s])
			} else {
				costs = append(costs, next[s])
				s = (s + 1) % 3
			}
		}
	}
	if best != 1 {
		t.Fatalf("enumeration gives %v, want 1", best)
	}
	for _, alg := range []Algorithm{Auto, Primal, Dual} {
		sol, err := Solve(context.Background(), p, Options{Algorithm: alg})
		if err != nil {
			t.Fatalf("%v: %v", alg, err)
		}
		if !near(sol.Objective, best) {
			t.Errorf("%v: g = %v, want %v", alg, sol.Objective, best)
		}
		checkKKT(t, p, sol)
		checkModerate(t, sol)
	}
}
