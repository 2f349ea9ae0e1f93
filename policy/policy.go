// Package policy holds the contracts of optd's online decisions: what a
// policy sees (the placement request, the heartbeat's views), what it
// returns (a placement decision, actions and vetoes with their reasons), one
// small interface per kind of decision, the one registry of policies by
// name, the one parameter descriptor, and the heartbeat Pipeline that
// composes the stages of a spec. It implements no policy: those live in the
// subpackages by kind of decision (placement, assign, slots, filter,
// speculation, sharing), each registering its policies from its init, and
// package builtin imports them all.
//
// The server and the simulator call the same objects, so a decision
// evaluated in simulation is exactly the decision served to a live
// scheduler. Policies decide and explain; they never apply their decisions
// (package ledger does, for the server, the simulator and `optd replay`
// alike). Nothing here links a solver, so the ledger and the store's users
// build without cgo.
package policy

import "github.com/optd/optd/internal/errkind"

// Plugin is embedded by every policy interface.
type Plugin interface {
	// Name is the policy's registry name, e.g. "greedy".
	Name() string
}

// Errors of the registry, the configurations and the requests.
var (
	// ErrUnknownPolicy: no policy is registered under the name.
	ErrUnknownPolicy = errkind.New(errkind.Invalid, "policy: unknown policy")
	// ErrDuplicatePolicy: a policy is already registered under the name.
	ErrDuplicatePolicy = errkind.New(errkind.Conflict, "policy: duplicate policy name")
	// ErrInvalidConfig: a configuration field or parameter is out of range.
	ErrInvalidConfig = errkind.New(errkind.Invalid, "policy: invalid configuration")
	// ErrInvalidRequest: a PlacementRequest the policy cannot serve (fewer
	// free slots than R, R < 1, X negative or not finite).
	ErrInvalidRequest = errkind.New(errkind.Invalid, "policy: invalid placement request")
)
