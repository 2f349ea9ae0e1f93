package lp

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkSolveRandomSparse solves a random feasible, bounded LP (randomSparseLP:
// 0 ≤ x ≤ u, A ≥ 0 at 0.7% density, A x ≤ b, maximize a positive objective) from
// scratch with the default dual simplex. The "ctx=cancellable" variant passes a
// cancellable context, which starts the watcher goroutine, to show that it costs
// nothing; the "chunk=500" variant caps Clp calls at 500 iterations (doubling after
// each restart), to show what restarting Clp's simplex costs.
func BenchmarkSolveRandomSparse(b *testing.B) {
	const density = 0.007
	for _, size := range []struct {
		rows, cols  int
		cancellable bool
		chunk       int
	}{
		{100, 500, false, 0},
		{1000, 5000, false, 0},
		{1000, 5000, true, 0},
		{1000, 5000, false, 500},
	} {
		name := fmt.Sprintf("rows=%d/cols=%d", size.rows, size.cols)
		if size.cancellable {
			name += "/ctx=cancellable"
		}
		if size.chunk > 0 {
			name += fmt.Sprintf("/chunk=%d", size.chunk)
		}
		b.Run(name, func(b *testing.B) {
			p := randomSparseLP(rand.New(rand.NewPCG(2024, uint64(size.rows))), size.rows, size.cols, density)
			if err := p.Validate(); err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			if size.cancellable {
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				defer cancel()
			}
			b.ReportAllocs()
			b.ResetTimer()
			iterations := 0
			for b.Loop() {
				sol, err := Solve(ctx, p, Options{chunkIterations: size.chunk})
				if err != nil {
					b.Fatal(err)
				}
				iterations = sol.Iterations
			}
			b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N), "ms/solve")
			b.ReportMetric(float64(iterations), "simplex-iterations/solve")
		})
	}
}
