package models

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"gonum.org/v1/gonum/floats/scalar"
)

const testdataDir = "testdata/workload"

func loadTestWorkload(t *testing.T, name string) *Workload {
	t.Helper()
	w, err := LoadWorkload(filepath.Join(testdataDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// checkConditionalSum checks Σ_r P[R=r] = 1 and Σ_r P[R=r]·r·E[Y | R=r] = E[X].
func checkConditionalSum(t *testing.T, w *Workload, meanX float64) {
	t.Helper()
	conds := w.Conditionals()
	var sumP, sumX float64
	for i, c := range conds {
		if i > 0 && c.R <= conds[i-1].R {
			t.Errorf("conditionals not ascending in R: %d after %d", c.R, conds[i-1].R)
		}
		if !(c.Prob > 0) {
			t.Errorf("R = %d has probability %v", c.R, c.Prob)
		}
		sumP += c.Prob
		sumX += c.Prob * float64(c.R) * c.Y.Mean()
	}
	if !scalar.EqualWithinAbs(sumP, 1, identityTol) {
		t.Errorf("Σ P[R=r] = %v", sumP)
	}
	if !scalar.EqualWithinRel(sumX, meanX, identityTol) || !scalar.EqualWithinRel(w.MeanData(), meanX, identityTol) {
		t.Errorf("Σ P·r·E[Y|r] = %v, MeanData %v, want E[X] = %v", sumX, w.MeanData(), meanX)
	}
	if got, want := w.MaxReduces(), conds[len(conds)-1].R; got != want {
		t.Errorf("MaxReduces = %d, want %d", got, want)
	}
}

func TestIndependentConditionals(t *testing.T) {
	for _, name := range []string{"uniform.json", "exponential.json", "lognormal.json", "gamma.json",
		"pareto.json", "discrete.json", "empirical-samples.json", "empirical-file.json"} {
		t.Run(name, func(t *testing.T) {
			w := loadTestWorkload(t, name)
			data, reduces, ok := w.Marginals()
			if !ok || w.IsJoint() || w.Points() != nil {
				t.Fatal("independent workload reports itself joint")
			}
			checkConditionalSum(t, w, data.Mean())
			rs, ps := reduces.Support()
			conds := w.Conditionals()
			if len(conds) != len(rs) {
				t.Fatalf("%d conditionals, support of R has %d values", len(conds), len(rs))
			}
			rng := rand.New(rand.NewPCG(1, 1))
			for i, c := range conds {
				if c.R != rs[i] || c.Prob != ps[i] || c.Prob != reduces.PMF(c.R) {
					t.Errorf("conditional %d: R = %d, P = %v; want %d, %v", i, c.R, c.Prob, rs[i], ps[i])
				}
				if c.Y.Kind() != data.Kind() {
					t.Errorf("Y kind %q, X kind %q", c.Y.Kind(), data.Kind())
				}
				r := float64(c.R)
				// Y = X/r: F_Y(y) = F_X(r·y), E[Y] = E[X]/r.
				if !scalar.EqualWithinRel(c.Y.Mean(), data.Mean()/r, identityTol) {
					t.Errorf("E[Y | R=%d] = %v, want %v", c.R, c.Y.Mean(), data.Mean()/r)
				}
				if ya, ok := c.Y.(Atomic); ok {
					xs, xp := data.(Atomic).Atoms()
					ys, yp := ya.Atoms()
					for j := range xs {
						if ys[j] != xs[j]/r || yp[j] != xp[j] {
							t.Fatalf("atom %d of Y|R=%d = (%v, %v), want (%v, %v)", j, c.R, ys[j], yp[j], xs[j]/r, xp[j])
						}
					}
					continue
				}
				for range 20 {
					x := data.Sample(rng)
					if got, want := c.Y.CDF(x/r), data.CDF(x); !scalar.EqualWithinAbsOrRel(got, want, identityTol, 1e-9) {
						t.Errorf("F_Y(%v/%d) = %v, F_X(%v) = %v", x, c.R, got, x, want)
					}
				}
			}
		})
	}
}

func TestJointConditionals(t *testing.T) {
	w := loadTestWorkload(t, "joint-dependent.json")
	if !w.IsJoint() {
		t.Fatal("IsJoint = false")
	}
	if _, _, ok := w.Marginals(); ok {
		t.Error("Marginals ok for a joint workload")
	}
	// The file's points, by brute force.
	pts := []JointPoint{{100, 1, 0.1}, {300, 1, 0.1}, {400, 4, 0.2}, {1000, 4, 0.15}, {1000, 10, 0.25}, {5000, 10, 0.2}, {7, 3, 0}}
	var meanX float64
	pr := map[int]float64{}
	for _, p := range pts {
		meanX += p.Prob * p.Data
		pr[p.Reduces] += p.Prob
	}
	checkConditionalSum(t, w, meanX)
	conds := w.Conditionals()
	if got := []int{conds[0].R, conds[1].R, conds[2].R}; len(conds) != 3 || !slices.Equal(got, []int{1, 4, 10}) {
		t.Fatalf("conditionals for R = %v, want [1 4 10] (R = 3 has probability 0)", got)
	}
	for _, c := range conds {
		if !scalar.EqualWithinAbs(c.Prob, pr[c.R], 1e-15) {
			t.Errorf("P[R=%d] = %v, want %v", c.R, c.Prob, pr[c.R])
		}
		var wantY []atom
		for _, p := range pts {
			if p.Reduces == c.R && p.Prob > 0 {
				wantY = append(wantY, atom{p.Data / float64(c.R), p.Prob / pr[c.R]})
			}
		}
		if c.Y.Kind() != KindDiscrete {
			t.Errorf("Y kind %q", c.Y.Kind())
		}
		checkAtomic(t, c.Y.(Atomic), wantY, rand.New(rand.NewPCG(2, 2)))
	}
	if got := w.Points(); len(got) != 6 || got[0] != (JointPoint{100, 1, 0.1}) || got[5] != (JointPoint{5000, 10, 0.2}) {
		t.Errorf("Points = %v", got)
	}
}

func TestWorkloadSampleJoint(t *testing.T) {
	const n = 200000
	w := loadTestWorkload(t, "joint-dependent.json")
	rng := rand.New(rand.NewPCG(21, 22))
	type key struct {
		x float64
		r int
	}
	count := map[key]int{}
	conds := map[int]Dist{}
	for _, c := range w.Conditionals() {
		conds[c.R] = c.Y
	}
	for range n {
		x, r := w.Sample(rng)
		count[key{x, r}]++
		// x/r is exactly an atom of Y | R = r: [y, next float) holds it.
		if y := x / float64(r); !(conds[r].ProbIn(y, math.Nextafter(y, math.Inf(1))) > 0) {
			t.Fatalf("sample (%v, %d): y = %v is not an atom of Y | R = %d", x, r, y, r)
		}
	}
	for _, p := range w.Points() {
		f := float64(count[key{p.Data, p.Reduces}]) / n
		if se := math.Sqrt(p.Prob * (1 - p.Prob) / n); math.Abs(f-p.Prob) > sigmas*se {
			t.Errorf("frequency of %v = %v ± %v", p, f, se)
		}
	}
}

func TestWorkloadSampleIndependent(t *testing.T) {
	const n = 200000
	w := loadTestWorkload(t, "exponential.json") // X ~ exponential(2048), R ∈ {1, 4, 16}
	_, reduces, _ := w.Marginals()
	rng := rand.New(rand.NewPCG(23, 24))
	xs := make([]float64, n)
	count := map[int]int{}
	for i := range xs {
		var r int
		xs[i], r = w.Sample(rng)
		count[r]++
	}
	m, _ := meanSE(xs)
	if se := 2048 / math.Sqrt(n); math.Abs(m-w.MeanData()) > sigmas*se {
		t.Errorf("sample mean of X = %v, E[X] = %v ± %v", m, w.MeanData(), se)
	}
	rs, ps := reduces.Support()
	for i, r := range rs {
		f := float64(count[r]) / n
		if se := math.Sqrt(ps[i] * (1 - ps[i]) / n); math.Abs(f-ps[i]) > sigmas*se {
			t.Errorf("frequency of R = %d: %v, P = %v ± %v", r, f, ps[i], se)
		}
	}
	if got := reduces.Mean(); !scalar.EqualWithinRel(got, 0.5*1+0.3*4+0.2*16, 1e-15) {
		t.Errorf("E[R] = %v", got)
	}
}

func TestReduceDist(t *testing.T) {
	u := must(NewUniformInt(3, 7))
	if u.Kind() != KindUniformInt || u.Min() != 3 || u.Max() != 7 || u.Mean() != 5 {
		t.Errorf("uniform-int(3,7): kind %q min %d max %d mean %v", u.Kind(), u.Min(), u.Max(), u.Mean())
	}
	for r, want := range map[int]float64{2: 0, 3: 0.2, 5: 0.2, 7: 0.2, 8: 0} {
		if got := u.PMF(r); !scalar.EqualWithinAbs(got, want, 1e-15) {
			t.Errorf("PMF(%d) = %v, want %v", r, got, want)
		}
	}
	d := must(NewDiscreteReduces([]int{8, 2, 5}, []float64{0, 0.25, 0.75}))
	if rs, ps := d.Support(); !slices.Equal(rs, []int{2, 5}) || !slices.Equal(ps, []float64{0.25, 0.75}) {
		t.Errorf("Support = %v %v", rs, ps)
	}
	if d.Max() != 5 || d.PMF(8) != 0 {
		t.Errorf("Max = %d, PMF(8) = %v: a value of probability 0 is not in the support", d.Max(), d.PMF(8))
	}
	var zero ReduceDist
	if !zero.IsZero() || zero.Max() != 0 {
		t.Error("zero ReduceDist")
	}
}

func TestNewIndependentWorkloadErrors(t *testing.T) {
	r := must(NewUniformInt(1, 2))
	if _, err := NewIndependentWorkload(nil, r); err == nil || err.Error() != "models: invalid workload: data: missing" {
		t.Errorf("nil data: %v", err)
	}
	if _, err := NewIndependentWorkload(must(NewExponential(1)), ReduceDist{}); err == nil || err.Error() != "models: invalid workload: reduces: missing" {
		t.Errorf("zero reduces: %v", err)
	}
	if _, err := NewIndependentWorkload(opaque{Scale(must(NewExponential(10)), math.MaxFloat64)}, r); err == nil {
		t.Error("data with infinite mean accepted")
	}
}
