package models

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// benchLaws are the laws whose queries the threshold code calls in its inner
// loops, each named by kind (and size for atomic laws).
func benchLaws(b *testing.B) []struct {
	name string
	d    Dist
} {
	rng := rand.New(rand.NewPCG(31, 32))
	samples := func(n int) []float64 {
		s := make([]float64, n)
		for i := range s {
			s[i] = rng.ExpFloat64() * 100
		}
		return s
	}
	values := samples(1000)
	probs := make([]float64, len(values))
	for i := range probs {
		probs[i] = 1 / float64(len(probs))
	}
	return []struct {
		name string
		d    Dist
	}{
		{"kind=uniform", must(NewUniform(1, 100))},
		{"kind=exponential", must(NewExponential(50))},
		{"kind=lognormal", must(NewLognormal(3, 1.5))},
		{"kind=gamma", must(NewGamma(2.5, 20))},
		{"kind=pareto", must(NewPareto(10, 1.8))},
		{"kind=discrete/n=1000", must(NewDiscrete(values, probs))},
		{"kind=empirical/n=1000", must(NewEmpirical(samples(1000)))},
		{"kind=empirical/n=100000", must(NewEmpirical(samples(100000)))},
		{"kind=empirical/n=100000/div=7", divide(must(NewEmpirical(samples(100000))), 7)},
	}
}

// benchIntervals returns 1024 intervals [a, b) with ends drawn from d.
func benchIntervals(d Dist) [][2]float64 {
	rng := rand.New(rand.NewPCG(33, 34))
	iv := make([][2]float64, 1024)
	for i := range iv {
		a, c := d.Sample(rng), d.Sample(rng)
		iv[i] = [2]float64{min(a, c), max(a, c)}
	}
	return iv
}

var benchSink float64

func BenchmarkPartialMean(b *testing.B) {
	for _, l := range benchLaws(b) {
		iv := benchIntervals(l.d)
		b.Run(l.name, func(b *testing.B) {
			b.ReportAllocs()
			var s float64
			i := 0
			for b.Loop() {
				q := iv[i&1023]
				s += l.d.PartialMean(q[0], q[1])
				i++
			}
			benchSink = s
		})
	}
}

func BenchmarkProbIn(b *testing.B) {
	for _, l := range benchLaws(b) {
		iv := benchIntervals(l.d)
		b.Run(l.name, func(b *testing.B) {
			b.ReportAllocs()
			var s float64
			i := 0
			for b.Loop() {
				q := iv[i&1023]
				s += l.d.ProbIn(q[0], q[1])
				i++
			}
			benchSink = s
		})
	}
}

// BenchmarkNewEmpirical measures building the tables of an empirical law.
func BenchmarkNewEmpirical(b *testing.B) {
	for _, n := range []int{1000, 100000} {
		rng := rand.New(rand.NewPCG(35, 36))
		s := make([]float64, n)
		for i := range s {
			s[i] = rng.ExpFloat64() * 100
		}
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := NewEmpirical(s); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/sample")
		})
	}
}
