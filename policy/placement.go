package policy

import (
	"context"
	"fmt"
	"math"

	"github.com/optd/optd/models"
	"github.com/optd/optd/thresholds"
)

// Slot is a free reduce slot offered to a placement decision.
type Slot struct {
	// Index identifies the slot in its cluster (stable across decisions).
	Index int
	// Cost is the slot's fetching cost per unit of data, H(v) in Tan et al.
	// (INFOCOM 2013, §II-B).
	Cost float64
}

// PlacementRequest is what a reduce-placement policy sees when a job enters
// service and must be placed at once on R free reduce slots.
type PlacementRequest struct {
	// Free lists the free slots cheapest first (ties by Index).
	Free []Slot
	// X is the job's total intermediate data, R its number of ReduceTasks;
	// each reducer fetches Y = X/R.
	X float64
	R int
	// JobsInSystem is N_i of Theorem 4: the number of jobs in the system (in
	// service and waiting) that the job saw when it arrived, itself excluded.
	JobsInSystem int
	// Waiting is the number of jobs waiting to enter service now.
	Waiting int
	// Held lists, for each job in service, the slot indices it holds (a
	// state-based policy such as the MDP table reads it; others ignore it).
	Held [][]int
	// Ctx, if not nil, is the context of the call the decision serves: a
	// policy that computes at length (rolling-horizon's table) stops with
	// its error once it is done. A field rather than a Place argument
	// because only such policies need it and Place has many callers
	// without one (the simulator's).
	Ctx context.Context
}

// Check validates the parts of a request every policy relies on
// (ErrInvalidRequest): R ≥ 1, at least R free slots, X finite and ≥ 0.
func (req *PlacementRequest) Check() error {
	switch {
	case req.R < 1:
		return fmt.Errorf("%w: R = %d, must be ≥ 1", ErrInvalidRequest, req.R)
	case len(req.Free) < req.R:
		return fmt.Errorf("%w: %d free slots, job needs R = %d", ErrInvalidRequest, len(req.Free), req.R)
	case !(req.X >= 0) || req.X > math.MaxFloat64:
		return fmt.Errorf("%w: X = %v, must be finite and ≥ 0", ErrInvalidRequest, req.X)
	}
	return nil
}

// PlacementDecision is a policy's answer: which free slots, and why.
type PlacementDecision struct {
	// Positions are 0-based positions in PlacementRequest.Free, ascending,
	// exactly R of them.
	Positions []int
	// Threshold is the threshold the decision compared Y with, NaN if none.
	Threshold float64
	// Reason explains the decision in one line (the threshold used, the
	// estimate behind it, the rule applied).
	Reason string
}

// Placement decides where a job's reducers go. Implementations may keep state
// (estimators); one instance serves one cluster or one simulation replication
// and is not safe for concurrent use unless it says so.
type Placement interface {
	Plugin
	Place(req *PlacementRequest) (PlacementDecision, error)
}

// Estimating is implemented by a placement policy that learns from the jobs
// it places: Theorem 4's sliding-window estimate of the workload and the
// load (receding-horizon, rolling-horizon, a rollout on either or drawing
// its futures from the jobs seen). Its decision depends on the jobs placed
// before, not on the request alone, so the server snapshots the window
// with the cluster, and a method that asks a policy once per state of the
// MDP (mdp.EvaluatePolicy) cannot evaluate it.
type Estimating interface {
	Estimator() *thresholds.Estimator
}

// ModelSlotted is implemented by a placement policy that decides on the
// fixed slot costs of its model, as Tan et al.'s slots have (H(v) fixed
// per slot, INFOCOM 2013 §II-B), rather than on costs that change with
// every job ("mdp-optimal": its decision table is solved for those
// costs). The heartbeat's reduce-placement stage then offers such a policy
// the cluster's reduce slots as the model's slots: slot i is the i-th
// reduce slot of the cluster in node order and costs ModelSlotCosts()[i].
type ModelSlotted interface {
	Placement
	ModelSlotCosts() []float64
}

// PlacementConfig configures a placement policy built by name. Zero values
// mean the documented defaults; a policy ignores the fields it does not use.
type PlacementConfig struct {
	// Seed seeds the policy's own randomness ("random").
	Seed uint64
	// Window is ω, the size of the sliding window of Theorem 4's estimator
	// ("receding-horizon", "rolling-horizon"); 0 means
	// thresholds.DefaultWindow.
	Window int
	// Horizon is H, the number of future jobs the rolling policy looks
	// ahead ("rolling-horizon"); 0 means thresholds.DefaultHorizon.
	Horizon int
	// Rolling holds the rolling policy's other settings (refresh rule,
	// table options); its Horizon is overridden by Horizon when that is set.
	Rolling thresholds.RollingConfig
	// Params are the values of a parameterized family's parameters by name
	// (see PlacementParams); absent ones take their defaults, and a name the
	// family does not declare is ErrInvalidConfig. Where a parameter and a
	// field above both set ω or H, the parameter wins.
	Params map[string]float64
	// Workload is the law of (X, R) when it is known. Families that would
	// otherwise estimate it from a sliding window use it instead and are
	// then stateless (the MDP can evaluate them exactly); nil means
	// estimate.
	Workload *models.Workload
	// Model is the stable queueing model of the cluster the policy serves,
	// for the policies that fit a value function to it before their first
	// decision ("adp-penalty"); nil means unknown, and those policies then
	// refuse to build.
	Model *PlacementModel
	// Restoring says the policy was accepted with this configuration
	// before (a server rebuilding a stored cluster): limits that depend on
	// the machine's speed at the time (a solve's time limit) do not apply
	// again, so that a cluster accepted once does not fail to load on a
	// slower or busier machine; limits that depend only on the
	// configuration (states, memory) still do.
	Restoring bool
	// Context bounds the work of building the policy (mdp-optimal's solve,
	// the adp policies' fits): when it ends, the build stops waiting and
	// fails with its error, and the work itself stops unless another build
	// of the same policy waits for it. nil means context.Background(). It
	// is a field rather than a parameter of NewPlacement because every
	// family shares the factory's signature and only those few read it.
	Context context.Context
}

// BuildContext returns cfg.Context, or context.Background() when it is nil.
func (cfg PlacementConfig) BuildContext() context.Context {
	if cfg.Context == nil {
		return context.Background()
	}
	return cfg.Context
}

// PlacementModel is the stable system of Tan et al. (INFOCOM 2013, §II) a
// placement policy may be fitted on: Poisson arrivals of rate λ, exponential
// map work of rate μ shared by at most K jobs in service, a waiting room,
// the law of (X, R) and the cluster's slot costs.
type PlacementModel struct {
	// ArrivalRate λ and ServiceRate μ, in jobs per unit time (> 0).
	ArrivalRate, ServiceRate float64
	// MaxJobsInService is K (≥ 1).
	MaxJobsInService int
	// MaxWaiting is the waiting room; −1 means unlimited.
	MaxWaiting int
	// Workload is the law of (X, R). Unlike PlacementConfig.Workload it
	// does not turn the estimating families' estimators off.
	Workload *models.Workload
	// SlotCosts are the fetching costs H(v) of every reduce slot of the
	// cluster, free or not.
	SlotCosts []float64
	// Seed seeds the fit's own simulations: a policy fitted twice on the
	// same model, seed and parameters decides the same.
	Seed uint64
}

// PlacementFactory builds a fresh placement policy (one per cluster or per
// simulation replication).
type PlacementFactory func(cfg PlacementConfig) (Placement, error)
