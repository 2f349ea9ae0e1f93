// Package policy will hold every online decision rule as a plug-in behind one small
// interface per kind of decision: reduce placement, heartbeat assignment,
// speculation and per-node resource sharing. The server and the simulator call the
// same objects, so a decision evaluated in simulation is exactly the decision served
// to a live scheduler.
//
// It is filled by the issues on reduce placement and heartbeat scheduling; it has
// no code yet.
package policy
