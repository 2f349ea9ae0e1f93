// Package builtin registers every policy optd ships, by importing the
// packages that implement them (each registers its policies from its
// init). Import it for that effect wherever policies are built by name
// (policy.NewPipeline, policy.NewPlacement): the server, the simulator's
// commands, the searches. Package policy itself knows no implementation.
package builtin

import (
	_ "github.com/optd/optd/policy/assign"      // fifo, fair, drf, capacity, ffd-dp, haste, haste-a
	_ "github.com/optd/optd/policy/filter"      // delay-scheduling, slot-prescheduling, load-balance
	_ "github.com/optd/optd/policy/placement"   // random, greedy, receding-horizon, rolling-horizon, state-threshold, receding-horizon-knobs
	_ "github.com/optd/optd/policy/sharing"     // resource-stealing-*, dynamic-adjust
	_ "github.com/optd/optd/policy/slots"       // mrv1-static, pi-dhsa, pd-dhsa
	_ "github.com/optd/optd/policy/speculation" // speculation-hadoop, late, sepb, base
)
