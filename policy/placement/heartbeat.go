package placement

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
	"github.com/optd/optd/thresholds"
)

// Hop distances of the fetch cost H(v) (the server's topology defaults):
// a reducer reading map output on its own node crosses no link, one in its
// rack goes node, top-of-rack switch, node, one in another rack also
// crosses the aggregation switch.
const (
	SameRackHops  = 2
	CrossRackHops = 4
)

var (
	_ policy.ReducePlacer = (*reducePlacement)(nil)
	_ policy.Committer    = (*reducePlacement)(nil)
	_ policy.Stateful     = (*reducePlacement)(nil)
)

// reducePlacement is the heartbeat's reduce-placement stage
// (policy.ReducePlacementStage): when a stage of a job offers its first
// reduce (slow-start reached), it estimates the job's intermediate data
// from its finished maps, X = m/m_done · X_done (Tan et al., INFOCOM 2013,
// §I-C), costs every node v by H(v), the hop distance from the finished
// maps' outputs to v weighted by their size (by their count while no size
// is reported), and asks the cluster's placement policy for the job's R
// reduce slots. Each reducer then starts only on a node chosen for it;
// starts elsewhere are refused with the plan as the reason. A plan whose
// reducers have all started no longer restricts (a reducer that failed
// starts anywhere).
//
// Slots: a node offers as many reduce slots as its capacity holds the
// job's reduce request (its reduce slots on an MRv1 cluster), less the
// reducers running on it and those other plans still hold there; if the
// cluster has fewer than R, the placement sees further waves of every
// node's slots at the same costs (its reducers then wait for their nodes
// as Tan et al.'s jobs wait for slots). The q-th slot of node v (q = 0
// for the first, counting the slots others hold) costs H(v)·(1 + q): the
// reducers on a node fetch through its one link, and q + 1 fetchers on a
// saturated link each get 1/(q + 1) of it (the max-min share of the
// simulator's network), so a unit of data costs q + 1 times as long. Tan
// et al.'s slots have fixed costs; without this factor every policy that
// prefers cheap slots would stack a job's reducers on its cheapest node.
type reducePlacement struct {
	pol   policy.Placement
	plans map[planKey]*reducePlan
	links linkEstimate
	// fixed: κ stays 1 (HeartbeatConfig.FixedFetchCosts).
	fixed bool
}

// linkEstimate is what the stage learned of the network from the fetch
// rates running reducers report (policy.AttemptView.FetchMBps), as Tan et
// al. learn their slots' fetch costs by measurement (§V-C): exponentially
// smoothed throughputs, observed whenever the stage places a job (from the
// rates each node last reported), so a run's estimates depend only on what
// was reported before each placement.
type linkEstimate struct {
	// LinkMBps is the node link as seen: the largest throughput one node's
	// reducers were seen to fetch at together (0: nothing seen yet).
	LinkMBps float64 `json:"link_mbps,omitempty"`
	// RackMBps is, by rack, the throughput its reducers were seen to
	// fetch at together; a rack seen without fetching reducers at a
	// placement is observed at LinkMBps, one link (the prior), so an
	// estimate that made a rack look congested fades once it no longer
	// is.
	RackMBps map[string]float64 `json:"rack_mbps,omitempty"`
}

// linkSmoothing is α of the estimates' exponential smoothing, x ← (1−α)·x
// + α·observed: one observation per placement, so the last few
// placements' traffic counts most.
const linkSmoothing = 0.5

// observe folds the fetch rates the cluster's reducers last reported into
// the estimates.
func (e *linkEstimate) observe(c *policy.ClusterView) {
	node, rack := 0.0, map[string]float64{}
	var racks []string
	for _, n := range c.Nodes {
		t := 0.0
		for _, a := range n.Running {
			t += a.FetchMBps
		}
		node = max(node, t)
		if _, ok := rack[n.Rack]; !ok {
			racks = append(racks, n.Rack)
		}
		rack[n.Rack] += t
	}
	if node <= 0 {
		return
	}
	smooth := func(old, x float64) float64 {
		if old <= 0 {
			return x
		}
		return (1-linkSmoothing)*old + linkSmoothing*x
	}
	e.LinkMBps = smooth(e.LinkMBps, node)
	if e.RackMBps == nil {
		e.RackMBps = map[string]float64{}
	}
	for _, r := range racks {
		x := rack[r]
		if x <= 0 {
			if _, seen := e.RackMBps[r]; !seen {
				continue
			}
			x = e.LinkMBps
		}
		e.RackMBps[r] = smooth(e.RackMBps[r], x)
	}
}

// kappa is κ_k of slotCosts: rack k's downlink in node links as learned,
// RackMBps/LinkMBps, at most its n nodes' links; 1 (one link) before any
// of its reducers was seen fetching.
func (e *linkEstimate) kappa(rack string, nodes int) float64 {
	u, ok := e.RackMBps[rack]
	if !ok || e.LinkMBps <= 0 || u <= 0 {
		return 1
	}
	return min(u/e.LinkMBps, float64(max(nodes, 1)))
}

type planKey struct {
	job   string
	stage int
}

// reducePlan is where one stage of a job runs its reducers.
type reducePlan struct {
	Job   string `json:"job"`
	Stage int    `json:"stage"`
	// Left counts, by node, the chosen slots no reducer has started in.
	Left map[string]int `json:"left"`
	// Reason is the placement's decision and its inputs.
	Reason string `json:"reason"`
	// Slots are, by node, the model's slots chosen there (the static-cost
	// mode only, see staticRequest): the slots the job holds in later
	// requests.
	Slots map[string][]int `json:"slots,omitempty"`
}

func (p *reducePlan) pending() int {
	n := 0
	for _, v := range p.Left {
		n += v
	}
	return n
}

// modelCosts returns the fixed slot costs of the policy's model when it
// decides on them (policy.ModelSlotted), else nil.
func (s *reducePlacement) modelCosts() []float64 {
	if m, ok := s.pol.(policy.ModelSlotted); ok {
		return m.ModelSlotCosts()
	}
	return nil
}

func newReducePlacement(cfg policy.HeartbeatConfig) (policy.Stages, error) {
	if cfg.Placement == nil {
		return policy.Stages{}, fmt.Errorf("%w: %s needs the cluster's placement policy (none configured)", policy.ErrInvalidConfig, policy.ReducePlacementStage)
	}
	return policy.Stages{Placer: &reducePlacement{pol: cfg.Placement, plans: map[planKey]*reducePlan{}, fixed: cfg.FixedFetchCosts}}, nil
}

// Name implements policy.Plugin.
func (*reducePlacement) Name() string { return policy.ReducePlacementStage }

// PlaceReduce implements policy.ReducePlacer.
func (s *reducePlacement) PlaceReduce(hb *policy.Heartbeat, a policy.Action) (bool, string) {
	j := hb.Cluster.Job(a.Job)
	if j == nil {
		return true, ""
	}
	pl, err := s.plan(hb.Cluster, j)
	if err != nil {
		return true, fmt.Sprintf("%s: %v; any node", policy.ReducePlacementStage, err)
	}
	switch {
	case pl.Left[a.Node] > 0:
		return true, fmt.Sprintf("%s: %s is chosen for job %s's reducers (%s)", policy.ReducePlacementStage, a.Node, j.ID, pl.Reason)
	case pl.pending() == 0:
		return true, fmt.Sprintf("%s: job %s's planned reducers have all started; any node", policy.ReducePlacementStage, j.ID)
	}
	return false, fmt.Sprintf("job %s's reducers go to %s, not %s (%s)", j.ID, leftList(pl.Left), a.Node, pl.Reason)
}

// Commit implements policy.Committer: a reduce started on a chosen node
// takes one of its slots.
func (s *reducePlacement) Commit(hb *policy.Heartbeat, a policy.Action, veto *policy.Veto) {
	if veto != nil || a.Kind != policy.ActionStart || a.Type != models.ReduceTask {
		return
	}
	j := hb.Cluster.Job(a.Job)
	if j == nil {
		return
	}
	if pl := s.plans[planKey{a.Job, j.Stage}]; pl != nil && pl.Left[a.Node] > 0 {
		pl.Left[a.Node]--
		if pl.Left[a.Node] == 0 {
			delete(pl.Left, a.Node)
		}
	}
}

func leftList(left map[string]int) string {
	var b strings.Builder
	for i, n := range slices.Sorted(maps.Keys(left)) {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s×%d", n, left[n])
	}
	return b.String()
}

// plan returns the plan of j's current stage, deciding it on first use.
func (s *reducePlacement) plan(c *policy.ClusterView, j *policy.JobView) (*reducePlan, error) {
	key := planKey{j.ID, j.Stage}
	if pl := s.plans[key]; pl != nil {
		return pl, nil
	}
	// Plans of finished jobs and stages hold nothing any more.
	for k := range s.plans {
		if o := c.Job(k.job); o == nil || o.Stage != k.stage {
			delete(s.plans, k)
		}
	}
	var (
		req        *policy.PlacementRequest
		nodes      map[int]string
		static     bool
		dynamicWhy string
	)
	modelCosts := s.modelCosts()
	if modelCosts != nil {
		req, nodes, dynamicWhy, static = s.staticRequest(c, j, modelCosts)
	}
	var cost map[string]hopCost
	var kappa map[string]float64
	if !static {
		if !s.fixed {
			s.links.observe(c)
		}
		req, nodes, cost, kappa = s.request(c, j)
	}
	d, err := s.pol.Place(req)
	if err != nil {
		return nil, err
	}
	pl := &reducePlan{Job: j.ID, Stage: j.Stage, Left: map[string]int{}}
	for _, pos := range d.Positions {
		if pos < 0 || pos >= len(req.Free) {
			return nil, fmt.Errorf("%s chose position %d of %d free slots", s.pol.Name(), pos, len(req.Free))
		}
		sl := req.Free[pos]
		pl.Left[nodes[sl.Index]]++
		if static {
			if pl.Slots == nil {
				pl.Slots = map[string][]int{}
			}
			pl.Slots[nodes[sl.Index]] = append(pl.Slots[nodes[sl.Index]], sl.Index)
		}
	}
	if static {
		pl.Reason = fmt.Sprintf("X ≈ m/m_done·X_done = %d/%d·%.4g = %.4g MB for R = %d; %s; %s",
			j.MapsTotal, j.MapsDone, j.MapOutputMB(), req.X, req.R, staticReason(req, d.Positions, nodes, len(modelCosts)), d.Reason)
		s.plans[key] = pl
		return pl, nil
	}
	var hs []string
	racks := map[string]bool{}
	for _, n := range slices.Sorted(maps.Keys(pl.Left)) {
		hs = append(hs, fmt.Sprintf("H(%s) = %.3g", n, cost[n].total()))
		racks[c.Node(n).Rack] = true
	}
	for _, r := range slices.Sorted(maps.Keys(racks)) {
		hs = append(hs, fmt.Sprintf("κ(%s) = %.3g", r, kappa[r]))
	}
	if dynamicWhy != "" {
		hs = append(hs, dynamicWhy)
	}
	pl.Reason = fmt.Sprintf("X ≈ m/m_done·X_done = %d/%d·%.4g = %.4g MB for R = %d; %s; %s",
		j.MapsTotal, j.MapsDone, j.MapOutputMB(), req.X, req.R, strings.Join(hs, ", "), d.Reason)
	s.plans[key] = pl
	return pl, nil
}

// request builds the placement request of job j: its slots cheapest first
// with their node by slot index, H(v) by node and κ by rack.
func (s *reducePlacement) request(c *policy.ClusterView, j *policy.JobView) (*policy.PlacementRequest, map[int]string, map[string]hopCost, map[string]float64) {
	held := map[string]int{} // reducers of other jobs running or planned
	var heldIdx [][]int
	for _, n := range c.Nodes {
		for _, a := range n.Running {
			if a.Type == models.ReduceTask && a.Job != j.ID {
				held[n.ID]++
			}
		}
	}
	per := 0
	capSlots := make([]int, len(c.Nodes))
	for i, n := range c.Nodes {
		capSlots[i] = reduceSlots(c, n, j.Demand[models.ReduceTask])
		per = max(per, capSlots[i])
	}
	pos := spreadOrder(c)
	for _, k := range slices.SortedFunc(maps.Keys(s.plans), func(a, b planKey) int { return cmp.Or(strings.Compare(a.job, b.job), cmp.Compare(a.stage, b.stage)) }) {
		pl := s.plans[k]
		var idx []int
		for _, n := range slices.Sorted(maps.Keys(pl.Left)) {
			held[n] += pl.Left[n]
			for q := range pl.Left[n] {
				idx = append(idx, q*len(c.Nodes)+pos[n])
			}
		}
		heldIdx = append(heldIdx, idx)
	}
	cost := fetchCosts(c, j)
	req := &policy.PlacementRequest{X: estimateX(j), R: j.ReducesTotal, JobsInSystem: len(c.Jobs) - 1, Held: heldIdx, Waiting: waiting(c, j)}
	nodeOf := map[int]string{}
	var slots []nodeSlot
	for wave := 0; wave == 0 || (len(slots) < req.R && per > 0); wave++ {
		for i, n := range c.Nodes {
			first := 0
			if wave == 0 {
				first = held[n.ID]
			}
			for q := first; q < capSlots[i]; q++ {
				idx := wave*len(c.Nodes)*per + q*len(c.Nodes) + pos[n.ID]
				nodeOf[idx] = n.ID
				slots = append(slots, nodeSlot{idx, n, q})
			}
		}
	}
	rackHeld := map[string]int{}
	for _, n := range c.Nodes {
		rackHeld[n.Rack] += held[n.ID]
	}
	inRack := map[string]int{}
	for _, n := range c.Nodes {
		inRack[n.Rack]++
	}
	kappa := map[string]float64{}
	for r, k := range inRack {
		kappa[r] = s.links.kappa(r, k)
	}
	req.Free = slotCosts(slots, rackHeld, cost, kappa)
	slices.SortFunc(req.Free, func(a, b policy.Slot) int { return cmp.Or(cmp.Compare(a.Cost, b.Cost), cmp.Compare(a.Index, b.Index)) })
	return req, nodeOf, cost, kappa
}

// nodeSlot is the q-th free reduce slot of a node (q counts the slots
// others hold there), with its index in the placement request.
type nodeSlot struct {
	idx  int
	node *policy.NodeView
	q    int
}

// slotCosts prices the free slots, H(v) split into its part from v's own
// rack, H_in(v), and from the other racks, H_x(v) (see fetchCosts). The
// q-th slot of node v that is also the Q-th slot of its rack k costs
//
//	H_in(v)·(1 + q) + H_x(v)·max(1 + q, (1 + Q)/κ_k)
//
// A unit of data a reducer fetches from its own rack crosses v's link,
// which q + 1 fetchers share (each gets 1/(q + 1) of it: the max-min share
// of the simulator's network), so it takes q + 1 times as long as alone; a
// unit from another rack also crosses rack k's downlink, which the Q + 1
// reducers fetching into the rack share, and which carries κ_k node links'
// worth: its rate is the smaller of the two shares. Q counts the reducers
// other jobs hold in the rack (running or planned) and, within the rack,
// the slots before this one taken cheapest first by (1 + q)·H(v), the
// order in which a cheapest-first policy would take them (a policy that
// skips a rack's cheaper slots pays a little more than the costs say).
// κ_k is rack k's downlink in node links as the stage learned it from the
// fetch rates reducers report (linkEstimate): 1, one node link's worth (a
// rack of n nodes uplinked at n:1), until the rack's reducers were seen
// fetching, then the throughput they got together over the best one
// node's reducers got, so a rack seen congested (less than a link) costs
// more and one seen carrying several links costs less. Tan et al.'s slots have fixed costs (§II-B); without the
// q term every policy that prefers cheap slots stacks a job's reducers on
// its cheapest node, and without the Q term on its cheapest rack, whose
// oversubscribed downlink they then share (Fig. 10 of the paper with three
// alike racks: the finished maps' outputs make one rack a little cheaper).
func slotCosts(slots []nodeSlot, rackHeld map[string]int, cost map[string]hopCost, kappa map[string]float64) []policy.Slot {
	byRack := map[string][]nodeSlot{}
	var racks []string
	for _, sl := range slots {
		r := sl.node.Rack
		if _, ok := byRack[r]; !ok {
			racks = append(racks, r)
		}
		byRack[r] = append(byRack[r], sl)
	}
	free := make([]policy.Slot, 0, len(slots))
	for _, r := range racks {
		rs := byRack[r]
		slices.SortStableFunc(rs, func(a, b nodeSlot) int {
			return cmp.Or(cmp.Compare(cost[a.node.ID].total()*float64(1+a.q), cost[b.node.ID].total()*float64(1+b.q)), cmp.Compare(a.idx, b.idx))
		})
		for k, sl := range rs {
			h, q, Q := cost[sl.node.ID], float64(1+sl.q), float64(1+rackHeld[r]+k)
			c := h.in*q + h.x*math.Max(q, Q/kappa[r])
			free = append(free, policy.Slot{Index: sl.idx, Cost: math.Round(c*1e9) / 1e9})
		}
	}
	return free
}

// spreadOrder ranks the nodes so that slots of equal cost, taken in index
// order, spread over the racks and then over their nodes: the first node
// of every rack, then the second of every rack, and so on (a slot's index
// is q·nodes + rank, q its position on the node).
func spreadOrder(c *policy.ClusterView) map[string]int {
	inRack := map[string]int{}
	type nr struct{ node, k, rack int }
	var order []nr
	racks := map[string]int{}
	for i, n := range c.Nodes {
		if _, ok := racks[n.Rack]; !ok {
			racks[n.Rack] = len(racks)
		}
		order = append(order, nr{i, inRack[n.Rack], racks[n.Rack]})
		inRack[n.Rack]++
	}
	slices.SortFunc(order, func(a, b nr) int { return cmp.Or(cmp.Compare(a.k, b.k), cmp.Compare(a.rack, b.rack)) })
	rank := make(map[string]int, len(order))
	for r, o := range order {
		rank[c.Nodes[o.node].ID] = r
	}
	return rank
}

// reduceSlots is how many reducers of request d node n holds at once.
func reduceSlots(c *policy.ClusterView, n *policy.NodeView, d models.Resources) int {
	if c.SlotBased {
		return n.ReduceSlots
	}
	k := math.MaxInt
	for p, v := range d {
		if v > 0 && p < len(n.Capacity) {
			k = min(k, int(n.Capacity[p]/v))
		}
	}
	if k == math.MaxInt {
		return 1
	}
	return k
}

// estimateX is Tan et al.'s X = m/m_done · X_done (§I-C): the reported
// output of the finished maps scaled to all of them (0 before any).
func estimateX(j *policy.JobView) float64 {
	if j.MapsDone == 0 {
		return 0
	}
	return float64(j.MapsTotal) / float64(j.MapsDone) * j.MapOutputMB()
}

// fetchCosts returns H(v) for every node: the mean hop distance to v from
// the job's map outputs, weighted by their MB (by their number of maps
// while no size is known); 0 everywhere before any map finished. The
// outputs are those of the finished maps and the expected ones of the
// maps still to run, which run where map slots are: each node is expected
// to hold a share of them proportional to the map tasks it holds at once
// (a uniform block layout; at slow-start only 5% of the maps are done, and
// their nodes alone would be a biased picture of where the job's data
// will be).
func fetchCosts(c *policy.ClusterView, j *policy.JobView) map[string]hopCost {
	w := outputWeights(c, j)
	total := 0.0
	for _, x := range w {
		total += x
	}
	cost := map[string]hopCost{}
	for _, n := range c.Nodes {
		hin, hx := 0.0, 0.0
		for i, src := range c.Nodes {
			switch {
			case src.ID == n.ID:
			case src.Rack == n.Rack:
				hin += SameRackHops * w[i]
			default:
				hx += CrossRackHops * w[i]
			}
		}
		if total > 0 {
			hin /= total
			hx /= total
		}
		// Rounded, so that nodes placed alike tie whatever the order of the
		// sums (ties go by the rack-spread order).
		cost[n.ID] = hopCost{in: math.Round(hin*1e9) / 1e9, x: math.Round(hx*1e9) / 1e9}
	}
	return cost
}

// hopCost is H(v) in two parts: the hops from the map outputs in v's own
// rack (in) and from the other racks (x), each per unit of the job's data.
type hopCost struct{ in, x float64 }

func (h hopCost) total() float64 { return h.in + h.x }

// outputWeights is the job's map output expected on each node (by
// c.Nodes), in MB, or in maps while no size is known (see fetchCosts).
func outputWeights(c *policy.ClusterView, j *policy.JobView) []float64 {
	bySize := j.MapOutputMB() > 0
	at := map[string]float64{}
	for _, o := range j.MapOutputs {
		if bySize {
			at[o.Node] += o.MB
		} else {
			at[o.Node] += float64(o.Maps)
		}
	}
	perMap := 1.0
	if bySize {
		perMap = j.MapOutputMB() / float64(j.MapsDone)
	}
	left := 0.0
	if j.MapsDone > 0 {
		left = float64(j.MapsTotal-j.MapsDone) * perMap
	}
	capOf := make([]float64, len(c.Nodes))
	capSum := 0.0
	for i, n := range c.Nodes {
		if c.SlotBased {
			capOf[i] = float64(n.MapSlots)
		} else {
			capOf[i] = float64(reduceSlots(c, n, j.Demand[models.MapTask]))
		}
		capSum += capOf[i]
	}
	w := make([]float64, len(c.Nodes))
	for i, n := range c.Nodes {
		w[i] = at[n.ID]
		if capSum > 0 {
			w[i] += left * capOf[i] / capSum
		}
	}
	return w
}

// placementState is the stage's snapshot: its plans, the placement
// policy's estimator if it has one, and its own state if it is
// policy.Stateful (random's generator).
type placementState struct {
	Plans     []*reducePlan              `json:"plans"`
	Estimator *thresholds.EstimatorState `json:"estimator,omitempty"`
	Policy    json.RawMessage            `json:"policy,omitempty"`
	Links     *linkEstimate              `json:"links,omitempty"`
}

// Snapshot implements policy.Stateful.
func (s *reducePlacement) Snapshot() ([]byte, error) {
	st := placementState{Plans: []*reducePlan{}}
	if s.links.LinkMBps > 0 {
		st.Links = &s.links
	}
	for _, k := range slices.SortedFunc(maps.Keys(s.plans), func(a, b planKey) int { return cmp.Or(strings.Compare(a.job, b.job), cmp.Compare(a.stage, b.stage)) }) {
		st.Plans = append(st.Plans, s.plans[k])
	}
	if e, ok := s.pol.(policy.Estimating); ok {
		es := e.Estimator().Snapshot()
		st.Estimator = &es
	}
	if sp, ok := s.pol.(policy.Stateful); ok {
		b, err := sp.Snapshot()
		if err != nil {
			return nil, err
		}
		st.Policy = b
	}
	return json.Marshal(st)
}

// Restore implements policy.Stateful.
func (s *reducePlacement) Restore(data []byte) error {
	var st placementState
	if err := policy.DecodeSnapshot(data, &st); err != nil {
		return err
	}
	plans := map[planKey]*reducePlan{}
	for i, pl := range st.Plans {
		if pl == nil || pl.Job == "" || pl.Stage < 0 {
			return fmt.Errorf("%w: plans[%d]: no job or a negative stage", policy.ErrInvalidConfig, i)
		}
		for n, v := range pl.Left {
			if v < 1 {
				return fmt.Errorf("%w: plans[%d].left[%q] = %d, must be ≥ 1", policy.ErrInvalidConfig, i, n, v)
			}
		}
		if pl.Left == nil {
			pl.Left = map[string]int{}
		}
		for n, idx := range pl.Slots {
			for k, v := range idx {
				if v < 0 {
					return fmt.Errorf("%w: plans[%d].slots[%q][%d] = %d, must be ≥ 0", policy.ErrInvalidConfig, i, n, k, v)
				}
			}
		}
		plans[planKey{pl.Job, pl.Stage}] = pl
	}
	e, ok := s.pol.(policy.Estimating)
	if ok != (st.Estimator != nil) {
		return fmt.Errorf("%w: estimator state for a placement policy %q that has %s", policy.ErrInvalidConfig, s.pol.Name(), map[bool]string{true: "one", false: "none"}[ok])
	}
	if ok {
		est, err := thresholds.RestoreEstimator(*st.Estimator)
		if err != nil {
			return fmt.Errorf("%w: %w", policy.ErrInvalidConfig, err)
		}
		*e.Estimator() = *est
	}
	// A snapshot without the policy's state (written before random kept
	// its generator in it) leaves the policy as it was built.
	sp, ok := s.pol.(policy.Stateful)
	if !ok && st.Policy != nil {
		return fmt.Errorf("%w: policy state for a placement policy %q that has none", policy.ErrInvalidConfig, s.pol.Name())
	}
	if ok && st.Policy != nil {
		if err := sp.Restore(st.Policy); err != nil {
			return err
		}
	}
	var links linkEstimate
	if st.Links != nil {
		links = *st.Links
		for r, v := range links.RackMBps {
			if !(v > 0) || math.IsInf(v, 0) {
				return fmt.Errorf("%w: links.rack_mbps[%q] = %v, must be a finite number > 0", policy.ErrInvalidConfig, r, v)
			}
		}
		if !(links.LinkMBps > 0) || math.IsInf(links.LinkMBps, 0) {
			return fmt.Errorf("%w: links.link_mbps = %v, must be a finite number > 0", policy.ErrInvalidConfig, links.LinkMBps)
		}
	}
	s.links = links
	s.plans = plans
	return nil
}
