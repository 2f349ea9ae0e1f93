package benchmarks

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gonum.org/v1/gonum/floats/scalar"

	"github.com/optd/optd/solver/lp"
)

// lpAgreeTol is the relative tolerance between Clp's objective and the one
// glpsol prints (glpsol prints about 10 significant digits).
const lpAgreeTol = 1e-7

// transportLP is a transportation problem with m sources and n sinks:
// minimize Σ c_ij·x_ij subject to Σ_j x_ij ≤ s_i, Σ_i x_ij ≥ d_j, x ≥ 0,
// costs U{1..100}, demands U{10..100}, supplies 20% above the total demand,
// split evenly.
func transportLP(rng *rand.Rand, m, n int) *lp.Problem {
	p := &lp.Problem{Sense: lp.Minimize}
	var demand float64
	d := make([]float64, n)
	for j := range d {
		d[j] = float64(10 + rng.IntN(91))
		demand += d[j]
	}
	for range m {
		p.AddRow(math.Inf(-1), math.Ceil(1.2*demand/float64(m)))
	}
	for j := range n {
		p.AddRow(d[j], math.Inf(1))
	}
	for i := range m {
		for j := range n {
			p.AddCol(float64(1+rng.IntN(100)), 0, math.Inf(1), []int{i, m + j}, []float64{1, 1})
		}
	}
	return p
}

// coverLP is a fractional set-covering LP: minimize c·x subject to A x ≥ 1,
// 0 ≤ x ≤ 1, with A 0/1 and k ones per column in random rows (every row
// covered at least by an extra column), costs U{1..20}.
func coverLP(rng *rand.Rand, rows, cols, k int) *lp.Problem {
	p := &lp.Problem{Sense: lp.Minimize}
	for range rows {
		p.AddRow(1, math.Inf(1))
	}
	for range cols {
		idx := rng.Perm(rows)[:k]
		vals := make([]float64, k)
		for i := range vals {
			vals[i] = 1
		}
		p.AddCol(float64(1+rng.IntN(20)), 0, 1, idx, vals)
	}
	for i := range rows { // feasibility: a costly column per row
		p.AddCol(100, 0, 1, []int{i}, []float64{1})
	}
	return p
}

// namedLP is an LP of the comparison.
type namedLP struct {
	name string
	p    *lp.Problem
}

func lpInstances(env *Env) []namedLP {
	rng := rand.New(rand.NewPCG(env.Seed, 7))
	out := []namedLP{
		{"transport-20x50", transportLP(rng, 20, 50)},
		{"cover-500x1000", coverLP(rng, 500, 1000, 5)},
	}
	if !env.Quick {
		out = append(out,
			namedLP{"transport-100x200", transportLP(rng, 100, 200)},
			namedLP{"cover-2000x5000", coverLP(rng, 2000, 5000, 5)},
		)
	}
	return out
}

// perfLP times optd's Clp binding (in process: load, solve, read the
// solution) against `glpsol --lp` (a process reading the same LP, written
// in CPLEX LP format) and checks that both find the same optimum.
func perfLP(ctx context.Context, env *Env) (*Output, error) {
	if env.Machine.GLPK == "" {
		return nil, Skipf("glpsol (Debian glpk-utils) is not on PATH")
	}
	minTime := Pick(env, 100*time.Millisecond, 2*time.Second)
	dir, err := os.MkdirTemp("", "optd-bench-lp")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	// The cost of starting glpsol at all: a one-variable LP.
	tiny := &lp.Problem{Sense: lp.Minimize}
	tiny.AddRow(1, math.Inf(1))
	tiny.AddCol(1, 0, math.Inf(1), []int{0}, []float64{1})
	insts := append([]namedLP{{"tiny-1x1", tiny}}, lpInstances(env)...)
	t := newTable("LP", "rows × columns (nonzeros)", "Clp binding", "glpsol", "objective", "glpsol time / Clp time")
	var bench []BenchResult
	var ratios []float64
	for _, inst := range insts {
		file := filepath.Join(dir, inst.name+".lp")
		if err := writeLPFile(file, inst.p); err != nil {
			return nil, err
		}
		var sol *lp.Solution
		bc, err := Measure(ctx, "LP/lp="+inst.name+"/solver=clp", minTime, 10000, func(ctx context.Context) ([]Metric, error) {
			var err error
			sol, err = lp.Solve(ctx, inst.p, lp.Options{})
			if err != nil {
				return nil, err
			}
			return []Metric{{Value: float64(sol.Iterations), Unit: "iterations"}}, nil
		})
		if err != nil {
			return nil, err
		}
		var g *PeerResult
		bg, err := Measure(ctx, "LP/lp="+inst.name+"/solver=glpsol", minTime, 1000, func(ctx context.Context) ([]Metric, error) {
			var err error
			g, err = RunGLPSOL(ctx, file)
			return nil, err
		})
		if err != nil {
			return nil, err
		}
		if !g.Optimal {
			return nil, fmt.Errorf("%s: glpsol status %q", inst.name, g.Status)
		}
		if !scalar.EqualWithinAbsOrRel(sol.Objective, g.Objective, lpAgreeTol, lpAgreeTol) {
			return nil, fmt.Errorf("%s: Clp objective %v, glpsol %v", inst.name, sol.Objective, g.Objective)
		}
		ratio := bg.Seconds() / bc.Seconds()
		if inst.name != "tiny-1x1" {
			ratios = append(ratios, ratio)
		}
		t.add(inst.name, fmt.Sprintf("%d × %d (%d)", inst.p.NumRows(), inst.p.NumCols(), len(inst.p.Value)),
			ms(bc.Seconds()), ms(bg.Seconds()), num(sol.Objective), fmt.Sprintf("%.1f×", ratio))
		bench = append(bench, bc, bg)
		env.Logf("%s: clp %.3g s, glpsol %.3g s", inst.name, bc.Seconds(), bg.Seconds())
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Seeded random LPs (seed %d): transportation problems (equality-free, two nonzeros per column) and fractional "+
		"set covering (5 ones per column, 0 ≤ x ≤ 1). optd's binding (Clp %s, dual simplex, no presolve) solves in process; "+
		"GLPK %s's `glpsol --lp FILE -o OUT` reads the same LP written in CPLEX LP format (WriteCPLEXLP). Both objectives agree "+
		"within %g on every LP. Times are means over runs of at least %s. glpsol's time includes starting the process and "+
		"parsing the file: the tiny-1x1 row measures that overhead.\n\n", env.Seed, env.Machine.Clp, env.Machine.GLPK, lpAgreeTol, minTime)
	b.WriteString(t.String())
	fmt.Fprintf(&b, "\nGeometric mean of glpsol time / Clp time over the %d non-trivial LPs: **%.1f×**.\n", len(ratios), geomean(ratios))
	return &Output{Markdown: b.String(), Bench: bench}, nil
}

// writeLPFile writes p to path in CPLEX LP format.
func writeLPFile(path string, p *lp.Problem) error {
	return writeFileWith(path, func(w io.Writer) error { return WriteCPLEXLP(w, p) })
}

// writeFileWith creates path and fills it with write.
func writeFileWith(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
