package rollout

import (
	"math/rand/v2"
	"testing"
)

// TestFenwick checks the tree against a plain scan of the flags (the
// second method) on random sizes and changes: kth is the rank of the k-th
// free slot.
func TestFenwick(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		n := 1 + rng.IntN(70)
		var f fenwick
		flags := f.reset(n)
		plain := make([]bool, n)
		for i := range n {
			if rng.IntN(2) == 0 {
				flags[i], plain[i] = 1, true
			}
		}
		f.build()
		for step := range 3 * n {
			var free []int32
			for i, b := range plain {
				if b {
					free = append(free, int32(i))
				}
			}
			for k, want := range free {
				if got := f.kth(k); got != want {
					t.Fatalf("trial %d step %d: kth(%d) = %d, want %d (n = %d)", trial, step, k, got, want, n)
				}
			}
			i := rng.IntN(n)
			if plain[i] {
				f.add(int32(i), -1)
			} else {
				f.add(int32(i), 1)
			}
			plain[i] = !plain[i]
		}
	}
}
