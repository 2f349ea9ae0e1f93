package slots

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
)

// Dynamic Hadoop policy.Slot Allocation (DHSA) of DynamicMR (Tang, Lee, He, IEEE
// TCC 2014, §2.1): map and reduce slots stop being bound to their type.
//
// PI-DHSA (§2.1.1) is a SlotPolicy: on each heartbeat it compares the
// cluster's map and reduce demand N_M, N_R (running + pending tasks) with
// the configured slots S_M, S_R and applies one of the paper's four cases:
//
//	Case 1  N_M ≤ S_M, N_R ≤ S_R: no borrowing (configured slots);
//	Case 2  N_M > S_M, N_R < S_R: idle reduce slots run maps;
//	Case 3  N_M < S_M, N_R > S_R: idle map slots run reduces;
//	Case 4  N_M > S_M, N_R > S_R: all busy, no borrowing.
//
// (Ties, e.g. N_M > S_M with N_R = S_R, leave no idle slot of the other
// type to lend and fall under Case 1/4.) A node lends at most
// percentageOfBorrowed{Map,Reduce}Slots of its idle slots of the lent type,
// and the cluster lends no more than the other type lacks, so the reserve
// the paper asks for is kept. policy.Slot weights (§2.1, C2) convert lent slots:
// with weights w_M, w_R a node's total weight W = m0·w_M + r0·w_R is
// invariant, so ℓ lent reduce slots become ⌊ℓ·w_R/w_M⌋ map slots (the
// paper's 8/4 example with w_M = 1, w_R = 2: at most 16 maps or 8 reduces).
// Borrowed slots are returned as soon as the case changes, but never below
// the slots in use (a running task keeps its slot until it ends).
//
// PD-DHSA (§2.1.2) is an Assigner: each pool in fair order tries its
// Case (1) map in a map slot, (2) reduce in a reduce slot, (3) map in a
// borrowed reduce slot, (4) reduce in a borrowed map slot; the slot counts
// stay the configured ones and a borrowed slot is an attempt whose policy.Slot is
// the other type. PD-DHSA lends whole slots (weights 1): a weighted slot
// would have to hold a fraction of a task of the other type.

// DHSAParams are DHSA's parameters with the paper's meaning.
type DHSAParams struct {
	// PercentageOfBorrowedMapSlots / ...ReduceSlots ∈ [0, 1]: the fraction
	// of a node's idle map (reduce) slots that may be lent to the other
	// type at a heartbeat (§2.1.1). Default 1 (lend every idle slot), the
	// setting the paper's Fig. 8 uses for its speedups; smaller values keep
	// slots for incoming jobs (Appendix F).
	PercentageOfBorrowedMapSlots    float64
	PercentageOfBorrowedReduceSlots float64
	// MapSlotWeight, ReduceSlotWeight > 0: resource weights of one slot of
	// each type (§2.1, challenge C2). Default 1 and 1.
	MapSlotWeight, ReduceSlotWeight float64
}

// DefaultDHSAParams returns the defaults documented on DHSAParams.
func DefaultDHSAParams() DHSAParams {
	return DHSAParams{PercentageOfBorrowedMapSlots: 1, PercentageOfBorrowedReduceSlots: 1, MapSlotWeight: 1, ReduceSlotWeight: 1}
}

func (p *DHSAParams) tunable() policy.ParamSet {
	return policy.ParamSet{
		policy.FloatParam(&p.PercentageOfBorrowedMapSlots, policy.Param{Name: "percentage_of_borrowed_map_slots", Default: 1, Min: 0, Max: 1, Doc: "fraction of a node's idle map slots reduces may borrow (§2.1.1)"}),
		policy.FloatParam(&p.PercentageOfBorrowedReduceSlots, policy.Param{Name: "percentage_of_borrowed_reduce_slots", Default: 1, Min: 0, Max: 1, Doc: "fraction of a node's idle reduce slots maps may borrow (§2.1.1)"}),
		policy.FloatParam(&p.MapSlotWeight, policy.Param{Name: "map_slot_weight", Default: 1, Min: 0.1, Max: 10, Doc: "resource weight of a map slot (§2.1, C2)"}),
		policy.FloatParam(&p.ReduceSlotWeight, policy.Param{Name: "reduce_slot_weight", Default: 1, Min: 0.1, Max: 10, Doc: "resource weight of a reduce slot (§2.1, C2)"}),
	}
}

// PIDHSA is the pool-independent DHSA slot policy.
type PIDHSA struct {
	DHSAParams
	// configured holds each node's configured (map, reduce) slots, learnt
	// the first time the policy sees the node (before it ever changes them).
	configured map[string][2]int
}

var _ policy.SlotPolicy = (*PIDHSA)(nil)
var _ policy.Stateful = (*PIDHSA)(nil)
var _ policy.Tunable = (*PIDHSA)(nil)

// NewPIDHSA returns PI-DHSA with p (checked against the parameter ranges).
func NewPIDHSA(p DHSAParams) (*PIDHSA, error) {
	d := &PIDHSA{DHSAParams: p, configured: map[string][2]int{}}
	if err := d.tunable().Check(NamePIDHSA); err != nil {
		return nil, err
	}
	return d, nil
}

// Name implements policy.Plugin.
func (*PIDHSA) Name() string { return NamePIDHSA }

// Params implements policy.Tunable.
func (d *PIDHSA) Params() []policy.Param { return d.tunable().Params() }

// SetParam implements policy.Tunable.
func (d *PIDHSA) SetParam(name string, v float64) error {
	return d.tunable().Set(NamePIDHSA, name, v)
}

// learn records the configured slots of nodes not seen before.
func (d *PIDHSA) learn(c *policy.ClusterView) {
	for _, n := range c.Nodes {
		if _, ok := d.configured[n.ID]; !ok {
			d.configured[n.ID] = [2]int{n.MapSlots, n.ReduceSlots}
		}
	}
}

// slotDemand returns N_M and N_R: running plus startable pending tasks of
// every active job (pending reduces count once slow-start is reached).
func slotDemand(c *policy.ClusterView) (nm, nr int) {
	for _, j := range c.Jobs {
		nm += j.RunningOf(models.MapTask) + len(j.PendingOf(models.MapTask))
		nr += j.RunningOf(models.ReduceTask) + len(j.PendingOf(models.ReduceTask))
	}
	return nm, nr
}

// Slots implements SlotPolicy: the node's map and reduce slots under the
// case the cluster is in.
func (d *PIDHSA) Slots(hb *policy.Heartbeat) (int, int, string) {
	c, n := hb.Cluster, hb.Node
	d.learn(c)
	nm, nr := slotDemand(c)
	sm, sr := 0, 0
	for _, k := range d.configured {
		sm += k[0]
		sr += k[1]
	}
	m0, r0 := d.configured[n.ID][0], d.configured[n.ID][1]
	usedM, usedR := n.MapSlots-n.FreeMapSlots, n.ReduceSlots-n.FreeReduceSlots
	wm, wr := d.MapSlotWeight, d.ReduceSlotWeight
	head := fmt.Sprintf("%s: N_M=%d S_M=%d N_R=%d S_R=%d", NamePIDHSA, nm, sm, nr, sr)
	m, r, why := m0, r0, ""
	switch {
	case nm > sm && nr < sr:
		// Case 2: lend idle reduce slots to maps, no more than the cluster
		// has unused (S_R − N_R) and than the maps lack (in reduce slots).
		need := int(math.Ceil(float64(nm-sm) * wm / wr))
		l := d.lend(c, n.ID, 1, min(sr-nr, need), r0-usedR, d.PercentageOfBorrowedReduceSlots)
		m, r = m0+int(math.Floor(float64(l)*wr/wm+1e-9)), r0-l
		why = fmt.Sprintf("case 2 (maps overloaded, reduce slots idle): lend %d reduce slots as %d map slots", l, m-m0)
	case nm < sm && nr > sr:
		need := int(math.Ceil(float64(nr-sr) * wr / wm))
		l := d.lend(c, n.ID, 0, min(sm-nm, need), m0-usedM, d.PercentageOfBorrowedMapSlots)
		m, r = m0-l, r0+int(math.Floor(float64(l)*wm/wr+1e-9))
		why = fmt.Sprintf("case 3 (reduces overloaded, map slots idle): lend %d map slots as %d reduce slots", l, r-r0)
	case nm > sm && nr > sr:
		why = "case 4 (both overloaded): configured slots"
	default:
		why = "case 1 (no type overloaded): configured slots"
	}
	w := float64(m0)*wm + float64(r0)*wr
	m, r = fitSlots(m, r, usedM, usedR, wm, wr, w)
	return m, r, fmt.Sprintf("%s: %s → %d map / %d reduce slots (configured %d/%d, in use %d/%d)", head, why, m, r, m0, r0, usedM, usedR)
}

// lend returns how many slots of type k (0 map, 1 reduce) the node lends:
// at most ⌊pct·idle⌋ of its own idle slots, and at most what the cluster
// may lend (limit) minus what the other nodes lend now.
func (d *PIDHSA) lend(c *policy.ClusterView, self string, k, limit, idle int, pct float64) int {
	elsewhere := 0
	for _, n := range c.Nodes {
		if n.ID == self {
			continue
		}
		cur := n.MapSlots
		if k == 1 {
			cur = n.ReduceSlots
		}
		elsewhere += max(0, d.configured[n.ID][k]-cur)
	}
	own := int(math.Floor(pct*float64(max(idle, 0)) + 1e-9))
	return max(0, min(own, limit-elsewhere))
}

// fitSlots brings a desired (m, r) within the node's weight budget W and
// not below the slots in use: m·w_M + r·w_R ≤ W, m ≥ usedM, r ≥ usedR
// (satisfiable because the running tasks fit the budget).
func fitSlots(m, r, usedM, usedR int, wm, wr, w float64) (int, int) {
	const eps = 1e-9
	m = max(m, usedM)
	r = min(r, int(math.Floor((w-float64(m)*wm)/wr+eps)))
	if r < usedR {
		r = usedR
		m = max(usedM, min(m, int(math.Floor((w-float64(r)*wr)/wm+eps))))
	}
	return m, r
}

// PDDHSA is the pool-dependent DHSA assigner.
type PDDHSA struct {
	DHSAParams
}

var _ policy.Assigner = (*PDDHSA)(nil)
var _ policy.Tunable = (*PDDHSA)(nil)

// NewPDDHSA returns PD-DHSA with p (weights other than 1 are rejected: see
// the file comment).
func NewPDDHSA(p DHSAParams) (*PDDHSA, error) {
	d := &PDDHSA{DHSAParams: p}
	if err := d.tunable().Check(NamePDDHSA); err != nil {
		return nil, err
	}
	if p.MapSlotWeight != 1 || p.ReduceSlotWeight != 1 {
		return nil, fmt.Errorf("%w: %s lends whole slots; slot weights must be 1 (got %g/%g)", policy.ErrInvalidConfig, NamePDDHSA, p.MapSlotWeight, p.ReduceSlotWeight)
	}
	return d, nil
}

// Name implements policy.Plugin.
func (*PDDHSA) Name() string { return NamePDDHSA }

// Params implements policy.Tunable (the two borrow percentages).
func (d *PDDHSA) Params() []policy.Param { return d.tunable()[:2].Params() }

// SetParam implements policy.Tunable.
func (d *PDDHSA) SetParam(name string, v float64) error {
	return d.tunable()[:2].Set(NamePDDHSA, name, v)
}

// Rank implements Assigner: pools in fair order over both phases (slots are
// "treated as a whole", §2.1.2), each trying Cases (1)-(4) in turn.
func (d *PDDHSA) Rank(hb *policy.Heartbeat) []policy.Action {
	borrowedR, borrowedM := 0, 0
	for _, a := range hb.Actions {
		if a.Kind == policy.ActionStart && a.Type == models.MapTask && a.Slot == models.ReduceTask {
			borrowedR++
		}
		if a.Kind == policy.ActionStart && a.Type == models.ReduceTask && a.Slot == models.MapTask {
			borrowedM++
		}
	}
	limitR := int(math.Floor(d.PercentageOfBorrowedReduceSlots*float64(hb.Node.FreeReduceSlots)+1e-9)) - borrowedR
	limitM := int(math.Floor(d.PercentageOfBorrowedMapSlots*float64(hb.Node.FreeMapSlots)+1e-9)) - borrowedM
	type try struct {
		t, slot models.TaskType
		ok      bool
		label   string
	}
	tries := []try{
		{models.MapTask, models.MapTask, hb.FreeMapSlots > 0, "case (1) map in a map slot"},
		{models.ReduceTask, models.ReduceTask, hb.FreeReduceSlots > 0, "case (2) reduce in a reduce slot"},
		{models.MapTask, models.ReduceTask, hb.FreeReduceSlots > 0 && limitR > 0, "case (3) map in a borrowed reduce slot"},
		{models.ReduceTask, models.MapTask, hb.FreeMapSlots > 0 && limitM > 0, "case (4) reduce in a borrowed map slot"},
	}
	if !hb.Cluster.SlotBased {
		// a container cluster has no typed slot to borrow: cases (1) and
		// (2) without slots, in the same pool order
		tries = []try{{models.MapTask, 0, true, "case (1) map"}, {models.ReduceTask, 0, true, "case (2) reduce"}}
	}
	var out []policy.Action
	for _, pool := range poolsInOrder(fairOrder(hb, models.MapTask, models.ReduceTask)) {
		for _, tr := range tries {
			if !tr.ok {
				continue
			}
			for _, j := range pool {
				p, loc, ok := hb.BestPending(j, tr.t)
				if !ok {
					continue
				}
				out = append(out, policy.Action{Kind: policy.ActionStart, Job: j.ID, Type: tr.t, Task: p.Index, Node: hb.Node.ID, Slot: tr.slot,
					Resources: j.Demand[tr.t].Clone(), Locality: loc,
					Reason: fmt.Sprintf("%s: pool %q, job %s: %s", NamePDDHSA, j.Queue, j.ID, tr.label)})
			}
		}
	}
	return out
}

// poolsInOrder splits jobs (already in fair order, pools contiguous) into
// their pools.
func poolsInOrder(jobs []*policy.JobView) [][]*policy.JobView {
	var out [][]*policy.JobView
	for i, j := range jobs {
		if i == 0 || j.Queue != jobs[i-1].Queue {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], j)
	}
	return out
}

// Snapshot implements policy.Stateful: the configured slots learnt so far.
func (d *PIDHSA) Snapshot() ([]byte, error) {
	return json.Marshal(struct {
		Configured map[string][2]int `json:"configured"`
	}{d.configured})
}

// Restore implements policy.Stateful.
func (d *PIDHSA) Restore(data []byte) error {
	var st struct {
		Configured map[string][2]int `json:"configured"`
	}
	if err := policy.DecodeSnapshot(data, &st); err != nil {
		return err
	}
	for node, c := range st.Configured {
		if c[0] < 0 || c[1] < 0 {
			return fmt.Errorf("%w: configured slots %v of node %q", policy.ErrInvalidConfig, c, node)
		}
	}
	d.configured = st.Configured
	if d.configured == nil {
		d.configured = map[string][2]int{}
	}
	return nil
}
