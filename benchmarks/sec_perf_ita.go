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

	"github.com/optd/optd/solver"
)

// namedInstance is an ITA instance of the comparison.
type namedInstance struct {
	name string
	in   *solver.Instance
}

// itaInstances are the instances of the ITA comparison: the four HaSTE
// tables, a random 20 nodes × 20 types × 2 resources instance and (full
// mode) hard 3-resource instances: 40-50 heterogeneous nodes, 8-10 types,
// capacities U{16..48}, 1.5 times more demand than capacity. All are drawn
// from seeded PCG streams (seed, instance number).
func itaInstances(env *Env) ([]namedInstance, error) {
	var out []namedInstance
	for _, n := range solver.BuiltinNames() {
		in, err := solver.BuiltinInstance(n)
		if err != nil {
			return nil, err
		}
		out = append(out, namedInstance{n, in})
	}
	rng := rand.New(rand.NewPCG(env.Seed, 20))
	in, err := solver.RandomInstance(rng, solver.RandomSpec{Nodes: 20, Types: 20, Resources: 2})
	if err != nil {
		return nil, err
	}
	out = append(out, namedInstance{"random-20x20x2", in})
	for i := range Pick(env, 0, 3) {
		rng := rand.New(rand.NewPCG(env.Seed, 100+uint64(i)))
		in, err := solver.RandomInstance(rng, solver.RandomSpec{
			Nodes: 40 + rng.IntN(11), Types: 8 + rng.IntN(3), Resources: 3,
			CapMin: 16, CapMax: 48, DemandMaxFrac: 0.5, Supply: 1.5,
		})
		if err != nil {
			return nil, err
		}
		out = append(out, namedInstance{fmt.Sprintf("hard%d-%dx%dx3", i, len(in.Nodes), len(in.Tasks)), in})
	}
	return out, nil
}

// cbcObjective recomputes the objective of CBC's integer solution from its
// x_j_i values (so that it compares exactly, not through CBC's printed
// decimals).
func cbcObjective(in *solver.Instance, r *PeerResult) (float64, error) {
	var obj float64
	for name, v := range r.Values {
		var j, i int
		if _, err := fmt.Sscanf(name, "x_%d_%d", &j, &i); err != nil || i < 0 || i >= len(in.Tasks) {
			return 0, fmt.Errorf("cbc: unexpected column %q", name)
		}
		obj += math.Round(v) * in.Value(i)
	}
	return obj, nil
}

// perfITA times optd's exact ITA solver against `cbc -threads 1` on the same
// instances (the compact integer program of solver.WriteLP), both with the
// same time limit, in the same run.
func perfITA(ctx context.Context, env *Env) (*Output, error) {
	if env.Machine.CBC == "" {
		return nil, Skipf("cbc (Debian coinor-cbc) is not on PATH")
	}
	limit := Pick(env, time.Second, 60*time.Second)
	minTime := Pick(env, 100*time.Millisecond, 2*time.Second)
	insts, err := itaInstances(env)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "optd-bench-ita")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	t := newTable("instance", "nodes × types × resources", "exact", "proven", "cbc -threads 1", "proven", "same optimum", "cbc time / exact time")
	var bench []BenchResult
	var ratios []float64
	var open []string // instances where one solver hit the limit
	for _, ni := range insts {
		lpFile := filepath.Join(dir, ni.name+".lp")
		if err := writeFileWith(lpFile, func(w io.Writer) error { return solver.WriteLP(w, ni.in) }); err != nil {
			return nil, err
		}
		var ex *solver.Result
		be, err := Measure(ctx, "ITA/instance="+ni.name+"/solver=exact", minTime, 1000, func(ctx context.Context) ([]Metric, error) {
			var err error
			ex, err = solver.Exact(ctx, ni.in, solver.Options{TimeLimit: limit})
			if err != nil {
				return nil, err
			}
			return []Metric{{Value: ex.Objective, Unit: "objective"}, {Value: b2f(ex.Optimal), Unit: "proven"}}, nil
		})
		if err != nil {
			return nil, err
		}
		var cb *PeerResult
		var cbObj float64
		bc, err := Measure(ctx, "ITA/instance="+ni.name+"/solver=cbc", minTime, 1000, func(ctx context.Context) ([]Metric, error) {
			var err error
			if cb, err = RunCBC(ctx, lpFile, limit); err != nil {
				return nil, err
			}
			if cbObj, err = cbcObjective(ni.in, cb); err != nil {
				return nil, err
			}
			return []Metric{{Value: cbObj, Unit: "objective"}, {Value: b2f(cb.Optimal), Unit: "proven"}}, nil
		})
		if err != nil {
			return nil, err
		}
		same := "–"
		if ex.Optimal && cb.Optimal {
			if cbObj != ex.Objective {
				return nil, fmt.Errorf("%s: exact proved %v optimal, cbc proved %v", ni.name, ex.Objective, cbObj)
			}
			same = "yes"
		}
		if cbObj > ex.UpperBound+1e-9 {
			return nil, fmt.Errorf("%s: cbc found %v above exact's proven bound %v", ni.name, cbObj, ex.UpperBound)
		}
		ratio := bc.Seconds() / be.Seconds()
		cell := fmt.Sprintf("%.3g×", ratio)
		switch {
		case ex.Optimal && cb.Optimal:
			ratios = append(ratios, ratio)
		case !ex.Optimal:
			cell += " (exact hit the limit)"
			open = append(open, fmt.Sprintf("%s (exact: %s, proven bound %s; cbc: %s, %s)", ni.name,
				num(ex.Objective), num(ex.UpperBound), num(cbObj), cb.Status))
		default:
			cell += " (cbc hit the limit)"
			open = append(open, fmt.Sprintf("%s (exact: %s proven; cbc: %s, %s)", ni.name, num(ex.Objective), num(cbObj), cb.Status))
		}
		t.add(ni.name, fmt.Sprintf("%d × %d × %d", len(ni.in.Nodes), len(ni.in.Tasks), ni.in.Resources()),
			ms(be.Seconds()), ex.Optimal, ms(bc.Seconds()), cb.Optimal, same, cell)
		bench = append(bench, be, bc)
		env.Logf("%s: exact %.3g s, cbc %.3g s", ni.name, be.Seconds(), bc.Seconds())
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Each instance is solved by optd's exact branch and bound (in process) and by CBC %s single-threaded "+
		"(`cbc FILE -threads 1 -sec %g -solve`, a separate process reading the LP file that solver.WriteLP writes) with "+
		"the same time limit of %s; times are means over repeated runs of at least %s each (process start and file "+
		"reading included for CBC). Objectives are compared exactly where both proved optimality.\n\n",
		env.Machine.CBC, limit.Seconds(), limit, minTime)
	b.WriteString(t.String())
	if len(ratios) > 0 {
		fmt.Fprintf(&b, "\nGeometric mean of cbc time / exact time over the %d instances both proved: **%.1f×**.\n", len(ratios), geomean(ratios))
	}
	if len(open) > 0 {
		fmt.Fprintf(&b, "\nNot proven within %s by one of the two: %s.\n", limit, strings.Join(open, "; "))
	}
	return &Output{Markdown: b.String(), Bench: bench}, nil
}

// b2f is 1 for true and 0 for false.
func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// geomean is the geometric mean of positive numbers.
func geomean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += math.Log(x)
	}
	return math.Exp(s / float64(len(xs)))
}
