package sim

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/optd/optd/models"
)

// Network is the shuffle network of a cluster scenario; nil (the default)
// keeps the model without a network, where a reduce's shuffle is compute
// work like the rest of it (see ClusterScenario).
//
// The model, and its assumptions:
//
//   - Topology: every node has a full-duplex link of NodeMBps in each
//     direction to its rack's switch, and every rack a full-duplex uplink
//     to a non-blocking core of (nodes in the rack)·NodeMBps /
//     Oversubscription in each direction (the Coflow trace's racks at 10:1
//     are Oversubscription 10), or / RackOversubscription[rack] for a rack
//     listed there (a cluster grown over years: racks bought later with a
//     faster uplink than the first ones). Switches do not block; only
//     these links are shared.
//   - Map output: a map writes its job's MapOutputMB to the local disk of
//     the node it ran on when it finishes. Reducer k of R fetches 1/R of
//     every map's output from the map's node, as the maps finish (Hadoop's
//     copy phase fetches in the background while maps still run).
//   - Flows: a reducer's fetches from one node are one flow (its fetcher
//     threads to that host together); a fetch from the reducer's own node
//     is a local disk read and takes no network time. A flow's path is the
//     source node's link up, the source rack's uplink and the destination
//     rack's downlink if the racks differ, and the destination node's link
//     down.
//   - Sharing: the flows crossing a link share it max-min fairly (the
//     long-run fair share of TCP, idealized): rates by progressive filling,
//     recomputed whenever a flow arrives or completes, event-driven with no
//     time step, so a flow's time depends on the traffic beside it.
//   - A reducer's shuffle ends when every map of its stage has finished and
//     all its flows are done; it then runs its sort and reduce, the
//     (1 − ShuffleFraction) of its work, as compute work. Speculative
//     copies fetch too. Connection setup, disk bandwidth and the CPU cost
//     of fetching are not modelled, and maps read their input as without a
//     network (the locality penalties).
type Network struct {
	// NodeMBps is each node's link capacity per direction in MB/s (0:
	// DefaultNodeMBps, 1 GbE).
	NodeMBps float64
	// Oversubscription of the rack uplinks, ≥ 1 (0: 1, a full-bisection
	// network).
	Oversubscription float64
	// RackOversubscription overrides Oversubscription for the racks it
	// names (each ≥ 1): racks of one cluster need not have alike uplinks.
	RackOversubscription map[string]float64
}

// Defaults of the network model.
const (
	DefaultNodeMBps    = 125
	DefaultMapOutputMB = 128
)

func (n *Network) withDefaults() *Network {
	if n == nil {
		return nil
	}
	c := *n
	if c.NodeMBps == 0 {
		c.NodeMBps = DefaultNodeMBps
	}
	if c.Oversubscription == 0 {
		c.Oversubscription = 1
	}
	return &c
}

// validate checks the network of a cluster whose racks are racks (a rack
// of RackOversubscription must be one of them).
func (n *Network) validate(racks map[string]bool) error {
	if n == nil {
		return nil
	}
	for _, r := range slices.Sorted(maps.Keys(n.RackOversubscription)) {
		v := n.RackOversubscription[r]
		if !racks[r] {
			return invalidf(fmt.Sprintf("network.rack_oversubscription[%q]", r), v, "unknown rack (no node is in it)")
		}
		if !(v >= 1 && v <= MaxOversubscription) {
			return invalidf(fmt.Sprintf("network.rack_oversubscription[%q]", r), v, "must be in [1, %g]", float64(MaxOversubscription))
		}
	}
	if !(n.NodeMBps == 0 || n.NodeMBps >= MinNodeMBps && n.NodeMBps <= MaxNodeMBps) {
		return invalidf("network.node_mbps", n.NodeMBps, "must be 0 (%d) or in [%g, %g] MB/s", DefaultNodeMBps, MinNodeMBps, MaxNodeMBps)
	}
	if !(n.Oversubscription == 0 || n.Oversubscription >= 1 && n.Oversubscription <= MaxOversubscription) {
		return invalidf("network.oversubscription", n.Oversubscription, "must be 0 (1) or in [1, %g]", float64(MaxOversubscription))
	}
	return nil
}

// The network's limits: a node link between 0.1 MB/s (under 1 Mb/s, less
// than any data-center link) and 10¹² MB/s, and uplinks at most 1000:1
// (real ones are at most some 40:1). Beyond them a shuffle takes so long,
// or steps so short, that a run never ends in practice or loses time to
// rounding; within them ClusterScenario.MaxEvents and MaxSimulatedS still
// stop a run that would not end.
const (
	MinNodeMBps         = 0.1
	MaxNodeMBps         = 1e12
	MaxOversubscription = 1000
)

// flowNet is the state of a network during a run: its links and active
// flows with their max-min fair rates as of lastS.
type flowNet struct {
	caps  []float64 // link capacities, MB/s
	flows []*flow   // active flows, in arrival order (ties keep it)
	lastS float64
	// dirty: flows changed since the rates were computed.
	dirty bool
	// next is nextDone() as of the last allocate (computed with the rates).
	next float64
	// timing: flows grew (their completion times changed, not their
	// rates, which depend only on the flows' paths).
	timing bool
	// scratch of allocate
	rem                       []float64
	cnt                       []int
	start, cursor             []int
	byLink, active, saturated []int32
	paths                     []int32
	hops                      []int8
	frozen                    []bool
	rates                     []float64
	// nodeUp(i) = i, nodeDown(i) = n+i, rackUp(k) = 2n+k, rackDown(k) =
	// 2n+K+k; rackOf[i] is node i's rack index.
	nodes, racks int
	rackOf       []int
}

// flow is the data a reducer still has to fetch from one node.
type flow struct {
	path  [4]int32
	hops  int8
	left  float64 // MB still to fetch
	total float64 // MB given to the flow so far
	rate  float64 // MB/s
	src   int
	owner *simAttempt
	pos   int // index in flowNet.flows
}

// newFlowNet builds the links of cluster c under network n (defaults
// applied).
func newFlowNet(n *Network, c *models.Cluster) *flowNet {
	racks := map[string]int{}
	var rackNodes []int
	var rackOver []float64
	fn := &flowNet{nodes: len(c.Nodes)}
	for _, nd := range c.Nodes {
		k, ok := racks[nd.Rack]
		if !ok {
			k = len(rackNodes)
			racks[nd.Rack] = k
			rackNodes = append(rackNodes, 0)
			o, ok := n.RackOversubscription[nd.Rack]
			if !ok {
				o = n.Oversubscription
			}
			rackOver = append(rackOver, o)
		}
		rackNodes[k]++
		fn.rackOf = append(fn.rackOf, k)
	}
	fn.racks = len(rackNodes)
	fn.caps = make([]float64, 2*fn.nodes+2*fn.racks)
	for i := range 2 * fn.nodes {
		fn.caps[i] = n.NodeMBps
	}
	for k, m := range rackNodes {
		up := float64(m) * n.NodeMBps / rackOver[k]
		fn.caps[2*fn.nodes+k], fn.caps[2*fn.nodes+fn.racks+k] = up, up
	}
	fn.rem, fn.cnt = make([]float64, len(fn.caps)), make([]int, len(fn.caps))
	return fn
}

// crossRack reports whether a flow from node src to node dst leaves its
// rack.
func (fn *flowNet) crossRack(src, dst int) bool { return fn.rackOf[src] != fn.rackOf[dst] }

// add starts a flow of mb MB from node src to the owner's node at time
// now (src ≠ the owner's node).
func (fn *flowNet) add(now float64, src int, owner *simAttempt, mb float64) *flow {
	fn.advance(now)
	dst := owner.node.idx
	f := &flow{src: src, owner: owner, left: mb, pos: len(fn.flows)}
	f.path[0] = int32(src)
	f.hops = 1
	if fn.crossRack(src, dst) {
		f.path[1] = int32(2*fn.nodes + fn.rackOf[src])
		f.path[2] = int32(2*fn.nodes + fn.racks + fn.rackOf[dst])
		f.hops = 3
	}
	f.path[f.hops] = int32(fn.nodes + dst)
	f.hops++
	fn.flows = append(fn.flows, f)
	fn.dirty = true
	return f
}

// grow adds mb MB to an active flow at time now: its completion time
// changes, no flow's rate.
func (fn *flowNet) grow(now float64, f *flow, mb float64) {
	fn.advance(now)
	f.left += mb
	fn.timing = true
}

// drop removes an active flow at time now (completed or its owner gone).
func (fn *flowNet) drop(now float64, f *flow) {
	fn.advance(now)
	last := fn.flows[len(fn.flows)-1]
	fn.flows[f.pos], last.pos = last, f.pos
	fn.flows = fn.flows[:len(fn.flows)-1]
	f.pos = -1
	fn.dirty = true
}

// advance moves every flow's remaining data to time now at its rate.
func (fn *flowNet) advance(now float64) {
	if dt := now - fn.lastS; dt > 0 {
		for _, f := range fn.flows {
			f.left = math.Max(0, f.left-f.rate*dt)
		}
	}
	fn.lastS = now
}

// allocate sets every flow's max-min fair rate by progressive filling:
// all unfrozen flows grow at the same pace until a link saturates; the
// flows crossing it freeze at their rate; repeat with the others. The
// result is the unique max-min fair allocation (Bertsekas and Gallager,
// Data Networks, §6.5.2), whatever the order of the flows.
//
// Each round scans only the links some unfrozen flow still crosses, and
// freezes only the flows of the links that saturated (found through the
// flows listed by link), at the level the filling has reached (the sum of
// the rounds' increments, added in the same order as each flow's rate
// would add them): O(F·hops + rounds·active links) instead of a scan of
// every link and flow per round, with bit for bit the same rates.
func (fn *flowNet) allocate() {
	fn.dirty, fn.timing = false, false
	copy(fn.rem, fn.caps)
	clear(fn.cnt)
	// The flows' paths in one array (flow i's links are
	// paths[4i : 4i+hops[i]]), read without visiting the flows again.
	F := len(fn.flows)
	fn.paths = slices.Grow(fn.paths[:0], 4*F)[:4*F]
	fn.hops = slices.Grow(fn.hops[:0], F)[:F]
	fn.frozen = slices.Grow(fn.frozen[:0], F)[:F]
	fn.rates = slices.Grow(fn.rates[:0], F)[:F]
	for i, f := range fn.flows {
		copy(fn.paths[4*i:4*i+4], f.path[:])
		fn.hops[i], fn.frozen[i] = f.hops, false
		for _, l := range f.path[:f.hops] {
			fn.cnt[l]++
		}
	}
	// The flows by link: those of link l are byLink[start[l]:start[l+1]].
	L := len(fn.caps)
	fn.start = slices.Grow(fn.start[:0], L+1)[:L+1]
	fn.active = fn.active[:0]
	n := 0
	for l, c := range fn.cnt {
		fn.start[l] = n
		n += c
		if c > 0 {
			fn.active = append(fn.active, int32(l))
		}
	}
	fn.start[L] = n
	fn.byLink = slices.Grow(fn.byLink[:0], n)[:n]
	fn.cursor = append(fn.cursor[:0], fn.start[:L]...)
	for i := range F {
		for _, l := range fn.paths[4*i : 4*i+int(fn.hops[i])] {
			fn.byLink[fn.cursor[l]] = int32(i)
			fn.cursor[l]++
		}
	}
	level := 0.0
	for unfrozen := F; unfrozen > 0; {
		delta := math.Inf(1)
		for _, l := range fn.active {
			delta = math.Min(delta, fn.rem[l]/float64(fn.cnt[l]))
		}
		level += delta
		fn.saturated = fn.saturated[:0]
		for _, l := range fn.active {
			// A link whose share is the minimum saturates (exactly, so
			// that rounding never leaves a sliver of capacity).
			if c := float64(fn.cnt[l]); fn.rem[l]/c <= delta*(1+1e-12) {
				fn.rem[l] = 0
				fn.saturated = append(fn.saturated, l)
			} else {
				fn.rem[l] -= delta * c
			}
		}
		for _, l := range fn.saturated {
			for _, i := range fn.byLink[fn.start[l]:fn.start[l+1]] {
				if fn.frozen[i] {
					continue
				}
				fn.frozen[i], fn.rates[i] = true, level
				unfrozen--
				for _, m := range fn.paths[4*i : 4*i+int32(fn.hops[i])] {
					fn.cnt[m]--
				}
			}
		}
		fn.active = slices.DeleteFunc(fn.active, func(l int32) bool { return fn.cnt[l] == 0 })
	}
	fn.next = math.Inf(1)
	for i, f := range fn.flows {
		f.rate = fn.rates[i]
		if f.rate > 0 {
			fn.next = math.Min(fn.next, fn.lastS+f.left/f.rate)
		}
	}
}

// nextDone returns the earliest time an active flow completes at the
// current rates (+Inf if none).
func (fn *flowNet) nextDone() float64 {
	t := math.Inf(1)
	for _, f := range fn.flows {
		if f.rate > 0 {
			t = math.Min(t, fn.lastS+f.left/f.rate)
		}
	}
	return t
}

// done returns the flows that have completed at time now (their data
// fetched, or less than a microsecond of it left), in arrival order.
func (fn *flowNet) done(now float64) []*flow {
	fn.advance(now)
	var out []*flow
	for _, f := range fn.flows {
		if f.left <= 1e-9 || (f.rate > 0 && f.left/f.rate <= 1e-6) {
			out = append(out, f)
		}
	}
	slices.SortFunc(out, func(a, b *flow) int { return cmp.Or(cmp.Compare(a.owner.id, b.owner.id), cmp.Compare(a.src, b.src)) })
	return out
}

func (f *flow) String() string {
	return fmt.Sprintf("flow %d→attempt %d: %.3g MB left at %.3g MB/s", f.src, f.owner.id, f.left, f.rate)
}
