package solver

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestFillEachNodeFillsOptimally checks the per-node fill that reuses an
// earlier node's fill (fillEachNode) on random small instances, many with
// repeated capacities: every node's fill is feasible, and worth as much as
// the searched optimal fill of that node with the supply the nodes before
// it left (perNodeAssign on that node alone), so it is the per-node
// algorithm up to ties.
func TestFillEachNodeFillsOptimally(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 19))
	reused := 0
	for range 200 {
		in := smallInstance(rng)
		for j := range in.Nodes { // more repeated capacities than smallInstance draws
			if j > 0 && rng.IntN(2) == 0 {
				in.Nodes[j].Capacity = slices.Clone(in.Nodes[rng.IntN(j)].Capacity)
			}
		}
		m := newModel(in)
		if len(m.dem) == 0 {
			continue
		}
		caps := nodeCaps(in)
		base := baseTables(m, caps, m.supply)
		x, _, stopped := fillEachNode(context.Background(), m, caps, m.supply, time.Time{}, base)
		if stopped != "" {
			t.Fatalf("stopped %q without a limit", stopped)
		}
		left := slices.Clone(m.supply)
		seen := map[string]bool{}
		for j, c := range caps {
			if !fitsPattern(m, x[j], c) || !fitsSupply(x[j], left) {
				t.Fatalf("node %d (capacity %v, supply left %v): fill %v does not fit", j, c, left, x[j])
			}
			one, _, _ := perNodeAssign(context.Background(), m, [][]int64{c}, left, time.Time{}, base)
			if got, want := m.patternValue(x[j]), m.patternValue(one[0]); got != want {
				t.Fatalf("node %d (capacity %v, supply left %v): fill %v worth %v, the optimal fill %v worth %v", j, c, left, x[j], got, one[0], want)
			}
			if seen[demandKey(c)] {
				reused++
			}
			seen[demandKey(c)] = true
			for i, a := range x[j] {
				left[i] -= a
			}
		}
	}
	if reused < 50 {
		t.Fatalf("only %d nodes with a capacity seen before: the reuse is hardly exercised", reused)
	}
}

// TestQuickFillCapsEachNode checks the exact method's first fill
// (quickFill): on small random instances, where no node's search reaches
// fillNodeCap, it is fillEachNode's fill; on yarn-2 of the suite, where
// nodes late in the fill searched tens of thousands of nodes, each node's
// search stops at the cap (stopped node_limit), the whole fill explores
// fewer nodes than fillEachNode's, and every node's fill still fits its
// capacity and the supply the nodes before it left.
func TestQuickFillCapsEachNode(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 29))
	for range 100 {
		in := smallInstance(rng)
		m := newModel(in)
		if len(m.dem) == 0 {
			continue
		}
		caps := nodeCaps(in)
		base := baseTables(m, caps, m.supply)
		want, _, _ := fillEachNode(context.Background(), m, caps, m.supply, time.Time{}, base)
		got, _, stopped := quickFill(context.Background(), m, caps, m.supply, time.Time{}, base)
		if stopped != "" || !slices.EqualFunc(got, want, slices.Equal) {
			t.Fatalf("quickFill %v (stopped %q), fillEachNode %v", got, stopped, want)
		}
	}
	in, err := FamilyInstance("yarn", 2)
	if err != nil {
		t.Fatal(err)
	}
	m := newModel(in)
	_, sorted, _ := sortNodes(m, nodeCaps(in))
	base := baseTables(m, sorted, m.supply)
	_, full, _ := fillEachNode(context.Background(), m, sorted, m.supply, time.Time{}, base)
	x, explored, stopped := quickFill(context.Background(), m, sorted, m.supply, time.Time{}, base)
	if stopped != StopNodeLimit {
		t.Fatalf("yarn-2: quickFill stopped %q, want %q (a node's search reaches the cap)", stopped, StopNodeLimit)
	}
	if explored >= full || explored > int64(len(sorted))*fillNodeCap {
		t.Fatalf("yarn-2: quickFill explored %d nodes, fillEachNode %d, the cap allows %d", explored, full, int64(len(sorted))*fillNodeCap)
	}
	left := slices.Clone(m.supply)
	for j, c := range sorted {
		if !fitsPattern(m, x[j], c) || !fitsSupply(x[j], left) {
			t.Fatalf("yarn-2 node %d (capacity %v, supply left %v): fill %v does not fit", j, c, left, x[j])
		}
		for i, a := range x[j] {
			left[i] -= a
		}
	}
}
