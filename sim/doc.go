// Package sim will hold optd's discrete-event engine (virtual clock, seeded,
// deterministic) and the two models built on it: the reduce-placement queue of
// CONTRACTS §4 and a cluster of nodes running map and reduce tasks.
//
// It is filled by the issues on reduce placement and heartbeat scheduling; it has
// no code yet.
package sim
