package benchmarks

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/gonum/floats/scalar"

	"github.com/optd/optd/solver/lp"
)

// randomLP draws a feasible, bounded LP with every kind of row and column
// bound: a point x0 ~ U[−5, 5]^n is feasible by construction (rows are
// equalities, ≤, ≥, ranged or free around A·x0), and every column is boxed
// around x0 (sometimes fixed), so the LP is bounded in either sense.
func randomLP(rng *rand.Rand) *lp.Problem {
	n, m := 1+rng.IntN(8), 1+rng.IntN(6)
	x0 := make([]float64, n)
	for j := range x0 {
		x0[j] = math.Round(10*(rng.Float64()*10-5)) / 10
	}
	a := make([][]float64, m)
	for i := range a {
		a[i] = make([]float64, n)
		for j := range a[i] {
			if rng.IntN(2) == 0 {
				a[i][j] = float64(rng.IntN(11) - 5)
			}
		}
	}
	p := &lp.Problem{Sense: lp.Sense(rng.IntN(2))}
	for i := range m {
		var ax float64
		for j := range n {
			ax += a[i][j] * x0[j]
		}
		switch rng.IntN(5) {
		case 0:
			p.AddRow(ax, ax)
		case 1:
			p.AddRow(math.Inf(-1), ax+float64(rng.IntN(3)))
		case 2:
			p.AddRow(ax-float64(rng.IntN(3)), math.Inf(1))
		case 3:
			p.AddRow(ax-1, ax+2)
		default:
			p.AddRow(math.Inf(-1), math.Inf(1))
		}
	}
	for j := range n {
		var rows []int
		var vals []float64
		for i := range m {
			if a[i][j] != 0 {
				rows, vals = append(rows, i), append(vals, a[i][j])
			}
		}
		// Every column is boxed around x0 (so the LP is bounded), in one
		// of the forms the writer distinguishes.
		lo, hi := x0[j]-float64(1+rng.IntN(5)), x0[j]+float64(1+rng.IntN(5))
		if rng.IntN(6) == 0 {
			lo, hi = x0[j], x0[j]
		}
		p.AddCol(float64(rng.IntN(11)-5), lo, hi, rows, vals)
	}
	return p
}

// TestWriteCPLEXLPAgainstGLPK writes random LPs with every kind of bound and
// checks that glpsol, reading the file, finds the optimum Clp finds on the
// Problem itself (the second method for the writer).
func TestWriteCPLEXLPAgainstGLPK(t *testing.T) {
	if _, err := exec.LookPath("glpsol"); err != nil {
		t.Skip("glpsol (Debian glpk-utils) is not on PATH")
	}
	rng := rand.New(rand.NewPCG(8, 8))
	dir := t.TempDir()
	for c := range 40 {
		p := randomLP(rng)
		want, err := lp.Solve(context.Background(), p, lp.Options{})
		if err != nil {
			t.Fatalf("case %d: Clp: %v", c, err)
		}
		file := filepath.Join(dir, "case.lp")
		if err := writeLPFile(file, p); err != nil {
			t.Fatal(err)
		}
		got, err := RunGLPSOL(context.Background(), file)
		if err != nil {
			t.Fatalf("case %d: %v", c, err)
		}
		if !got.Optimal || !scalar.EqualWithinAbsOrRel(got.Objective, want.Objective, 1e-7, 1e-7) {
			t.Fatalf("case %d: glpsol %s %v, Clp %v", c, got.Status, got.Objective, want.Objective)
		}
	}
}

func TestWriteCPLEXLPShape(t *testing.T) {
	p := &lp.Problem{Sense: lp.Maximize}
	p.AddRow(math.Inf(-1), math.Inf(1)) // free row: left out
	p.AddRow(1, 3)                      // ranged: two rows
	p.AddCol(-2.5, math.Inf(-1), math.Inf(1), []int{1}, []float64{-1})
	p.AddCol(0, 1, 1, []int{0}, []float64{1})
	var b strings.Builder
	if err := WriteCPLEXLP(&b, p); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Maximize\n obj: - 2.5 x0\n", " r1_lo: - 1 x0 >= 1\n", " r1_hi: - 1 x0 <= 3\n", " x0 free\n", " x1 = 1\n", "End\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "r0") {
		t.Errorf("free row written:\n%s", b.String())
	}
	bad := &lp.Problem{Obj: []float64{1}}
	if err := WriteCPLEXLP(&b, bad); !errors.Is(err, lp.ErrInvalidInput) {
		t.Errorf("malformed problem: err = %v, want lp.ErrInvalidInput", err)
	}
}
