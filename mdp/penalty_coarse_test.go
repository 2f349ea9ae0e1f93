package mdp

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestCoarsePenaltyClasses: the fit's coarse cluster (coarsePenalty), on
// generated slot costs (sizes, ties, uniform and skewed laws) and every
// grid: each slot's coarse cost is the mean exact cost of its coarse class,
// each coarse class lies inside one group of the penalty (its w row is
// that group's indicator), per = 0 gives one class per non-empty group, and
// a finer grid never merges what a coarser one separates, and twice the
// groups' grid splits some of them.
func TestCoarsePenaltyClasses(t *testing.T) {
	for seed := range uint64(12) {
		rng := rand.New(rand.NewPCG(seed, 31))
		S := 30 + rng.IntN(2000)
		costs := make([]float64, S)
		for j := range costs {
			switch seed % 3 {
			case 0:
				costs[j] = 1 + math.Floor(99*rng.Float64()) // ties
			case 1:
				costs[j] = 1 + 99*rng.Float64()
			default:
				costs[j] = math.Exp(4 * rng.Float64()) // skewed
			}
		}
		cls := newClasses(costs)
		w, nb, grp := classBasis(cls, true, 0)
		p := &Penalty{cls: cls, w: w, nb: nb, grp: grp}
		nonEmpty := map[int]bool{}
		for _, g := range grp {
			nonEmpty[g] = true
		}
		prev, groups := 0, 0
		var prevOf []int // each slot's coarse class on the coarser grid
		for _, per := range []int{0, 2, 4, 8} {
			q := p.coarsePenalty(costs, per)
			C := q.cls.num()
			of := make([]int, S)
			for cc, slots := range q.cls.slots {
				for _, j := range slots {
					of[j] = cc
				}
			}
			if prevOf != nil {
				// A finer grid never merges what a coarser one separates:
				// a class of the finer grid lies in one of the coarser.
				coarser := make([]int, C)
				for cc := range coarser {
					coarser[cc] = -1
				}
				for j, cc := range of {
					if coarser[cc] < 0 {
						coarser[cc] = prevOf[j]
					} else if coarser[cc] != prevOf[j] {
						t.Errorf("seed %d per %d: coarse class %d holds slots of the coarser grid's classes %d and %d", seed, per, cc, coarser[cc], prevOf[j])
						break
					}
				}
			}
			prevOf = of
			sum := make([]float64, C)
			cnt := make([]float64, C)
			for cc, slots := range q.cls.slots {
				row := 0.0
				for b := range nb {
					row += q.w[cc*nb+b]
				}
				for _, j := range slots {
					h := costs[j]
					sum[cc] += h
					cnt[cc]++
					if g := grp[cls.of[h]]; q.w[cc*nb+g] != 1 || row != 1 {
						t.Errorf("seed %d per %d: slot %d of group %d in coarse class %d whose w row is %v", seed, per, j, g, cc, q.w[cc*nb:(cc+1)*nb])
					}
				}
			}
			for cc := range C {
				if m := sum[cc] / cnt[cc]; math.Abs(m-q.cls.cost[cc]) > 1e-9*m {
					t.Errorf("seed %d per %d: coarse class %d costs %g, its slots' mean %g", seed, per, cc, q.cls.cost[cc], m)
				}
			}
			switch {
			case per == 0 && C != len(nonEmpty):
				t.Errorf("seed %d: per 0 has %d coarse classes for %d non-empty groups", seed, C, len(nonEmpty))
			case C < prev:
				t.Errorf("seed %d: per %d has %d coarse classes, fewer than the coarser grid's %d", seed, per, C, prev)
			case per >= 4 && C <= groups:
				// Twice the groups' grid splits some group of ≥ 30 slots.
				t.Errorf("seed %d: per %d has %d coarse classes, no more than the %d groups", seed, per, C, groups)
			}
			if per == 0 {
				groups = C
			}
			prev = C
		}
	}
}
