package mdp

import (
	"cmp"
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/optd/optd/policy"
	"github.com/optd/optd/sim"
)

// genCosts draws n slot costs, with ties when tied.
func genCosts(rng *rand.Rand, n int, tied bool) []float64 {
	costs := make([]float64, n)
	for i := range costs {
		if tied {
			costs[i] = float64(rng.IntN(5))
		} else {
			costs[i] = 1 + 99*rng.Float64()
		}
	}
	return costs
}

// TestGroupSlotCosts: on generated clusters (sizes, tied and distinct
// costs, group counts), grouping keeps the slots' order by cost, the total
// cost, puts equal costs in one group, makes at most the groups asked for
// (GroupCheapest: one more) and is the identity when there are no more
// distinct costs than groups.
func TestGroupSlotCosts(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 300 {
		n := 1 + rng.IntN(300)
		costs := genCosts(rng, n, trial%3 == 0)
		groups := 1 + rng.IntN(40)
		span := 1 + rng.IntN(n)
		for _, c := range []struct {
			name   string
			out    []float64
			groups int
		}{
			{"GroupSlotCosts", GroupSlotCosts(costs, groups), groups},
			{"GroupCheapest", GroupCheapest(costs, span, groups), groups + 1},
		} {
			sum, got := 0.0, 0.0
			for i := range costs {
				sum += costs[i]
				got += c.out[i]
				for j := range costs {
					if costs[i] < costs[j] && c.out[i] > c.out[j] {
						t.Fatalf("%s: slot %d (cost %v) grouped above slot %d (cost %v)", c.name, i, costs[i], j, costs[j])
					}
					if costs[i] == costs[j] && c.out[i] != c.out[j] {
						t.Fatalf("%s: equal costs %v split into %v and %v", c.name, costs[i], c.out[i], c.out[j])
					}
				}
			}
			if math.Abs(sum-got) > 1e-9*sum {
				t.Fatalf("%s: total cost %v, grouped %v", c.name, sum, got)
			}
			if d := len(newClasses(c.out).cost); d > c.groups {
				t.Fatalf("%s: %d groups asked, %d made", c.name, c.groups, d)
			}
		}
		if len(newClasses(costs).cost) <= groups && !slices.Equal(GroupSlotCosts(costs, groups), costs) {
			t.Fatalf("%d distinct costs, %d groups: not the identity", len(newClasses(costs).cost), groups)
		}
	}
}

// TestEntryStates: the state a job enters in, from the records, is the
// simulator's own: the jobs it found (N_i) minus those still waiting
// ahead, and on a cluster with no waiting room, n counts every job in
// service at its entry, checked by a direct count.
func TestEntryStates(t *testing.T) {
	base, err := sim.LoadScenario("../search/testdata/mdp-small.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, waiting := range []int{0, 2, -1} {
		s := &sim.Scenario{SlotCosts: base.SlotCosts, K: base.K, ArrivalRate: 0.9, ServiceRate: 1, MaxWaiting: waiting,
			Workload: base.Workload, Jobs: 400, Replications: 1, Seed: 5}
		r, err := s.RunReplication(context.Background(), 0, []sim.NamedFactory{{Name: "c", New: func(uint64) (policy.Placement, error) { return cheapestFree{}, nil }}}, true)
		if err != nil {
			t.Fatal(err)
		}
		ns, ws := entryStates(r.Records)
		for k, rec := range r.Records {
			if rec.Lost {
				continue
			}
			n, w := 0, 0
			for _, o := range r.Records {
				if o.Lost {
					continue
				}
				if o.Start <= rec.Start && rec.Start < o.End {
					n++
				}
				if o.Arrival <= rec.Start && rec.Start < o.Start {
					w++
				}
			}
			if ns[k] != n || ws[k] != w || n < 1 || n > s.K || (waiting >= 0 && w > waiting) {
				t.Fatalf("waiting room %d, job %d: state (%d, %d), direct count (%d, %d)", waiting, k, ns[k], ws[k], n, w)
			}
		}
	}
}

// TestInterpolate: linear between the costs, exact at them, constant
// beyond them.
func TestInterpolate(t *testing.T) {
	costs, vals := []float64{1, 2, 4}, []float64{10, 6, 0}
	for _, c := range []struct{ h, want float64 }{{0, 10}, {1, 10}, {1.5, 8}, {2, 6}, {3, 3}, {4, 0}, {9, 0}} {
		if got := interpolate(costs, vals, c.h); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("interpolate(%v) = %v, want %v", c.h, got, c.want)
		}
	}
}

// TestBidPrices: fitted prices are ≥ 0 and make a valid policy; with the
// value scale 0, or on a cluster whose slots all cost the same, the
// bid-price policy places exactly as greedy (the cheapest free slots) on
// random requests.
func TestBidPrices(t *testing.T) {
	ctx := context.Background()
	s, err := sim.LoadScenario("../search/testdata/mdp-small.json")
	if err != nil {
		t.Fatal(err)
	}
	run := func(s *sim.Scenario) func(int) ([]sim.JobRecord, error) {
		tr := *s
		tr.Jobs, tr.Replications, tr.Seed = 300, 10, 11
		return func(k int) ([]sim.JobRecord, error) {
			r, err := tr.RunReplication(ctx, k, []sim.NamedFactory{{Name: "c", New: func(uint64) (policy.Placement, error) { return cheapestFree{}, nil }}}, true)
			if err != nil {
				return nil, err
			}
			return r.Records, nil
		}
	}
	flat := *s
	flat.SlotCosts = slices.Repeat([]float64{3}, len(s.SlotCosts))
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct {
		s     *sim.Scenario
		scale float64
		same  bool
	}{{s, 1, false}, {s, 0, true}, {&flat, 1, true}} {
		b, err := FitBidPrices(ctx, c.s, 4, 10, run(c.s))
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range b.price {
			for _, v := range row {
				if !(v >= 0) {
					t.Fatalf("price %v", v)
				}
			}
		}
		pol := b.Policy("bid", c.scale)
		for range 300 {
			free := 1 + rng.IntN(len(c.s.SlotCosts))
			req := &policy.PlacementRequest{X: 100 * rng.Float64(), R: 1 + rng.IntN(min(free, 2)), Held: make([][]int, rng.IntN(c.s.K)), Waiting: rng.IntN(3)}
			perm := rng.Perm(len(c.s.SlotCosts))[:free]
			slices.Sort(perm)
			for _, v := range perm {
				req.Free = append(req.Free, policy.Slot{Index: v, Cost: c.s.SlotCosts[v]})
			}
			slices.SortStableFunc(req.Free, func(a, b policy.Slot) int { return cmp.Compare(a.Cost, b.Cost) })
			d, err := pol.Place(req)
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Positions) != req.R || !slices.IsSorted(d.Positions) || d.Positions[len(d.Positions)-1] >= free {
				t.Fatalf("positions %v for R = %d of %d free", d.Positions, req.R, free)
			}
			if greedy := []int{0, 1}[:req.R]; c.same && !slices.Equal(d.Positions, greedy) {
				t.Fatalf("scale %v, costs %v: positions %v, greedy's %v", c.scale, c.s.SlotCosts, d.Positions, greedy)
			}
		}
	}
}
