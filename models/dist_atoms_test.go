package models

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/floats/scalar"
)

// atomTol bounds |table answer − brute-force sum| (absolute for
// probabilities, relative to the mean for partial means): the brute force sums
// naively, the tables by compensated prefix sums.
const atomTol = 1e-12

// atom is one (value, probability) pair of a brute-force law; values may repeat.
type atom struct{ x, p float64 }

func bruteProbIn(atoms []atom, a, b float64) (p, m float64) {
	for _, at := range atoms {
		if a <= at.x && at.x < b {
			p += at.p
			m += at.p * at.x
		}
	}
	return p, m
}

func bruteCDF(atoms []atom, x float64) float64 {
	var p float64
	for _, at := range atoms {
		if at.x <= x {
			p += at.p
		}
	}
	return p
}

// bruteAtoms merges equal values, drops zero probabilities and sorts.
func bruteAtoms(atoms []atom) (values, probs []float64) {
	sorted := slices.Clone(atoms)
	slices.SortFunc(sorted, func(a, b atom) int { return cmp.Compare(a.x, b.x) })
	for _, at := range sorted {
		if at.p == 0 {
			continue
		}
		if n := len(values); n > 0 && values[n-1] == at.x {
			probs[n-1] += at.p
			continue
		}
		values = append(values, at.x)
		probs = append(probs, at.p)
	}
	return values, probs
}

// queryPoints returns the bounds to try: every atom, its neighbouring floats,
// midpoints, 0, a negative number and ±Inf.
func queryPoints(atoms []atom, rng *rand.Rand, limit int) []float64 {
	pts := []float64{math.Inf(-1), -1, 0, math.Inf(1)}
	for _, at := range atoms {
		pts = append(pts, at.x, math.Nextafter(at.x, math.Inf(1)), math.Nextafter(at.x, math.Inf(-1)), at.x*1.5+0.25)
	}
	rng.Shuffle(len(pts), func(i, j int) { pts[i], pts[j] = pts[j], pts[i] })
	if len(pts) > limit {
		pts = pts[:limit]
	}
	return pts
}

// checkAtomic compares d with the brute-force law atoms on many intervals.
func checkAtomic(t *testing.T, d Atomic, atoms []atom, rng *rand.Rand) {
	t.Helper()
	mean := 0.0
	for _, at := range atoms {
		mean += at.p * at.x
	}
	if !scalar.EqualWithinAbsOrRel(d.Mean(), mean, atomTol, atomTol) {
		t.Errorf("Mean = %v, brute %v", d.Mean(), mean)
	}
	wantV, wantP := bruteAtoms(atoms)
	gotV, gotP := d.Atoms()
	if !slices.Equal(gotV, wantV) {
		t.Fatalf("Atoms values = %v, want %v", gotV, wantV)
	}
	for i := range gotP {
		if !scalar.EqualWithinAbsOrRel(gotP[i], wantP[i], atomTol, atomTol) {
			t.Errorf("Atoms prob[%d] = %v, want %v", i, gotP[i], wantP[i])
		}
	}
	pts := queryPoints(atoms, rng, 60)
	for _, a := range pts {
		if got, want := d.CDF(a), bruteCDF(atoms, a); !scalar.EqualWithinAbs(got, want, atomTol) {
			t.Errorf("CDF(%v) = %v, brute %v", a, got, want)
		}
		for _, b := range pts {
			wp, wm := bruteProbIn(atoms, a, b)
			if got := d.ProbIn(a, b); !scalar.EqualWithinAbs(got, wp, atomTol) {
				t.Errorf("ProbIn(%v, %v) = %v, brute %v", a, b, got, wp)
			}
			if got := d.PartialMean(a, b); !scalar.EqualWithinAbsOrRel(got, wm, atomTol*mean, atomTol) {
				t.Errorf("PartialMean(%v, %v) = %v, brute %v", a, b, got, wm)
			}
		}
	}
}

// randomDiscrete returns n distinct values (small integers and random reals)
// with random probabilities, some of them 0.
func randomDiscrete(rng *rand.Rand, n int) (values, probs []float64) {
	seen := map[float64]bool{}
	for len(values) < n {
		v := float64(rng.IntN(3 * n))
		if rng.IntN(2) == 0 {
			v = rng.ExpFloat64() * 100
		}
		if seen[v] {
			continue
		}
		seen[v] = true
		values = append(values, v)
		p := rng.Float64()
		if rng.IntN(5) == 0 && n > 1 {
			p = 0
		}
		probs = append(probs, p)
	}
	total := 0.0
	for _, p := range probs {
		total += p
	}
	if total == 0 {
		probs[0], total = 1, 1
	}
	for i := range probs {
		probs[i] /= total
	}
	return values, probs
}

func TestDiscreteAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, n := range []int{1, 2, 5, 50, 300} {
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			values, probs := randomDiscrete(rng, n)
			d := must(NewDiscrete(values, probs))
			if d.Kind() != KindDiscrete {
				t.Errorf("Kind = %q", d.Kind())
			}
			atoms := make([]atom, n)
			for i := range values {
				atoms[i] = atom{values[i], probs[i]}
			}
			checkAtomic(t, d.(Atomic), atoms, rng)
			// Transformed views: s·X and X/r.
			for _, s := range []float64{3.7, 1e-3} {
				checkAtomic(t, Scale(d, s).(Atomic), mapAtoms(atoms, func(x float64) float64 { return x * s }), rng)
			}
			for _, r := range []float64{1, 3, 7} {
				checkAtomic(t, divide(d, r).(Atomic), mapAtoms(atoms, func(x float64) float64 { return x / r }), rng)
			}
		})
	}
}

func mapAtoms(atoms []atom, f func(float64) float64) []atom {
	out := make([]atom, len(atoms))
	for i, at := range atoms {
		out[i] = atom{f(at.x), at.p}
	}
	return out
}

func TestEmpiricalAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, n := range []int{1, 10, 1000, 100000} {
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			samples := make([]float64, n)
			for i := range samples {
				samples[i] = float64(rng.IntN(40)) // many duplicates
				if rng.IntN(3) == 0 {
					samples[i] = math.Round(rng.ExpFloat64()*1e4) / 100
				}
			}
			d := must(NewEmpirical(samples))
			if d.Kind() != KindEmpirical {
				t.Errorf("Kind = %q", d.Kind())
			}
			atoms := make([]atom, n)
			for i, x := range samples {
				atoms[i] = atom{x, 1 / float64(n)}
			}
			if n > 1000 {
				atoms = mergeForBrute(atoms) // keeps the brute force O(distinct values)
			}
			checkAtomic(t, d.(Atomic), atoms, rng)
			checkAtomic(t, divide(d, 4).(Atomic), mapAtoms(atoms, func(x float64) float64 { return x / 4 }), rng)
			// Probabilities are exact multiples of 1/N.
			_, probs := d.(Atomic).Atoms()
			for _, p := range probs {
				if k := p * float64(n); math.Abs(k-math.Round(k)) > 1e-9 {
					t.Fatalf("atom probability %v is not a multiple of 1/%d", p, n)
				}
			}
		})
	}
}

// mergeForBrute sums equal values (counts), keeping the brute force an
// independent method: a map instead of sorting and prefix sums.
func mergeForBrute(atoms []atom) []atom {
	m := map[float64]float64{}
	for _, at := range atoms {
		m[at.x] += at.p
	}
	out := make([]atom, 0, len(m))
	for x, p := range m {
		out = append(out, atom{x, p})
	}
	return out
}

func TestAtomsHalfOpen(t *testing.T) {
	d := must(NewDiscrete([]float64{3, 1, 2}, []float64{0.5, 0.2, 0.3}))
	up := func(x float64) float64 { return math.Nextafter(x, math.Inf(1)) }
	down := func(x float64) float64 { return math.Nextafter(x, math.Inf(-1)) }
	inf := math.Inf(1)
	tests := []struct {
		a, b float64
		p, m float64
		name string
	}{
		{1, 2, 0.2, 0.2, "[1,2)"},
		{1, 3, 0.5, 0.8, "[1,3)"},
		{2, 2, 0, 0, "[2,2)"},
		{2, up(2), 0.3, 0.6, "[2,2+)"},
		{down(2), 2, 0, 0, "[2-,2)"},
		{up(1), 3, 0.3, 0.6, "(1,3)"},
		{math.Inf(-1), 1, 0, 0, "(-inf,1)"},
		{3, inf, 0.5, 1.5, "[3,inf)"},
		{-1, inf, 1, 2.3, "all"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := d.ProbIn(tt.a, tt.b); !scalar.EqualWithinAbs(got, tt.p, 1e-15) {
				t.Errorf("ProbIn = %v, want %v", got, tt.p)
			}
			if got := d.PartialMean(tt.a, tt.b); !scalar.EqualWithinAbs(got, tt.m, 1e-15) {
				t.Errorf("PartialMean = %v, want %v", got, tt.m)
			}
		})
	}
	for _, c := range []struct{ x, want float64 }{{down(1), 0}, {1, 0.2}, {down(2), 0.2}, {2, 0.5}, {3, 1}, {inf, 1}, {math.NaN(), 0}} {
		if got := d.CDF(c.x); !scalar.EqualWithinAbs(got, c.want, 1e-15) {
			t.Errorf("CDF(%v) = %v, want %v", c.x, got, c.want)
		}
	}
}

// TestAtomsTailPrecision checks that small interval probabilities far in the
// tail keep their relative precision (suffix sums, not 1 − prefix).
func TestAtomsTailPrecision(t *testing.T) {
	values := make([]float64, 10)
	probs := make([]float64, 10)
	for i := range values {
		values[i] = float64(i + 1)
		probs[i] = 1e-12
	}
	probs[0] = 1 - 9e-12
	d := must(NewDiscrete(values, probs))
	if got := d.ProbIn(5, 8); !relClose(got, 3e-12, 1e-12) {
		t.Errorf("ProbIn(5, 8) = %v, want 3e-12", got)
	}
	if got := d.PartialMean(5, 8); !relClose(got, 18e-12, 1e-12) {
		t.Errorf("PartialMean(5, 8) = %v, want 1.8e-11", got)
	}
	if got := d.ProbIn(10, math.Inf(1)); !relClose(got, 1e-12, 1e-12) {
		t.Errorf("ProbIn(10, Inf) = %v, want 1e-12", got)
	}
}

func TestAtomsSampling(t *testing.T) {
	const n = 200000
	rng := rand.New(rand.NewPCG(15, 16))
	values, probs := randomDiscrete(rng, 8)
	laws := map[string]Atomic{
		"discrete":  must(NewDiscrete(values, probs)).(Atomic),
		"empirical": must(NewEmpirical([]float64{1, 1, 2, 5, 5, 5, 9, 0})).(Atomic),
		"scaled":    Scale(must(NewDiscrete(values, probs)), 2.5).(Atomic),
	}
	for name, d := range laws {
		t.Run(name, func(t *testing.T) {
			xs, ps := d.Atoms()
			count := map[float64]int{}
			for range n {
				count[d.Sample(rng)]++
			}
			total := 0
			for i, x := range xs {
				total += count[x]
				f := float64(count[x]) / n
				if se := math.Sqrt(ps[i] * (1 - ps[i]) / n); math.Abs(f-ps[i]) > sigmas*se {
					t.Errorf("frequency of %v = %v, probability %v ± %v", x, f, ps[i], se)
				}
			}
			if total != n {
				t.Errorf("%d of %d samples are not atoms", n-total, n)
			}
		})
	}
}
