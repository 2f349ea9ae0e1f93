package benchmarks

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/optd/optd/models"
	"github.com/optd/optd/thresholds"
)

// smallWorkload is the small workload of the threshold table: X ~ U[1, 100]
// independent of R ~ U{1, 2}, K = 3 jobs.
func smallWorkload() (*models.Workload, error) {
	return models.DecodeWorkload([]byte(`{"data": {"kind": "uniform", "min": 1, "max": 100},
		"reduces": {"kind": "uniform-int", "min": 1, "max": 2}}`), ".")
}

// counterexamplePoints is the example that shows the printed Theorem 2
// wrong: X ∈ {6, 13} with probability ½ each, independent of R with
// P[R=1] = 0.6, P[R=2] = 0.4; two jobs on slots of cost 1, 1, 2, 10.
var counterexamplePoints = []models.JointPoint{
	{Data: 6, Reduces: 1, Prob: 0.3}, {Data: 6, Reduces: 2, Prob: 0.2},
	{Data: 13, Reduces: 1, Prob: 0.3}, {Data: 13, Reduces: 2, Prob: 0.2},
}

var counterexampleCosts = []float64{1, 1, 2, 10}

// counterexample is the evaluation of both recursions on the example.
type counterexample struct {
	good, bad *thresholds.Table
	// rows: one per value of job 1's (X, R).
	rows []ceRow
	// Expected total costs over the whole run: the conditional table's
	// Σ_j H_(j)·c_j, the same by exhaustive search, and the expected cost
	// of following the printed recursion's thresholds.
	optimal, exhaustive, paper float64
}

// ceRow is job 1 = (x, r): where each recursion places it and the expected
// total cost (job 1's cost plus job 2 placed optimally on the rest).
type ceRow struct {
	x                    float64
	r                    int
	prob                 float64
	goodPos, badPos      []int
	goodCost, badCost    float64
	exhaustive, relError float64
}

// evalCounterexample computes the example with the public API: both tables,
// each recursion's placement of job 1, and the expected total cost, job 2
// being placed optimally by a 1-job table (Theorem 1). The exhaustive column
// is a second method: the minimum over every r-subset of the slots for job 1.
func evalCounterexample(ctx context.Context) (*counterexample, error) {
	w, err := models.NewJointWorkload(counterexamplePoints)
	if err != nil {
		return nil, err
	}
	ce := &counterexample{}
	if ce.good, err = thresholds.BuildTable(ctx, w, 2, thresholds.Options{}); err != nil {
		return nil, err
	}
	if ce.bad, err = thresholds.BuildTable(ctx, w, 2, thresholds.Options{Recursion: thresholds.PaperRecursion}); err != nil {
		return nil, err
	}
	last, err := thresholds.BuildTable(ctx, w, 1, thresholds.Options{})
	if err != nil {
		return nil, err
	}
	// total(x, r, pos): job 1 on the sorted slots at pos, job 2 optimal on
	// the others.
	total := func(x float64, r int, pos []int) (float64, error) {
		var h float64
		var rest []float64
		for i, c := range counterexampleCosts {
			if slices.Contains(pos, i) {
				h += c
			} else {
				rest = append(rest, c)
			}
		}
		c2, err := last.ExpectedCost(rest)
		return x/float64(r)*h + c2, err
	}
	if ce.optimal, err = ce.good.ExpectedCost(counterexampleCosts); err != nil {
		return nil, err
	}
	for _, pt := range counterexamplePoints {
		row := ceRow{x: pt.Data, r: pt.Reduces, prob: pt.Prob, exhaustive: math.Inf(1)}
		pg, err := thresholds.Place(ce.good.Stages[0], len(counterexampleCosts), pt.Data, pt.Reduces)
		if err != nil {
			return nil, err
		}
		pb, err := thresholds.Place(ce.bad.Stages[0], len(counterexampleCosts), pt.Data, pt.Reduces)
		if err != nil {
			return nil, err
		}
		row.goodPos, row.badPos = pg.Positions, pb.Positions
		if row.goodCost, err = total(pt.Data, pt.Reduces, pg.Positions); err != nil {
			return nil, err
		}
		if row.badCost, err = total(pt.Data, pt.Reduces, pb.Positions); err != nil {
			return nil, err
		}
		for _, pos := range subsets(len(counterexampleCosts), pt.Reduces) {
			c, err := total(pt.Data, pt.Reduces, pos)
			if err != nil {
				return nil, err
			}
			row.exhaustive = min(row.exhaustive, c)
		}
		row.relError = (row.badCost - row.goodCost) / row.goodCost
		ce.rows = append(ce.rows, row)
		ce.exhaustive += pt.Prob * row.exhaustive
		ce.paper += pt.Prob * row.badCost
	}
	return ce, nil
}

// subsets returns every k-subset of 0..n−1, ascending.
func subsets(n, k int) [][]int {
	var out [][]int
	var rec func(start int, cur []int)
	rec = func(start int, cur []int) {
		if len(cur) == k {
			out = append(out, slices.Clone(cur))
			return
		}
		for i := start; i < n; i++ {
			rec(i+1, append(cur, i))
		}
	}
	rec(0, nil)
	return out
}

// thresholdsSection prints the threshold table of a small workload (both
// recursions) and the counterexample's error.
func thresholdsSection(ctx context.Context, env *Env) (*Output, error) {
	const jobs = 3
	w, err := smallWorkload()
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Thresholds q_{j,i} of Theorem 2 for K = %d sequential jobs, X ~ U[1, 100] independent of R ~ U{1, 2} "+
		"(exact partial expectations, no sampling). Job i with y = X/R takes the cheapest-first free positions c+1..c+R, "+
		"c = #{j : q_{j,i} > y} (Theorem 1). optd conditions the recursion on R (see package thresholds); the printed "+
		"recursion takes the unconditional law of Y in every term.\n\n", jobs)
	tabs := map[thresholds.Recursion]*thresholds.Table{}
	for _, rec := range []thresholds.Recursion{thresholds.ConditionalRecursion, thresholds.PaperRecursion} {
		if tabs[rec], err = thresholds.BuildTable(ctx, w, jobs, thresholds.Options{Recursion: rec}); err != nil {
			return nil, err
		}
	}
	width := len(tabs[thresholds.ConditionalRecursion].CostCoefficients)
	head := []string{"recursion", "row"}
	for j := 1; j <= width; j++ {
		head = append(head, fmt.Sprintf("j = %d", j))
	}
	t := newTable(head...)
	for _, rec := range []thresholds.Recursion{thresholds.ConditionalRecursion, thresholds.PaperRecursion} {
		tab := tabs[rec]
		rows := append([][]float64{tab.CostCoefficients}, tab.Stages[:jobs-1]...)
		for i, q := range rows {
			cells := []any{rec.String(), fmt.Sprintf("q_{j,%d}", i)}
			for j := range width {
				if j < len(q) {
					cells = append(cells, q[j])
				} else {
					cells = append(cells, "")
				}
			}
			t.add(cells...)
		}
	}
	b.WriteString(t.String())
	b.WriteString("\nRow q_{j,0} is the cost coefficients: the optimal expected total cost on slot costs H_(1) ≤ H_(2) ≤ … is Σ_j H_(j)·q_{j,0}.\n")

	ce, err := evalCounterexample(ctx)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(&b, "\n**The independence formula's error.** Two jobs, slot costs %v, X ∈ {6, 13} with probability ½ each, "+
		"independent of R with P[R=1] = 0.6, P[R=2] = 0.4. Thresholds of job 1: conditional %s, printed %s. "+
		"Expected total cost given job 1's (X, R), job 2 then placed optimally (positions are 0-based in the cheapest-first list; "+
		"the exhaustive column minimizes over every placement of job 1, a second method):\n\n",
		counterexampleCosts, fmtVec(ce.good.Stages[0]), fmtVec(ce.bad.Stages[0]))
	ct := newTable("job 1 (X, R)", "P", "conditional: slots", "cost", "exhaustive optimum", "printed: slots", "cost", "excess")
	worst := ceRow{}
	for _, r := range ce.rows {
		ct.add(fmt.Sprintf("(%g, %d)", r.x, r.r), r.prob, fmt.Sprint(r.goodPos), r.goodCost, r.exhaustive, fmt.Sprint(r.badPos), r.badCost, pct(r.relError))
		if r.relError > worst.relError {
			worst = r
		}
	}
	b.WriteString(ct.String())
	fmt.Fprintf(&b, "\nWhen job 1 is (%g, %d), the printed recursion costs %s more than optimal (%s vs %s). Over the whole run the "+
		"printed thresholds cost %s vs the optimum %s (exhaustive: %s), i.e. %s more.\n",
		worst.x, worst.r, pct(worst.relError), num(worst.badCost), num(worst.goodCost),
		num(ce.paper), num(ce.optimal), num(ce.exhaustive), pct((ce.paper-ce.optimal)/ce.optimal))
	return &Output{Markdown: b.String()}, nil
}

// fmtVec formats a vector of thresholds.
func fmtVec(v []float64) string { return "(" + joinEach(v, num, ", ") + ")" }
