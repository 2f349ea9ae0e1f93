// Package slots holds the MRv1 typed-slot policies of DynamicMR (Tang, Lee,
// He, IEEE TCC 2014): the Hadoop Fair Scheduler on static slots
// ("mrv1-static", the paper's baseline) and Dynamic Hadoop Slot Allocation
// in its pool-independent (a SlotPolicy with HFS assignment) and
// pool-dependent (an Assigner) forms. This file names and registers them.
package slots

import "github.com/optd/optd/policy"

// Names of the slot policies.
const (
	NameMRv1Static = "mrv1-static"
	NamePIDHSA     = "pi-dhsa"
	NamePDDHSA     = "pd-dhsa"
)

func init() {
	policy.Must(policy.RegisterAssignment(NameMRv1Static, func(policy.HeartbeatConfig) (policy.Stages, error) {
		return policy.Stages{Assigner: &FairSlots{name: NameMRv1Static}}, nil
	}))
	policy.Must(policy.RegisterAssignment(NamePIDHSA, func(policy.HeartbeatConfig) (policy.Stages, error) {
		d, err := NewPIDHSA(DefaultDHSAParams())
		return policy.Stages{Assigner: &FairSlots{name: NamePIDHSA}, SlotPolicy: d}, err
	}))
	policy.Must(policy.RegisterAssignment(NamePDDHSA, func(policy.HeartbeatConfig) (policy.Stages, error) {
		d, err := NewPDDHSA(DefaultDHSAParams())
		return policy.Stages{Assigner: d}, err
	}))
}
