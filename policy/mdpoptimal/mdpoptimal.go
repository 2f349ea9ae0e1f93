// Package mdpoptimal registers "mdp-optimal", the optimal reduce placement
// of the cluster's queueing model (Tan et al., INFOCOM 2013, §III-B,
// Theorem 3), as a placement policy built by name: the factory solves the
// model's MDP once (mdp.SolveOptimal, the decision rule of
// mdp.SolvePlacement's Policy) within the limits its parameters set, and
// every later build on the same model reuses the solution. The policy
// decides on the model's fixed slot costs (policy.ModelSlotted), so in the
// heartbeat the reduce-placement stage offers it the cluster's reduce
// slots as the model's slots; a state outside the model gets the cheapest
// free slots, the decision's reason saying why.
//
// It registers from its own package, as package policy/adp does, because
// package mdp imports the simulator, whose tests build policies through
// policy/builtin. `optd bound` solves the scenario's MDP itself (with its
// --bins and --max-states) and keeps its own "mdp-optimal" beside this one.
package mdpoptimal

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/optd/optd/internal/memo"
	"github.com/optd/optd/mdp"
	"github.com/optd/optd/policy"
)

// Name is the policy's registry name.
const Name = mdp.OptimalPolicyName

// The parameters: the limits of the solve, none of them searched.
var params = []policy.Param{
	{Name: "max_states", Min: 1, Max: mdp.DefaultMaxStates, Default: 200_000, Integer: true, Log: true, Fixed: true,
		Doc: "the MDP's states (jobs in service by the cost classes of their slots, jobs waiting, decisions) beyond which the model is refused"},
	{Name: "max_memory_mb", Min: 1, Max: 16384, Default: 2048, Integer: true, Log: true, Fixed: true,
		Doc: "the MDP's estimated memory (its actions and transitions) beyond which the model is refused, checked once it is built"},
	{Name: "time_limit_s", Min: 1, Max: 3600, Default: 300, Log: true, Fixed: true,
		Doc: "seconds the build and solve of the MDP may take before the model is refused"},
	{Name: "bins", Min: 1, Max: 64, Default: mdp.DefaultBins, Integer: true, Fixed: true,
		Doc: "bins per value of R for a law of Y with more atoms (or continuous); a discrete law with at most this many atoms is solved exactly"},
}

func init() {
	policy.Must(policy.RegisterPlacement(Name, New, params...))
}

// Placement is the solved decision rule on its model's slot costs.
type Placement struct {
	policy.Placement
	costs []float64
}

var _ policy.ModelSlotted = (*Placement)(nil)

// ModelSlotCosts implements policy.ModelSlotted.
func (p *Placement) ModelSlotCosts() []float64 { return p.costs }

// New builds the policy for cfg: cfg.Model is required, with a finite
// waiting room; the MDP is solved once per model and bins in the process.
func New(cfg policy.PlacementConfig) (policy.Placement, error) {
	v, err := policy.ResolveParams(Name, params, cfg.Params)
	if err != nil {
		return nil, err
	}
	m := cfg.Model
	if err := m.Check(Name); err != nil {
		return nil, err
	}
	if m.MaxWaiting < 0 || m.MaxWaiting > math.MaxUint16 {
		return nil, fmt.Errorf("%w: %s: model.max_waiting = %d: must be in [0, %d]: the MDP has a state for each number of jobs waiting",
			policy.ErrInvalidConfig, Name, m.MaxWaiting, math.MaxUint16)
	}
	k := key{Model: *m, Bins: int(v["bins"])}
	k.Model.Seed = 0 // the solve draws nothing
	lim := limitsOf(v, cfg.Restoring)
	sol, err := solve(cfg.BuildContext(), k, lim)
	if err != nil {
		return nil, err
	}
	return &Placement{Placement: sol, costs: m.SlotCosts}, nil
}

// key is what a solution depends on.
type key struct {
	Model policy.PlacementModel
	Bins  int
}

// limits bound a solve; time 0 means none.
type limits struct {
	states   int
	memoryMB int64
	time     time.Duration
}

// limitsOf returns the limits the resolved parameters v set; when
// restoring a policy accepted before (policy.PlacementConfig.Restoring),
// the time limit does not apply: the solve took less than it once, and
// failing now would only say the machine is slower or busier.
func limitsOf(v map[string]float64, restoring bool) limits {
	lim := limits{states: int(v["max_states"]), memoryMB: int64(v["max_memory_mb"]), time: time.Duration(v["time_limit_s"] * float64(time.Second))}
	if restoring {
		lim.time = 0
	}
	return lim
}

// solve solves the model's MDP within lim; ctx cancels it.
func (k key) solve(ctx context.Context, lim limits) (solved, error) {
	m := k.Model
	cancel := context.CancelFunc(func() {})
	if lim.time > 0 {
		ctx, cancel = context.WithTimeout(ctx, lim.time)
	}
	defer cancel()
	start := time.Now()
	pol, info, err := mdp.SolveOptimal(ctx, mdp.PlacementModel{
		SlotCosts: m.SlotCosts, K: m.MaxJobsInService, Lambda: m.ArrivalRate, Mu: m.ServiceRate,
		MaxWaiting: m.MaxWaiting, Workload: m.Workload,
	}, mdp.SolveOptions{Bins: k.Bins, MaxStates: lim.states}, lim.memoryMB<<20)
	switch {
	case err == nil:
		return solved{pol, info}, nil
	case errors.Is(err, context.DeadlineExceeded):
		return solved{}, fmt.Errorf("%w: %s: solving the model's MDP took more than time_limit_s = %g s (stopped after %.3g s); raise time_limit_s (at most 3600) or %s",
			policy.ErrInvalidConfig, Name, lim.time.Seconds(), time.Since(start).Seconds(), shrink)
	case errors.Is(err, mdp.ErrTooLarge) && info.MemoryBytes > 0:
		return solved{}, lim.memoryError(info)
	case errors.Is(err, mdp.ErrTooLarge):
		return solved{}, lim.statesError()
	}
	return solved{}, fmt.Errorf("%s: solving the model's MDP: %w", Name, err)
}

const shrink = "shrink the model (fewer distinct slot costs, a smaller max_jobs_in_service or max_waiting)"

func (lim limits) statesError() error {
	return fmt.Errorf("%w: %s: the model's MDP has more than max_states = %d states (or one decision more placements); raise max_states (at most %d) or %s",
		policy.ErrInvalidConfig, Name, lim.states, mdp.DefaultMaxStates, shrink)
}

func (lim limits) memoryError(info mdp.OptimalSolve) error {
	return fmt.Errorf("%w: %s: the model's MDP of %d states needs about %d MB, more than max_memory_mb = %d; %s",
		policy.ErrInvalidConfig, Name, info.States, (info.MemoryBytes+1<<20-1)>>20, lim.memoryMB, shrink)
}

// solved is a solution and what it took.
type solved struct {
	pol  policy.Placement
	info mdp.OptimalSolve
}

// solutions holds the process's solutions (stateless policies, safe for
// concurrent use) by model and bins, at most 8 of them. A solution found
// is checked against each build's state and memory limits as if solved
// anew; a failed solve is not kept, so a later build with other limits (or
// on a less loaded machine) tries again.
var solutions = memo.New[solved](8)

// solve returns k's solution within lim, solving it unless the process
// has it; ctx ends the wait (and the solve, if no other build waits for it).
func solve(ctx context.Context, k key, lim limits) (policy.Placement, error) {
	data, err := json.Marshal(k)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: model: %v", policy.ErrInvalidConfig, Name, err)
	}
	sol, err := solutions.Get(ctx, fmt.Sprintf("%x", sha256.Sum256(data)), func(ctx context.Context) (solved, error) { return k.solve(ctx, lim) })
	switch {
	case err != nil:
		return nil, err
	case sol.info.States > lim.states:
		return nil, lim.statesError()
	case sol.info.MemoryBytes > lim.memoryMB<<20:
		return nil, lim.memoryError(sol.info)
	}
	return sol.pol, nil
}
