package models

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/floats/scalar"
)

// opaque hides the package's own methods (transformed, spec) of a law, as a
// Dist defined outside the package would.
type opaque struct{ Dist }

// opaqueAtomic is an Atomic law defined outside the package.
type opaqueAtomic struct{ Atomic }

func scaleTestLaws(t *testing.T) map[string]Dist {
	laws := map[string]Dist{}
	for _, c := range continuousCases(t) {
		laws[c.name] = c.d
	}
	laws["discrete"] = must(NewDiscrete([]float64{0, 1.5, 4, 10}, []float64{0.1, 0.2, 0.3, 0.4}))
	laws["empirical"] = must(NewEmpirical([]float64{3, 1, 4, 1, 5, 9, 2, 6}))
	laws["opaque-lognormal"] = opaque{must(NewLognormal(1, 0.5))}
	laws["opaque-discrete"] = opaqueAtomic{must(NewDiscrete([]float64{2, 7}, []float64{0.25, 0.75})).(Atomic)}
	return laws
}

// TestScale checks the law of s·X against X: F_{sX}(s·x) = F_X(x),
// P[s·a ≤ sX < s·b] = P[a ≤ X < b], E[sX·1{...}] = s·E[X·1{a ≤ X < b}],
// E[sX] = s·E[X], and that the same random stream gives s times the sample.
func TestScale(t *testing.T) {
	for name, d := range scaleTestLaws(t) {
		for _, s := range []float64{0.25, 7, 1e-6} {
			for _, div := range []bool{false, true} {
				var sd Dist
				var f float64
				if div {
					sd, f = divide(d, 1/s), s
				} else {
					sd, f = Scale(d, s), s
				}
				t.Run(fmt.Sprintf("%s/s=%g/div=%v", name, s, div), func(t *testing.T) {
					checkScaled(t, d, sd, f)
				})
			}
		}
	}
}

func checkScaled(t *testing.T, d, sd Dist, s float64) {
	t.Helper()
	if sd.Kind() != d.Kind() {
		t.Errorf("Kind = %q, want %q", sd.Kind(), d.Kind())
	}
	if _, ok := d.(Atomic); ok {
		a, ok := sd.(Atomic)
		if !ok {
			t.Fatalf("Scale lost Atomic: %T", sd)
		}
		xs, ps := d.(Atomic).Atoms()
		ys, qs := a.Atoms()
		if len(ys) != len(xs) || !slices.Equal(ps, qs) {
			t.Fatalf("atoms %v %v, want s·%v %v", ys, qs, xs, ps)
		}
		for i := range xs {
			if !scalar.EqualWithinRel(ys[i], s*xs[i], 1e-15) {
				t.Errorf("atom %d = %v, want %v", i, ys[i], s*xs[i])
			}
		}
	}
	if !scalar.EqualWithinRel(sd.Mean(), s*d.Mean(), identityTol) {
		t.Errorf("Mean = %v, want %v", sd.Mean(), s*d.Mean())
	}
	rng := rand.New(rand.NewPCG(5, 6))
	xs := make([]float64, 40)
	for i := range xs {
		xs[i] = d.Sample(rng)
	}
	xs = append(xs, math.Inf(1), math.Inf(-1), 0)
	slices.Sort(xs)
	_, atomic := d.(Atomic)
	for i, x := range xs {
		// For atoms, s·x may round onto either side of s·x_i; compare at
		// atoms only by the exact tests above and TestDiscreteAgainstBruteForce.
		if !atomic {
			if got, want := sd.CDF(s*x), d.CDF(x); !scalar.EqualWithinAbsOrRel(got, want, identityTol, 1e-9) {
				t.Errorf("CDF(s·%v) = %v, want %v", x, got, want)
			}
		}
		if i == 0 || atomic {
			continue
		}
		a, b := xs[i-1], x
		if got, want := sd.ProbIn(s*a, s*b), d.ProbIn(a, b); !scalar.EqualWithinAbsOrRel(got, want, identityTol, 1e-9) {
			t.Errorf("ProbIn(s·%v, s·%v) = %v, want %v", a, b, got, want)
		}
		if got, want := sd.PartialMean(s*a, s*b), s*d.PartialMean(a, b); !scalar.EqualWithinAbsOrRel(got, want, identityTol*s*d.Mean(), 1e-9) {
			t.Errorf("PartialMean(s·%v, s·%v) = %v, want %v", a, b, got, want)
		}
	}
	// The same random stream: sd's sample is s times d's.
	r1, r2 := rand.New(rand.NewPCG(9, 10)), rand.New(rand.NewPCG(9, 10))
	for range 100 {
		x, y := d.Sample(r1), sd.Sample(r2)
		if !scalar.EqualWithinAbsOrRel(y, s*x, 1e-300, 1e-12) {
			t.Fatalf("sample %v, want s·%v = %v", y, x, s*x)
		}
	}
}

func TestScaleComposes(t *testing.T) {
	d := must(NewEmpirical([]float64{1, 2, 2, 8}))
	twice := divide(Scale(d, 6), 3) // 2·X
	xs, ps := twice.(Atomic).Atoms()
	if !slices.Equal(xs, []float64{2, 4, 16}) || !slices.Equal(ps, []float64{0.25, 0.5, 0.25}) {
		t.Errorf("atoms of X·6/3 = %v %v", xs, ps)
	}
	if got := twice.Mean(); got != 2*d.Mean() {
		t.Errorf("Mean = %v, want %v", got, 2*d.Mean())
	}
	l := must(NewLognormal(0.5, 2))
	back := Scale(Scale(l, 8), 0.125)
	for _, x := range []float64{0.1, 1, 10} {
		if got, want := back.CDF(x), l.CDF(x); !scalar.EqualWithinAbs(got, want, identityTol) {
			t.Errorf("CDF(%v) after ·8·1/8 = %v, want %v", x, got, want)
		}
	}
}

func TestScalePanics(t *testing.T) {
	d := must(NewExponential(1))
	for _, s := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Scale(d, %v) did not panic", s)
				}
			}()
			Scale(d, s)
		}()
	}
}

// TestUniformCollapsed: dividing a very narrow uniform law by R may round min/R
// and max/R to the same float64; the law is then the atom at that point, still
// a probability law.
func TestUniformCollapsed(t *testing.T) {
	inf := math.Inf(1)
	d := must(NewUniform(1, math.Nextafter(1, 2)))
	laws := []Dist{&uniform{min: 2, max: 2}}
	for r := 1; r <= 1000; r++ {
		laws = append(laws, divide(d, float64(r)))
	}
	for _, y := range laws {
		u := y.(*uniform)
		if p := y.ProbIn(-inf, inf); p != 1 {
			t.Errorf("%v: ProbIn(-Inf, Inf) = %v", *u, p)
		}
		if m := y.PartialMean(0, inf); !scalar.EqualWithinRel(m, y.Mean(), 1e-15) {
			t.Errorf("%v: PartialMean(0, Inf) = %v, Mean %v", *u, m, y.Mean())
		}
		if c := y.CDF(u.max); c != 1 {
			t.Errorf("%v: CDF(max) = %v", *u, c)
		}
		if c := y.CDF(math.Nextafter(u.min, 0)); c != 0 {
			t.Errorf("%v: CDF(below min) = %v", *u, c)
		}
	}
	p := &uniform{min: 2, max: 2}
	if p.ProbIn(2, 3) != 1 || p.ProbIn(1, 2) != 0 || p.PartialMean(2, 2.5) != 2 {
		t.Errorf("point mass at 2: ProbIn [2,3) %v, [1,2) %v, PartialMean %v", p.ProbIn(2, 3), p.ProbIn(1, 2), p.PartialMean(2, 2.5))
	}
}
