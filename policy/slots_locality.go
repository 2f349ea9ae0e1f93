package policy

import (
	"fmt"
	"math"

	"github.com/optd/optd/models"
)

// DelayScheduling is Zaharia et al.'s delay scheduling (EuroSys'10,
// Algorithm 2) as a LaunchFilter: a job whose best map on this node is not
// node-local is skipped (the slot goes to the next job in order) until it
// has waited NodeLocalWaitS since it was first skipped; after that it may
// launch rack-local maps, and after NodeLocalWaitS + RackLocalWaitS any
// map. A node-local launch resets the job's wait. Reduces, input-less maps
// and speculative copies pass.
type DelayScheduling struct {
	// NodeLocalWaitS (W1) and RackLocalWaitS (W2) in seconds. Default 5 s
	// each, a few heartbeats: the paper shows a wait of a small multiple of
	// the heartbeat interval reaches almost full locality.
	NodeLocalWaitS, RackLocalWaitS float64
	// waitSince is when each job was first skipped (absent: not waiting).
	waitSince map[string]float64
}

var _ LaunchFilter = (*DelayScheduling)(nil)
var _ Tunable = (*DelayScheduling)(nil)

// NewDelayScheduling returns delay scheduling with waits w1, w2 seconds.
func NewDelayScheduling(w1, w2 float64) (*DelayScheduling, error) {
	d := &DelayScheduling{NodeLocalWaitS: w1, RackLocalWaitS: w2, waitSince: map[string]float64{}}
	if err := d.tunable().check(NameDelayScheduling); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *DelayScheduling) tunable() tunable {
	return tunable{
		floatParam(&d.NodeLocalWaitS, Param{Name: "node_local_wait_s", Default: 5, Min: 0, Max: 600, Doc: "W1: wait for a node-local slot before accepting rack-local"}),
		floatParam(&d.RackLocalWaitS, Param{Name: "rack_local_wait_s", Default: 5, Min: 0, Max: 600, Doc: "W2: further wait before accepting off-rack"}),
	}
}

// Name implements Plugin.
func (*DelayScheduling) Name() string { return NameDelayScheduling }

// Params implements Tunable.
func (d *DelayScheduling) Params() []Param { return d.tunable().params() }

// SetParam implements Tunable.
func (d *DelayScheduling) SetParam(name string, v float64) error {
	return d.tunable().set(NameDelayScheduling, name, v)
}

// Admit implements LaunchFilter.
func (d *DelayScheduling) Admit(hb *Heartbeat, a Action) (bool, string) {
	if a.Kind != ActionStart || a.Type != models.MapTask || a.Locality == LocalityNone {
		return true, ""
	}
	now := hb.Cluster.NowS
	if a.Locality == NodeLocal {
		delete(d.waitSince, a.Job)
		return true, fmt.Sprintf("%s: node-local map of %s", NameDelayScheduling, a.Job)
	}
	since, waiting := d.waitSince[a.Job]
	if !waiting {
		d.waitSince[a.Job] = now
		since = now
	}
	waited := now - since
	allowed := NodeLocal
	switch {
	case waited >= d.NodeLocalWaitS+d.RackLocalWaitS:
		allowed = OffRack
	case waited >= d.NodeLocalWaitS:
		allowed = RackLocal
	}
	if a.Locality <= allowed {
		return true, fmt.Sprintf("%s: %s waited %.1fs, %v allowed", NameDelayScheduling, a.Job, waited, allowed)
	}
	return false, fmt.Sprintf("%s: skip %s (%v map, waited %.1fs of %.1fs)", NameDelayScheduling, a.Job, a.Locality, waited, d.NodeLocalWaitS)
}

// TaskFinished implements Observer: it forgets the wait of a job that has
// finished or has no map left to place.
func (d *DelayScheduling) TaskFinished(c *ClusterView, a *AttemptView, _ float64) {
	if j := c.Job(a.Job); j == nil || len(j.PendingMaps) == 0 {
		delete(d.waitSince, a.Job)
	}
}

// SlotPreScheduling is DynamicMR's Slot PreScheduling (§2.3) with the load
// manager it relaxes. Hadoop's load manager (§2.3.2, Steps 1#-3#) caps the
// map slots a node may use at ⌈min(mapSlotsLoadFactor, 1)·mapSlots⌉, with
// mapSlotsLoadFactor = (pending + running maps) / cluster map slots; the
// idle slots under that cap are the *allowable* idle slots (Definition 1),
// those above it the *extra* idle slots (Definition 2). A map start in a
// map slot beyond the cap is vetoed (load balance) unless it is node-local
// to the heartbeating node: then Slot PreScheduling allocates the extra idle
// slot to it (first case of §2.3.2), improving locality without hurting
// fairness, at the expense of load balance. (The second case, borrowing a
// reduce slot for a local map, is PD-DHSA's case (3), so it is left to it.)
// The ceiling is ours: the paper does not say how the product is rounded,
// and flooring would leave a node with few slots no allowable slot at all
// at low load.
type SlotPreScheduling struct {
	// Enabled false keeps only the load manager (Hadoop's behaviour); true
	// (the default) adds the pre-scheduling exemption.
	Enabled bool
}

var _ LaunchFilter = (*SlotPreScheduling)(nil)

// Name implements Plugin ("load-balance" when the exemption is off).
func (s *SlotPreScheduling) Name() string {
	if !s.Enabled {
		return NameLoadBalance
	}
	return NameSlotPreScheduling
}

// MapSlotsLoadFactor is Step 1#: (pending + running maps of all jobs) over
// the cluster's map slots (+Inf with no map slot).
func MapSlotsLoadFactor(c *ClusterView) float64 {
	demand, slots := 0, 0
	for _, j := range c.Jobs {
		demand += len(j.PendingMaps) + j.RunningOf(models.MapTask)
	}
	for _, n := range c.Nodes {
		slots += n.MapSlots
	}
	if slots == 0 {
		return math.Inf(1)
	}
	return float64(demand) / float64(slots)
}

// AllowableIdleMapSlots is Steps 2#-3# for the heartbeating node: its usable
// map slots ⌈min(load factor, 1)·mapSlots⌉ minus the map slots in use
// (including this heartbeat's starts); may be ≤ 0.
func AllowableIdleMapSlots(hb *Heartbeat) int {
	usable := int(math.Ceil(math.Min(MapSlotsLoadFactor(hb.Cluster), 1)*float64(hb.Node.MapSlots) - 1e-9))
	used := hb.Node.MapSlots - hb.FreeMapSlots
	return usable - used
}

// Admit implements LaunchFilter.
func (s *SlotPreScheduling) Admit(hb *Heartbeat, a Action) (bool, string) {
	if a.Kind != ActionStart || a.Type != models.MapTask || slotOr(a) != models.MapTask || !hb.Cluster.SlotBased {
		return true, ""
	}
	if allow := AllowableIdleMapSlots(hb); allow > 0 {
		return true, fmt.Sprintf("%s: %d allowable idle map slots", s.Name(), allow)
	}
	if s.Enabled && a.Locality == NodeLocal {
		return true, fmt.Sprintf("%s: no allowable idle map slot; extra idle slot pre-scheduled for node-local map of %s", NameSlotPreScheduling, a.Job)
	}
	return false, fmt.Sprintf("%s: no allowable idle map slot (load balance) and the map of %s is %v", s.Name(), a.Job, a.Locality)
}
