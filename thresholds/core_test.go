package thresholds

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/floats/scalar"
)

// counterexample is the two-job workload on which the printed Theorem 2
// misplaces a job: X ∈ {6, 13} with probability 1/2 each, independent of
// R ∈ {1, 2} with P[R=1] = 0.6, P[R=2] = 0.4.
var counterexample = []point{
	{x: 6, r: 1, prob: 0.3}, {x: 6, r: 2, prob: 0.2},
	{x: 13, r: 1, prob: 0.3}, {x: 13, r: 2, prob: 0.2},
}

// TestPaperRecursionCounterexample reproduces the figure: two jobs,
// slot costs 1, 1, 2, 10; job 1 arrives with X = 6, R = 2 (y = 3). The
// correct thresholds are (E[Y], P[R=2]·E[Y|R=2]) = (7.6, 1.9), so job 1 takes
// positions 2-3 at expected total cost 3·(1+2) + 1·7.6 + 10·1.9 = 35.6. The
// printed recursion gives (E[Y], P[R≥2]·E[Y]) = (7.6, 3.04) (its Remark 2),
// sends job 1 to positions 3-4 and costs 3·(2+10) + 1·7.6 + 1·1.9 = 45.5,
// i.e. 27.8% more than optimal.
func TestPaperRecursionCounterexample(t *testing.T) {
	costs := []float64{1, 1, 2, 10}
	conds, rb := condsOf(t, counterexample)
	good, err := buildTable(context.Background(), conds, 2, rb, Options{})
	if err != nil {
		t.Fatal(err)
	}
	bad, err := buildTable(context.Background(), conds, 2, rb, Options{Recursion: PaperRecursion})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		got  []float64
		want []float64
	}{
		{"conditional", good.Stages[0], []float64{7.6, 1.9}},
		{"paper", bad.Stages[0], []float64{7.6, 3.04}},
	} {
		for j := range c.want {
			if !scalar.EqualWithinAbsOrRel(c.got[j], c.want[j], exactRelTol, exactRelTol) {
				t.Errorf("%s: q_{%d,1} = %v, want %v", c.name, j+1, c.got[j], c.want[j])
			}
		}
	}
	// Expected total cost of placing job 1 = (6, 2) at the given positions,
	// then job 2 optimally (second method: exhaustive over every 2-subset).
	x, r := 6.0, 2
	costOf := func(pos []int) float64 {
		var rest []float64
		var h float64
		for i, c := range costs {
			if slices.Contains(pos, i) {
				h += c
			} else {
				rest = append(rest, c)
			}
		}
		return x/float64(r)*h + exhaustiveOptimum(counterexample, 1, rest)
	}
	best := math.Inf(1)
	for a := range costs {
		for b := a + 1; b < len(costs); b++ {
			best = min(best, costOf([]int{a, b}))
		}
	}
	pg, err := Place(good.Stages[0], len(costs), x, r)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := Place(bad.Stages[0], len(costs), x, r)
	if err != nil {
		t.Fatal(err)
	}
	cg, cb := costOf(pg.Positions), costOf(pb.Positions)
	if !slices.Equal(pg.Positions, []int{1, 2}) || !slices.Equal(pb.Positions, []int{2, 3}) {
		t.Fatalf("positions: conditional %v (want [1 2]), paper %v (want [2 3])", pg.Positions, pb.Positions)
	}
	if !scalar.EqualWithinAbsOrRel(cg, best, exactRelTol, exactRelTol) || !scalar.EqualWithinAbsOrRel(cg, 35.6, exactRelTol, exactRelTol) {
		t.Errorf("conditional placement costs %v, optimum %v, want 35.6", cg, best)
	}
	excess := cb/best - 1
	if math.Abs(excess-0.278) > 0.0005 || !scalar.EqualWithinAbsOrRel(cb, 45.5, exactRelTol, exactRelTol) {
		t.Errorf("paper placement costs %v = optimum·(1 + %.4f), want 45.5 (+27.8%%)", cb, excess)
	}
	// Over the whole run (both jobs random) the printed thresholds cost more too.
	opt, err := good.ExpectedCost(costs)
	if err != nil {
		t.Fatal(err)
	}
	paper := policyCost(t, bad, counterexample, costs)
	if !(paper > opt*(1+1e-6)) {
		t.Errorf("paper policy %v not worse than optimum %v", paper, opt)
	}
	t.Logf("job (6,2): optimal %.4g, printed recursion %.4g (+%.1f%%); whole run: optimal %.6g, printed %.6g (+%.2f%%)",
		cg, cb, 100*excess, opt, paper, 100*(paper/opt-1))
}

// TestTableProperties checks, on random discrete joint laws (including ones
// where Y depends on R): thresholds non-increasing and ≥ 0; the cost
// coefficients sum to K·E[X] (every job places all of its data); the last
// stage is q_{K−1}[j] = Σ_v P[R=v]·E[Y|R=v]·1{j ≤ v} (which for independent
// X and R is the formula); each stage's entries sum to (K−n)·E[X];
// the result does not depend on the number of workers.
func TestTableProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 8))
	for c := range 60 {
		jobs := 1 + rng.IntN(12)
		maxR := 1 + rng.IntN(6)
		pts := randomPoints(rng, maxR)
		t.Run(fmt.Sprintf("case=%d/K=%d/R=%d", c, jobs, maxR), func(t *testing.T) {
			conds, rb := condsOf(t, pts)
			tab, err := buildTable(context.Background(), conds, jobs, rb, Options{Workers: 2})
			if err != nil {
				t.Fatal(err)
			}
			seq, err := buildTable(context.Background(), conds, jobs, rb, Options{Workers: 1})
			if err != nil {
				t.Fatal(err)
			}
			var ex float64
			for _, p := range pts {
				ex += p.prob * p.x
			}
			checkTableShape(t, tab, jobs, rb)
			for n := 0; n <= jobs; n++ {
				q := tab.CostCoefficients
				if n > 0 {
					q = tab.Stages[n-1]
					if !slices.Equal(q, seq.Stages[n-1]) {
						t.Fatalf("stage %d differs between 1 and 2 workers", n)
					}
				}
				var s float64
				for _, x := range q {
					s += x
				}
				want := float64(jobs-n) * ex
				if !scalar.EqualWithinAbsOrRel(s, want, 1e-12*float64(jobs), 1e-12*float64(jobs)) {
					t.Errorf("Σ_j q_{j,%d} = %v, want (K−%d)·E[X] = %v", n, s, n, want)
				}
			}
			if jobs >= 2 {
				last := tab.Stages[jobs-2]
				for j := range last {
					var want float64
					for _, c := range conds {
						if j < c.r {
							want += c.prob * c.meanY()
						}
					}
					if !scalar.EqualWithinAbsOrRel(last[j], want, exactRelTol, exactRelTol) {
						t.Errorf("q_{%d,K−1} = %v, want Σ_v P[R=v]·E[Y|v]·1{j≤v} = %v", j+1, last[j], want)
					}
				}
			}
			if tab.MonotoneRepair > 1e-12*ex {
				t.Errorf("rounding repaired monotonicity by %v", tab.MonotoneRepair)
			}
		})
	}
}

// checkTableShape checks lengths, finiteness, non-negativity and
// monotonicity of every stage.
func checkTableShape(t *testing.T, tab *Table, jobs, rb int) {
	t.Helper()
	if tab.Jobs != jobs || tab.MaxReduces != rb || len(tab.Stages) != jobs || len(tab.CostCoefficients) != jobs*rb {
		t.Fatalf("shape: jobs %d, max R %d, %d stages, %d coefficients", tab.Jobs, tab.MaxReduces, len(tab.Stages), len(tab.CostCoefficients))
	}
	all := append([][]float64{tab.CostCoefficients}, tab.Stages...)
	for n, q := range all {
		if len(q) != (jobs-n)*rb {
			t.Fatalf("stage %d has %d thresholds, want %d", n, len(q), (jobs-n)*rb)
		}
		for j, x := range q {
			if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
				t.Fatalf("q_{%d,%d} = %v", j+1, n, x)
			}
			if j > 0 && x > q[j-1] {
				t.Fatalf("stage %d increases at %d: %v > %v", n, j+1, x, q[j-1])
			}
		}
	}
}

func TestPlace(t *testing.T) {
	q := []float64{9, 5, 5, 2, 0, 0}
	for _, c := range []struct {
		name         string
		free         int
		x            float64
		r            int
		want         []int
		above, below float64
		clamped      bool
	}{
		{"largest", 8, 20, 2, []int{0, 1}, math.Inf(1), 9, false},
		{"tie with q1 goes in front", 8, 9, 1, []int{0}, math.Inf(1), 9, false},
		{"between", 8, 12, 2, []int{1, 2}, 9, 5, false},
		{"tie with a run", 8, 5, 1, []int{1}, 9, 5, false},
		{"below a run", 8, 9, 3, []int{3, 4, 5}, 5, 2, false},
		{"zero data", 8, 0, 2, []int{4, 5}, 2, 0, false},
		{"clamped", 5, 0, 2, []int{3, 4}, 2, 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := Place(q, c.free, c.x, c.r)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(p.Positions, c.want) || p.Above != c.above || p.Below != c.below || p.Clamped != c.clamped {
				t.Errorf("got %+v, want positions %v above %v below %v clamped %v", p, c.want, c.above, c.below, c.clamped)
			}
			if !(p.Above > p.Y && p.Y >= p.Below) {
				t.Errorf("reason %v > y = %v ≥ %v does not hold", p.Above, p.Y, p.Below)
			}
		})
	}
	for _, c := range []struct {
		name string
		free int
		x    float64
		r    int
		want error
	}{
		{"too few slots", 1, 3, 2, ErrNoFreeSlots},
		{"negative data", 8, -1, 1, ErrJob},
		{"NaN data", 8, math.NaN(), 1, ErrJob},
		{"no reducers", 8, 1, 0, ErrJob},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := Place(q, c.free, c.x, c.r); !errors.Is(err, c.want) {
				t.Errorf("err = %v, want %v", err, c.want)
			}
		})
	}
}

func TestBuildTableErrors(t *testing.T) {
	conds, rb := condsOf(t, counterexample)
	if _, err := buildTable(context.Background(), conds, 0, rb, Options{}); !errors.Is(err, ErrJobs) {
		t.Errorf("K = 0: err = %v, want ErrJobs", err)
	}
	_, err := buildTable(context.Background(), conds, 1000, rb, Options{MaxTableBytes: 1 << 20})
	var mle *MemoryLimitError
	if !errors.As(err, &mle) || !errors.Is(err, ErrTooLarge) || mle.Limit != 1<<20 || mle.Jobs != 1000 {
		t.Errorf("over the limit: err = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := buildTable(ctx, conds, 5, rb, Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err = %v", err)
	}
	if _, err := newAtomicLaw([]float64{-1, 2}, []float64{0.5, 0.5}); !errors.Is(err, ErrWorkload) {
		t.Errorf("negative atom: err = %v", err)
	}
	// One job: no thresholds, c_j = Σ_v P[R=v]·E[Y|v]·1{j ≤ v}.
	tab, err := buildTable(context.Background(), conds, 1, rb, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(tab.Stages) != 1 || len(tab.Stages[0]) != 0 || !scalar.EqualWithinAbsOrRel(tab.CostCoefficients[1], 0.4*4.75, exactRelTol, exactRelTol) {
		t.Errorf("K = 1: %+v", tab)
	}
	if _, err := tab.ExpectedCost([]float64{1}); !errors.Is(err, ErrSlotCosts) {
		t.Errorf("one slot cost for two: err = %v", err)
	}
	if _, err := tab.ExpectedCost([]float64{1, math.Inf(1)}); !errors.Is(err, ErrSlotCosts) {
		t.Errorf("infinite slot cost: err = %v", err)
	}
}

// TestLargeKAtoms checks stability for many jobs on a discrete law with a
// large spread of values: finite, monotone, Σ c_j = K·E[X].
func TestLargeKAtoms(t *testing.T) {
	pts := []point{{1e-3, 1, 0.5}, {1e6, 3, 0.25}, {5, 7, 0.25}}
	conds, rb := condsOf(t, pts)
	const jobs = 300
	tab, err := buildTable(context.Background(), conds, jobs, rb, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkTableShape(t, tab, jobs, rb)
	var s, ex float64
	for _, c := range tab.CostCoefficients {
		s += c
	}
	for _, p := range pts {
		ex += p.prob * p.x
	}
	if !scalar.EqualWithinAbsOrRel(s, jobs*ex, 1e-10, 1e-10) {
		t.Errorf("Σ c_j = %v, want K·E[X] = %v", s, jobs*ex)
	}
}
