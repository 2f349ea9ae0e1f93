package solver

import (
	"context"
	"math/rand/v2"
	"testing"
)

// TestSearchKeepsEachNodeTerm checks the term of each node that the
// search caches (term[b][j], read by bound for every count it tries)
// against nodeTerm recomputed from the node's residual and decided worth,
// after every decision and every undo of random walks down the tree of
// random instances, with every bound of the solve (π = 0, π = v, the LP's
// duals with their tops).
func TestSearchKeepsEachNodeTerm(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 9))
	checked := 0
	for range 30 {
		in := smallInstance(rng)
		m := newModel(in)
		if len(m.dem) == 0 {
			continue
		}
		_, sorted, same := sortNodes(m, nodeCaps(in))
		base := baseTables(m, sorted, m.supply)
		bounds, _ := rootBounds(context.Background(), m, sorted, ffdAssign(m, sorted, m.supply), base, Options{})
		s := newSearch(context.Background(), m, sorted, same, m.supply, bounds)
		check := func(when string) {
			for b := range s.bounds {
				if s.bounds[b].tab == nil {
					continue
				}
				for j := range s.nodes {
					at := 0 // the node's next type: after its last decision
					for _, dc := range s.stack {
						if dc.j == j {
							at = dc.t + 1
						}
					}
					want := s.nodeTerm(b, j, at, s.resid[j], s.part[b][j])
					if got := s.term[b][j]; got != want && !(got-want < 1e-9 && want-got < 1e-9) {
						t.Fatalf("%s: bound %d node %d at type %d: cached term %v, recomputed %v", when, b, j, at, got, want)
					}
					checked++
				}
			}
		}
		for walk := range 5 {
			for k := 0; k < s.total; k++ {
				j, ty := s.step(k)
				s.decide(j, ty, rng.IntN(s.cmax(j, ty)+1))
				check("after a decision")
				if rng.IntN(4) == 0 {
					s.undo()
					check("after an undo")
					s.decide(j, ty, 0)
				}
			}
			s.unwind(0)
			check("unwound, walk " + string(rune('0'+walk)))
		}
	}
	if checked == 0 {
		t.Fatal("no term checked")
	}
}
