// Package policy holds every online decision rule of optd as a plug-in behind
// one small interface per kind of decision, as the Kubernetes scheduler
// framework does with its extension points: reduce placement (this file), and,
// as later issues land, heartbeat assignment, speculation and per-node
// resource sharing. The server and the simulator call the same objects, so a
// decision evaluated in simulation is exactly the decision served to a live
// scheduler. Policies decide and explain; they never apply their decisions
// (the simulator or the server does).
package policy

// Plugin is embedded by every policy interface.
type Plugin interface {
	// Name is the policy's registry name, e.g. "greedy".
	Name() string
}
