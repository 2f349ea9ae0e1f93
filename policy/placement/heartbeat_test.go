package placement_test

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
	_ "github.com/optd/optd/policy/assign" // fifo
	"github.com/optd/optd/policy/placement"
	"github.com/optd/optd/policy/policytest"
)

// placeCase is a random MRv1 cluster with one job past slow-start: some
// maps done with their outputs on random nodes, R reduces pending.
type placeCase struct {
	c     *policy.ClusterView
	job   *policy.JobView
	racks map[string]string
}

func newPlaceCase(rng *rand.Rand) placeCase {
	f := policytest.NewFixture(10, true, nil)
	racks := map[string]string{}
	nr, per := 1+rng.IntN(3), 1+rng.IntN(4)
	for r := range nr {
		for i := range per {
			id := fmt.Sprintf("n%d-%d", r, i)
			f.Node(id, fmt.Sprint("r", r), 2, 2, nil)
			racks[id] = fmt.Sprint("r", r)
		}
	}
	nodes := nr * per
	R := 1 + rng.IntN(2*nodes)
	j := f.Job("j", 0, R, nil)
	j.MapsTotal = 20 + rng.IntN(100)
	j.MapsDone = 1 + rng.IntN(10)
	at := map[string]*policy.NodeOutput{}
	for range j.MapsDone {
		id := fmt.Sprintf("n%d-%d", rng.IntN(nr), rng.IntN(per))
		if at[id] == nil {
			at[id] = &policy.NodeOutput{Node: id}
		}
		at[id].Maps++
		at[id].MB += 1 + 200*rng.Float64()
	}
	for _, id := range slices.Sorted(func(yield func(string) bool) {
		for k := range at {
			if !yield(k) {
				return
			}
		}
	}) {
		j.MapOutputs = append(j.MapOutputs, *at[id])
	}
	return placeCase{c: f.Finish(), job: j, racks: racks}
}

// wantGreedy is greedy's choice recomputed from the definitions: H(v) the
// hop distance from the expected outputs (finished ones where they are,
// the rest spread like the map slots, all nodes here having 2), split into
// its in-rack and cross-rack parts, slot q of v that is the Q-th of its
// rack costing H_in(v)·(1+q) + H_x(v)·max(1+q, 1+Q), the R cheapest by
// cost then by the rack-spread order; it returns the number of reducers
// chosen per node.
func (pc placeCase) wantGreedy() map[string]int {
	j := pc.job
	xDone := j.MapOutputMB()
	left := float64(j.MapsTotal-j.MapsDone) * xDone / float64(j.MapsDone)
	w := map[string]float64{}
	for _, n := range pc.c.Nodes {
		w[n.ID] = left / float64(len(pc.c.Nodes))
	}
	for _, o := range j.MapOutputs {
		w[o.Node] += o.MB
	}
	type slot struct {
		node    string
		cost    float64
		q, rank int
	}
	// the rank: first node of each rack, then second of each, ...
	byRack := map[string][]string{}
	var rackOrder []string
	for _, n := range pc.c.Nodes {
		if byRack[n.Rack] == nil {
			rackOrder = append(rackOrder, n.Rack)
		}
		byRack[n.Rack] = append(byRack[n.Rack], n.ID)
	}
	rank, r := map[string]int{}, 0
	for k := 0; r < len(pc.c.Nodes); k++ {
		for _, rk := range rackOrder {
			if k < len(byRack[rk]) {
				rank[byRack[rk][k]] = r
				r++
			}
		}
	}
	var slots []slot
	total := xDone + left
	byRackSlots := map[string][]slot{}
	split := map[string][2]float64{}
	for _, n := range pc.c.Nodes {
		in, x := 0.0, 0.0
		for src, mb := range w {
			switch {
			case src == n.ID:
			case pc.racks[src] == n.Rack:
				in += 2 * mb
			default:
				x += 4 * mb
			}
		}
		split[n.ID] = [2]float64{math.Round(in/total*1e9) / 1e9, math.Round(x/total*1e9) / 1e9}
		for q := range 2 {
			byRackSlots[n.Rack] = append(byRackSlots[n.Rack], slot{n.ID, 0, q, rank[n.ID]})
		}
	}
	// Within a rack the Q-th slot, in the order of (1+q)·H(v), also
	// shares the rack's downlink with Q others: its cross-rack part costs
	// max(1+q, 1+Q) per unit.
	for _, rk := range rackOrder {
		rs := byRackSlots[rk]
		h := func(s slot) float64 { return (split[s.node][0] + split[s.node][1]) * float64(1+s.q) }
		slices.SortFunc(rs, func(a, b slot) int {
			return cmp.Or(cmp.Compare(h(a), h(b)), cmp.Compare(a.q, b.q), cmp.Compare(a.rank, b.rank))
		})
		for k, s := range rs {
			sp := split[s.node]
			s.cost = math.Round((sp[0]*float64(1+s.q)+sp[1]*math.Max(float64(1+s.q), float64(1+k)))*1e9) / 1e9
			slots = append(slots, s)
		}
	}
	slices.SortFunc(slots, func(a, b slot) int {
		return cmp.Or(cmp.Compare(a.cost, b.cost), cmp.Compare(a.q, b.q), cmp.Compare(a.rank, b.rank))
	})
	want := map[string]int{}
	for _, s := range slots[:pc.job.ReducesTotal] {
		want[s.node]++
	}
	return want
}

// TestReducePlacementStartsReducersWhereThePolicyChose: on random
// clusters and jobs, a fifo pipeline with greedy placement starts the
// job's reducers on exactly the nodes greedy chooses by the fetch costs
// (recomputed from their definition), refuses them elsewhere with a veto
// naming the chosen nodes, gives the estimate X = m/m_done·X_done in the
// start's reason, and once every planned reducer started lets a reducer
// start anywhere.
func TestReducePlacementStartsReducersWhereThePolicyChose(t *testing.T) {
	for seed := uint64(1); seed <= 60; seed++ {
		pc := newPlaceCase(rand.New(rand.NewPCG(seed, 7)))
		pipe, err := policy.NewPipeline("fifo", policy.HeartbeatConfig{Placement: placement.Greedy{}})
		if err != nil {
			t.Fatal(err)
		}
		want := pc.wantGreedy()
		got := map[string]int{}
		xWant := float64(pc.job.MapsTotal) / float64(pc.job.MapsDone) * pc.job.MapOutputMB()
		for _, n := range pc.c.Nodes {
			d := pipe.Heartbeat(pc.c, n)
			for _, a := range d.Actions {
				// The views stay as built, so once the plan is used up
				// later nodes start the same pending reducers again.
				if a.Kind != policy.ActionStart || a.Type != models.ReduceTask || strings.Contains(a.Reason, "have all started") {
					continue
				}
				got[n.ID]++
				if !strings.Contains(a.Reason, policy.ReducePlacementStage) || !strings.Contains(a.Reason, fmt.Sprintf("= %.4g MB", xWant)) {
					t.Fatalf("seed %d: start reason %q lacks the placement or X = %.4g", seed, a.Reason, xWant)
				}
			}
			for _, v := range d.Vetoes {
				if v.Stage != policy.ReducePlacementStage || want[n.ID] != got[n.ID] || !strings.Contains(v.Reason, "reducers go to") {
					t.Fatalf("seed %d: node %s (chosen %d, started %d): veto %+v", seed, n.ID, want[n.ID], got[n.ID], v)
				}
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("seed %d: reducers started %v, greedy chose %v", seed, got, want)
		}
		// The plan used up, a reducer may start on any node.
		d := pipe.Heartbeat(pc.c, pc.c.Nodes[0])
		if len(d.Vetoes) > 0 {
			t.Fatalf("seed %d: after the plan: vetoes %+v", seed, d.Vetoes)
		}
	}
}

// placedPipe is a fifo pipeline placing reducers by the named policy.
func placedPipe(t *testing.T, name string, seed uint64) *policy.Pipeline {
	t.Helper()
	pl, err := policy.NewPlacement(name, policy.PlacementConfig{Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.NewPipeline("fifo", policy.HeartbeatConfig{Placement: pl})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReducePlacementSnapshot: a pipeline restored from the snapshot of
// one that planned and started part of a job's reducers decides every
// later heartbeat as the original does, and refuses foreign snapshots.
func TestReducePlacementSnapshot(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		pc := newPlaceCase(rand.New(rand.NewPCG(seed, 9)))
		for _, name := range []string{placement.NameGreedy, placement.NameRecedingHorizon, placement.NameCostliest, placement.NameRandom} {
			newPipe := func() *policy.Pipeline { return placedPipe(t, name, 0) }
			a := newPipe()
			half := len(pc.c.Nodes) / 2
			for _, n := range pc.c.Nodes[:half] {
				a.Heartbeat(pc.c, n)
			}
			snap, err := a.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			b := newPipe()
			if err := b.Restore(snap); err != nil {
				t.Fatalf("%s: restore: %v", name, err)
			}
			for _, n := range pc.c.Nodes {
				da, db := a.Heartbeat(pc.c, n), b.Heartbeat(pc.c, n)
				if fmt.Sprint(da) != fmt.Sprint(db) {
					t.Fatalf("seed %d %s node %s: restored pipeline decides\n%v\nthe original\n%v", seed, name, n.ID, db, da)
				}
			}
			if err := newPipe().Restore([]byte(`{"initialized":false,"stages":{"reduce-placement":{"plans":[{"job":"j","stage":0,"left":{"n0-0":0},"reason":""}]}}}`)); err == nil {
				t.Fatalf("%s: a plan with an empty node restored", name)
			}
			if err := newPipe().Restore([]byte(`{"initialized":false,"stages":{"reduce-placement":{"plans":[{"job":"j","stage":0,"left":{"n0-0":1},"slots":{"n0-0":[-1]},"reason":""}]}}}`)); err == nil ||
				!strings.Contains(err.Error(), `plans[0].slots["n0-0"][0] = -1`) {
				t.Fatalf("%s: a plan with a negative model slot: %v", name, err)
			}
		}
	}
}

// TestReducePlacementPolicyState: the stage keeps a stateful placement's
// state (random's generator) in its snapshot, restores a snapshot without
// it (written before random kept it) as built, and refuses policy state
// for a placement that has none.
func TestReducePlacementPolicyState(t *testing.T) {
	pipe := func(name string) *policy.Pipeline { return placedPipe(t, name, 3) }
	snap, err := pipe(placement.NameRandom).Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(snap), `"policy":{"pcg":`) {
		t.Fatalf("random's snapshot %s lacks its generator", snap)
	}
	if err := pipe(placement.NameRandom).Restore([]byte(`{"initialized":false,"stages":{"reduce-placement":{"plans":[]}}}`)); err != nil {
		t.Fatalf("a snapshot without the generator: %v", err)
	}
	if err := pipe(placement.NameGreedy).Restore(snap); err == nil {
		t.Fatal("greedy restored random's generator")
	}
}

// TestReducePlacementNeedsAPolicy: the stage exists only through
// HeartbeatConfig.Placement; no spec names it.
func TestReducePlacementNeedsAPolicy(t *testing.T) {
	if _, err := policy.NewPipeline("fifo+"+policy.ReducePlacementStage, policy.HeartbeatConfig{}); err == nil {
		t.Fatal("a spec naming the reduce placer was accepted")
	}
}
