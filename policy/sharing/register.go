// Package sharing holds the per-node resource-sharing policies: resource
// stealing with the six strategies of Table I (Guo et al., IEEE
// Cluster'12) and DynamicAdjust for skewed tasks (Liu et al., IEICE 2016).
// A Sharer adjusts the resources of the heartbeating node's running
// attempts after every other stage (policy.Sharer); this file names and
// registers them.
package sharing

import "github.com/optd/optd/policy"

// Names of the sharing policies.
const (
	NameDynamicAdjust = "dynamic-adjust"
	// NameResourceStealingPrefix + a StealMode's name ("even", "fcm",
	// "stlm", "ltlm", "stm", "ltm") names a resource-stealing strategy.
	NameResourceStealingPrefix = "resource-stealing-"
)

func init() {
	for _, m := range []StealMode{StealEven, StealFCM, StealSTLM, StealLTLM, StealSTM, StealLTM} {
		policy.Must(policy.RegisterAddOn(NameResourceStealingPrefix+m.String(), func(policy.HeartbeatConfig) (policy.Stages, error) {
			return policy.Stages{Sharers: []policy.Sharer{NewResourceStealing(m)}}, nil
		}))
	}
	policy.Must(policy.RegisterAddOn(NameDynamicAdjust, func(policy.HeartbeatConfig) (policy.Stages, error) {
		return policy.Stages{Sharers: []policy.Sharer{NewDynamicAdjust()}}, nil
	}))
}
