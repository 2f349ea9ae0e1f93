package policy

import (
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/optd/optd/internal/errkind"
	"github.com/optd/optd/models"
	"github.com/optd/optd/thresholds"
)

// Registry errors.
var (
	// ErrUnknownPolicy: no policy is registered under the name.
	ErrUnknownPolicy = errkind.New(errkind.Invalid, "policy: unknown policy")
	// ErrDuplicatePolicy: a policy is already registered under the name.
	ErrDuplicatePolicy = errkind.New(errkind.Conflict, "policy: duplicate policy name")
	// ErrInvalidConfig: a PlacementConfig field is out of range.
	ErrInvalidConfig = errkind.New(errkind.Invalid, "policy: invalid configuration")
	// ErrInvalidRequest: a PlacementRequest the policy cannot serve (fewer
	// free slots than R, R < 1, X negative or not finite).
	ErrInvalidRequest = errkind.New(errkind.Invalid, "policy: invalid placement request")
)

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
}

// PlacementFactory builds a fresh placement policy (one per cluster or per
// simulation replication).
type PlacementFactory func(cfg PlacementConfig) (Placement, error)

// Names of the built-in placement policies.
const (
	NameRandom          = "random"
	NameGreedy          = "greedy"
	NameRecedingHorizon = "receding-horizon"
	NameRollingHorizon  = "rolling-horizon"
	// NameStateThreshold and NameRecedingKnobs are the parameterized
	// families made for policy search (state_threshold.go,
	// receding_knobs.go).
	NameStateThreshold = "state-threshold"
	NameRecedingKnobs  = "receding-horizon-knobs"
)

var placements = struct {
	sync.RWMutex
	m map[string]PlacementFactory
}{m: map[string]PlacementFactory{}}

func init() {
	for name, f := range map[string]PlacementFactory{
		NameRandom: NewRandom,
		NameGreedy: func(PlacementConfig) (Placement, error) { return Greedy{}, nil },
	} {
		if err := RegisterPlacement(name, f); err != nil {
			panic(err)
		}
	}
	for _, fam := range []struct {
		name   string
		f      PlacementFactory
		params []ParamSpec
	}{
		{NameRecedingHorizon, NewRecedingHorizon, []ParamSpec{windowParam}},
		{NameRollingHorizon, NewRollingHorizon, []ParamSpec{windowParam, horizonParam}},
		{NameStateThreshold, NewStateThreshold, stateThresholdParams},
		{NameRecedingKnobs, NewRecedingKnobs, recedingKnobsParams},
	} {
		if err := RegisterPlacementFamily(fam.name, fam.f, fam.params); err != nil {
			panic(err)
		}
	}
}

// RegisterPlacement adds a placement policy under name. The name must be
// non-empty and not yet registered (ErrDuplicatePolicy). Safe for concurrent
// use.
func RegisterPlacement(name string, f PlacementFactory) error {
	if name == "" || f == nil {
		return fmt.Errorf("%w: empty name or nil factory", ErrInvalidConfig)
	}
	placements.Lock()
	defer placements.Unlock()
	if _, ok := placements.m[name]; ok {
		return fmt.Errorf("%w: %q", ErrDuplicatePolicy, name)
	}
	placements.m[name] = f
	return nil
}

// NewPlacement builds the placement policy registered under name.
func NewPlacement(name string, cfg PlacementConfig) (Placement, error) {
	placements.RLock()
	f, ok := placements.m[name]
	placements.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w: %q (known: %v)", ErrUnknownPolicy, name, PlacementNames())
	}
	return f(cfg)
}

// PlacementNames returns the registered placement policy names, sorted.
func PlacementNames() []string {
	placements.RLock()
	defer placements.RUnlock()
	names := make([]string, 0, len(placements.m))
	for n := range placements.m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// checkRequest validates the parts of a request every policy relies on.
func checkRequest(req *PlacementRequest) error {
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

// block returns positions start..start+r−1.
func block(start, r int) []int {
	p := make([]int, r)
	for k := range p {
		p[k] = start + k
	}
	return p
}
