package models

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Node is one worker machine.
//
// A YARN node offers Capacity, a vector over the cluster's ResourceNames; an
// MRv1 (Hadoop 1) node offers MapSlots and ReduceSlots typed slots (the
// setting of DynamicMR, Tang et al., TCC'14, and of resource stealing, Guo et
// al., Cluster'12). A node may have both. When the cluster names resources,
// every node has a capacity over all of them (zeros where it offers none).
type Node struct {
	ID   string `json:"id"`
	Rack string `json:"rack"`
	// Capacity has one amount per name of Cluster.Resources.
	Capacity    Resources `json:"capacity,omitempty"`
	MapSlots    int       `json:"map_slots,omitempty"`
	ReduceSlots int       `json:"reduce_slots,omitempty"`
}

// Rack groups the nodes under one top-of-rack switch.
type Rack struct {
	ID string `json:"id"`
	// Nodes are the IDs of the rack's nodes, in cluster order.
	Nodes []string `json:"nodes"`
}

// ReduceSlot is a place a ReduceTask can run, with its fetching cost.
//
// FetchCost is H(v) of Tan et al. (INFOCOM'13, §II-B): the cost of fetching
// one unit of intermediate data to the slot's node v. With X(u) the data on
// node u and h(u, v) the hop distance, a reducer on v costs
// C = Σ_u X(u)·h(u, v); when X(u) is even, C = X·H(v) with
// H(v) = Σ_u h(u, v), the accumulated (possibly weighted) hop distance. The
// paper's experiments also assign H(v) ∈ {1, ..., 5} by measurement. A job
// with data X and R reducers placed on slots σ(1..R) costs
// (X/R)·Σ_j H(σ(j)) (eq. 2).
type ReduceSlot struct {
	ID        string  `json:"id"`
	Node      string  `json:"node"`
	FetchCost float64 `json:"fetch_cost"`
}

// Cluster is the static description of a cluster: the resource dimensions,
// the nodes, and the reduce slots with their fetching costs. It is plain
// data; running state belongs to the simulator or the server.
type Cluster struct {
	// Resources names the dimensions of every node capacity (and of the
	// demands of jobs run on the cluster), e.g. MemoryVCores().
	Resources   ResourceNames `json:"resources,omitempty"`
	Nodes       []Node        `json:"nodes"`
	ReduceSlots []ReduceSlot  `json:"reduce_slots,omitempty"`
}

// Validate checks the cluster: valid resource names; at least one node; node
// IDs non-empty and distinct; racks named; capacities with one non-negative
// amount per resource; non-negative slot counts; reduce slot IDs non-empty
// and distinct, on known nodes, with a finite non-negative FetchCost; and a
// node with typed slots holds at most ReduceSlots of the listed reduce slots;
// the total capacity fits in int64.
// The error wraps ErrInvalidCluster and names the field and its value.
func (c *Cluster) Validate() error {
	return c.check().wrap(ErrInvalidCluster)
}

func (c *Cluster) check() *domainIssue {
	if d := c.Resources.check(); d != nil {
		return d.under("resources")
	}
	if len(c.Nodes) == 0 {
		return newIssue("nodes", "[]", "a cluster needs at least one node")
	}
	nodeAt := make(map[string]int, len(c.Nodes))
	total := make(Resources, len(c.Resources))
	for i, n := range c.Nodes {
		path := fmt.Sprintf("nodes[%d]", i)
		switch {
		case n.ID == "":
			return newIssue(path+".id", n.ID, "empty")
		case n.Rack == "":
			return newIssue(path+".rack", n.Rack, "empty (node %q)", n.ID)
		case n.MapSlots < 0:
			return newIssue(path+".map_slots", n.MapSlots, "negative")
		case n.ReduceSlots < 0:
			return newIssue(path+".reduce_slots", n.ReduceSlots, "negative")
		}
		if first, dup := nodeAt[n.ID]; dup {
			return newIssue(path+".id", n.ID, "duplicate node id (also nodes[%d])", first)
		}
		nodeAt[n.ID] = i
		if d := n.Capacity.check(c.Resources); d != nil {
			return d.under(path + ".capacity")
		}
		for p, v := range n.Capacity {
			if total[p] > math.MaxInt64-v {
				return newIssue(fmt.Sprintf("%s.capacity[%d]", path, p), v, "the cluster's total %s overflows int64", c.Resources[p])
			}
			total[p] += v
		}
	}
	slotAt := make(map[string]int, len(c.ReduceSlots))
	perNode := make(map[string]int)
	for i, s := range c.ReduceSlots {
		path := fmt.Sprintf("reduce_slots[%d]", i)
		if s.ID == "" {
			return newIssue(path+".id", s.ID, "empty")
		}
		if first, dup := slotAt[s.ID]; dup {
			return newIssue(path+".id", s.ID, "duplicate reduce slot id (also reduce_slots[%d])", first)
		}
		slotAt[s.ID] = i
		ni, known := nodeAt[s.Node]
		if !known {
			return newIssue(path+".node", s.Node, "unknown node")
		}
		if math.IsNaN(s.FetchCost) || math.IsInf(s.FetchCost, 0) || s.FetchCost < 0 {
			return newIssue(path+".fetch_cost", s.FetchCost, "must be a finite number ≥ 0")
		}
		perNode[s.Node]++
		if n := c.Nodes[ni]; n.MapSlots+n.ReduceSlots > 0 && perNode[s.Node] > n.ReduceSlots {
			return newIssue(path+".node", s.Node, "node has %d typed reduce slots and more reduce slots are listed on it", n.ReduceSlots)
		}
	}
	return nil
}

// SlotsByCost returns a copy of the reduce slots sorted cheapest first
// (ascending FetchCost, ties by ID): the list L(i) of available slots with
// H_i(1) ≤ H_i(2) ≤ ... on which the threshold policies of Tan et al.
// (INFOCOM'13, Theorems 1-2) index their positions.
func (c *Cluster) SlotsByCost() []ReduceSlot {
	s := slices.Clone(c.ReduceSlots)
	slices.SortStableFunc(s, func(a, b ReduceSlot) int {
		if d := cmp.Compare(a.FetchCost, b.FetchCost); d != 0 {
			return d
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return s
}

// Racks groups the nodes by rack, racks in order of first appearance and
// nodes in cluster order.
func (c *Cluster) Racks() []Rack {
	var racks []Rack
	at := make(map[string]int)
	for _, n := range c.Nodes {
		i, ok := at[n.Rack]
		if !ok {
			i = len(racks)
			at[n.Rack] = i
			racks = append(racks, Rack{ID: n.Rack})
		}
		racks[i].Nodes = append(racks[i].Nodes, n.ID)
	}
	return racks
}

// TotalCapacity returns Σ_nodes Capacity, the cluster capacity against which
// DRF measures dominant shares. It panics if a capacity has the wrong number
// of dimensions (call Validate first).
func (c *Cluster) TotalCapacity() Resources {
	total := make(Resources, len(c.Resources))
	for _, n := range c.Nodes {
		total = total.Add(n.Capacity)
	}
	return total
}
