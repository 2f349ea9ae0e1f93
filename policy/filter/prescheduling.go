package filter

import (
	"fmt"
	"math"

	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
)

// SlotPreScheduling is DynamicMR's policy.Slot PreScheduling (§2.3) with the load
// manager it relaxes. Hadoop's load manager (§2.3.2, Steps 1#-3#) caps the
// map slots a node may use at ⌈min(mapSlotsLoadFactor, 1)·mapSlots⌉, with
// mapSlotsLoadFactor = (pending + running maps) / cluster map slots; the
// idle slots under that cap are the *allowable* idle slots (Definition 1),
// those above it the *extra* idle slots (Definition 2). A map start in a
// map slot beyond the cap is vetoed (load balance) unless it is node-local
// to the heartbeating node: then policy.Slot PreScheduling allocates the extra idle
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

var _ policy.LaunchFilter = (*SlotPreScheduling)(nil)

// Name implements policy.Plugin ("load-balance" when the exemption is off).
func (s *SlotPreScheduling) Name() string {
	if !s.Enabled {
		return NameLoadBalance
	}
	return NameSlotPreScheduling
}

// MapSlotsLoadFactor is Step 1#: (pending + running maps of all jobs) over
// the cluster's map slots (+Inf with no map slot).
func MapSlotsLoadFactor(c *policy.ClusterView) float64 {
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
func AllowableIdleMapSlots(hb *policy.Heartbeat) int {
	usable := int(math.Ceil(math.Min(MapSlotsLoadFactor(hb.Cluster), 1)*float64(hb.Node.MapSlots) - 1e-9))
	used := hb.Node.MapSlots - hb.FreeMapSlots
	return usable - used
}

// Admit implements policy.LaunchFilter.
func (s *SlotPreScheduling) Admit(hb *policy.Heartbeat, a policy.Action) (bool, string) {
	if a.Kind != policy.ActionStart || a.Type != models.MapTask || a.SlotOrType() != models.MapTask || !hb.Cluster.SlotBased {
		return true, ""
	}
	if allow := AllowableIdleMapSlots(hb); allow > 0 {
		return true, fmt.Sprintf("%s: %d allowable idle map slots", s.Name(), allow)
	}
	if s.Enabled && a.Locality == policy.NodeLocal {
		return true, fmt.Sprintf("%s: no allowable idle map slot; extra idle slot pre-scheduled for node-local map of %s", NameSlotPreScheduling, a.Job)
	}
	return false, fmt.Sprintf("%s: no allowable idle map slot (load balance) and the map of %s is %v", s.Name(), a.Job, a.Locality)
}
