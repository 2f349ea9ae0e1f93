package models

import (
	"cmp"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"testing"
)

// smallCluster has two racks, three nodes and four reduce slots.
func smallCluster() Cluster {
	return Cluster{
		Resources: MemoryVCores(),
		Nodes: []Node{
			{ID: "n1", Rack: "r1", Capacity: Resources{8192, 8}, MapSlots: 2, ReduceSlots: 2},
			{ID: "n2", Rack: "r2", Capacity: Resources{4096, 4}},
			{ID: "n3", Rack: "r1", Capacity: Resources{16384, 16}},
		},
		ReduceSlots: []ReduceSlot{
			{ID: "s3", Node: "n2", FetchCost: 2},
			{ID: "s1", Node: "n1", FetchCost: 5},
			{ID: "s2", Node: "n1", FetchCost: 2},
			{ID: "s0", Node: "n3", FetchCost: 1},
		},
	}
}

func TestClusterValidate(t *testing.T) {
	c := smallCluster()
	if err := c.Validate(); err != nil {
		t.Fatalf("valid cluster rejected: %v", err)
	}
	tests := []struct {
		name   string
		modify func(*Cluster)
		want   string
	}{
		{"no nodes", func(c *Cluster) { c.Nodes = nil },
			`models: invalid cluster: nodes = "[]": a cluster needs at least one node`},
		{"duplicate resource", func(c *Cluster) { c.Resources = ResourceNames{"vcores", "vcores"} },
			`models: invalid cluster: resources[1] = "vcores": duplicate resource name (also at index 0)`},
		{"empty node id", func(c *Cluster) { c.Nodes[1].ID = "" },
			`models: invalid cluster: nodes[1].id = "": empty`},
		{"duplicate node id", func(c *Cluster) { c.Nodes[2].ID = "n1" },
			`models: invalid cluster: nodes[2].id = "n1": duplicate node id (also nodes[0])`},
		{"empty rack", func(c *Cluster) { c.Nodes[0].Rack = "" },
			`models: invalid cluster: nodes[0].rack = "": empty (node "n1")`},
		{"negative capacity", func(c *Cluster) { c.Nodes[2].Capacity[1] = -4 },
			`models: invalid cluster: nodes[2].capacity[1] = -4: negative vcores`},
		{"capacity dimensions", func(c *Cluster) { c.Nodes[1].Capacity = Resources{4096} },
			`models: invalid cluster: nodes[1].capacity = [4096]: has 1 dimensions, want 2 [memory_mb vcores]`},
		{"negative map slots", func(c *Cluster) { c.Nodes[0].MapSlots = -1 },
			`models: invalid cluster: nodes[0].map_slots = -1: negative`},
		{"negative reduce slots", func(c *Cluster) { c.Nodes[0].ReduceSlots = -2 },
			`models: invalid cluster: nodes[0].reduce_slots = -2: negative`},
		{"empty slot id", func(c *Cluster) { c.ReduceSlots[0].ID = "" },
			`models: invalid cluster: reduce_slots[0].id = "": empty`},
		{"duplicate slot id", func(c *Cluster) { c.ReduceSlots[3].ID = "s1" },
			`models: invalid cluster: reduce_slots[3].id = "s1": duplicate reduce slot id (also reduce_slots[1])`},
		{"unknown node", func(c *Cluster) { c.ReduceSlots[2].Node = "n9" },
			`models: invalid cluster: reduce_slots[2].node = "n9": unknown node`},
		{"negative fetch cost", func(c *Cluster) { c.ReduceSlots[1].FetchCost = -0.5 },
			`models: invalid cluster: reduce_slots[1].fetch_cost = -0.5: must be a finite number ≥ 0`},
		{"NaN fetch cost", func(c *Cluster) { c.ReduceSlots[1].FetchCost = math.NaN() },
			`models: invalid cluster: reduce_slots[1].fetch_cost = NaN: must be a finite number ≥ 0`},
		{"infinite fetch cost", func(c *Cluster) { c.ReduceSlots[0].FetchCost = math.Inf(1) },
			`models: invalid cluster: reduce_slots[0].fetch_cost = +Inf: must be a finite number ≥ 0`},
		{"more slots than typed reduce slots", func(c *Cluster) { c.ReduceSlots[3].Node = "n1" },
			`models: invalid cluster: reduce_slots[3].node = "n1": node has 2 typed reduce slots and more reduce slots are listed on it`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := smallCluster()
			tc.modify(&c)
			err := c.Validate()
			if !errors.Is(err, ErrInvalidCluster) || err == nil || err.Error() != tc.want {
				t.Errorf("Validate = %v\nwant %q", err, tc.want)
			}
		})
	}
	t.Run("slots-only cluster", func(t *testing.T) {
		c := Cluster{Nodes: []Node{{ID: "a", Rack: "r", MapSlots: 4, ReduceSlots: 2}},
			ReduceSlots: []ReduceSlot{{ID: "a/0", Node: "a", FetchCost: 1}, {ID: "a/1", Node: "a", FetchCost: 3}}}
		if err := c.Validate(); err != nil {
			t.Errorf("slots-only cluster rejected: %v", err)
		}
		c.Nodes[0].Capacity = Resources{1}
		if err := c.Validate(); err == nil {
			t.Errorf("capacity without resource names accepted")
		}
	})
}

func TestSlotsByCost(t *testing.T) {
	c := smallCluster()
	before := slices.Clone(c.ReduceSlots)
	got := c.SlotsByCost()
	var ids []string
	for _, s := range got {
		ids = append(ids, s.ID)
	}
	if want := []string{"s0", "s2", "s3", "s1"}; !slices.Equal(ids, want) {
		t.Errorf("SlotsByCost order %v, want %v (ties by ID)", ids, want)
	}
	if !reflect.DeepEqual(c.ReduceSlots, before) {
		t.Errorf("SlotsByCost modified the cluster")
	}

	// Second method on random clusters with many ties: the result is a
	// permutation of the slots, and every pair is in (cost, ID) order.
	rng := rand.New(rand.NewPCG(3, 4))
	for range 50 {
		n := 1 + rng.IntN(40)
		c := Cluster{Nodes: []Node{{ID: "n", Rack: "r"}}}
		for i := range n {
			c.ReduceSlots = append(c.ReduceSlots, ReduceSlot{ID: "s" + strconv.Itoa(rng.IntN(1000)*100+i), Node: "n", FetchCost: float64(rng.IntN(4))})
		}
		sorted := c.SlotsByCost()
		if len(sorted) != n {
			t.Fatalf("%d slots in, %d out", n, len(sorted))
		}
		for i := range sorted {
			for j := i + 1; j < len(sorted); j++ {
				a, b := sorted[i], sorted[j]
				if a.FetchCost > b.FetchCost || (a.FetchCost == b.FetchCost && a.ID > b.ID) {
					t.Fatalf("positions %d, %d out of order: %+v, %+v", i, j, a, b)
				}
			}
		}
		key := func(a, b ReduceSlot) int { return cmp.Compare(a.ID, b.ID) }
		x, y := slices.Clone(c.ReduceSlots), slices.Clone(sorted)
		slices.SortFunc(x, key)
		slices.SortFunc(y, key)
		if !reflect.DeepEqual(x, y) {
			t.Fatalf("SlotsByCost is not a permutation of the slots")
		}
	}
}

func TestRacksAndTotalCapacity(t *testing.T) {
	c := smallCluster()
	want := []Rack{{ID: "r1", Nodes: []string{"n1", "n3"}}, {ID: "r2", Nodes: []string{"n2"}}}
	if got := c.Racks(); !reflect.DeepEqual(got, want) {
		t.Errorf("Racks = %+v, want %+v", got, want)
	}
	if got, want := c.TotalCapacity(), (Resources{28672, 28}); !got.Equal(want) {
		t.Errorf("TotalCapacity = %v, want %v", got, want)
	}
	// Each node's capacity is at most the total: dominant share ≤ 1.
	for _, n := range c.Nodes {
		if s := n.Capacity.DominantShare(c.TotalCapacity()); s > 1 {
			t.Errorf("node %s has dominant share %g of the cluster", n.ID, s)
		}
	}
}

func TestClusterJSONRoundTrip(t *testing.T) {
	c := smallCluster()
	b, err := json.Marshal(&c)
	if err != nil {
		t.Fatal(err)
	}
	var back Cluster
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, c) {
		t.Errorf("round trip: %s\n%+v", b, back)
	}
}

// FuzzClusterValidate decodes arbitrary JSON as a cluster and validates it:
// neither may panic, and a valid cluster supports the helpers.
func FuzzClusterValidate(f *testing.F) {
	seed, _ := json.Marshal(smallCluster())
	f.Add(string(seed))
	f.Add(`{"resources":["memory_mb"],"nodes":[{"id":"a","rack":"r","capacity":[1]}],"reduce_slots":[{"id":"x","node":"a","fetch_cost":-1}]}`)
	f.Add(`{"nodes":[{"id":"a","rack":"r","map_slots":1,"reduce_slots":1}],"reduce_slots":[{"id":"x","node":"a","fetch_cost":1},{"id":"y","node":"a","fetch_cost":0}]}`)
	f.Fuzz(func(t *testing.T, in string) {
		var c Cluster
		if json.Unmarshal([]byte(in), &c) != nil {
			return
		}
		if err := c.Validate(); err != nil {
			if !errors.Is(err, ErrInvalidCluster) {
				t.Fatalf("error %v does not wrap ErrInvalidCluster", err)
			}
			return
		}
		total := c.TotalCapacity()
		for _, n := range c.Nodes {
			if !n.Capacity.Fits(total) {
				t.Fatalf("node %q capacity %v exceeds the total %v", n.ID, n.Capacity, total)
			}
		}
		s := c.SlotsByCost()
		if !slices.IsSortedFunc(s, func(a, b ReduceSlot) int { return cmp.Compare(a.FetchCost, b.FetchCost) }) {
			t.Fatalf("SlotsByCost not sorted: %+v", s)
		}
	})
}
