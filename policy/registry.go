package policy

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// The registry: every policy by name, placement policies and heartbeat
// stages alike, names unique across all. Implementations register from
// their package's init (see package builtin); lookups are safe for
// concurrent use.

type kind uint8

const (
	kindPlacement kind = iota + 1
	kindAssignment
	kindAddOn
	// kindReducePlacer is the one ReducePlacementStage, which no spec
	// names: NewPipeline adds it for HeartbeatConfig.Placement.
	kindReducePlacer
)

var kindNames = [...]string{kindPlacement: "placement policy", kindAssignment: "assignment policy", kindAddOn: "add-on", kindReducePlacer: "reduce placer"}

type entry struct {
	kind      kind
	placement PlacementFactory
	params    []Param // a placement family's declared parameters
	stages    StagesFactory
}

var registry = struct {
	sync.RWMutex
	m map[string]entry
}{m: map[string]entry{}}

func register(name string, e entry) error {
	if name == "" || strings.ContainsAny(name, "+ ,:;=") {
		return fmt.Errorf("%w: %s name %q: must be non-empty, without '+', ',', ':', ';', '=' or spaces", ErrInvalidConfig, kindNames[e.kind], name)
	}
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.m[name]; dup {
		return fmt.Errorf("%w: %q", ErrDuplicatePolicy, name)
	}
	registry.m[name] = e
	return nil
}

// RegisterPlacement adds a placement policy under name with the parameters
// it reads from PlacementConfig.Params (none for a policy without
// parameters). The name must be new (ErrDuplicatePolicy) and the
// declarations valid.
func RegisterPlacement(name string, f PlacementFactory, params ...Param) error {
	if f == nil {
		return fmt.Errorf("%w: placement policy %q: nil factory", ErrInvalidConfig, name)
	}
	if err := checkDeclarations(name, params); err != nil {
		return err
	}
	return register(name, entry{kind: kindPlacement, placement: f, params: slices.Clone(params)})
}

// RegisterAssignment adds an assignment policy (the first item of a
// heartbeat spec) under name.
func RegisterAssignment(name string, f StagesFactory) error {
	return registerStages(name, f, kindAssignment)
}

// RegisterAddOn adds an add-on (a "+item" of a heartbeat spec) under name.
func RegisterAddOn(name string, f StagesFactory) error { return registerStages(name, f, kindAddOn) }

// RegisterReducePlacer registers the factory of the ReducePlacementStage
// (policy/placement does), which builds it from HeartbeatConfig.Placement.
func RegisterReducePlacer(f StagesFactory) error {
	return registerStages(ReducePlacementStage, f, kindReducePlacer)
}

func registerStages(name string, f StagesFactory, k kind) error {
	if f == nil {
		return fmt.Errorf("%w: %s %q: nil factory", ErrInvalidConfig, kindNames[k], name)
	}
	return register(name, entry{kind: k, stages: f})
}

// Must panics on a registration error: for registrations from init, where
// an error is a programming mistake.
func Must(err error) {
	if err != nil {
		panic(err)
	}
}

// NewPlacement builds the placement policy registered under name.
func NewPlacement(name string, cfg PlacementConfig) (Placement, error) {
	e, ok := lookup(name, kindPlacement)
	if !ok {
		return nil, fmt.Errorf("%w: %q (known: %v)", ErrUnknownPolicy, name, PlacementNames())
	}
	return e.placement(cfg)
}

// PlacementNames returns the registered placement policy names, sorted.
func PlacementNames() []string { return names(kindPlacement) }

// PlacementParams returns the parameters the placement policy registered
// under name declares (nil for a policy without parameters).
func PlacementParams(name string) []Param {
	e, _ := lookup(name, kindPlacement)
	if len(e.params) == 0 {
		return nil
	}
	return slices.Clone(e.params)
}

// AssignmentNames returns the registered assignment policy names, sorted.
func AssignmentNames() []string { return names(kindAssignment) }

// AddOnNames returns the registered add-on names, sorted.
func AddOnNames() []string { return names(kindAddOn) }

func names(k kind) []string {
	registry.RLock()
	defer registry.RUnlock()
	var out []string
	for n, e := range registry.m {
		if e.kind == k {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

func lookup(name string, k kind) (entry, bool) {
	registry.RLock()
	defer registry.RUnlock()
	e, ok := registry.m[name]
	if !ok || e.kind != k {
		return entry{}, false
	}
	return e, true
}
