// Package filter holds the launch filters: delay scheduling (Zaharia et
// al., EuroSys'10) and DynamicMR's Slot PreScheduling with the Hadoop load
// manager it relaxes. A filter may veto a Start (or a copy) another stage
// proposes (policy.LaunchFilter); this file names and registers them.
package filter

import "github.com/optd/optd/policy"

// Names of the filters.
const (
	NameDelayScheduling   = "delay-scheduling"
	NameSlotPreScheduling = "slot-prescheduling"
	// NameLoadBalance is Hadoop 1's own per-node map cap (the load manager
	// Slot PreScheduling relaxes), without the pre-scheduling exemption: the
	// MRv1 baseline of DynamicMR. An extension of docs/formats.md#cluster-scenario.
	NameLoadBalance = "load-balance"
)

func init() {
	policy.Must(policy.RegisterAddOn(NameDelayScheduling, func(policy.HeartbeatConfig) (policy.Stages, error) {
		d, err := NewDelayScheduling(5, 5)
		return policy.Stages{Filters: []policy.LaunchFilter{d}}, err
	}))
	policy.Must(policy.RegisterAddOn(NameSlotPreScheduling, func(policy.HeartbeatConfig) (policy.Stages, error) {
		return policy.Stages{Filters: []policy.LaunchFilter{&SlotPreScheduling{Enabled: true}}}, nil
	}))
	policy.Must(policy.RegisterAddOn(NameLoadBalance, func(policy.HeartbeatConfig) (policy.Stages, error) {
		return policy.Stages{Filters: []policy.LaunchFilter{&SlotPreScheduling{Enabled: false}}}, nil
	}))
}
