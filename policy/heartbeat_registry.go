package policy

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/optd/optd/models"
)

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
}

// StagesFactory builds fresh stages (one per simulation run or cluster).
type StagesFactory func(cfg HeartbeatConfig) (Stages, error)

// Initializer is optionally implemented by an Assigner that plans once the
// first jobs are known (HaSTE's Initial Task Assignment). The simulator
// calls Init before the first heartbeat that has active jobs.
type Initializer interface {
	Init(ctx context.Context, c *ClusterView) error
}

var heartbeatRegistry = struct {
	sync.RWMutex
	assign, addOn map[string]StagesFactory
}{assign: map[string]StagesFactory{}, addOn: map[string]StagesFactory{}}

// RegisterAssignment adds an assignment policy (the first item of a spec)
// under name. Names are unique across assignments and add-ons
// (ErrDuplicatePolicy). Safe for concurrent use; call it from init.
func RegisterAssignment(name string, f StagesFactory) error { return register(name, f, true) }

// RegisterAddOn adds an add-on (a "+item" of a spec) under name.
func RegisterAddOn(name string, f StagesFactory) error { return register(name, f, false) }

func register(name string, f StagesFactory, assignment bool) error {
	if name == "" || f == nil || strings.ContainsAny(name, "+ ,") {
		return fmt.Errorf("%w: name %q (must be non-empty, without '+', ',' or spaces) or nil factory", ErrInvalidConfig, name)
	}
	r := &heartbeatRegistry
	r.Lock()
	defer r.Unlock()
	_, a := r.assign[name]
	_, b := r.addOn[name]
	if a || b {
		return fmt.Errorf("%w: %q", ErrDuplicatePolicy, name)
	}
	if assignment {
		r.assign[name] = f
	} else {
		r.addOn[name] = f
	}
	return nil
}

func mustRegisterAssignment(name string, f StagesFactory) {
	if err := RegisterAssignment(name, f); err != nil {
		panic(err)
	}
}

// AssignmentNames returns the registered assignment policy names, sorted.
func AssignmentNames() []string { return sortedKeys(false) }

// AddOnNames returns the registered add-on names, sorted.
func AddOnNames() []string { return sortedKeys(true) }

func sortedKeys(addOn bool) []string {
	r := &heartbeatRegistry
	r.RLock()
	defer r.RUnlock()
	m := r.assign
	if addOn {
		m = r.addOn
	}
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func lookup(name string, addOn bool) (StagesFactory, bool) {
	r := &heartbeatRegistry
	r.RLock()
	defer r.RUnlock()
	if addOn {
		f, ok := r.addOn[name]
		return f, ok
	}
	f, ok := r.assign[name]
	return f, ok
}
