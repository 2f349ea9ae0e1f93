package benchmarks

import (
	"math/rand/v2"
	"testing"
)

// Over ranges of every scale and offset, the axis gets 4 to 9 labelled
// ticks, all within the data's range (none in the legend's room above it),
// in increasing order.
func TestNiceTicks(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		scale := []float64{1e-3, 1, 37, 1e4}[rng.IntN(4)]
		lo := (rng.Float64() - 0.3) * scale * 10
		hi := lo + (0.01+rng.Float64())*scale
		axisMax := hi + (hi-lo)*rng.Float64()
		var labelled []float64
		for _, tk := range (niceTicks{lo: lo, hi: hi}).Ticks(lo-0.02*(hi-lo), axisMax) {
			if tk.Label == "" {
				continue
			}
			if tk.Value < lo-1e-9*(hi-lo) || tk.Value > hi+1e-9*(hi-lo) {
				t.Fatalf("[%g, %g]: labelled tick %g outside the data", lo, hi, tk.Value)
			}
			if n := len(labelled); n > 0 && tk.Value <= labelled[n-1] {
				t.Fatalf("[%g, %g]: ticks not increasing at %g", lo, hi, tk.Value)
			}
			labelled = append(labelled, tk.Value)
		}
		if len(labelled) < 4 || len(labelled) > 9 {
			t.Fatalf("[%g, %g]: %d labelled ticks %v", lo, hi, len(labelled), labelled)
		}
	}
}
