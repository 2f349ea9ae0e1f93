// Package placement holds the reduce-placement policies of Tan et al.
// (INFOCOM 2013): where a job's R reducers go when it enters service, on
// the cheapest-first list of free slots. Each policy is one file; this file
// names and registers them all.
package placement

import "github.com/optd/optd/policy"

// Names of the placement policies.
const (
	NameRandom          = "random"
	NameGreedy          = "greedy"
	NameRecedingHorizon = "receding-horizon"
	NameRollingHorizon  = "rolling-horizon"
	NameCostliest       = "costliest"
	// NameStateThreshold and NameRecedingKnobs are the parameterized
	// families made for policy search (state_threshold.go,
	// receding_knobs.go).
	NameStateThreshold = "state-threshold"
	NameRecedingKnobs  = "receding-horizon-knobs"
)

func init() {
	for _, p := range []struct {
		name   string
		f      policy.PlacementFactory
		params []policy.Param
	}{
		{NameRandom, NewRandom, nil},
		{NameGreedy, func(policy.PlacementConfig) (policy.Placement, error) { return Greedy{}, nil }, nil},
		{NameCostliest, func(policy.PlacementConfig) (policy.Placement, error) { return Costliest{}, nil }, nil},
		{NameRecedingHorizon, NewRecedingHorizon, []policy.Param{windowParam}},
		{NameRollingHorizon, NewRollingHorizon, []policy.Param{windowParam, horizonParam}},
		{NameStateThreshold, NewStateThreshold, stateThresholdParams},
		{NameRecedingKnobs, NewRecedingKnobs, recedingKnobsParams},
	} {
		policy.Must(policy.RegisterPlacement(p.name, p.f, p.params...))
	}
	policy.Must(policy.RegisterReducePlacer(newReducePlacement))
}

// Block returns positions start..start+r−1: a block of r consecutive
// free slots (in cost order) from start.
func Block(start, r int) []int {
	p := make([]int, r)
	for k := range p {
		p[k] = start + k
	}
	return p
}
