package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"unicode"
	"unicode/utf8"

	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
	"github.com/optd/optd/policy/placement"
	optdv1 "github.com/optd/optd/proto/optd/v1"
	"github.com/optd/optd/store"
	"github.com/optd/optd/thresholds"
)

// maxIDBytes bounds cluster, node and job ids.
const maxIDBytes = 256

// Default hop distances of [optdv1.Topology].
const (
	defaultSameRackHops  = 2
	defaultCrossRackHops = 4
)

// maxDataMB bounds PlaceReduces' data_mb: an exabyte (10^12 MB) of
// intermediate data is beyond any job, and larger values (1.7e308) would
// enter the estimator's mean and move every later threshold.
const maxDataMB = 1e12

// maxClockS bounds the executor's clock (now_s, submit_s): 10^10 s is the
// year 2286 in Unix seconds, so any real or simulated clock fits, and an
// absurd one (1e300) is refused before it reaches the ledger.
const maxClockS = 1e10

// checkClock refuses a clock reading outside [0, maxClockS].
func checkClock(field string, t float64) error {
	if !(t >= 0 && t <= maxClockS) {
		return invalid(field, t, "must be in [0, %g] (seconds on the executor's clock)", float64(maxClockS))
	}
	return nil
}

// defaultPolicy is the placement policy of a cluster registered without one.
const defaultPolicy = placement.NameRecedingHorizon

// checkID: non-empty, at most maxIDBytes bytes of UTF-8 without control
// characters.
func checkID(field, id string) error {
	switch {
	case id == "":
		return invalid(field, `""`, "must not be empty")
	case len(id) > maxIDBytes:
		return invalid(field, fmt.Sprintf("%d bytes", len(id)), "an id has at most %d bytes", maxIDBytes)
	case !utf8.ValidString(id):
		return invalid(field, id, "must be valid UTF-8")
	}
	for _, r := range id {
		if unicode.IsControl(r) {
			return invalid(field, id, "must not contain control characters")
		}
	}
	return nil
}

func finiteNonNeg(x float64) bool { return x >= 0 && x <= math.MaxFloat64 }

// clusterFromRequest validates a RegisterCluster request and returns the
// cluster to store, with every slot's fetch cost given or derived from the
// topology (see [slotsFromTopology]); ctx bounds building its placement
// policy (a solve or a fit), which validates the policy.
func clusterFromRequest(ctx context.Context, req *optdv1.RegisterClusterRequest, lim Limits) (store.Cluster, error) {
	c, _, err := clusterAndPolicy(ctx, req, lim)
	return c, err
}

// clusterAndPolicy is clusterFromRequest that also returns the placement
// policy it built to validate the policy, for the registration to use.
func clusterAndPolicy(ctx context.Context, req *optdv1.RegisterClusterRequest, lim Limits) (store.Cluster, policy.Placement, error) {
	c := store.Cluster{ID: req.GetClusterId()}
	if err := checkID("cluster_id", c.ID); err != nil {
		return c, nil, err
	}
	nodes := req.GetNodes()
	switch {
	case len(nodes) == 0:
		return c, nil, invalid("nodes", "[]", "a cluster needs at least one node")
	case len(nodes) > lim.MaxNodes:
		return c, nil, exhausted("the cluster's nodes", len(nodes), "limits.max_nodes", lim.MaxNodes)
	}
	index := make(map[string]int, len(nodes))
	derivedSlots := 0
	for i, n := range nodes {
		field := func(f string) string { return fieldf("nodes[%d].%s", i, f) }
		if err := checkID(field("id"), n.GetId()); err != nil {
			return c, nil, err
		}
		if _, dup := index[n.GetId()]; dup {
			return c, nil, invalid(field("id"), n.GetId(), "duplicate node id")
		}
		index[n.GetId()] = i
		if n.GetRack() != "" {
			if err := checkID(field("rack"), n.GetRack()); err != nil {
				return c, nil, err
			}
		}
		for name, v := range n.GetCapacity() {
			if err := checkID(field("capacity key"), name); err != nil {
				return c, nil, err
			}
			if !finiteNonNeg(v) {
				return c, nil, invalid(fieldf("nodes[%d].capacity[%q]", i, name), v, "must be finite and ≥ 0")
			}
		}
		if n.GetReduceSlots() < 0 {
			return c, nil, invalid(field("reduce_slots"), n.GetReduceSlots(), "must be ≥ 0")
		}
		if n.GetMapSlots() < 0 {
			return c, nil, invalid(field("map_slots"), n.GetMapSlots(), "must be ≥ 0")
		}
		derivedSlots += int(n.GetReduceSlots())
		if derivedSlots > lim.MaxSlots {
			return c, nil, exhausted("the cluster's reduce slots (Σ nodes[].reduce_slots)", derivedSlots, "limits.max_slots", lim.MaxSlots)
		}
		c.Nodes = append(c.Nodes, store.Node{ID: n.GetId(), Rack: n.GetRack(), Capacity: n.GetCapacity(), ReduceSlots: int(n.GetReduceSlots()), MapSlots: int(n.GetMapSlots())})
	}
	var err error
	if c.Heartbeat, err = heartbeatFromRequest(req, c.Nodes); err != nil {
		return c, nil, err
	}
	if slots := req.GetSlots(); len(slots) > 0 {
		if len(slots) > lim.MaxSlots {
			return c, nil, exhausted("the cluster's reduce slots (len(slots))", len(slots), "limits.max_slots", lim.MaxSlots)
		}
		for i, sl := range slots {
			if _, ok := index[sl.GetNodeId()]; !ok {
				return c, nil, invalid(fieldf("slots[%d].node_id", i), sl.GetNodeId(), "is not one of the cluster's nodes")
			}
			if !finiteNonNeg(sl.GetFetchCost()) {
				return c, nil, invalid(fieldf("slots[%d].fetch_cost", i), sl.GetFetchCost(), "must be finite and ≥ 0")
			}
			c.Slots = append(c.Slots, store.Slot{Node: sl.GetNodeId(), FetchCost: sl.GetFetchCost()})
		}
	} else {
		if c.Slots, err = slotsFromTopology(c.Nodes, req.GetTopology()); err != nil {
			return c, nil, err
		}
		if len(c.Slots) == 0 && c.Heartbeat == nil {
			return c, nil, invalid("slots", "[]", "no reduce slots: give slots or nodes[].reduce_slots")
		}
	}
	p := req.GetPolicy()
	c.Policy = store.Policy{Name: p.GetName(), Window: int(p.GetWindow()), Horizon: int(p.GetHorizon()), Seed: p.GetSeed()}
	if c.Policy.Name == "" {
		c.Policy.Name = defaultPolicy
	}
	if err := policyParamsAndModel(p, &c.Policy); err != nil {
		return c, nil, err
	}
	if c.Policy.Window < 0 {
		return c, nil, invalid("policy.window", c.Policy.Window, "must be ≥ 0 (0: the default)")
	}
	if c.Policy.Horizon < 0 {
		return c, nil, invalid("policy.horizon", c.Policy.Horizon, "must be ≥ 0 (0: the default)")
	}
	if c.Policy.Window > lim.MaxJobs {
		return c, nil, overLimit("policy.window", c.Policy.Window, "limits.max_jobs", lim.MaxJobs)
	}
	// The rolling policy builds a threshold table of H jobs with up to R
	// reduces (R ≤ the cluster's slots): refuse an H whose table cannot be
	// built, here rather than at every PlaceReduces.
	if h := c.Policy.Horizon; h > 0 && c.Policy.Name == placement.NameRollingHorizon {
		if b := thresholds.TableBytes(h, max(len(c.Slots), 1)); b > float64(thresholds.DefaultMaxTableBytes) {
			return c, nil, invalid("policy.horizon", h, "the rolling table of H = %d jobs with up to %d reduces needs about %.0f MiB, over the limit of %d MiB",
				h, len(c.Slots), b/(1<<20), thresholds.DefaultMaxTableBytes>>20)
		}
	}
	pl, err := newPlacement(ctx, c.Policy, c.Slots, false)
	if err != nil {
		return c, nil, err
	}
	if c.Heartbeat != nil && p != nil {
		c.Heartbeat.PlaceReduces = true
	}
	return c, pl, nil
}

// slotsFromTopology derives reduce slots and their fetch costs from hop
// distances: node n has nodes[n].reduce_slots slots, each costing
//
//	H(n) = (1/|N|)·Σ_m hops(n, m),
//
// the mean hop count from n to every node, where the map output a reducer
// fetches is assumed spread evenly over the nodes; hops(n, n) = 0,
// same_rack_hops within a rack, cross_rack_hops across racks (a node with no
// rack is a rack of its own).
func slotsFromTopology(nodes []store.Node, t *optdv1.Topology) ([]store.Slot, error) {
	same, cross := t.GetSameRackHops(), t.GetCrossRackHops()
	if same == 0 {
		same = defaultSameRackHops
	}
	if cross == 0 {
		cross = defaultCrossRackHops
	}
	if !finiteNonNeg(same) {
		return nil, invalid("topology.same_rack_hops", same, "must be finite and ≥ 0")
	}
	if !finiteNonNeg(cross) {
		return nil, invalid("topology.cross_rack_hops", cross, "must be finite and ≥ 0")
	}
	perRack := map[string]int{}
	for _, n := range nodes {
		if n.Rack != "" {
			perRack[n.Rack]++
		}
	}
	var slots []store.Slot
	total := float64(len(nodes))
	for _, n := range nodes {
		inRack := 1
		if n.Rack != "" {
			inRack = perRack[n.Rack]
		}
		h := (float64(inRack-1)*same + (total-float64(inRack))*cross) / total
		for range n.ReduceSlots {
			slots = append(slots, store.Slot{Node: n.ID, FetchCost: h})
		}
	}
	return slots, nil
}

func checkSubmit(req *optdv1.SubmitJobRequest) error {
	if err := checkID("cluster_id", req.GetClusterId()); err != nil {
		return err
	}
	if err := checkID("job_id", req.GetJobId()); err != nil {
		return err
	}
	if req.GetMaps() < 0 {
		return invalid("maps", req.GetMaps(), "must be ≥ 0")
	}
	if req.GetReduces() < 0 {
		return invalid("reduces", req.GetReduces(), "must be ≥ 1 (≥ 0 on a cluster with a heartbeat policy)")
	}
	return nil
}

func checkPlace(req *optdv1.PlaceReducesRequest) error {
	if err := checkID("cluster_id", req.GetClusterId()); err != nil {
		return err
	}
	if err := checkID("job_id", req.GetJobId()); err != nil {
		return err
	}
	if !(req.GetDataMb() >= 0 && req.GetDataMb() <= maxDataMB) {
		return invalid("data_mb", req.GetDataMb(), "must be in [0, %g] MB", float64(maxDataMB))
	}
	if req.GetReduces() < 0 {
		return invalid("reduces", req.GetReduces(), "must be ≥ 1 (0: the value given at SubmitJob)")
	}
	return nil
}

func checkJobRef(clusterID, jobID string) error {
	if err := checkID("cluster_id", clusterID); err != nil {
		return err
	}
	return checkID("job_id", jobID)
}

// policyParamsAndModel copies the policy's parameters and model into the
// stored policy, refusing what no policy could use (the family checks its
// own parameter names and ranges, and a fitted policy the model's ranges,
// when it is built).
func policyParamsAndModel(p *optdv1.PlacementPolicy, out *store.Policy) error {
	for _, k := range slices.Sorted(maps.Keys(p.GetParams())) {
		if v := p.GetParams()[k]; math.IsNaN(v) || math.IsInf(v, 0) {
			return invalid(fieldf("policy.params[%q]", k), v, "must be finite")
		}
	}
	if len(p.GetParams()) > 0 {
		out.Params = maps.Clone(p.GetParams())
	}
	m := p.GetModel()
	if m == nil {
		return nil
	}
	switch {
	case !(m.GetArrivalRate() > 0) || math.IsInf(m.GetArrivalRate(), 0):
		return invalid("policy.model.arrival_rate", m.GetArrivalRate(), "must be finite and > 0")
	case !(m.GetServiceRate() > 0) || math.IsInf(m.GetServiceRate(), 0):
		return invalid("policy.model.service_rate", m.GetServiceRate(), "must be finite and > 0")
	case m.GetMaxJobsInService() < 1:
		return invalid("policy.model.max_jobs_in_service", m.GetMaxJobsInService(), "must be ≥ 1")
	case m.MaxWaiting != nil && m.GetMaxWaiting() < 0:
		return invalid("policy.model.max_waiting", m.GetMaxWaiting(), "must be ≥ 0, or absent for unlimited")
	case m.MaxWaiting == nil && m.GetArrivalRate() >= m.GetServiceRate():
		return invalid("policy.model.arrival_rate", m.GetArrivalRate(), "the queue is unstable: arrival_rate/service_rate = %g ≥ 1 with an unlimited waiting room", m.GetArrivalRate()/m.GetServiceRate())
	}
	field := "policy.model.workload"
	if m.GetWorkloadJson() != "" {
		field = "policy.model.workload_json"
	}
	text, err := inputJSON("policy.model.workload", m.GetWorkload(), "policy.model.workload_json", m.GetWorkloadJson())
	switch {
	case err != nil:
		return err
	case text == "":
		return invalid("policy.model.workload", "absent", "must be a workload (docs/formats.md#workload)")
	}
	if err := rejectFileRefs(field, []byte(text)); err != nil {
		return err
	}
	if _, err := models.DecodeWorkloadField([]byte(text), "", field); err != nil {
		return err
	}
	// Stored compact, so that a retried registration compares equal to the
	// stored one whatever its spacing.
	var w bytes.Buffer
	if err := json.Compact(&w, []byte(text)); err != nil {
		return invalid(field, text, "not JSON: %v", err)
	}
	if n := len(m.GetSlotCosts()); n > policy.MaxModelSlots {
		return invalid("policy.model.slot_costs", fmt.Sprintf("%d costs", n), "at most %d", policy.MaxModelSlots)
	}
	for i, c := range m.GetSlotCosts() {
		if !(c >= 0) || math.IsInf(c, 0) {
			return invalid(fieldf("policy.model.slot_costs[%d]", i), c, "must be finite and ≥ 0")
		}
	}
	waiting := -1
	if m.MaxWaiting != nil {
		waiting = int(m.GetMaxWaiting())
	}
	out.Model = &store.PlacementModel{ArrivalRate: m.GetArrivalRate(), ServiceRate: m.GetServiceRate(), MaxJobsInService: int(m.GetMaxJobsInService()),
		MaxWaiting: waiting, Workload: json.RawMessage(w.Bytes()), Seed: m.GetSeed(), SlotCosts: slices.Clone(m.GetSlotCosts())}
	return nil
}
