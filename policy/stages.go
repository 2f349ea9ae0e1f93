package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/optd/optd/models"
)

// The extension points of a heartbeat, one small interface each, and what
// a spec item contributes to a pipeline (Stages, built by a registered
// StagesFactory from a HeartbeatConfig).

// Assigner chooses what to start on the node that heartbeats: Rank returns
// Start candidates, best first. The pipeline takes the first candidate that
// fits and that every LaunchFilter admits, commits it, and calls Rank again
// with the updated tentative state, until no candidate is accepted; so an
// Assigner only orders, it never has to track the node's residual capacity.
type Assigner interface {
	Plugin
	Rank(hb *Heartbeat) []Action
}

// SlotPolicy sets how many map and reduce slots the node offers now (MRv1
// static slots; DynamicMR's DHSA borrowing between the two pools). It is
// consulted first on every heartbeat of a slot-based cluster.
type SlotPolicy interface {
	Plugin
	// Slots returns the node's map and reduce slot counts for this
	// heartbeat, and why. A count may not drop below the slots in use.
	Slots(hb *Heartbeat) (mapSlots, reduceSlots int, reason string)
}

// LaunchFilter may veto or defer a Start the Assigner proposes (delay
// scheduling, Slot PreScheduling), or a copy a Speculator proposes. A
// vetoed candidate is skipped, the veto and its reason recorded, and the
// pipeline tries the next one. Admit only reads: the candidate may yet be
// vetoed by another filter or not start at all, so a filter whose state
// follows what starts (delay scheduling's wait clocks) updates it in
// Commit (see Committer).
type LaunchFilter interface {
	Plugin
	Admit(hb *Heartbeat, a Action) (ok bool, reason string)
}

// ReducePlacer chooses the nodes of each job's reducers inside the
// heartbeat (Tan et al., INFOCOM 2013: the cluster's placement policy on
// the fetch costs H(v), once the job's maps give an estimate of its
// intermediate data X). The pipeline asks it about every reduce Start the
// assigner proposes, before the launch filters: ok with the decision's
// reason (appended to the start's), or a refusal, recorded as a veto,
// naming where the job's reducers go instead. Like a filter it decides
// without changing what follows the starts; that changes in Commit.
type ReducePlacer interface {
	Plugin
	PlaceReduce(hb *Heartbeat, a Action) (ok bool, reason string)
}

// ReducePlacementStage is the name of the stage that places reducers by
// HeartbeatConfig.Placement (registered by policy/placement with
// RegisterReducePlacer; NewPipeline adds it when the configuration has a
// placement policy, no spec names it).
const ReducePlacementStage = "reduce-placement"

// Speculator launches speculative copies of running attempts on the
// heartbeating node (ActionSpeculate, which must fit its free resources)
// and kills attempts anywhere in the cluster (ActionKill). It returns the
// copies it withheld too, as vetoes (a gate such as SEPB's pending-task
// window or BASE's benefit test refused them).
type Speculator interface {
	Plugin
	Speculate(hb *Heartbeat) ([]Action, []Veto)
}

// Committer is optionally implemented by a stage whose state follows the
// heartbeat's decisions (Kubernetes' Reserve to its Filter): stages decide
// without changing that state, and once the pipeline has decided a
// candidate it calls Commit on every stage that implements Committer: with
// each Start, Speculate or Kill it accepts (veto nil), and with each Start
// or Speculate a filter vetoed (the veto). Commit runs at once, before the
// next candidate is considered, so later decisions of the same heartbeat
// see it.
type Committer interface {
	Commit(hb *Heartbeat, a Action, veto *Veto)
}

// Stateful is implemented by a stage that learns (estimates, counters, a
// plan): Snapshot returns its state as JSON and Restore sets it from one
// of its snapshots, on a fresh stage of the same spec and configuration,
// so that a server restarted between two heartbeats decides exactly as
// one that never stopped. A stage without learned state does not
// implement it.
type Stateful interface {
	Snapshot() ([]byte, error)
	Restore(data []byte) error
}

// Sharer adjusts the resources of the node's running attempts
// (ActionAdjust): resource stealing hands out what is still idle after the
// other stages, DynamicAdjust rebalances CPU toward skewed tasks. The sum of
// the grants on the node must not exceed its capacity.
type Sharer interface {
	Plugin
	Share(hb *Heartbeat) []Action
}

// Observer is optionally implemented by any stage that learns from the run
// (completion times for speculation estimates, etc.): the ledger calls
// TaskFinished (through Pipeline.TaskFinished) when an attempt finishes
// successfully.
type Observer interface {
	TaskFinished(c *ClusterView, a *AttemptView, durationS float64)
}

// HeartbeatConfig configures heartbeat policies built by name. Zero values
// mean the documented defaults; a policy ignores the fields it does not use.
type HeartbeatConfig struct {
	// Seed seeds a policy's own randomness.
	Seed uint64
	// Weights are the resource weights w_p of HaSTE's Eq. 1 and of the
	// value Σ_p w_p·R[i,p] (one per ClusterView.Resources; nil: 1/1024 per
	// MB of memory and 1 per vcore, solver.HaSTEWeights, else 1 each).
	Weights []float64
	// Beta is HaSTE-A's β = (β1, β2, β3) of Eq. 6 (zero: the paper's
	// {0.2, 0.2, 0.6}, §5.2.3).
	Beta [3]float64
	// ITATimeLimit bounds HaSTE's exact initial task assignment (0: 2 s);
	// when hit, the best assignment found is used.
	ITATimeLimit time.Duration
	// AMRequest is the request R^am of one ApplicationMaster in HaSTE's
	// Eq. 2, over ClusterView.Resources (nil: 1536 MB and 1 vcore, the
	// MapReduce defaults, zero in other dimensions).
	AMRequest models.Resources
	// Placement, if set, is the cluster's reduce-placement policy: the
	// pipeline then gets the ReducePlacementStage, which places each job's
	// reducers with it (a fresh policy per pipeline: it keeps state).
	Placement Placement
	// PlacementModel is the queueing model NewPlacedPipeline gives the
	// placement policy it builds (PlacementConfig.Model: "adp-penalty"
	// fits on it); nil: none.
	PlacementModel *PlacementModel
	// FixedFetchCosts keeps the reduce-placement stage's fetch costs at
	// the topology's hop distances (every rack's downlink κ = 1 node link)
	// instead of learning κ from the fetch rates reducers report (Tan et
	// al. §V-C): the fixed costs to compare the learned ones with.
	FixedFetchCosts bool
	// MaxStarts bounds the starts one heartbeat decides (0: no bound), as
	// YARN's yarn.scheduler.fair.max.assign and the capacity scheduler's
	// per-node-heartbeat.maximum-container-assignments do: a node that
	// tasks without demands all fit would otherwise start every pending
	// task in one heartbeat (one answer and one durable record of them all).
	MaxStarts int
}

// Stages are the parts one spec item contributes to a pipeline. An
// assignment item must provide an Assigner (and may provide a SlotPolicy,
// e.g. pi-dhsa); an add-on provides any of the others.
type Stages struct {
	Assigner    Assigner
	SlotPolicy  SlotPolicy
	Filters     []LaunchFilter
	Speculators []Speculator
	Sharers     []Sharer
	Placer      ReducePlacer
}

// StagesFactory builds fresh stages (one per simulation run or cluster).
type StagesFactory func(cfg HeartbeatConfig) (Stages, error)

// Initializer is optionally implemented by an Assigner that plans once the
// first jobs are known (HaSTE's Initial Task Assignment). The pipeline
// calls Init before the first heartbeat that has active jobs.
type Initializer interface {
	Init(ctx context.Context, c *ClusterView) error
}

// DecodeSnapshot decodes a stage's JSON snapshot into v, refusing unknown
// fields (a snapshot of another version or stage): for Restore methods.
func DecodeSnapshot(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: snapshot: %w", ErrInvalidConfig, err)
	}
	return nil
}
