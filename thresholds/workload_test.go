package thresholds

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"gonum.org/v1/gonum/floats/scalar"

	"github.com/optd/optd/internal/testenv"
	"github.com/optd/optd/models"
	"github.com/optd/optd/models/trace"
)

// continuousLaws are the closed-form kinds of docs/formats.md#workload used by the tests
// and benchmarks (the parameters of the benchmarks: X in [1, 100] or of
// comparable scale).
func continuousLaws(t testing.TB) map[string]models.Dist {
	t.Helper()
	must := func(d models.Dist, err error) models.Dist {
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	return map[string]models.Dist{
		"uniform":     must(models.NewUniform(1, 100)),
		"exponential": must(models.NewExponential(50)),
		"lognormal":   must(models.NewLognormal(3, 1)),
		"gamma":       must(models.NewGamma(2, 25)),
		"pareto":      must(models.NewPareto(10, 2.5)),
	}
}

func uniformInt(t testing.TB, lo, hi int) models.ReduceDist {
	t.Helper()
	r, err := models.NewUniformInt(lo, hi)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func independent(t testing.TB, d models.Dist, r models.ReduceDist) *models.Workload {
	t.Helper()
	w, err := models.NewIndependentWorkload(d, r)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestWorkloadProperties: for every closed-form kind with independent
// R ~ uniform-int 1..5, the table is non-increasing, Σ_j c_j = K·E[X], and the
// last stage is q_{K−1}[j] = Σ_v P[R=v]·E[Y|R=v]·1{j ≤ v} with E[Y|R=v] =
// E[X]/v.
func TestWorkloadProperties(t *testing.T) {
	const jobs, rb = 20, 5
	for kind, d := range continuousLaws(t) {
		t.Run("kind="+kind, func(t *testing.T) {
			w := independent(t, d, uniformInt(t, 1, rb))
			tab, err := BuildTable(context.Background(), w, jobs, Options{})
			if err != nil {
				t.Fatal(err)
			}
			checkTableShape(t, tab, jobs, rb)
			ex := d.Mean()
			var s float64
			for _, c := range tab.CostCoefficients {
				s += c
			}
			if !scalar.EqualWithinAbsOrRel(s, jobs*ex, 1e-10, 1e-10) {
				t.Errorf("Σ c_j = %v, want K·E[X] = %v", s, jobs*ex)
			}
			for j, q := range tab.Stages[jobs-2] {
				var want float64
				for v := j + 1; v <= rb; v++ {
					want += ex / float64(v) / rb
				}
				if !scalar.EqualWithinAbsOrRel(q, want, exactRelTol, exactRelTol) {
					t.Errorf("q_{%d,K−1} = %v, want %v", j+1, q, want)
				}
			}
		})
	}
}

// discretize returns a discrete law with the same mean as d: the partition
// of [0, ∞) by a grid (geometric from lo to hi, plus [0, lo) and [hi, ∞)),
// each cell replaced by an atom at its conditional mean E[X | cell] with its
// probability. It is a mean-preserving contraction of d, so its λ is below
// d's and converges to it as the grid is refined.
func discretize(t testing.TB, d models.Dist, cells int) models.Dist {
	t.Helper()
	lo, hi := 1e-6, 1.0
	for d.ProbIn(hi, math.Inf(1)) > 1e-10 {
		hi *= 2
	}
	edges := []float64{0}
	for k := range cells + 1 {
		edges = append(edges, lo*math.Pow(hi/lo, float64(k)/float64(cells)))
	}
	edges = append(edges, math.Inf(1))
	var values, probs []float64
	for k := 1; k < len(edges); k++ {
		p := d.ProbIn(edges[k-1], edges[k])
		if p <= 0 {
			continue
		}
		values = append(values, d.PartialMean(edges[k-1], edges[k])/p)
		probs = append(probs, p)
	}
	var s float64
	for _, p := range probs {
		s += p
	}
	for i := range probs {
		probs[i] /= s
	}
	a, err := models.NewDiscrete(values, probs)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// Tolerance of the closed forms against a discretization with 20,000
// geometric cells: thresholds and cost coefficients agree within
// discreteTol·E[X] (absolute).
const discreteTol = 1e-6

func TestClosedFormsMatchDiscretization(t *testing.T) {
	const jobs, rb = 12, 3
	costs := make([]float64, jobs*rb)
	rng := rand.New(rand.NewPCG(2, 7))
	for i := range costs {
		costs[i] = rng.Float64() * 100
	}
	for kind, d := range continuousLaws(t) {
		t.Run("kind="+kind, func(t *testing.T) {
			r := uniformInt(t, 1, rb)
			exact, err := BuildTable(context.Background(), independent(t, d, r), jobs, Options{})
			if err != nil {
				t.Fatal(err)
			}
			approx, err := BuildTable(context.Background(), independent(t, discretize(t, d, 20000), r), jobs, Options{})
			if err != nil {
				t.Fatal(err)
			}
			tol := discreteTol * d.Mean()
			worst := 0.0
			for n := 0; n < jobs; n++ {
				a, b := exact.CostCoefficients, approx.CostCoefficients
				if n > 0 {
					a, b = exact.Stages[n-1], approx.Stages[n-1]
				}
				for j := range a {
					worst = max(worst, math.Abs(a[j]-b[j]))
					if math.Abs(a[j]-b[j]) > tol {
						t.Errorf("stage %d, q_%d: closed form %v, discretization %v", n, j+1, a[j], b[j])
					}
				}
			}
			ce, _ := exact.ExpectedCost(costs)
			ca, _ := approx.ExpectedCost(costs)
			if !scalar.EqualWithinAbsOrRel(ce, ca, discreteTol, discreteTol) {
				t.Errorf("expected cost: closed form %v, discretization %v", ce, ca)
			}
			t.Logf("largest difference %.3g = %.2g·E[X]", worst, worst/d.Mean())
		})
	}
}

// TestHeavyTailsLargeK: Pareto α = 1.1 and lognormal σ = 3 with K = 300,
// r̄ = 10 give finite, monotone tables whose coefficients sum to K·E[X].
func TestHeavyTailsLargeK(t *testing.T) {
	par, err := models.NewPareto(1, 1.1)
	if err != nil {
		t.Fatal(err)
	}
	logn, err := models.NewLognormal(0, 3)
	if err != nil {
		t.Fatal(err)
	}
	const jobs, rb = 300, 10
	for _, c := range []struct {
		name string
		d    models.Dist
	}{{"pareto-1.1", par}, {"lognormal-3", logn}} {
		t.Run(c.name, func(t *testing.T) {
			tab, err := BuildTable(context.Background(), independent(t, c.d, uniformInt(t, 1, rb)), jobs, Options{})
			if err != nil {
				t.Fatal(err)
			}
			checkTableShape(t, tab, jobs, rb)
			var s float64
			for _, x := range tab.CostCoefficients {
				s += x
			}
			if !scalar.EqualWithinAbsOrRel(s, jobs*c.d.Mean(), 1e-9, 1e-9) {
				t.Errorf("Σ c_j = %v, want %v", s, jobs*c.d.Mean())
			}
			if tab.MonotoneRepair > 1e-9*c.d.Mean() {
				t.Errorf("monotonicity repaired by %v", tab.MonotoneRepair)
			}
			t.Logf("c_1 = %.6g, c_%d = %.3g, E[X] = %.4g, repair %.2g", tab.CostCoefficients[0], jobs*rb, tab.CostCoefficients[jobs*rb-1], c.d.Mean(), tab.MonotoneRepair)
		})
	}
}

// TestJointWorkloadMatchesExhaustiveOptimum runs the exhaustive check
// through the models path (NewJointWorkload → Conditionals → BuildTable).
func TestJointWorkloadMatchesExhaustiveOptimum(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for c := range 40 {
		jobs, maxR := 1+rng.IntN(3), 1+rng.IntN(3)
		pts := randomPoints(rng, maxR)
		jp := make([]models.JointPoint, len(pts))
		for i, p := range pts {
			jp[i] = models.JointPoint{Data: p.x, Reduces: p.r, Prob: p.prob}
		}
		w, err := models.NewJointWorkload(jp)
		if err != nil {
			t.Fatal(err)
		}
		costs := make([]float64, jobs*maxR)
		for i := range costs {
			costs[i] = rng.Float64() * 10
		}
		t.Run(fmt.Sprintf("case=%d", c), func(t *testing.T) {
			tab, err := BuildTable(context.Background(), w, jobs, Options{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := tab.ExpectedCost(costs)
			if err != nil {
				t.Fatal(err)
			}
			want := exhaustiveOptimum(pts, jobs, costs)
			if !scalar.EqualWithinAbsOrRel(got, want, oracleRelTol, oracleRelTol) {
				t.Errorf("table %v, exhaustive %v", got, want)
			}
			if pol := policyCost(t, tab, pts, costs); !scalar.EqualWithinAbsOrRel(pol, want, oracleRelTol, oracleRelTol) {
				t.Errorf("policy %v, exhaustive %v", pol, want)
			}
		})
	}
}

func TestBuildTableWorkloadErrors(t *testing.T) {
	w := independent(t, continuousLaws(t)["uniform"], uniformInt(t, 1, 20))
	if _, err := BuildTable(context.Background(), w, 0, Options{}); !errors.Is(err, ErrJobs) {
		t.Errorf("K = 0: %v", err)
	}
	_, err := BuildTable(context.Background(), w, 100000, Options{})
	var mle *MemoryLimitError
	if !errors.As(err, &mle) || mle.Limit != DefaultMaxTableBytes {
		t.Errorf("K = 1e5: %v", err)
	}
	if _, err := BuildTable(context.Background(), nil, 3, Options{}); !errors.Is(err, ErrWorkload) {
		t.Errorf("nil workload: %v", err)
	}
}

// TestRollingPolicy checks the cache rule and that each decision is Place
// with the stage-1 thresholds of the table built from the window (computed
// here independently from the window's observations).
func TestRollingPolicy(t *testing.T) {
	est, err := NewEstimator(10)
	if err != nil {
		t.Fatal(err)
	}
	pol, err := NewRolling(RollingConfig{Horizon: 3, RefreshFraction: 0.3, MeanTolerance: 0.5}, est)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(6, 6))
	var rebuilds []int
	for i := range 40 {
		scale := 10.0
		if i >= 30 {
			scale = 1000 // a jump in the workload
		}
		o := Observation{JobsInSystem: rng.IntN(5), Data: math.Round(scale * (1 + rng.Float64())), Reduces: 1 + rng.IntN(3)}
		d, err := pol.Decide(context.Background(), o, 40)
		if err != nil {
			t.Fatal(err)
		}
		if d.Rebuilt {
			rebuilds = append(rebuilds, i)
			w, err := EmpiricalWorkload(est.Observations())
			if err != nil {
				t.Fatal(err)
			}
			tab, err := BuildTable(context.Background(), w, 4, Options{})
			if err != nil {
				t.Fatal(err)
			}
			want, err := Place(tab.Stages[0], 40, o.Data, o.Reduces)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(d.Positions, want.Positions) || d.Above != want.Above || d.Below != want.Below {
				t.Fatalf("arrival %d: %+v, want %+v", i, d.Placement, want)
			}
			if d.TableSamples != min(i+1, 10) || d.Horizon != 3 {
				t.Errorf("arrival %d: %+v", i, d)
			}
		}
	}
	// ⌈0.3·10⌉ = 3 arrivals between rebuilds while stationary; the jump at 30
	// moves Ȳ by more than 50% at once.
	if rebuilds[0] != 0 || !slices.Contains(rebuilds, 30) {
		t.Errorf("rebuilds at %v", rebuilds)
	}
	for k := 1; k < len(rebuilds); k++ {
		if gap := rebuilds[k] - rebuilds[k-1]; gap > 3 || (rebuilds[k] < 30 && gap != 3) {
			t.Errorf("rebuilds at %v", rebuilds)
			break
		}
	}
	if pol.Builds() != len(rebuilds) {
		t.Errorf("builds %d, rebuilt flags %d", pol.Builds(), len(rebuilds))
	}
	if _, err := NewRolling(RollingConfig{Horizon: -1}, est); err == nil {
		t.Error("negative horizon accepted")
	}
	if _, err := NewRolling(RollingConfig{RefreshFraction: 2}, est); err == nil {
		t.Error("refresh fraction 2 accepted")
	}
}

func TestEmpiricalWorkloadMergesDuplicates(t *testing.T) {
	obs := []Observation{{Data: 4, Reduces: 2}, {Data: 1, Reduces: 1}, {Data: 4, Reduces: 2}, {Data: 4, Reduces: 1}}
	w, err := EmpiricalWorkload(obs)
	if err != nil {
		t.Fatal(err)
	}
	want := map[[2]float64]float64{{4, 2}: 0.5, {1, 1}: 0.25, {4, 1}: 0.25}
	pts := w.Points()
	if len(pts) != len(want) {
		t.Fatalf("points %v", pts)
	}
	for _, p := range pts {
		if !scalar.EqualWithinAbsOrRel(p.Prob, want[[2]float64{p.Data, float64(p.Reduces)}], exactRelTol, exactRelTol) {
			t.Errorf("point %+v, want prob %v", p, want[[2]float64{p.Data, float64(p.Reduces)}])
		}
	}
	if _, err := EmpiricalWorkload(nil); !errors.Is(err, ErrEstimator) {
		t.Errorf("no observations: %v", err)
	}
}

// FuzzThresholdsWorkload: an arbitrary workload document never panics the
// decoder or the table builder; a table that is built is finite, monotone
// and its coefficients sum to K·E[X].
func FuzzThresholdsWorkload(f *testing.F) {
	for _, s := range []string{
		`{"data":{"kind":"uniform","min":1,"max":100},"reduces":{"kind":"uniform-int","min":1,"max":10}}`,
		`{"joint":[{"data":10,"reduces":1,"prob":0.25},{"data":40,"reduces":2,"prob":0.75}]}`,
		`{"data":{"kind":"pareto","xm":1,"alpha":1.1},"reduces":{"kind":"discrete","values":[1,3],"probs":[0.5,0.5]}}`,
		`{"data":{"kind":"lognormal","mu":0,"sigma":3},"reduces":{"kind":"uniform-int","min":2,"max":4}}`,
		`{"data":{"kind":"empirical","samples":[0,0,1e300,5]},"reduces":{"kind":"uniform-int","min":1,"max":2}}`,
		`{"data":{"kind":"gamma","shape":0.01,"scale":1e-300},"reduces":{"kind":"uniform-int","min":1,"max":1}}`,
		`{"data":{"kind":"exponential","mean":1e-320},"reduces":{"kind":"uniform-int","min":1,"max":3}}`,
		`{"joint":[{"data":0,"reduces":3,"prob":1}]}`,
	} {
		f.Add([]byte(s), uint8(3))
	}
	f.Fuzz(func(t *testing.T, doc []byte, k uint8) {
		w, err := models.DecodeWorkload(doc, t.TempDir())
		if err != nil {
			return
		}
		if w.MaxReduces() > 64 { // keep each input fast; the size limit is tested elsewhere
			return
		}
		jobs := 1 + int(k%6)
		tab, err := BuildTable(context.Background(), w, jobs, Options{MaxTableBytes: 1 << 20})
		if err != nil {
			if !errors.Is(err, ErrWorkload) && !errors.Is(err, ErrNumerical) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		checkTableShape(t, tab, jobs, w.MaxReduces())
		var s float64
		for _, c := range tab.CostCoefficients {
			s += c
		}
		if want := float64(jobs) * w.MeanData(); !math.IsInf(want, 0) && !scalar.EqualWithinAbsOrRel(s, want, 1e-9, 1e-9) {
			t.Fatalf("Σ c_j = %v, want K·E[X] = %v", s, want)
		}
	})
}

// swimShuffleMB returns the nonzero shuffle sizes of SWIM FB-2010 in MB
// (10^6 bytes), read from the repository's data/.
func swimShuffleMB(tb testing.TB) []float64 {
	tb.Helper()
	path := testenv.TraceFile(tb, "swim/FB-2010_samples_24_times_1hr_0.tsv")
	jobs, err := trace.ReadFile(path, trace.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	var mb []float64
	for _, j := range jobs {
		if j.ShuffleBytes > 0 {
			mb = append(mb, j.ShuffleBytes/1e6)
		}
	}
	return mb
}

// benchWorkloads are the benchmark inputs with R ~ uniform-int 1..r.
func benchWorkloads(b *testing.B, r int) []struct {
	name string
	w    *models.Workload
} {
	laws := continuousLaws(b)
	rd := uniformInt(b, 1, r)
	out := []struct {
		name string
		w    *models.Workload
	}{}
	for _, kind := range []string{"uniform", "exponential", "lognormal"} {
		out = append(out, struct {
			name string
			w    *models.Workload
		}{kind, independent(b, laws[kind], rd)})
	}
	rng := rand.New(rand.NewPCG(1, 1))
	syn := make([]float64, 100000)
	for i := range syn {
		syn[i] = math.Exp(3 + rng.NormFloat64())
	}
	emp, err := models.NewEmpirical(syn)
	if err != nil {
		b.Fatal(err)
	}
	out = append(out, struct {
		name string
		w    *models.Workload
	}{"empirical-lognormal-1e5", independent(b, emp, rd)})
	if mb := swimShuffleMB(b); len(mb) > 0 {
		swim, err := models.NewEmpirical(mb)
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, struct {
			name string
			w    *models.Workload
		}{fmt.Sprintf("empirical-swim-fb2010-%d", len(mb)), independent(b, swim, rd)})
	}
	return out
}

// cpuTime is the process's user+system CPU time.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkBuildTable: K = 100, max R = 10 for each kind (targets: 20 ms for
// closed forms, 200 ms for a 10^5-sample empirical law), and K = 500,
// max R = 20 for lognormal and the 10^5-sample empirical. Metrics: ms/op
// (wall), cpu-ms/op (user+system CPU of the process, which does not depend
// on other load on the machine), table-MiB (TableBytes); B/op with
// -benchmem. workers=1 is the sequential recursion, workers=2 splits the
// values of R over two goroutines.
func BenchmarkBuildTable(b *testing.B) {
	for _, size := range []struct{ k, r int }{{100, 10}, {500, 20}} {
		for _, c := range benchWorkloads(b, size.r) {
			if size.k == 500 && c.name != "lognormal" && c.name != "empirical-lognormal-1e5" {
				continue
			}
			for _, workers := range []int{1, 2} {
				b.Run(fmt.Sprintf("kind=%s/K=%d/R=%d/workers=%d", c.name, size.k, size.r, workers), func(b *testing.B) {
					b.ReportAllocs()
					opts := Options{Workers: workers}
					if _, err := BuildTable(context.Background(), c.w, size.k, opts); err != nil {
						b.Fatal(err)
					}
					cpu0 := cpuTime(b)
					for b.Loop() {
						if _, err := BuildTable(context.Background(), c.w, size.k, opts); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
					b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
					b.ReportMetric(TableBytes(size.k, size.r)/(1<<20), "table-MiB")
				})
			}
		}
	}
}

// TestAtomicLambdasGallop checks the galloping batch evaluation against a
// linear scan, with repeated thresholds, zeros and thresholds on atoms.
func TestAtomicLambdasGallop(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 1))
	for c := range 50 {
		n := 1 + rng.IntN(300)
		vals, probs := make([]float64, n), randomProbs(rng, n)
		for i := range vals {
			vals[i] = math.Round(rng.ExpFloat64()*100) / 10
		}
		l, err := newAtomicLaw(vals, probs)
		if err != nil {
			t.Fatal(err)
		}
		q := make([]float64, 1+rng.IntN(400))
		for j := range q {
			switch rng.IntN(4) {
			case 0:
				q[j] = vals[rng.IntN(n)]
			case 1:
				q[j] = 0
			default:
				q[j] = rng.Float64() * 40
			}
		}
		slices.Sort(q)
		slices.Reverse(q)
		s := float64(1 + rng.IntN(4))
		got := make([]float64, len(q))
		l.lambdas(q, got, s)
		for j, qj := range q {
			var want float64
			for i, v := range vals {
				if v < s*qj {
					want += probs[i] * (s*qj - v)
				}
			}
			want /= s
			if !scalar.EqualWithinAbsOrRel(got[j], want, 1e-12, 1e-12) {
				t.Fatalf("case %d: λ(%v) = %v, want %v", c, qj, got[j], want)
			}
		}
	}
}

// TestFastPathMatchesConditionals: the table from the shared law of X with
// direct formulas equals the one from the per-R laws models.Conditionals
// gives (generic Dist methods or atoms), to 1e-12 relative.
func TestFastPathMatchesConditionals(t *testing.T) {
	laws := continuousLaws(t)
	emp, err := models.NewEmpirical([]float64{3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5})
	if err != nil {
		t.Fatal(err)
	}
	laws["empirical"] = emp
	for name, d := range laws {
		t.Run(name, func(t *testing.T) {
			w := independent(t, d, uniformInt(t, 1, 4))
			fast, err := BuildTable(context.Background(), w, 15, Options{})
			if err != nil {
				t.Fatal(err)
			}
			var conds []condLaw
			for _, c := range w.Conditionals() {
				var z law = distLaw{d: c.Y, mu: c.Y.Mean()}
				if a, ok := c.Y.(models.Atomic); ok {
					v, p := a.Atoms()
					if z, err = newAtomicLaw(v, p); err != nil {
						t.Fatal(err)
					}
				}
				conds = append(conds, condLaw{r: c.R, prob: c.Prob, z: z, scale: 1})
			}
			slow, err := buildTable(context.Background(), conds, 15, 4, Options{})
			if err != nil {
				t.Fatal(err)
			}
			for j, c := range fast.CostCoefficients {
				if !scalar.EqualWithinAbsOrRel(c, slow.CostCoefficients[j], 1e-12, 1e-12) {
					t.Errorf("c_%d: %v vs %v", j+1, c, slow.CostCoefficients[j])
				}
			}
		})
	}
}

// TestSWIMEmpirical builds a table from the nonzero shuffle sizes of SWIM
// FB-2010 (MB) with R ~ uniform-int 1..10 and checks its properties.
func TestSWIMEmpirical(t *testing.T) {
	mb := swimShuffleMB(t)
	emp, err := models.NewEmpirical(mb)
	if err != nil {
		t.Fatal(err)
	}
	const jobs, rb = 30, 10
	tab, err := BuildTable(context.Background(), independent(t, emp, uniformInt(t, 1, rb)), jobs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkTableShape(t, tab, jobs, rb)
	var s float64
	for _, c := range tab.CostCoefficients {
		s += c
	}
	if !scalar.EqualWithinAbsOrRel(s, jobs*emp.Mean(), 1e-10, 1e-10) {
		t.Errorf("Σ c_j = %v, want K·E[X] = %v", s, jobs*emp.Mean())
	}
	t.Logf("%d nonzero shuffles, E[X] = %.4g MB, c_1 = %.4g MB", len(mb), emp.Mean(), tab.CostCoefficients[0])
}

// TestLargeTableMemory: K = 500, max R = 20 completes and allocates well
// under 1 GiB (TotalAlloc bounds the peak heap use of the build).
func TestLargeTableMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("K = 500 table skipped in -short mode")
	}
	w := independent(t, continuousLaws(t)["uniform"], uniformInt(t, 1, 20))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	tab, err := BuildTable(context.Background(), w, 500, Options{})
	if err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	if alloc > 1<<30 {
		t.Errorf("allocated %d MiB", alloc>>20)
	}
	if len(tab.CostCoefficients) != 10000 || tab.CostCoefficients[9999] < 0 {
		t.Errorf("table %d coefficients", len(tab.CostCoefficients))
	}
	t.Logf("K = 500, R = 20: allocated %.1f MiB (TableBytes %.1f MiB)", float64(alloc)/(1<<20), TableBytes(500, 20)/(1<<20))
}

// TestBuildTableProgress: Progress sees every stage of the backward
// recursion once, in order, and the table is the same with or without it.
func TestBuildTableProgress(t *testing.T) {
	for _, jobs := range []int{1, 2, 17} {
		w := independent(t, continuousLaws(t)["uniform"], uniformInt(t, 1, 3))
		var seen []int
		tab, err := BuildTable(context.Background(), w, jobs, Options{Progress: func(done, total int) {
			if total != jobs {
				t.Errorf("K = %d: total %d", jobs, total)
			}
			seen = append(seen, done)
		}})
		if err != nil {
			t.Fatal(err)
		}
		for i, d := range seen {
			if d != i+1 {
				t.Fatalf("K = %d: progress calls %v, want 1..K", jobs, seen)
			}
		}
		if len(seen) != jobs {
			t.Errorf("K = %d: %d progress calls", jobs, len(seen))
		}
		plain, err := BuildTable(context.Background(), w, jobs, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(tab, plain) {
			t.Errorf("K = %d: the table differs with a Progress callback", jobs)
		}
	}
}
