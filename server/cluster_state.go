package server

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/optd/optd/ledger"
	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
	_ "github.com/optd/optd/policy/adp"        // the fitted placement policies
	_ "github.com/optd/optd/policy/mdpoptimal" // the MDP's optimal placement on the cluster's model
	_ "github.com/optd/optd/policy/rollout"    // the placement policy that simulates the model
	"github.com/optd/optd/store"
	"github.com/optd/optd/thresholds"
)

// newPlacement builds the cluster's placement policy from the registry,
// with its model (if any) on the cluster's slot costs. A fitted policy
// fits here, the same fit whenever the same cluster is loaded. stored says
// the cluster was accepted before (loaded from the store): a solve's time
// limit then does not apply again (policy.PlacementConfig.Restoring), so a
// restart on a busier machine cannot make a registered cluster fail to load.
// ctx bounds the build (a solve or a fit): a registering client that gives
// up stops it; a stored cluster is loaded with no deadline.
func newPlacement(ctx context.Context, p store.Policy, slots []store.Slot, stored bool) (policy.Placement, error) {
	cfg := policy.PlacementConfig{Seed: p.Seed, Window: p.Window, Horizon: p.Horizon, Params: p.Params, Restoring: stored, Context: ctx}
	if m := p.Model; m != nil {
		w, err := models.DecodeWorkloadField(m.Workload, "", "policy.model.workload_json")
		if err != nil {
			return nil, err
		}
		costs := m.SlotCosts // a heartbeat cluster's model brings its own
		if len(costs) == 0 {
			costs = make([]float64, len(slots))
			for v, sl := range slots {
				costs[v] = sl.FetchCost
			}
		}
		cfg.Model = &policy.PlacementModel{ArrivalRate: m.ArrivalRate, ServiceRate: m.ServiceRate, MaxJobsInService: m.MaxJobsInService,
			MaxWaiting: m.MaxWaiting, Workload: w, SlotCosts: costs, Seed: m.Seed}
	}
	pl, err := policy.NewPlacement(p.Name, cfg)
	if err != nil {
		return nil, fmt.Errorf("policy.name %q: %w", p.Name, err)
	}
	return pl, nil
}

// estimatorState returns the policy's estimator snapshot, nil if it has
// none; seenOffset is added to its Seen (see cluster.seenOffset).
func estimatorState(p policy.Placement, seenOffset int64) *thresholds.EstimatorState {
	if e, ok := p.(policy.Estimating); ok {
		s := e.Estimator().Snapshot()
		s.Seen += seenOffset
		return &s
	}
	return nil
}

// estimatorSeen returns the policy's estimator's Seen, 0 if it has none.
func estimatorSeen(p policy.Placement) int64 {
	if e, ok := p.(policy.Estimating); ok {
		return e.Estimator().Seen()
	}
	return 0
}

// observedSince returns the observations the policy's estimator recorded
// since it had seen `seen` (as returned by estimatorSeen), oldest first;
// none if it has no estimator. It fails if some have already left the
// window (more than ω), since the store could then not replay them.
func observedSince(p policy.Placement, seen int64) ([]thresholds.Observation, error) {
	e, ok := p.(policy.Estimating)
	if !ok {
		return nil, nil
	}
	est := e.Estimator()
	n := est.Seen() - seen
	if n == 0 {
		return nil, nil
	}
	if n < 0 || n > int64(est.Window()) {
		return nil, fmt.Errorf("server: placement policy's estimator went from %d to %d observations in one decision (window %d)", seen, est.Seen(), est.Window())
	}
	return est.Newest(int(n)), nil
}

// cluster is a cluster's state in memory, loaded from the store and kept
// equal to it: every change is applied here under the cluster's lock and
// queued to the store, which aborts the changes after a failed one so that
// the cluster is reloaded (see ClusterService). The estimator window lives
// in the policy (st.Estimator is nil once loaded). Access only while
// holding the cluster's lock.
type cluster struct {
	st     *store.State
	policy policy.Placement
	// byCost lists slot indices cheapest first (ties by index); the free
	// list a placement sees is this order filtered by holder.
	byCost []int
	// holder[v] is the job holding slot v, "" if free.
	holder []string
	// jobs indexes st.Jobs by id. st.Jobs is in no particular order once
	// a job has finished (see deleteJob).
	jobs map[string]int
	// heldBuf and freeBuf are PlacementRequest.Held's and Free's storage,
	// reused across calls (policies keep neither).
	heldBuf [][]int
	freeBuf []policy.Slot
	// seenOffset is the stored estimator's Seen minus the observations
	// replayed into the fresh policy on load, so that Seen survives restarts.
	seenOffset int64
	// sched decides heartbeats (nil: the cluster has no heartbeat policy);
	// policyState is its pipeline's snapshot as last stored or queued.
	sched       *ledger.Scheduler
	policyState []byte
	// checkpointBytes is the size of the event log's first entry (its
	// checkpoint, after the first compaction) and logBytes that of the
	// entries after it (see logChange).
	checkpointBytes, logBytes int
	// beats holds each node's last heartbeat with a seq and its answer,
	// for retries; lastNowS each node's clock at its last heartbeat (one
	// before it is refused). Both are stored with each heartbeat that
	// changes the cluster (see rememberBeat).
	beats    map[string]beatAnswer
	lastNowS map[string]float64
	// capacities are the nodes' capacities over the heartbeat resources
	// (built on first use by checkFits).
	capacities []models.Resources
}

// loadCluster rebuilds a cluster from its stored state. The policy's
// estimator is restored by replaying the stored window into a fresh policy,
// which reproduces the window, its order and its sums (the running sums are
// recomputed every ω observations, so they agree with the live ones up to
// rounding); Seen is carried over through seenOffset. The "random" policy's
// stream restarts from its seed. lim bounds the heartbeat's decisions.
func loadCluster(st *store.State, lim Limits) (*cluster, error) {
	p, err := newPlacement(context.Background(), st.Cluster.Policy, st.Cluster.Slots, true)
	if err != nil {
		return nil, err
	}
	c := &cluster{st: st, policy: p, holder: make([]string, len(st.Cluster.Slots)), jobs: map[string]int{}}
	if c.sched, err = newScheduler(st, lim.withDefaults().MaxStartsPerHeartbeat); err != nil {
		return nil, err
	}
	for i, e := range st.Log {
		if i == 0 {
			c.checkpointBytes = len(e)
		} else {
			c.logBytes += len(e)
		}
	}
	st.Log, c.policyState, st.PolicyState = nil, st.PolicyState, nil // replayed into the ledger and the pipeline
	if err := c.restoreBeats(st.Beats); err != nil {
		return nil, err
	}
	st.Beats = nil
	if e, ok := p.(policy.Estimating); ok && st.Estimator != nil {
		if _, err := thresholds.RestoreEstimator(*st.Estimator); err != nil {
			return nil, fmt.Errorf("cluster %q: stored estimator: %w", st.Cluster.ID, err)
		}
		for _, o := range st.Estimator.Observations {
			if err := e.Estimator().Observe(o); err != nil {
				return nil, err
			}
		}
		c.seenOffset = st.Estimator.Seen - int64(len(st.Estimator.Observations))
	}
	st.Estimator = nil
	c.byCost = make([]int, len(st.Cluster.Slots))
	for v := range c.byCost {
		c.byCost[v] = v
	}
	slots := st.Cluster.Slots
	slices.SortStableFunc(c.byCost, func(a, b int) int { return cmp.Compare(slots[a].FetchCost, slots[b].FetchCost) })
	for i, j := range st.Jobs {
		c.jobs[j.ID] = i
		for _, v := range j.Slots {
			if v < 0 || v >= len(c.holder) || c.holder[v] != "" {
				return nil, fmt.Errorf("cluster %q: stored job %q holds slot %d, which is out of range or already held", st.Cluster.ID, j.ID, v)
			}
			c.holder[v] = j.ID
		}
	}
	return c, nil
}

// freeSlots returns the free slots cheapest first.
// The slice is the cluster's buffer, valid until the next call.
func (c *cluster) freeSlots() []policy.Slot {
	free := c.freeBuf[:0]
	for _, v := range c.byCost {
		if c.holder[v] == "" {
			free = append(free, policy.Slot{Index: v, Cost: c.st.Cluster.Slots[v].FetchCost})
		}
	}
	c.freeBuf = free
	return free
}

func (c *cluster) nFree() int {
	n := 0
	for _, h := range c.holder {
		if h == "" {
			n++
		}
	}
	return n
}

// putJob applies a committed job record.
func (c *cluster) putJob(j store.Job) {
	if i, ok := c.jobs[j.ID]; ok {
		for _, v := range c.st.Jobs[i].Slots {
			c.holder[v] = ""
		}
		c.st.Jobs[i] = j
	} else {
		c.jobs[j.ID] = len(c.st.Jobs)
		c.st.Jobs = append(c.st.Jobs, j)
	}
	for _, v := range j.Slots {
		c.holder[v] = j.ID
	}
}

// deleteJob applies a committed deletion.
func (c *cluster) deleteJob(id string) {
	i, ok := c.jobs[id]
	if !ok {
		return
	}
	for _, v := range c.st.Jobs[i].Slots {
		c.holder[v] = ""
	}
	// Swap with the last job: O(1) where keeping st.Jobs in submission
	// order would renumber every later job (stateProto sorts by Seq).
	last := len(c.st.Jobs) - 1
	if i != last {
		c.st.Jobs[i] = c.st.Jobs[last]
		c.jobs[c.st.Jobs[i].ID] = i
	}
	c.st.Jobs[last] = store.Job{}
	c.st.Jobs = c.st.Jobs[:last]
	delete(c.jobs, id)
}
