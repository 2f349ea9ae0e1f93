// Package assign holds the heartbeat assignment policies of the HaSTE
// evaluation (Yao et al., IEEE TCC 2021): the Hadoop/YARN baselines FIFO,
// Fair, DRF and Capacity, the FFD dot-product greedy, HaSTE and HaSTE-A.
// Each orders the Start candidates of the node that heartbeats
// (policy.Assigner); this file names and registers them.
package assign

import "github.com/optd/optd/policy"

// Names of the assignment policies.
const (
	NameFIFO     = "fifo"
	NameFair     = "fair"
	NameDRF      = "drf"
	NameCapacity = "capacity"
	NameFFDDP    = "ffd-dp"
	NameHaSTE    = "haste"
	NameHaSTEA   = "haste-a"
)

func init() {
	for name, f := range map[string]policy.StagesFactory{
		NameFIFO: func(policy.HeartbeatConfig) (policy.Stages, error) {
			return policy.Stages{Assigner: &fifoAssigner{NameFIFO}}, nil
		},
		NameFair: func(policy.HeartbeatConfig) (policy.Stages, error) {
			return policy.Stages{Assigner: &shareAssigner{byName: NameFair, share: fairShare}}, nil
		},
		NameDRF: func(policy.HeartbeatConfig) (policy.Stages, error) {
			return policy.Stages{Assigner: &shareAssigner{byName: NameDRF, share: dominantShare}}, nil
		},
		NameCapacity: func(policy.HeartbeatConfig) (policy.Stages, error) {
			return policy.Stages{Assigner: &capacityAssigner{NameCapacity}}, nil
		},
		NameFFDDP: func(cfg policy.HeartbeatConfig) (policy.Stages, error) {
			return newScored(NameFFDDP, cfg, false, false)
		},
		NameHaSTE:  func(cfg policy.HeartbeatConfig) (policy.Stages, error) { return newScored(NameHaSTE, cfg, true, false) },
		NameHaSTEA: func(cfg policy.HeartbeatConfig) (policy.Stages, error) { return newScored(NameHaSTEA, cfg, true, true) },
	} {
		policy.Must(policy.RegisterAssignment(name, f))
	}
}
