package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// allocateByScan is progressive filling as first written: every round
// scans every link for the smallest share and every unfrozen flow to
// raise its rate and freeze it on a saturated link. The check of
// flowNet.allocate, which scans only the links still crossed and freezes
// through the flows listed by link.
func allocateByScan(fn *flowNet) []float64 {
	rem := append([]float64(nil), fn.caps...)
	cnt := make([]int, len(fn.caps))
	rate := make([]float64, len(fn.flows))
	frozen := make([]bool, len(fn.flows))
	for _, f := range fn.flows {
		for _, l := range f.path[:f.hops] {
			cnt[l]++
		}
	}
	for unfrozen := len(fn.flows); unfrozen > 0; {
		delta := math.Inf(1)
		for l, c := range cnt {
			if c > 0 {
				delta = math.Min(delta, rem[l]/float64(c))
			}
		}
		for l, c := range cnt {
			if c == 0 {
				continue
			}
			if rem[l]/float64(c) <= delta*(1+1e-12) {
				rem[l] = 0
			} else {
				rem[l] -= delta * float64(c)
			}
		}
		for i, f := range fn.flows {
			if frozen[i] {
				continue
			}
			rate[i] += delta
			for _, l := range f.path[:f.hops] {
				if rem[l] == 0 {
					frozen[i] = true
					break
				}
			}
			if frozen[i] {
				unfrozen--
				for _, l := range f.path[:f.hops] {
					cnt[l]--
				}
			}
		}
	}
	return rate
}

// randomFlows builds a network of racks×per nodes (uplinks at ratio over,
// some racks at 1:1) with n flows between random distinct nodes.
func randomFlows(rng *rand.Rand, racks, per, n int) *flowNet {
	nw := &Network{NodeMBps: 1 + 200*rng.Float64(), Oversubscription: 1 + 9*rng.Float64(), RackOversubscription: map[string]float64{}}
	for r := range racks {
		if rng.IntN(4) == 0 {
			nw.RackOversubscription[fmt.Sprintf("r%d", r)] = 1
		}
	}
	fn := newFlowNet(nw, netCluster(racks, per))
	nodes := racks * per
	for k := range n {
		src, dst := rng.IntN(nodes), rng.IntN(nodes-1)
		if dst >= src {
			dst++
		}
		fn.add(0, src, owner(k, dst), 1+rng.Float64()*100)
	}
	return fn
}

// TestAllocateEqualsScan: on random networks and flow sets, from one flow
// to thousands on up to 300 nodes, flowNet.allocate gives every flow
// exactly (bit for bit) the rate of the full-scan progressive filling,
// also after flows leave and others arrive.
func TestAllocateEqualsScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 4))
	for trial := range 60 {
		racks, per := 1+rng.IntN(15), 1+rng.IntN(20)
		if racks*per < 2 {
			per = 2
		}
		n := 1 + rng.IntN([]int{5, 50, 3000}[trial%3])
		fn := randomFlows(rng, racks, per, n)
		for round := range 3 {
			want := allocateByScan(fn)
			fn.allocate()
			if next := fn.nextDone(); fn.next != next {
				t.Fatalf("trial %d round %d: next completion %v as allocated, %v by nextDone", trial, round, fn.next, next)
			}
			for i, f := range fn.flows {
				if f.rate != want[i] {
					t.Fatalf("trial %d round %d (%d racks × %d, %d flows): flow %d rate %v, full scan %v", trial, round, racks, per, len(fn.flows), i, f.rate, want[i])
				}
				if !(f.rate > 0) {
					t.Fatalf("trial %d: flow %d without rate", trial, i)
				}
			}
			// Some flows leave, some arrive.
			for k := len(fn.flows) / 3; k > 0 && len(fn.flows) > 1; k-- {
				fn.drop(0, fn.flows[rng.IntN(len(fn.flows))])
			}
			for range rng.IntN(20) {
				src := rng.IntN(racks * per)
				fn.add(0, src, owner(1000000+round, (src+1)%(racks*per)), 10)
			}
		}
	}
}

// BenchmarkAllocate: one max-min allocation of 15,000 flows on the grown
// SWIM cluster's 300 nodes in 15 racks (the mean active flows of its
// 200-job replay, which recomputes the rates some 13,000 times), by
// flowNet.allocate and by the full scan it replaced.
func BenchmarkAllocate(b *testing.B) {
	fn := randomFlows(rand.New(rand.NewPCG(3, 9)), 15, 20, 15000)
	b.Run("allocate", func(b *testing.B) {
		for b.Loop() {
			fn.allocate()
		}
	})
	b.Run("full-scan", func(b *testing.B) {
		for b.Loop() {
			allocateByScan(fn)
		}
	})
}
